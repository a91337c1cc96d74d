//! Vernier's persistent store: experiments, trials and Katib-compatible observation logs,
//! behind one async [`SqlStore`] (SQLite, PostgreSQL or MySQL/MariaDB, chosen by the URL).

mod codec;
mod dialect;
mod error;
mod fence;
mod file_identity;
mod foreign_tables;
mod lease;
mod model;
mod mysql;
mod options;
mod outage;
mod postgres;
mod queries;
mod records;
mod schema_version;
mod sqlite;
mod sqlite_schema;
mod store;
mod summary;
mod url;

pub use error::StoreError;
pub use lease::{
    HEARTBEAT_EVERY, LEASE_TTL, LeaseClaim, LeaseRow, LeaseState, OPERATOR_LEASE_OWNER, Unattended,
    lease_state, unattended,
};
pub use model::{
    ExperimentRow, ExperimentStatusRow, ExperimentSummaries, StoredMetric, TrialRow, TrialUpdate,
};
pub use options::{OpenMode, StoreOptions};
pub use store::SqlStore;
pub use url::redact as redact_url;
