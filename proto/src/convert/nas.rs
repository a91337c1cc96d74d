//! `NasConfig` between Katib's wire and core: feasible spaces stay text both ways, so what a
//! Katib controller sends reaches the NAS algorithms as Katib's services read it.

use crate::api::{self, FeasibleSpace, GraphConfig, ParameterSpec, ParameterType};
use crate::error::ProtoError;
use vernier_core::{NasConfig, NasOperation, NasParameter, NasParameterKind};

/// Reads `spec.nas_config` (`field` is its path in the request).
pub fn nas_from_wire(field: &str, nas: &api::NasConfig) -> Result<NasConfig, ProtoError> {
    let graph = nas.graph_config.clone().unwrap_or_default();
    let ops = nas
        .operations
        .as_ref()
        .map(|o| o.operation.as_slice())
        .unwrap_or_default();
    let mut operations = Vec::with_capacity(ops.len());
    for (i, op) in ops.iter().enumerate() {
        let params = op
            .parameter_specs
            .as_ref()
            .map(|p| p.parameters.as_slice())
            .unwrap_or_default();
        let mut parameters = Vec::with_capacity(params.len());
        for (j, p) in params.iter().enumerate() {
            let path = format!(
                "{field}.operations.operation[{i}].parameter_specs.parameters[{j}].parameter_type"
            );
            parameters.push(parameter_from_wire(&path, p)?);
        }
        operations.push(NasOperation {
            operation_type: op.operation_type.clone(),
            parameters,
        });
    }
    Ok(NasConfig {
        num_layers: graph.num_layers,
        input_sizes: graph.input_sizes,
        output_sizes: graph.output_sizes,
        operations,
    })
}

fn parameter_from_wire(type_field: &str, p: &ParameterSpec) -> Result<NasParameter, ProtoError> {
    let kind = match ParameterType::try_from(p.parameter_type) {
        Ok(ParameterType::Double) => NasParameterKind::Double,
        Ok(ParameterType::Int) => NasParameterKind::Int,
        Ok(ParameterType::Discrete) => NasParameterKind::Discrete,
        Ok(ParameterType::Categorical) => NasParameterKind::Categorical,
        _ => {
            return Err(ProtoError::invalid(
                type_field,
                p.parameter_type.to_string(),
                format!(
                    "is not a usable type for parameter {:?}\nhint: use DOUBLE (1), INT (2), DISCRETE (3) or CATEGORICAL (4)",
                    p.name
                ),
            ));
        }
    };
    let fs = p.feasible_space.clone().unwrap_or_default();
    Ok(NasParameter {
        name: p.name.clone(),
        kind,
        min: fs.min,
        max: fs.max,
        step: fs.step,
        list: fs.list,
    })
}

/// The wire form Katib's controller sends.
pub fn nas_to_wire(nas: &NasConfig) -> api::NasConfig {
    api::NasConfig {
        graph_config: Some(GraphConfig {
            num_layers: nas.num_layers,
            input_sizes: nas.input_sizes.clone(),
            output_sizes: nas.output_sizes.clone(),
        }),
        operations: Some(api::nas_config::Operations {
            operation: nas
                .operations
                .iter()
                .map(|op| api::Operation {
                    operation_type: op.operation_type.clone(),
                    parameter_specs: Some(api::operation::ParameterSpecs {
                        parameters: op.parameters.iter().map(parameter_to_wire).collect(),
                    }),
                })
                .collect(),
        }),
    }
}

fn parameter_to_wire(p: &NasParameter) -> ParameterSpec {
    let kind = match p.kind {
        NasParameterKind::Double => ParameterType::Double,
        NasParameterKind::Int => ParameterType::Int,
        NasParameterKind::Discrete => ParameterType::Discrete,
        NasParameterKind::Categorical => ParameterType::Categorical,
    };
    ParameterSpec {
        name: p.name.clone(),
        parameter_type: kind as i32,
        feasible_space: Some(FeasibleSpace {
            min: p.min.clone(),
            max: p.max.clone(),
            step: p.step.clone(),
            list: p.list.clone(),
            ..Default::default()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_katib_darts_config() {
        let nas = NasConfig {
            num_layers: 3,
            input_sizes: vec![32, 32, 3],
            output_sizes: vec![10],
            operations: vec![
                NasOperation {
                    operation_type: "separable_convolution".into(),
                    parameters: vec![NasParameter::categorical("filter_size", &["3", "5"])],
                },
                NasOperation {
                    operation_type: "reduction".into(),
                    parameters: vec![NasParameter {
                        name: "pool_size".into(),
                        kind: NasParameterKind::Int,
                        min: "2".into(),
                        max: "3".into(),
                        step: "1".into(),
                        list: vec![],
                    }],
                },
                NasOperation {
                    operation_type: "skip_connection".into(),
                    parameters: vec![],
                },
            ],
        };
        let wire = nas_to_wire(&nas);
        assert_eq!(nas_from_wire("nas_config", &wire).unwrap(), nas);
    }

    #[test]
    fn names_a_bad_parameter_type() {
        let mut wire = nas_to_wire(&NasConfig {
            num_layers: 1,
            operations: vec![NasOperation {
                operation_type: "conv".into(),
                parameters: vec![NasParameter::categorical("f", &["3"])],
            }],
            ..Default::default()
        });
        wire.operations.as_mut().unwrap().operation[0]
            .parameter_specs
            .as_mut()
            .unwrap()
            .parameters[0]
            .parameter_type = 0;
        let err = nas_from_wire("experiment.spec.nas_config", &wire).unwrap_err();
        assert!(
            err.to_string().starts_with(
                "experiment.spec.nas_config.operations.operation[0].parameter_specs.parameters[0].parameter_type: value \"0\""
            ),
            "{err}"
        );
    }
}
