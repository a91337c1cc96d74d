//! Parameter constructors, the mixed search space and the settings conversion shared by the
//! algorithms' unit tests, so a test space reads as one line per parameter and each helper is
//! written once.

use vernier_core::{Distribution, Domain, Parameter, SearchSpace, Suggestions};

pub fn param(name: &str, domain: Domain, distribution: Distribution) -> Parameter {
    Parameter {
        name: name.into(),
        domain,
        distribution,
    }
}

pub fn double(
    name: &str,
    (min, max): (f64, f64),
    step: Option<f64>,
    distribution: Distribution,
) -> Parameter {
    param(name, Domain::Double { min, max, step }, distribution)
}

pub fn int(
    name: &str,
    (min, max): (i64, i64),
    step: Option<i64>,
    distribution: Distribution,
) -> Parameter {
    param(name, Domain::Int { min, max, step }, distribution)
}

/// A uniform double on [0, 1].
pub fn unit(name: &str) -> Parameter {
    double(name, (0.0, 1.0), None, Distribution::Uniform)
}

pub fn categorical(name: &str, values: &[&str]) -> Parameter {
    let values = values.iter().map(|v| v.to_string()).collect();
    param(name, Domain::Categorical { values }, Distribution::Uniform)
}

pub fn discrete(name: &str, values: &[&str]) -> Parameter {
    let values = values.iter().map(|v| v.to_string()).collect();
    param(name, Domain::Discrete { values }, Distribution::Uniform)
}

/// One parameter of every kind and most distributions: a log-uniform learning rate, a stepped
/// normal integer, a stepped log-normal double, a categorical and a discrete list.
pub fn mixed_space() -> SearchSpace {
    SearchSpace::new(vec![
        double("lr", (1e-4, 0.1), None, Distribution::LogUniform),
        int("layers", (1, 9), Some(2), Distribution::Normal),
        double("momentum", (0.5, 0.95), Some(0.05), Distribution::LogNormal),
        categorical("opt", &["sgd", "adam"]),
        discrete("batch", &["16", "32", "64"]),
    ])
    .unwrap()
}

/// Settings as the algorithms take them, from string literals.
pub fn pairs(settings: &[(&str, &str)]) -> Vec<(String, String)> {
    settings
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Each proposal's assignment as text, in order: what seeded tests compare exactly.
pub fn texts(s: &Suggestions) -> Vec<String> {
    s.proposals
        .iter()
        .map(|p| p.assignment.to_string())
        .collect()
}
