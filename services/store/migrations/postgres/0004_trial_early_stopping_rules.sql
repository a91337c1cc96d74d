-- Vernier store schema, version 4 (PostgreSQL); see ../0004_trial_early_stopping_rules.sql.

ALTER TABLE trials ADD COLUMN early_stopping_rules_json TEXT;
