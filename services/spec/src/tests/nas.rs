//! `spec.nasConfig`: Katib's four NAS examples validate, convert and round-trip; the rules Katib's
//! NAS services apply report the field path.

use super::*;
use serde_json::json;
use vernier_core::NasParameterKind;

const DARTS_CPU: &str = include_str!("../../tests/fixtures/katib-nas/darts-cpu.yaml");
const DARTS_GPU: &str = include_str!("../../tests/fixtures/katib-nas/darts-gpu.yaml");
const ENAS_CPU: &str = include_str!("../../tests/fixtures/katib-nas/enas-cpu.yaml");
const ENAS_GPU: &str = include_str!("../../tests/fixtures/katib-nas/enas-gpu.yaml");

#[test]
fn katib_nas_examples_validate_and_round_trip() {
    for text in [DARTS_CPU, DARTS_GPU, ENAS_CPU, ENAS_GPU] {
        let exp = parse_ok(text);
        assert_eq!(parse_ok(&serde_json::to_string(&exp).unwrap()), exp);
        let space = exp.search_space().unwrap();
        assert!(space.parameters().is_empty());
        assert!(space.nas().is_some(), "{}", exp.name());
    }
}

#[test]
fn converts_the_graph_and_operations() {
    let space = parse_ok(ENAS_CPU).search_space().unwrap();
    let nas = space.nas().unwrap();
    assert_eq!(nas.num_layers, 1);
    assert_eq!(nas.input_sizes, vec![32, 32, 3]);
    assert_eq!(nas.output_sizes, vec![10]);
    assert_eq!(nas.operations.len(), 4);
    let pool = &nas.operations[3].parameters[1];
    assert_eq!(pool.name, "pool_size");
    assert_eq!(pool.kind, NasParameterKind::Int);
    assert_eq!((pool.min.as_str(), pool.max.as_str()), ("2", "3"));
    let gpu = parse_ok(DARTS_GPU).search_space().unwrap();
    let last = gpu.nas().unwrap().operations.last().unwrap();
    assert_eq!(last.operation_type, "skip_connection");
    assert!(last.parameters.is_empty());
}

#[test]
fn nas_rules_name_the_field() {
    let e = parse_err(&mutated(ENAS_CPU, |v| {
        set(v, "/spec/nasConfig/graphConfig/numLayers", json!(0));
        set(v, "/spec/nasConfig/operations/0/operationType", json!(""));
        set(v, "/spec/nasConfig/operations/1/parameters", json!([]));
        set(
            v,
            "/spec/nasConfig/operations/2/parameters/0",
            json!({"name": "rate", "parameterType": "double",
                   "feasibleSpace": {"min": "0.1", "max": "0.5"}}),
        );
    }));
    assert_error(
        &e,
        "spec.nasConfig.graphConfig.numLayers",
        "value 0 must be at least 1",
    );
    assert_error(
        &e,
        "spec.nasConfig.operations[0].operationType",
        "is required",
    );
    assert_error(&e, "spec.nasConfig.operations[1].parameters", "is required");
    assert_error(
        &e,
        "spec.nasConfig.operations[2].parameters[0].feasibleSpace.step",
        "is required",
    );
}

#[test]
fn nas_config_and_algorithm_come_together() {
    let e = parse_err(&mutated(ENAS_CPU, |v| {
        set(v, "/spec/algorithm/algorithmName", json!("random"));
    }));
    assert_error(
        &e,
        "spec.algorithm.algorithmName",
        r#"value "random" does not search architectures"#,
    );
    let e = parse_err(&mutated(RANDOM, |v| {
        set(v, "/spec/algorithm/algorithmName", json!("enas"));
    }));
    assert_error(&e, "spec.nasConfig", "is required; hint: algorithm enas");
}
