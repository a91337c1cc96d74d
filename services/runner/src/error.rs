//! The one error type of the runner crate.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum RunnerError {
    #[error(transparent)]
    Store(#[from] vernier_store::StoreError),
    #[error("{0}")]
    EarlyStopping(String),
    #[error("{source_name} failed: {message}")]
    SuggestionSource {
        source_name: String,
        message: String,
    },
    #[error("{0}")]
    Spec(#[from] vernier_spec::SpecErrors),
    #[error(
        "local mode cannot run this experiment (a cluster can):\n{0}\nhint: run it on a cluster with `vernier operator`, or change the fields named above; `vernier validate` shows both verdicts"
    )]
    NotLocal(vernier_spec::SpecErrors),
    #[error("trial {trial}: {source}")]
    Template {
        trial: String,
        source: vernier_spec::SpecError,
    },
    #[error(transparent)]
    Engine(#[from] vernier_engine::EngineError),
    #[error("{0}")]
    Algorithm(#[from] vernier_algorithms::AlgorithmError),
    #[error("{0}")]
    Suggest(#[from] vernier_core::CoreError),
    #[error("{0}")]
    Collector(#[from] vernier_collector::CollectorError),
    #[error(
        "cannot create log directory {path}: {source}\nhint: pass --log-dir with a writable directory"
    )]
    LogDir {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "experiment {0:?} does not exist in the store\nhint: `vernier list` shows the experiments there"
    )]
    ExperimentNotFound(String),
    #[error(
        "experiment {name:?} has already finished ({phase})\nhint: `vernier report {name}` shows the result"
    )]
    AlreadyFinished { name: String, phase: String },
    #[error(
        "observations of trial {trial} could not be recorded: {error}\nhint: the trial's full output is kept in its log file"
    )]
    ObservationsNotRecorded { trial: String, error: String },
    #[error(
        "experiment {name:?} ended with {reason} after {trials} trial(s); only an experiment that ended by reaching maxTrialCount continues, with --max-trial-count above {trials}\nhint: `vernier report {name}` shows the result; {next}"
    )]
    NotExtendable {
        name: String,
        reason: String,
        trials: u32,
        /// What to do instead: a warm start when some trial has a result to begin from.
        next: String,
    },
    #[error(
        "experiment {name:?} ended by reaching maxTrialCount with {trials} trial(s); a maxTrialCount of {max} does not reopen it\nhint: pass --max-trial-count above {trials}"
    )]
    LimitNotAbove { name: String, max: u32, trials: u32 },
    #[error(
        "--max-trial-count {max} is not above the {trials} trial(s) experiment {name:?} has created, so it would end at once (Katib refuses such an edit too)\nhint: pass --max-trial-count above {trials}, or leave it out to resume with the budget it has"
    )]
    MaxNotAboveTrials { name: String, max: u32, trials: u32 },
    #[error(
        "{flags} would make the experiment invalid: {errors}\nhint: pick values the rest of the spec allows (maxTrialCount at least maxFailedTrialCount and parallelTrialCount), or raise the other one too"
    )]
    LimitsInvalid {
        flags: String,
        errors: vernier_spec::SpecErrors,
    },
    #[error("spec.warmStart: {0}")]
    WarmStart(String),
    #[error(
        "cannot prepare checkpoint directory {}: {reason}\nhint: check that the log directory is writable and has space", path.display()
    )]
    Checkpoint {
        path: std::path::PathBuf,
        reason: String,
    },
    #[error("stored experiment {name:?} is unreadable: {reason}")]
    CorruptExperiment { name: String, reason: String },
}
