//! The experiment engine: every decision the local driver and the Kubernetes operator share,
//! as pure functions (no I/O, no async runtime, no clock; randomness from seeds passed in).
//! Drivers observe the world, ask the engine what it means, and act on the answer.

pub mod enqueue;
mod error;
pub mod frozen_rules;
pub mod names;
pub mod reason;
pub mod resolved;
pub mod resume;
pub mod settings;
pub mod source;
pub mod suggest;
pub mod verdict;

/// The planner (how many trials to ask for, whether the experiment is over, which trial is
/// best). It lives in `vernier-spec`, where reports and the API read it too; the engine
/// re-exports it so a driver needs one import path for every decision.
pub use vernier_spec::plan;

pub use error::EngineError;
pub use names::{identity_seed, suggest_seed, trial_name};
pub use resolved::{
    Collector, EarlyStopping, PrometheusPort, ResolvedExperiment, SharedPath, metrics_formats,
};
pub use resume::ResumePolicy;
pub use settings::{
    AlgorithmSource, BuiltEarlyStopping, algorithm_refusals, build_early_stopping, check_settings,
};
pub use source::{ExternalRequest, SourceError, TimedTrial};
pub use suggest::{SuggestInput, build_suggester, search_ended, suggest};
pub use verdict::{
    Finished, How, Place, TrialEnd, Verdict, ZERO_TIME_US, judge, metrics_unavailable,
    objective_reported, unavailable_hint,
};
