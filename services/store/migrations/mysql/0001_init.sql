-- Vernier store schema, version 1 (MySQL and MariaDB); line for line the SQLite schema in
-- ../0001_init.sql. InnoDB ignores column-level REFERENCES, so the trials' foreign key is a
-- table constraint. utf8mb4 keeps VARCHAR(255) keys within InnoDB's 3072-byte index limit.

CREATE TABLE experiments (
    name            VARCHAR(255) NOT NULL PRIMARY KEY,
    spec_json       LONGTEXT     NOT NULL,
    seed            BIGINT       NOT NULL,
    created_us      BIGINT       NOT NULL,
    phase           VARCHAR(32)  NOT NULL,
    reason          TEXT         NOT NULL,
    message         TEXT         NOT NULL,
    started_us      BIGINT,
    completed_us    BIGINT,
    algorithm_state LONGTEXT,
    conditions_json LONGTEXT     NOT NULL,
    work_dir        TEXT         NOT NULL,
    log_dir         TEXT         NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE INDEX experiments_created ON experiments (created_us);

CREATE TABLE trials (
    name            VARCHAR(255) NOT NULL PRIMARY KEY,
    experiment      VARCHAR(255) NOT NULL,
    seq             BIGINT       NOT NULL,
    assignment_json LONGTEXT     NOT NULL,
    labels_json     LONGTEXT     NOT NULL,
    state           VARCHAR(32)  NOT NULL,
    reason          TEXT         NOT NULL,
    message         TEXT         NOT NULL,
    created_us      BIGINT       NOT NULL,
    started_us      BIGINT,
    completed_us    BIGINT,
    attempt         BIGINT       NOT NULL,
    CONSTRAINT trials_experiment FOREIGN KEY (experiment)
        REFERENCES experiments (name) ON DELETE CASCADE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE UNIQUE INDEX trials_experiment_seq ON trials (experiment, seq);

CREATE TABLE observation_logs (
    trial_name  VARCHAR(255) NOT NULL,
    id          BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    time        BIGINT       NOT NULL,
    metric_name VARCHAR(255) NOT NULL,
    value       TEXT         NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE INDEX observation_logs_trial_time ON observation_logs (trial_name, time);
