-- Vernier store schema, version 3 (SQLite): one driver per experiment. A driver takes its
-- experiment's lease row in a transaction before it writes anything, renews heartbeat_us while
-- it runs and deletes the row when it ends; a row whose heartbeat lapsed (its holder died) may
-- be taken over. No foreign key: the row outlives nothing and may name any experiment.

CREATE TABLE experiment_leases (
    experiment   VARCHAR(255) NOT NULL PRIMARY KEY,
    owner        VARCHAR(64)  NOT NULL,
    host         VARCHAR(255) NOT NULL,
    pid          BIGINT       NOT NULL,
    acquired_us  BIGINT       NOT NULL,
    heartbeat_us BIGINT       NOT NULL
);
