-- Vernier store schema, version 3 (MySQL and MariaDB); see ../0003_experiment_leases.sql.

CREATE TABLE experiment_leases (
    experiment   VARCHAR(255) NOT NULL PRIMARY KEY,
    owner        VARCHAR(64)  NOT NULL,
    host         VARCHAR(255) NOT NULL,
    pid          BIGINT       NOT NULL,
    acquired_us  BIGINT       NOT NULL,
    heartbeat_us BIGINT       NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
