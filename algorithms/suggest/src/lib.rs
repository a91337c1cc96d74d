//! Vernier's suggestion algorithms under their Katib names, and the registry that builds them
//! from an experiment's algorithm settings. Pure and synchronous: randomness comes only from
//! the seed in each request.

mod asha;
mod bohb;
pub mod checkpoint;
mod cmaes;
mod early_stopping;
pub mod encode;
mod error;
mod gp;
mod grid;
mod guard;
pub mod history;
mod hyperband;
mod initial_design;
pub mod medianstop;
pub mod nas;
mod nsga2;
pub mod pbt;
mod random;
mod registry;
mod resource;
pub mod sample;
mod settings;
mod sobol;
#[cfg(test)]
mod test_params;
mod tpe;

pub use asha::{Asha, AshaPruner};
pub use early_stopping::{KNOWN_EARLY_STOPPERS, build_early_stopper};
pub use error::AlgorithmError;
pub use guard::{suggest_guarded, suggest_guarded_cancellable};
pub use medianstop::MedianStop;
pub use random::RandomSearch;
pub use registry::{
    KNOWN_ALGORITHMS, build, generation_size, seed_setting, trial_limit, warm_start_shortfall,
    with_random_state,
};
pub use settings::Settings;
