-- Vernier store schema, version 2 (MySQL and MariaDB); see ../0002_observation_summaries.sql.

CREATE TABLE observation_summaries (
    trial_name    VARCHAR(255) NOT NULL,
    metric_name   VARCHAR(255) NOT NULL,
    min_value     DOUBLE,
    max_value     DOUBLE,
    latest_value  TEXT         NOT NULL,
    latest_time   BIGINT       NOT NULL,
    numeric_count BIGINT       NOT NULL,
    PRIMARY KEY (trial_name, metric_name)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE observation_summaries_pending (
    trial_name VARCHAR(255) NOT NULL PRIMARY KEY
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

INSERT INTO observation_summaries_pending (trial_name)
    SELECT DISTINCT trial_name FROM observation_logs;
