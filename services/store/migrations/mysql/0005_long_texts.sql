-- Vernier store schema, version 5 (MySQL and MariaDB only): TEXT holds 65,535 bytes there,
-- while SQLite's and PostgreSQL's TEXT is unbounded, so a trial's message that SQLite stores
-- (a MetricsUnavailable message naming long metric names, a failure's output) could not be
-- written. Messages and reasons are LONGTEXT, as the JSON columns already are. Observed values
-- stay TEXT: every path that records one refuses a value over 65,535 bytes.

ALTER TABLE experiments MODIFY reason LONGTEXT NOT NULL, MODIFY message LONGTEXT NOT NULL;
ALTER TABLE trials MODIFY reason LONGTEXT NOT NULL, MODIFY message LONGTEXT NOT NULL,
    MODIFY early_stopping_rules_json LONGTEXT;
