-- Vernier store schema, version 4 (MySQL and MariaDB); see ../0004_trial_early_stopping_rules.sql.

ALTER TABLE trials ADD COLUMN early_stopping_rules_json TEXT;
