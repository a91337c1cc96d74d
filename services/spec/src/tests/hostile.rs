//! Specs an adversary wrote: extreme ranges, huge lists, names that break `name=value` lines.
//! Each must be refused (or accepted) with the field named, in time linear in its size.

use super::{RANDOM, assert_error, mutated, parse_err, parse_ok, set};
use serde_json::json;

#[test]
fn an_int_over_the_whole_i64_range_is_a_valid_space() {
    let text = mutated(RANDOM, |v| {
        set(
            v,
            "/spec/parameters/1",
            json!({"name": "momentum", "parameterType": "int",
                   "feasibleSpace": {"min": "-9223372036854775808", "max": "9223372036854775807"}}),
        )
    });
    parse_ok(&text);
}

#[test]
fn a_double_grid_too_fine_to_count_names_the_step() {
    for (min, max, step) in [("0", "1", "1e-300"), ("-1.7e308", "1.7e308", "1")] {
        let e = parse_err(&mutated(RANDOM, |v| {
            set(v, "/spec/parameters/0/feasibleSpace/min", json!(min));
            set(v, "/spec/parameters/0/feasibleSpace/max", json!(max));
            set(v, "/spec/parameters/0/feasibleSpace/step", json!(step));
        }));
        assert_error(
            &e,
            "spec.parameters[0].feasibleSpace.step",
            &format!("value {step:?} over"),
        );
        assert!(e.to_string().contains("more than 2^53 grid points"), "{e}");
    }
}

/// Repeated values are accepted with a warning (Katib accepts them); the check naming them must
/// stay linear: 100,000 values once took 24 s.
#[test]
fn a_hundred_thousand_categorical_values_validate_with_the_duplicate_named() {
    let mut list: Vec<String> = (0..100_000).map(|i| format!("v{i}")).collect();
    list.push("v99998".into());
    let exp = parse_ok(&mutated(RANDOM, |v| {
        set(v, "/spec/parameters/2/feasibleSpace/list", json!(list));
    }));
    let warnings: Vec<String> = crate::validate::warnings(&exp)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("spec.parameters[2].feasibleSpace.list[100000]")
            && warnings[0].contains(r#"value "v99998" duplicates list[99998]"#),
        "{warnings:?}"
    );
}

