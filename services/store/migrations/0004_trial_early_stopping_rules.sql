-- Vernier store schema, version 4 (SQLite): the early-stopping rules frozen for a trial when it
-- was created (Katib's Trial `spec.earlyStoppingRules`, as JSON), so reports show the rule a
-- trial was judged by. NULL for a trial with none (no rule in force, or an older vernier).

ALTER TABLE trials ADD COLUMN early_stopping_rules_json TEXT;
