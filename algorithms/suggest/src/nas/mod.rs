//! Neural architecture search over Katib's `nasConfig`: DARTS's hand-off and ENAS's LSTM
//! controller, plus the `nasConfig` rules Katib's NAS services check before they run.

pub mod darts;
pub mod enas;
pub mod pyjson;

use crate::error::AlgorithmError;
use vernier_core::{NasConfig, NasParameterKind, SearchSpace};

/// The `nasConfig` of the space, or an error naming the field.
pub(crate) fn nas_config<'a>(
    algorithm: &str,
    space: &'a SearchSpace,
) -> Result<&'a NasConfig, AlgorithmError> {
    space.nas().ok_or_else(|| {
        nas_error(
            algorithm,
            "spec.nasConfig",
            "is required; hint: describe the graph and the candidate operations in spec.nasConfig instead of spec.parameters",
        )
    })
}

pub(crate) fn nas_error(algorithm: &str, field: &str, reason: &str) -> AlgorithmError {
    AlgorithmError::InvalidNasConfig {
        algorithm: algorithm.to_string(),
        field: field.to_string(),
        reason: reason.to_string(),
    }
}

/// The most layers ENAS samples: its controller's work and memory grow with the layer count
/// (skip connections with its square), and a count far past any network trained is a typo.
const MAX_ENAS_LAYERS: i32 = 1000;

/// What one NAS algorithm needs of `nasConfig` (Katib's `nas/common/validation.py` plus the
/// algorithm's own checks).
#[derive(Debug, Clone, Copy)]
pub(crate) struct NasRules {
    /// ENAS builds input and output layers from these sizes.
    needs_sizes: bool,
    /// ENAS's controller samples every layer on each call; DARTS only passes the count on.
    max_layers: Option<i32>,
    /// DARTS expands the first parameter's list into `<op>_<k>x<k>`; `skip_connection` is bare.
    first_parameter_is_a_list: bool,
}

impl NasRules {
    pub(crate) fn darts() -> Self {
        NasRules {
            needs_sizes: false,
            max_layers: None,
            first_parameter_is_a_list: true,
        }
    }

    pub(crate) fn enas() -> Self {
        NasRules {
            needs_sizes: true,
            max_layers: Some(MAX_ENAS_LAYERS),
            first_parameter_is_a_list: false,
        }
    }

    pub(crate) fn check(self, algorithm: &str, nas: &NasConfig) -> Result<(), AlgorithmError> {
        let err = |field: String, reason: &str| Err(nas_error(algorithm, &field, reason));
        if nas.num_layers < 1 {
            return err(
                "spec.nasConfig.graphConfig.numLayers".into(),
                &format!("value {} must be at least 1", nas.num_layers),
            );
        }
        if let Some(max) = self.max_layers.filter(|max| nas.num_layers > *max) {
            return err(
                "spec.nasConfig.graphConfig.numLayers".into(),
                &format!(
                    "value {} is above {max}, the most the controller samples per \
                     architecture; hint: Katib's examples use 8 to 12",
                    nas.num_layers
                ),
            );
        }
        if self.needs_sizes {
            if nas.input_sizes.is_empty() {
                return err(
                    "spec.nasConfig.graphConfig.inputSizes".into(),
                    "is required, e.g. [32, 32, 3] for 32x32 RGB images",
                );
            }
            if nas.output_sizes.is_empty() {
                return err(
                    "spec.nasConfig.graphConfig.outputSizes".into(),
                    "is required, e.g. [10] for ten classes",
                );
            }
        }
        if nas.operations.is_empty() {
            return err(
                "spec.nasConfig.operations".into(),
                "is required; hint: list the candidate operations",
            );
        }
        for (i, op) in nas.operations.iter().enumerate() {
            let path = format!("spec.nasConfig.operations[{i}]");
            if op.operation_type.trim().is_empty() {
                return err(format!("{path}.operationType"), "is required");
            }
            let bare_skip =
                self.first_parameter_is_a_list && op.operation_type == "skip_connection";
            if op.parameters.is_empty() && !bare_skip {
                return err(
                    format!("{path}.parameters"),
                    "is required; hint: give the operation at least one parameter",
                );
            }
            for (j, p) in op.parameters.iter().enumerate() {
                check_parameter(algorithm, p, &format!("{path}.parameters[{j}]"))?;
            }
            if self.first_parameter_is_a_list
                && let Some(first) = op.parameters.first()
                && first.list.is_empty()
            {
                return err(
                    format!("{path}.parameters[0].feasibleSpace.list"),
                    "is required: DARTS makes one candidate per listed filter size",
                );
            }
        }
        Ok(())
    }
}

fn check_parameter(
    algorithm: &str,
    p: &vernier_core::NasParameter,
    path: &str,
) -> Result<(), AlgorithmError> {
    let err =
        |field: &str, reason: String| Err(nas_error(algorithm, &format!("{path}{field}"), &reason));
    if p.name.trim().is_empty() {
        return err(".name", "is required".into());
    }
    match p.kind {
        NasParameterKind::Categorical | NasParameterKind::Discrete => {
            if p.list.is_empty() {
                return err(".feasibleSpace.list", "is required".into());
            }
        }
        NasParameterKind::Int | NasParameterKind::Double => {
            let values = enas_values_of(p);
            if let Err(reason) = values {
                return err(".feasibleSpace", reason);
            }
        }
    }
    Ok(())
}

/// The values an operation parameter takes, as Katib's ENAS `Operation.py` enumerates them:
/// list entries as text; `range(min, max+1, step)` for int (step 1 when unset, where Katib
/// crashes); `min + k*step <= max` for double (step required).
pub(crate) fn enas_values_of(
    p: &vernier_core::NasParameter,
) -> Result<Vec<pyjson::PyJson>, String> {
    use pyjson::PyJson;
    match p.kind {
        NasParameterKind::Categorical | NasParameterKind::Discrete => {
            Ok(p.list.iter().map(|v| PyJson::Str(v.clone())).collect())
        }
        NasParameterKind::Int => {
            let parse = |field: &str, text: &str| {
                text.trim()
                    .parse::<i64>()
                    .map_err(|_| format!("{field} {text:?} is not an integer"))
            };
            let min = parse("min", &p.min)?;
            let max = parse("max", &p.max)?;
            let step = if p.step.trim().is_empty() {
                1
            } else {
                parse("step", &p.step)?
            };
            if step < 1 || min > max || (max - min) / step > 10_000 {
                return Err(format!(
                    "min {min}, max {max}, step {step} must give 1 to 10000 values (min <= max, step >= 1)"
                ));
            }
            Ok((0..=(max - min) / step)
                .map(|k| PyJson::Int(min + k * step))
                .collect())
        }
        NasParameterKind::Double => {
            let parse = |field: &str, text: &str| {
                text.trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite())
                    .ok_or_else(|| format!("{field} {text:?} is not a number"))
            };
            let min = parse("min", &p.min)?;
            let max = parse("max", &p.max)?;
            let step = parse("step", &p.step)
                .map_err(|_| format!("step {:?} should be > 0 for a double parameter", p.step))?;
            if step <= 0.0 || min > max || (max - min) / step > 10_000.0 {
                return Err(format!(
                    "min {min}, max {max}, step {step} must give 1 to 10000 values (min <= max, step > 0)"
                ));
            }
            let n = ((max - min) / step * (1.0 + 1e-9)).floor() as i64;
            Ok((0..=n)
                .map(|k| PyJson::Float(vernier_core::tidy(min + k as f64 * step)))
                .collect())
        }
    }
}
