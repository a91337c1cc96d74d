//! Vernier on Kubernetes: the Experiment and Trial custom resources, their reconcilers (trials
//! as Job / TFJob / PyTorchJob / any allowed kind), metrics collected from pod logs into the
//! store, leader election and the HTTP endpoints of `vernier operator`.

pub mod checkpoints;
pub mod client;
pub mod context;
pub mod crd;
mod error;
pub mod experiment;
pub mod http;
pub mod jobs;
pub mod leader;
pub mod logs;
pub mod metrics;
pub mod objects;
pub mod report_source;
pub mod run;
pub mod set_status;
pub mod shared;
pub mod sidecar;
pub mod template_source;
pub mod trial;

pub use context::{Context, EarlyStopperFactory, OperatorConfig};
pub use error::{OperatorError, Result};
pub use leader::LeaseConfig;