#[test]
fn discrete_duplicates_compare_numerically_including_signed_zero() {
    let exp = parse_ok(&mutated(RANDOM, |v| {
        set(
            v,
            "/spec/parameters/2",
            json!({"name": "optimizer", "parameterType": "discrete",
                   "feasibleSpace": {"list": ["0", "2", "-0.0", "2e0"]}}),
        )
    }));
    let warnings: Vec<String> = crate::validate::warnings(&exp)
        .iter()
        .map(ToString::to_string)
        .collect();
    for (item, text) in [
        ("list[2]", r#"value "-0.0" duplicates list[0]"#),
        ("list[3]", r#"value "2e0" duplicates list[1]"#),
    ] {
        assert!(
            warnings
                .iter()
                .any(|w| w.contains(item) && w.contains(text)),
            "{warnings:?}"
        );
    }
}

#[test]
fn parameter_names_that_break_name_value_lines_are_refused() {
    for name in ["a=b", "a\nb"] {
        let e = parse_err(&mutated(RANDOM, |v| {
            set(v, "/spec/parameters/0/name", json!(name));
        }));
        assert_error(
            &e,
            "spec.parameters[0].name",
            &format!("value {name:?} contains '='"),
        );
    }
}

#[test]
fn deep_flow_nesting_is_refused_at_once_naming_the_limit() {
    let yaml = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let e = parse_err(&yaml);
    assert!(e.to_string().contains("nests more than 128 levels"), "{e}");
    let json = format!("{{\"a\": {}1{}}}", "[".repeat(50_000), "]".repeat(50_000));
    let e = parse_err(&json);
    assert!(e.to_string().contains("nests more than 128 levels"), "{e}");
}

#[test]
fn an_endless_spec_file_is_refused_naming_the_file_and_the_limit() {
    let e = crate::parse_experiment_file(std::path::Path::new("/dev/zero")).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("/dev/zero") && text.contains("32 MiB"),
        "{text}"
    );
}

#[test]
fn a_collector_path_that_climbs_out_is_refused() {
    let e = parse_err(&mutated(RANDOM, |v| {
        set(
            v,
            "/spec/metricsCollectorSpec",
            json!({"collector": {"kind": "File"},
                   "source": {"fileSystemPath": {"kind": "File",
                                                 "path": "/../../../../tmp/x/metrics.log"}}}),
        )
    }));
    assert_error(
        &e,
        "spec.metricsCollectorSpec.source.fileSystemPath.path",
        r#"value "/../../../../tmp/x/metrics.log" must not contain '..'"#,
    );
}

#[test]
fn a_million_categorical_values_are_refused_naming_the_list_and_the_cap() {
    let list: Vec<String> = (0..1_000_000).map(|i| format!("v{i}")).collect();
    let e = parse_err(&mutated(RANDOM, |v| {
        set(v, "/spec/parameters/2/feasibleSpace/list", json!(list));
    }));
    assert_error(
        &e,
        "spec.parameters[2].feasibleSpace.list",
        "the list has 1000000 values, more than the 200000 a list may hold; hint:",
    );
}

/// 100,000 of everything that is cross-checked by name: parameters against trial parameters
/// and placeholders, metric strategies against metric names, repeated metric names. Each check
/// used to scan a list per entry (quadratic); this asserts the answers, not the time.
#[test]
fn a_hundred_thousand_parameters_and_metrics_are_checked_by_name() {
    const N: usize = 100_000;
    let params: Vec<serde_json::Value> = (0..N)
        .map(|i| {
            json!({"name": format!("p{i}"), "parameterType": "int",
                   "feasibleSpace": {"min": "1", "max": "1"}})
        })
        .collect();
    let trial_params: Vec<serde_json::Value> = (0..N)
        .map(|i| json!({"name": format!("t{i}"), "reference": format!("p{i}")}))
        .collect();
    let args: Vec<String> = (0..N)
        .map(|i| format!("${{trialParameters.t{i}}}"))
        .collect();
    let mut metrics: Vec<String> = (0..N).map(|i| format!("m{i}")).collect();
    metrics.push("m7".into());
    let mut strategies: Vec<serde_json::Value> = (0..N)
        .map(|i| json!({"name": format!("m{i}"), "value": "max"}))
        .collect();
    strategies.push(json!({"name": "m9", "value": "min"}));
    strategies.push(json!({"name": "nowhere", "value": "min"}));
    let exp = parse_ok(&mutated(RANDOM, |v| {
        set(v, "/spec/parameters", json!(params));
        set(
            v,
            "/spec/trialTemplate/trialParameters",
            json!(trial_params),
        );
        set(
            v,
            "/spec/trialTemplate/trialSpec/spec/template/spec/containers/0/command",
            json!(args),
        );
        set(v, "/spec/objective/additionalMetricNames", json!(metrics));
        set(v, "/spec/objective/metricStrategies", json!(strategies));
    }));
    let warnings: Vec<String> = crate::validate::warnings(&exp)
        .iter()
        .map(ToString::to_string)
        .filter(|w| !w.contains("min equals max") && !w.starts_with("spec.maxTrialCount"))
        .collect();
    assert_eq!(
        warnings,
        [
            format!(
                "spec.objective.additionalMetricNames[{N}]: value \"m7\" appears twice; it is \
                 collected once"
            ),
            format!(
                "spec.objective.metricStrategies[{N}].name: value \"m9\" has a strategy already \
                 (metricStrategies[9]), which is the one used"
            ),
            format!(
                "spec.objective.metricStrategies[{}].name: value \"nowhere\" is neither the \
                 objective metric nor an additional metric, so the strategy is not used; hint: \
                 add it to objective.additionalMetricNames to collect it",
                N + 1
            ),
        ]
    );
    let space = exp.search_space().unwrap();
    assert_eq!(space.len(), N);
    assert_eq!(
        space.parameters()[N - 1].domain,
        vernier_core::Domain::Discrete {
            values: vec!["1".into()]
        }
    );
    let objective = exp.objective().unwrap();
    assert_eq!(objective.additional.len(), N);
    assert_eq!(
        objective.additional[9],
        ("m9".to_string(), vernier_core::MetricStrategy::Max)
    );
}

/// A wrong reference among 100,000 parameters names a few of them, not all 100,000.
#[test]
fn a_wrong_reference_hints_at_ten_parameters_and_counts_the_rest() {
    let params: Vec<serde_json::Value> = (0..1000)
        .map(|i| {
            json!({"name": format!("p{i}"), "parameterType": "double",
                   "feasibleSpace": {"min": "0", "max": "1"}})
        })
        .collect();
    let e = parse_err(&mutated(RANDOM, |v| {
        set(v, "/spec/parameters", json!(params));
        set(
            v,
            "/spec/trialTemplate/trialParameters/0/reference",
            json!("lr"),
        );
    }));
    assert_error(
        &e,
        "spec.trialTemplate.trialParameters[0].reference",
        "hint: use one of p0, p1, p2, p3, p4, p5, p6, p7, p8, p9 (and 990 more)",
    );
}

/// Block nesting has no brackets to count up front; inside `trialSpec` (any value is allowed
/// there) the YAML deserializer's own depth limit must answer, with the limit named.
#[test]
fn deep_block_nesting_is_an_error_not_a_stack_overflow() {
    let head = &RANDOM[..RANDOM.find("    trialSpec:").unwrap()];
    let sequences = format!("{head}    trialSpec:\n      {}1\n", "- ".repeat(100_000));
    let mut mappings = format!("{head}    trialSpec:\n");
    for depth in 0..5_000 {
        mappings.push_str(&" ".repeat(6 + depth));
        mappings.push_str("a:\n");
    }
    for (what, text) in [("sequences", sequences), ("mappings", mappings)] {
        let e = parse_err(&text).to_string();
        assert!(
            e.contains("nests more than 128 levels of block sequences or mappings"),
            "{what}: {e}"
        );
    }
}

/// A double bound near `f64::MAX` is written `1.7e308` in errors, not with 309 digits.
#[test]
fn huge_bounds_print_shortly_in_errors() {
    let e = parse_err(&mutated(RANDOM, |v| {
        set(v, "/spec/parameters/1/feasibleSpace/min", json!("-1e-300"));
        set(v, "/spec/parameters/1/feasibleSpace/max", json!("1.7e308"));
        set(
            v,
            "/spec/enqueuedTrials",
            json!([{"parameterAssignments": [
                {"name": "lr", "value": "0.02"},
                {"name": "momentum", "value": "-1e300"},
                {"name": "optimizer", "value": "adam"}
            ]}]),
        );
    }));
    assert_error(
        &e,
        "spec.enqueuedTrials[0].parameterAssignments",
        "outside [-1e-300, 1.7e308]",
    );
}
