-- Vernier store schema, version 1 (SQLite).
-- Kept close to portable SQL so PostgreSQL and MySQL variants stay line-for-line comparable;
-- those backends get their own directories next to this file (sqlx ignores subdirectories).
-- Times are microseconds since the Unix epoch, UTC, as 64-bit integers.

CREATE TABLE experiments (
    name            VARCHAR(255) NOT NULL PRIMARY KEY,
    spec_json       TEXT         NOT NULL,
    seed            BIGINT       NOT NULL,
    created_us      BIGINT       NOT NULL,
    phase           VARCHAR(32)  NOT NULL,
    reason          TEXT         NOT NULL,
    message         TEXT         NOT NULL,
    started_us      BIGINT,
    completed_us    BIGINT,
    algorithm_state TEXT,
    conditions_json TEXT         NOT NULL,
    -- Local mode only: where trials run and keep their logs, so `resume` can carry on.
    work_dir        TEXT         NOT NULL,
    log_dir         TEXT         NOT NULL
);

CREATE INDEX experiments_created ON experiments (created_us);

-- Trial names are unique across experiments, as in Katib (observation logs carry no
-- experiment column).
CREATE TABLE trials (
    name            VARCHAR(255) NOT NULL PRIMARY KEY,
    experiment      VARCHAR(255) NOT NULL REFERENCES experiments (name) ON DELETE CASCADE,
    seq             BIGINT       NOT NULL,
    assignment_json TEXT         NOT NULL,
    labels_json     TEXT         NOT NULL,
    state           VARCHAR(32)  NOT NULL,
    reason          TEXT         NOT NULL,
    message         TEXT         NOT NULL,
    created_us      BIGINT       NOT NULL,
    started_us      BIGINT,
    completed_us    BIGINT,
    attempt         BIGINT       NOT NULL
);

CREATE UNIQUE INDEX trials_experiment_seq ON trials (experiment, seq);

-- Katib's observation_logs columns. No foreign key to trials: in Kubernetes mode the trials
-- live in custom resources and only the logs live here. In SQLite `INTEGER PRIMARY KEY` is the
-- rowid, assigned as max(id) + 1, so ids grow with insertion order; AUTOINCREMENT would only
-- add never-reuse-a-deleted-id bookkeeping on every insert, which nothing here needs.
CREATE TABLE observation_logs (
    trial_name  VARCHAR(255) NOT NULL,
    id          INTEGER      PRIMARY KEY,
    time        BIGINT       NOT NULL,
    metric_name VARCHAR(255) NOT NULL,
    value       TEXT         NOT NULL
);

CREATE INDEX observation_logs_trial_time ON observation_logs (trial_name, time);
