//! Katib v1beta1 `Experiment` specs for Vernier: serde types, parsing with field-path errors,
//! Katib's defaults and validation, conversion to core types, and trial-template rendering.

mod closest;
pub mod conditions;
mod convert;
pub mod defaults;
mod duplicate_key;
pub mod enqueue;
mod error;
pub mod known;
mod kubectl_yaml11;
pub mod limits;
mod number;
pub mod parse;
pub mod plan;
pub mod quantity;
pub mod reference;
pub mod status;
pub mod template;
pub mod trial;
mod type_errors;
pub mod types;
mod unquoted;
pub mod validate;

pub use defaults::apply_defaults;
pub use error::{SpecError, SpecErrors};
pub use kubectl_yaml11::{Yaml11Readings, kubectl_yaml11};
pub use parse::{
    parse_experiment, parse_experiment_file, parse_experiment_file_served, parse_experiment_served,
    parse_experiment_value, parse_experiment_value_served, parse_stored_experiment,
};
pub use template::{ContainerSpec, container_from, primary_container, render_trial_spec};
#[cfg(feature = "crd")]
pub use trial::TrialResource;
pub use types::Experiment;
#[cfg(feature = "crd")]
pub use types::ExperimentResource;
pub use unquoted::unquoted_text_fields;
pub use validate::validate;

#[cfg(test)]
mod tests;
