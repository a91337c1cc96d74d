//! DARTS (Liu et al. 2019) searches inside one trial, a supernet whose architecture weights are
//! trained by gradient descent; the suggestion's whole job is Katib's hand-off: every proposal
//! carries `algorithm-settings`, `search-space` and `num-layers` built exactly as Katib's
//! `nas/darts/service.py` builds them, so Katib's DARTS trial image can consume them.

use super::pyjson::PyJson;
use super::{NasRules, nas_config};
use crate::error::AlgorithmError;
use vernier_core::{
    Assignment, CoreError, NasConfig, ParamValue, Proposal, SuggestRequest, Suggester, Suggestions,
};

/// Katib's defaults, in Katib's order (the order of the `algorithm-settings` dict).
const DEFAULTS: &[(&str, PyJson)] = &[
    ("num_epochs", PyJson::Int(50)),
    ("w_lr", PyJson::Float(0.025)),
    ("w_lr_min", PyJson::Float(0.001)),
    ("w_momentum", PyJson::Float(0.9)),
    ("w_weight_decay", PyJson::Float(3e-4)),
    ("w_grad_clip", PyJson::Float(5.0)),
    ("alpha_lr", PyJson::Float(3e-4)),
    ("alpha_weight_decay", PyJson::Float(1e-3)),
    ("batch_size", PyJson::Int(128)),
    ("num_workers", PyJson::Int(4)),
    ("init_channels", PyJson::Int(16)),
    ("print_step", PyJson::Int(50)),
    ("num_nodes", PyJson::Int(4)),
    ("stem_multiplier", PyJson::Int(3)),
];

/// The operation Katib's DARTS lists without a filter size.
const SKIP_CONNECTION: &str = "skip_connection";

/// The DARTS hand-off: the same three assignments for every requested trial.
#[derive(Debug, Clone)]
pub struct Darts {
    assignment: Assignment,
}

/// Builds DARTS from the space's `nasConfig` and the settings, with Katib's validation.
pub fn build(
    name: &str,
    settings: &[(String, String)],
    space: &vernier_core::SearchSpace,
) -> Result<Darts, AlgorithmError> {
    let nas = nas_config(name, space)?;
    NasRules::darts().check(name, nas)?;
    for (setting, value) in settings {
        check_setting(name, setting, value)?;
    }
    Ok(Darts {
        assignment: hand_off(nas, settings),
    })
}

/// Katib's `validate_algorithm_settings`: the same rules and wording. Unknown names pass (they
/// reach the trial), as in Katib; `random_state` is Vernier's seed and is not handed on.
fn check_setting(algorithm: &str, name: &str, value: &str) -> Result<(), AlgorithmError> {
    let invalid = |reason: String| AlgorithmError::InvalidSetting {
        algorithm: algorithm.to_string(),
        setting: name.to_string(),
        value: value.to_string(),
        reason,
    };
    let int = || {
        value
            .trim()
            .parse::<i64>()
            .map_err(|_| invalid("does not parse as an integer".into()))
    };
    let float = || {
        value
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| !v.is_nan())
            .ok_or_else(|| invalid("does not parse as a number".into()))
    };
    match name {
        "num_epochs" if int()? <= 0 => Err(invalid(format!("{name} should be greater than zero"))),
        "w_lr" | "w_lr_min" | "alpha_lr" | "w_weight_decay" | "alpha_weight_decay"
        | "w_momentum" | "w_grad_clip"
            if float()? < 0.0 =>
        {
            Err(invalid(format!(
                "{name} should be greater than or equal to zero"
            )))
        }
        "batch_size" if value != "None" && int()? < 1 => Err(invalid(
            "batch_size should be greater than or equal to one".into(),
        )),
        "num_workers" if int()? < 0 => Err(invalid(
            "num_workers should be greater than or equal to zero".into(),
        )),
        "init_channels" | "print_step" | "num_nodes" | "stem_multiplier" if int()? < 1 => Err(
            invalid(format!("{name} should be greater than or equal to one")),
        ),
        _ => Ok(()),
    }
}

/// The three assignments of Katib's `GetSuggestions`.
fn hand_off(nas: &NasConfig, settings: &[(String, String)]) -> Assignment {
    Assignment(vec![
        (
            "algorithm-settings".into(),
            ParamValue::Choice(algorithm_settings(settings).katib_text()),
        ),
        (
            "search-space".into(),
            ParamValue::Choice(search_space(nas).katib_text()),
        ),
        (
            "num-layers".into(),
            ParamValue::Choice(nas.num_layers.to_string()),
        ),
    ])
}

/// Katib's defaults overwritten by the settings as given (strings; `None` becomes null); new
/// names are appended, as Python's dict update does.
fn algorithm_settings(settings: &[(String, String)]) -> PyJson {
    let mut pairs: Vec<(String, PyJson)> = DEFAULTS
        .iter()
        .map(|(n, v)| (n.to_string(), v.clone()))
        .collect();
    for (name, value) in settings.iter().filter(|(n, _)| n != "random_state") {
        let v = if value == "None" {
            PyJson::Null
        } else {
            PyJson::Str(value.clone())
        };
        match pairs.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = v,
            None => pairs.push((name.clone(), v)),
        }
    }
    PyJson::Dict(pairs)
}

/// `skip_connection`, else `<type>_<k>x<k>` for every value of the operation's first parameter.
fn search_space(nas: &NasConfig) -> PyJson {
    let mut ops = Vec::new();
    for op in &nas.operations {
        if op.operation_type == SKIP_CONNECTION {
            ops.push(PyJson::Str(op.operation_type.clone()));
            continue;
        }
        for size in op
            .parameters
            .first()
            .map(|p| p.list.as_slice())
            .unwrap_or_default()
        {
            ops.push(PyJson::Str(format!("{}_{size}x{size}", op.operation_type)));
        }
    }
    PyJson::List(ops)
}

