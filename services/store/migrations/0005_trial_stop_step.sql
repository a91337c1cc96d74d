-- Vernier store schema, version 5 (SQLite): the step an early-stopping rule that ranks trials
-- by step (ASHA's rungs) stopped a trial at, written with its EarlyStopped state, so a resumed
-- run shows the rule that trial's values up to it only, as the run that stopped it did. NULL
-- for a trial no such rule stopped (or one an older vernier recorded).

ALTER TABLE trials ADD COLUMN stop_step BIGINT;
