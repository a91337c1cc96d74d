//! Trial names and suggestion seeds are the engine's; re-exported here for the import path
//! the operator and the benchmark harness use.

pub use vernier_engine::names::{suggest_seed, trial_name};
