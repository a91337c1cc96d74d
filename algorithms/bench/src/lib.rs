//! The benchmark harness behind `vernier benchmark`: runs a suggestion algorithm on analytic
//! problems with known optima, one proposal per call as a service with parallelTrialCount 1
//! would, over many seeds, and summarises the final scores (median and quartiles). Pure and
//! synchronous like the algorithms: the caller hands in the clock that times each suggestion.

mod cell;
mod error;
mod problem;
mod run;
mod summary;

pub use cell::run_cell;
pub use error::BenchError;
pub use problem::{BenchProblem, problems};
pub use run::{AlgorithmSpec, RunResult, Stopwatch, default_budget, run_once};
pub use summary::{CellSummary, TIME_POINTS, quantile, summarize};
