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
