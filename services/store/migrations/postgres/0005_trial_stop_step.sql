-- Vernier store schema, version 5 (PostgreSQL); see ../0005_trial_stop_step.sql.

ALTER TABLE trials ADD COLUMN stop_step BIGINT;
