//! Vernier on Kubernetes: the Experiment and Trial custom resources, their reconcilers (trials
//! as Job / TFJob / PyTorchJob / any allowed kind), metrics collected from pod logs into the
//! store, leader election and the HTTP endpoints of `vernier operator`.

pub mod accepted_spec;
pub mod checkpoints;
pub mod client;
pub mod config;
pub mod context;
pub mod crd;
pub mod early_stop;
mod error;
pub mod events;
pub mod expectations;
pub mod experiment;
pub mod experiment_check;
pub mod experiment_lease;
pub mod experiment_trials;
pub mod http;
pub mod jobs;
pub mod leader;
pub mod logs;
pub mod metrics;
pub mod names;
pub mod objects;
pub mod report_source;
pub mod run;
pub mod serving;
pub mod set_status;
pub mod shared;
pub mod sidecar;
pub mod stop_trials;
pub mod suggestion_deployment;
pub mod suggestion_services;
pub mod template_source;
pub mod tenure;
pub mod trial;
pub mod trial_create;
pub mod trial_decide;
pub mod trial_job;
pub mod trial_observed;
pub mod trial_spec;
pub mod trial_state;

pub use context::{Context, EarlyStopperFactory, OperatorConfig};
pub use error::{OperatorError, Result};
pub use leader::LeaseConfig;