impl Suggester for Darts {
    fn name(&self) -> &str {
        "darts"
    }

    fn suggest(&self, request: &SuggestRequest<'_>) -> Result<Suggestions, CoreError> {
        let proposals = (0..request.count)
            .map(|_| Proposal::new(self.assignment.clone()))
            .collect();
        Ok(Suggestions {
            proposals,
            state: None,
            exhausted: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_params::pairs as settings;
    use vernier_core::{Direction, NasOperation, NasParameter, Objective, SearchSpace};

    fn space(layers: i32, ops: Vec<NasOperation>) -> SearchSpace {
        SearchSpace::for_nas(NasConfig {
            num_layers: layers,
            operations: ops,
            ..Default::default()
        })
    }

    fn op(kind: &str, sizes: &[&str]) -> NasOperation {
        NasOperation {
            operation_type: kind.into(),
            parameters: if sizes.is_empty() {
                vec![]
            } else {
                vec![NasParameter::categorical("filter_size", sizes)]
            },
        }
    }

    /// Katib's `test_darts_service.py` request, and the exact texts Katib's service sends.
    #[test]
    fn hands_off_exactly_as_katib() {
        let s = space(3, vec![op("separable_convolution", &["3", "5"])]);
        let d = build(
            "darts",
            &settings(&[("num_epoch", "10"), ("random_state", "7")]),
            &s,
        )
        .unwrap();
        let o = Objective::new("Best-Genotype", Direction::Maximize);
        let out = d
            .suggest(&SuggestRequest {
                space: &s,
                objective: &o,
                trials: &[],
                count: 2,
                seed: 1,
                state: None,
            })
            .unwrap();
        assert_eq!(out.proposals.len(), 2);
        let a = out.proposals[0].assignment.to_strings();
        assert_eq!(
            a[0],
            (
                "algorithm-settings".to_string(),
                "{'num_epochs': 50, 'w_lr': 0.025, 'w_lr_min': 0.001, 'w_momentum': 0.9, \
                 'w_weight_decay': 0.0003, 'w_grad_clip': 5.0, 'alpha_lr': 0.0003, \
                 'alpha_weight_decay': 0.001, 'batch_size': 128, 'num_workers': 4, \
                 'init_channels': 16, 'print_step': 50, 'num_nodes': 4, 'stem_multiplier': 3, \
                 'num_epoch': '10'}"
                    .to_string()
            )
        );
        assert_eq!(
            a[1].1,
            "['separable_convolution_3x3', 'separable_convolution_5x5']"
        );
        assert_eq!(a[2], ("num-layers".to_string(), "3".to_string()));
        assert_eq!(out.proposals[1], out.proposals[0]);
    }

    #[test]
    fn katib_gpu_example_search_space_and_overrides() {
        let s = space(
            3,
            vec![
                op("dilated_convolution", &["3", "5"]),
                op("max_pooling", &["3"]),
                op("skip_connection", &[]),
            ],
        );
        let d = build(
            "darts",
            &settings(&[("num_epochs", "3"), ("batch_size", "None")]),
            &s,
        )
        .unwrap();
        let a = d.assignment.to_strings();
        assert!(
            a[0].1.starts_with("{'num_epochs': '3', 'w_lr': 0.025"),
            "{}",
            a[0].1
        );
        assert!(a[0].1.contains("'batch_size': null,"), "{}", a[0].1);
        assert_eq!(
            a[1].1,
            "['dilated_convolution_3x3', 'dilated_convolution_5x5', 'max_pooling_3x3', 'skip_connection']"
        );
    }

    #[test]
    fn validates_settings_as_katib() {
        let s = space(1, vec![op("max_pooling", &["3"])]);
        let table = [
            ("num_epochs", "0", "num_epochs should be greater than zero"),
            (
                "w_lr",
                "-0.1",
                "w_lr should be greater than or equal to zero",
            ),
            (
                "alpha_weight_decay",
                "-0.02",
                "alpha_weight_decay should be greater than or equal to zero",
            ),
            (
                "w_momentum",
                "-0.8",
                "w_momentum should be greater than or equal to zero",
            ),
            (
                "batch_size",
                "0",
                "batch_size should be greater than or equal to one",
            ),
            (
                "print_step",
                "0",
                "print_step should be greater than or equal to one",
            ),
            (
                "num_workers",
                "-1",
                "num_workers should be greater than or equal to zero",
            ),
            ("init_channels", "x", "does not parse as an integer"),
        ];
        for (name, value, want) in table {
            let err = build("darts", &settings(&[(name, value)]), &s)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(want) && err.contains(&format!("{value:?}")),
                "{err}"
            );
        }
        assert!(build("darts", &settings(&[("batch_size", "None")]), &s).is_ok());
    }

    #[test]
    fn nas_config_problems_name_the_field() {
        let err = build("darts", &[], &space(0, vec![op("max_pooling", &["3"])]))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "algorithm darts: spec.nasConfig.graphConfig.numLayers value 0 must be at least 1"
        );
        let err = build("darts", &[], &space(2, vec![op("max_pooling", &[])]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("spec.nasConfig.operations[0].parameters is required"),
            "{err}"
        );
        let plain = SearchSpace::new(vec![vernier_core::Parameter {
            name: "x".into(),
            domain: vernier_core::Domain::Categorical {
                values: vec!["a".into()],
            },
            distribution: Default::default(),
        }])
        .unwrap();
        let err = build("darts", &[], &plain).unwrap_err().to_string();
        assert!(
            err.starts_with("algorithm darts: spec.nasConfig is required"),
            "{err}"
        );
    }
}
