//! The one error type of the benchmark harness: unknown problems, malformed algorithm
//! specifications, and what the algorithm itself rejects.

use thiserror::Error;
use vernier_algorithms::AlgorithmError;
use vernier_core::CoreError;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum BenchError {
    #[error(
        "unknown problem {name:?}\nhint: known problems are branin, hartmann3, hartmann6, rosenbrock4, ackley5, styblinski-tang (and rosenbrockN, ackleyN, styblinski-tangN for N from 2 to 50); multi-objective zdt1, zdt2, dtlz2 (zdt1-N... for N variables); constrained rosenbrock-disk (rosenbrock-disk:blind hides the constraint)"
    )]
    UnknownProblem { name: String },
    #[error(
        "setting {setting:?} of {algorithm:?} has no '='\nhint: write name;key=value;key=value"
    )]
    SettingWithoutValue { algorithm: String, setting: String },
    #[error(
        "setting random_state of {algorithm:?} cannot be given: each run takes its seed from --seeds and --first-seed\nhint: remove random_state; --first-seed N runs seeds N, N+1, ..."
    )]
    SeedInSettings { algorithm: String },
    /// The algorithm name or one of its settings is not accepted (boxed: the error type is
    /// large and this one is rare).
    #[error(transparent)]
    Algorithm(Box<AlgorithmError>),
    #[error("algorithm {algorithm} failed on {problem} (seed {seed}): {source}")]
    Suggest {
        algorithm: String,
        problem: String,
        seed: u64,
        source: Box<CoreError>,
    },
    #[error(
        "seeds: the range {first}..{end} is empty\nhint: use at least 1 seed (10 or more for stable medians)"
    )]
    NoSeeds { first: u64, end: u64 },
    #[error("trials: value 0 is not allowed\nhint: use at least 1 trial")]
    NoTrials,
}

impl From<AlgorithmError> for BenchError {
    fn from(e: AlgorithmError) -> Self {
        BenchError::Algorithm(Box::new(e))
    }
}
