//! Rules for `spec.nasConfig` every NAS algorithm shares: Katib's `nas/common` operation rules,
//! and that `nasConfig` and a NAS algorithm come together. Algorithm-specific needs (ENAS's
//! input and output sizes, DARTS's categorical first parameter) are checked when the algorithm
//! is built, so `vernier validate` and the gRPC `ValidateAlgorithmSettings` report them alike.

use super::Errors;
use crate::types::{Experiment, NasConfig};
use vernier_core::NAS_ALGORITHM_NAMES;

/// DARTS's operation that takes no parameters (Katib's `darts-gpu.yaml` lists it bare).
pub(crate) const SKIP_CONNECTION: &str = "skip_connection";

pub(super) fn check(exp: &Experiment, errs: &mut Errors) {
    let algorithm = exp
        .spec
        .algorithm
        .as_ref()
        .and_then(|a| a.algorithm_name.as_deref())
        .unwrap_or("");
    let is_nas = NAS_ALGORITHM_NAMES.contains(&algorithm);
    match &exp.spec.nas_config {
        Some(_) if !is_nas && !algorithm.is_empty() => errs.add(
            "spec.algorithm.algorithmName",
            format!(
                "value {algorithm:?} does not search architectures in spec.nasConfig; hint: use {}",
                NAS_ALGORITHM_NAMES.join(" or ")
            ),
        ),
        Some(nas) => check_config(nas, errs),
        None if is_nas => errs.required(
            "spec.nasConfig",
            &format!("algorithm {algorithm} searches the graph and operations of spec.nasConfig"),
        ),
        None => {}
    }
}

fn check_config(nas: &NasConfig, errs: &mut Errors) {
    if let Some(layers) = nas.graph_config.as_ref().and_then(|g| g.num_layers)
        && layers < 1
    {
        errs.add(
            "spec.nasConfig.graphConfig.numLayers",
            format!("value {layers} must be at least 1"),
        );
    }
    let graph = nas.graph_config.as_ref();
    for (field, sizes) in [
        ("inputSizes", graph.map(|g| &g.input_sizes)),
        ("outputSizes", graph.map(|g| &g.output_sizes)),
    ] {
        for (i, s) in sizes.into_iter().flatten().enumerate() {
            if *s < 1 {
                errs.add(
                    format!("spec.nasConfig.graphConfig.{field}[{i}]"),
                    format!("value {s} must be at least 1"),
                );
            }
        }
    }
    if nas.operations.is_empty() {
        errs.required("spec.nasConfig.operations", "list the candidate operations");
    }
    for (i, op) in nas.operations.iter().enumerate() {
        let path = format!("spec.nasConfig.operations[{i}]");
        let ty = op.operation_type.as_deref().unwrap_or("").trim();
        if ty.is_empty() {
            errs.required(format!("{path}.operationType"), "");
        } else if op.parameters.is_empty() && ty != SKIP_CONNECTION {
            errs.required(
                format!("{path}.parameters"),
                "give the operation at least one parameter (only skip_connection takes none)",
            );
        }
        for (j, p) in op.parameters.iter().enumerate() {
            let fs = p.feasible_space.as_ref();
            let step = fs.and_then(|f| f.step.as_deref()).unwrap_or("");
            if p.parameter_type.as_deref() == Some("double") && step.trim().is_empty() {
                errs.required(
                    format!("{path}.parameters[{j}].feasibleSpace.step"),
                    "a NAS operation's double parameter is a list of min + k*step",
                );
            }
        }
    }
}
