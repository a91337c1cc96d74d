//! Running experiments on this machine: each trial a local process group, its metrics
//! collected from its output into the store, driven by the shared planner.

pub mod batch_job;
pub mod checkpoint;
mod child;
pub mod custom;
pub mod driver;
pub mod early_stop;
mod error;
pub mod experiment;
pub mod extend;
pub mod hooks;
pub mod lease;
pub mod local_support;
mod locked_write;
pub mod names;
pub mod observed;
pub mod orphans;
pub mod pod;
mod pod_failure_policy;
pub mod process;
pub mod replicas;
pub mod reported;
pub mod status;
#[cfg(test)]
mod test_store;
mod volumes;
pub mod warm_start;

pub use driver::{BestSoFar, DriverEvent, Observer, Outcome, Progress};
pub use error::RunnerError;
pub use experiment::{LocalExperiment, LocalPaths, trial_files, work_dir_of};
pub use hooks::{RunHooks, SourceError, SourceRequest, SuggestionSource};
pub use local_support::{LocalVerdict, local_verdict};
