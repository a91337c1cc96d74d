-- Vernier store schema, version 2 (SQLite): each trial's reduced observation (Katib's
-- status.observation: min, max and latest per metric), merged by every report_observations
-- call in the same transaction as the raw rows, so reports read one row per trial and metric.
-- min_value/max_value are NULL while no value of the metric was a number.

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

-- Trials whose logs were recorded before this table existed: readers reduce their raw logs.
CREATE TABLE observation_summaries_pending (
    trial_name VARCHAR(255) NOT NULL PRIMARY KEY
);

INSERT INTO observation_summaries_pending (trial_name)
    SELECT DISTINCT trial_name FROM observation_logs;
