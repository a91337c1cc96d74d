-- Vernier store schema, version 6 (MySQL and MariaDB; their version 5 widened texts); see
-- ../0005_trial_stop_step.sql.

ALTER TABLE trials ADD COLUMN stop_step BIGINT;
