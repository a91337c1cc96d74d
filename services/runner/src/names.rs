//! Trial names and suggestion seeds are the engine's (the seed rule is core's); re-exported
//! here for the runner's own tests. The benchmark harness takes the seed rule from core.

pub use vernier_engine::names::{suggest_seed, trial_name};
