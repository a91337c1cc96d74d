//! Vernier's persistent store: experiments, trials and Katib-compatible observation logs,
//! behind one async [`SqlStore`] (SQLite today; the backend is chosen by the URL).

mod codec;
mod error;
mod model;
mod sqlite;
mod store;
mod url;

pub use error::StoreError;
pub use model::{ExperimentRow, ExperimentStatusRow, TrialRow, TrialUpdate};
pub use store::SqlStore;
