-- Vernier store schema, version 2 (PostgreSQL); see ../0002_observation_summaries.sql.

CREATE TABLE observation_summaries (
    trial_name    VARCHAR(255)     NOT NULL,
    metric_name   VARCHAR(255)     NOT NULL,
    min_value     DOUBLE PRECISION,
    max_value     DOUBLE PRECISION,
    latest_value  TEXT             NOT NULL,
    latest_time   BIGINT           NOT NULL,
    numeric_count BIGINT           NOT NULL,
    PRIMARY KEY (trial_name, metric_name)
);

CREATE TABLE observation_summaries_pending (
    trial_name VARCHAR(255) NOT NULL PRIMARY KEY
);

INSERT INTO observation_summaries_pending (trial_name)
    SELECT DISTINCT trial_name FROM observation_logs;
