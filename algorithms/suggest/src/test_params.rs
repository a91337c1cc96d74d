//! Parameter constructors and the mixed search space shared by the algorithms' unit tests, so
//! a test space reads as one line per parameter and the common one is written once.

use vernier_core::{Distribution, Domain, Parameter, SearchSpace};

pub fn double(
    name: &str,
    (min, max): (f64, f64),
    step: Option<f64>,
    distribution: Distribution,
) -> Parameter {
    let domain = Domain::Double { min, max, step };
    Parameter {
        name: name.into(),
        domain,
        distribution,
    }
}

pub fn int(
    name: &str,
    (min, max): (i64, i64),
    step: Option<i64>,
    distribution: Distribution,
) -> Parameter {
    let domain = Domain::Int { min, max, step };
    Parameter {
        name: name.into(),
        domain,
        distribution,
    }
}

pub fn categorical(name: &str, values: &[&str]) -> Parameter {
    let values = values.iter().map(|v| v.to_string()).collect();
    Parameter {
        name: name.into(),
        domain: Domain::Categorical { values },
        distribution: Distribution::Uniform,
    }
}

pub fn discrete(name: &str, values: &[&str]) -> Parameter {
    let values = values.iter().map(|v| v.to_string()).collect();
    Parameter {
        name: name.into(),
        domain: Domain::Discrete { values },
        distribution: Distribution::Uniform,
    }
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
