//! Invalid specs: each test asserts the exact field path (and the offending value) is reported.

use super::{RANDOM, TFJOB, assert_error, mutated, parse_err, parse_ok, set};
use crate::SpecError;
use serde_json::{Value, json};

fn err_with(fixture: &str, f: impl FnOnce(&mut Value)) -> crate::SpecErrors {
    parse_err(&mutated(fixture, f))
}

#[test]
fn min_not_a_number() {
    let e = err_with(RANDOM, |v| {
        set(v, "/spec/parameters/1/feasibleSpace/min", json!("abc"))
    });
    assert_error(
        &e,
        "spec.parameters[1].feasibleSpace.min",
        r#"value "abc" is not a number"#,
    );
}

/// A tab in an indentation (invisible in most editors) and a quoted count say what to change.
#[test]
fn syntax_and_type_mistakes_carry_a_hint() {
    let tabbed = RANDOM.replacen("  maxTrialCount", "\tmaxTrialCount", 1);
    let e = parse_err(&tabbed).to_string();
    assert!(e.contains("hint: YAML indents with spaces only"), "{e}");
    let unbalanced = RANDOM.replacen("maxTrialCount: ", "maxTrialCount: [", 1);
    let e = parse_err(&unbalanced).to_string();
    assert!(
        e.contains("hint: check the indentation, colons and quotes on line"),
        "{e}"
    );
    let quoted = err_with(RANDOM, |v| set(v, "/spec/maxTrialCount", json!("4")));
    assert_error(
        &quoted,
        "spec.maxTrialCount",
        "hint: write the number without quotes",
    );
}

/// The mistakes made most often each come with what would fix them.
#[test]
fn common_mistakes_carry_a_hint() {
    let e = err_with(RANDOM, |v| {
        set(v, "/spec/parameters/0/feasibleSpace/min", json!("0.5"));
        set(v, "/spec/parameters/0/feasibleSpace/max", json!("0.1"));
        set(v, "/spec/parameters/1/feasibleSpace/min", json!("one"));
        set(v, "/spec/parallelTrialCount", json!(-1));
    });
    let cases = [
        (
            "spec.parameters[0].feasibleSpace.max",
            "hint: swap min and max",
        ),
        (
            "spec.parameters[1].feasibleSpace.min",
            "hint: write it as a quoted",
        ),
        (
            "spec.parallelTrialCount",
            "hint: the number of trials run at once",
        ),
    ];
    for (path, hint) in cases {
        assert_error(&e, path, hint);
    }
}

#[test]
fn misspelt_top_level_field() {
    let text = RANDOM.replace("parallelTrialCount", "paralelTrialCount");
    let e = parse_err(&text);
    assert_error(
        &e,
        "spec.paralelTrialCount",
        r#"unknown field "paralelTrialCount"; hint: did you mean "parallelTrialCount"?"#,
    );
}

#[test]
fn known_field_at_the_wrong_level() {
    let e = err_with(RANDOM, |v| set(v, "/spec/goal", json!(0.1)));
    assert_error(&e, "spec.goal", "belongs at another level");
}

/// kubectl's strict validation refuses a misspelt metadata field; the fields of
/// `kubectl get -o yaml` are read as they are.
#[test]
fn misspelt_metadata_fields_are_refused() {
    let e = err_with(RANDOM, |v| {
        set(v, "/metadata/namspace", json!("team-a"));
        set(v, "/metadata/lables", json!({"a": "b"}));
        set(v, "/metadata/owner", json!("me"));
    });
    assert_error(
        &e,
        "metadata.namspace",
        r#"unknown field "namspace"; hint: did you mean "namespace"?"#,
    );
    assert_error(&e, "metadata.lables", r#"did you mean "labels"?"#);
    assert_error(&e, "metadata.owner", "put it under metadata.labels");
    let exported = mutated(RANDOM, |v| {
        set(v, "/metadata/uid", json!("5e0c"));
        set(v, "/metadata/resourceVersion", json!("42"));
        set(
            v,
            "/metadata/managedFields",
            json!([{"manager": "kubectl"}]),
        );
        set(
            v,
            "/metadata/creationTimestamp",
            json!("2026-12-01T00:00:00Z"),
        );
    });
    crate::parse_experiment(&exported).expect("kubectl get -o yaml is read");
}

#[test]
fn all_unknown_fields_are_reported_with_paths() {
    let e = err_with(RANDOM, |v| {
        set(v, "/spec/parameters/0/feasibleSpace/mn", json!("1"));
        set(
            v,
            "/spec/trialTemplate/trialParameters/1/refrence",
            json!("x"),
        );
        set(v, "/spec/objective/extra", json!(1));
        // Free-form places accept anything (a Job's own fields: validate/batch_job.rs).
        set(
            v,
            "/spec/trialTemplate/trialSpec/metadata",
            json!({"annotations": {"whatever": "a"}}),
        );
        set(v, "/metadata/uid", json!("123"));
    });
    assert_error(&e, "spec.parameters[0].feasibleSpace.mn", "unknown field");
    assert_error(
        &e,
        "spec.trialTemplate.trialParameters[1].refrence",
        r#"did you mean "reference""#,
    );
    assert_error(&e, "spec.objective.extra", "unknown field");
    assert_eq!(e.len(), 3, "{e}");
}

#[test]
fn bad_objective_type() {
    let e = err_with(RANDOM, |v| {
        set(v, "/spec/objective/type", json!("minimise"))
    });
    assert_error(
        &e,
        "spec.objective.type",
        r#"value "minimise" is not supported; hint: did you mean "minimize"? use one of minimize, maximize"#,
    );
}

#[test]
fn max_failed_above_max_trials() {
    let e = err_with(RANDOM, |v| set(v, "/spec/maxFailedTrialCount", json!(20)));
    assert_error(
        &e,
        "spec.maxFailedTrialCount",
        "value 20 must not be greater than spec.maxTrialCount (12)",
    );
}

#[test]
fn counts_must_be_positive() {
    let e = err_with(RANDOM, |v| {
        set(v, "/spec/maxTrialCount", json!(0));
        set(v, "/spec/parallelTrialCount", json!(-1));
        set(v, "/spec/maxFailedTrialCount", json!(-2));
    });
    assert_error(&e, "spec.maxTrialCount", "value 0 must be greater than 0");
    assert_error(&e, "spec.parallelTrialCount", "value -1");
    assert_error(
        &e,
        "spec.maxFailedTrialCount",
        "value -2 must not be negative",
    );
}

/// A refused maxTrialCount is not also a bound the other counts are held to.
#[test]
fn a_refused_max_trial_count_bounds_nothing_else() {
    let e = err_with(RANDOM, |v| set(v, "/spec/maxTrialCount", json!(-2)));
    assert_error(&e, "spec.maxTrialCount", "value -2 must be greater than 0");
    assert_eq!(e.0.len(), 1, "{e}");
}

#[test]
fn reference_to_unknown_parameter() {
    let e = err_with(RANDOM, |v| {
        set(
            v,
            "/spec/trialTemplate/trialParameters/0/reference",
            json!("learning_rate"),
        )
    });
    assert_error(
        &e,
        "spec.trialTemplate.trialParameters[0].reference",
        r#"value "learning_rate" is not a parameter in spec.parameters; hint: use one of lr, momentum, optimizer"#,
    );
    // Katib would fail every trial: "lr" now has no trial parameter to land in.
    assert_error(&e, "spec.parameters[0].name", "is not referenced");
}

#[test]
fn undefined_placeholder() {
    let e = err_with(RANDOM, |v| {
        set(
            v,
            "/spec/trialTemplate/trialSpec/spec/template/spec/containers/0/command/6",
            json!("--batch=${trialParameters.batchSize}"),
        )
    });
    assert_error(
        &e,
        "spec.trialTemplate.trialSpec",
        r#"placeholder "${trialParameters.batchSize}" is not defined"#,
    );
}

#[test]
fn unused_trial_parameter() {
    let e = err_with(RANDOM, |v| {
        set(
            v,
            "/spec/trialTemplate/trialParameters/3",
            json!({"name": "trialName", "reference": "${trialSpec.Name}"}),
        )
    });
    assert_error(
        &e,
        "spec.trialTemplate.trialParameters[3].name",
        r#"trial parameter "trialName" is not used"#,
    );
}

#[test]
fn bad_metrics_format_regexes() {
    let e = err_with(RANDOM, |v| {
        set(
            v,
            "/spec/metricsCollectorSpec",
            json!({"collector": {"kind": "File"},
                   "source": {"filter": {"metricsFormat": [
                       "([a-z",
                       "(\\w+)=\\d+",
                       "(\\w+)=(\\d+)",
                       // Katib's PyTorch example: literal braces, as Go reads them.
                       "{metricName: ([\\w|-]+), metricValue: ((-?\\d+)(\\.\\d+)?)}",
                       // Valid in Rust's syntax, refused by Go's, which Katib's webhook uses.
                       "(\\w+)=\\u0030([\\d.]+)"]}}}),
        )
    });
    assert_error(
        &e,
        "spec.metricsCollectorSpec.source.filter.metricsFormat[0]",
        r#"value `([a-z` is not a valid regular expression"#,
    );
    assert_error(
        &e,
        "spec.metricsCollectorSpec.source.filter.metricsFormat[1]",
        r"value `(\w+)=\d+` has 1 capture group(s)",
    );
    assert!(!e.to_string().contains("metricsFormat[2]"), "{e}");
    assert!(!e.to_string().contains("metricsFormat[3]"), "{e}");
    assert_error(
        &e,
        "spec.metricsCollectorSpec.source.filter.metricsFormat[4]",
        "for Go's regexp, which Katib compiles it with: invalid escape sequence",
    );
}

#[test]
fn yaml_syntax_error_has_line_and_column() {
    let text = RANDOM.replace("    goal: 0.001\n", "    goal: 0.001\n   bad: [\n");
    let e = parse_err(&text);
    assert_eq!(e.len(), 1);
    match &e.errors()[0] {
        SpecError::Syntax { line, column, .. } => {
            assert!(*line >= 13, "line {line}");
            assert!(*column > 0);
        }
        other => panic!("expected a syntax error, got {other}"),
    }
    assert!(e.to_string().starts_with("invalid yaml:"), "{e}");
    assert!(e.errors()[0].path().starts_with("line "), "{e}");
}

#[test]
fn json_syntax_error_has_line_and_column() {
    let e = parse_err("{\n  \"apiVersion\": \"kubeflow.org/v1beta1\",\n  \"kind\": }\n");
    match &e.errors()[0] {
        SpecError::Syntax { line, .. } => assert_eq!(*line, 3),
        other => panic!("expected a syntax error, got {other}"),
    }
}

#[test]
fn type_error_names_the_path() {
    let text = RANDOM.replace("parallelTrialCount: 3", "parallelTrialCount: abc");
    let e = parse_err(&text);
    assert_error(
        &e,
        "spec.parallelTrialCount",
        r#"invalid type: string "abc", expected an integer"#,
    );
    let nested = RANDOM.replace("    goal: 0.001", "    goal: [1]");
    assert_error(
        &parse_err(&nested),
        "spec.objective.goal",
        "invalid type: sequence, expected a number",
    );
    assert_error(
        &parse_err(&nested),
        "spec.objective.goal",
        "invalid type: sequence",
    );
}

#[test]
fn every_type_error_is_listed_at_once() {
    let text = RANDOM
        .replace("parallelTrialCount: 3", "parallelTrialCount: abc")
        .replace("    goal: 0.001", "    goal: low");
    let e = parse_err(&text);
    assert_eq!(e.errors().len(), 2, "{e}");
    assert_error(
        &e,
        "spec.objective.goal",
        r#"string "low", expected a number"#,
    );
    assert_error(&e, "spec.parallelTrialCount", "expected an integer");
    // A count too large for Katib's int32 field says the range.
    let e = parse_err(&RANDOM.replace("parallelTrialCount: 3", "parallelTrialCount: 99999999999"));
    assert_error(
        &e,
        "spec.parallelTrialCount",
        "invalid value: integer `99999999999`, expected an integer from -2147483648 to 2147483647",
    );
    let text = RANDOM.replace("  parameters:\n", "  parameters:\n    - 7\n");
    assert_error(
        &parse_err(&text),
        "spec.parameters[0]",
        "invalid type: integer `7`, expected a mapping",
    );
}

#[test]
fn wrong_api_version_and_kind() {
    let text = RANDOM
        .replace("kubeflow.org/v1beta1", "kubeflow.org/v1alpha3")
        .replace("kind: Experiment", "kind: Trial");
    let e = parse_err(&text);
    assert_error(
        &e,
        "apiVersion",
        r#"value "kubeflow.org/v1alpha3" is not supported"#,
    );
    assert_error(&e, "kind", r#"value "Trial" is not supported"#);
    let e = parse_err(&RANDOM.replace("kind: Experiment", ""));
    assert_error(&e, "kind", "is required; hint: set kind: Experiment");
}

#[test]
fn invalid_names() {
    let e = err_with(RANDOM, |v| set(v, "/metadata/name", json!("1234-test")));
    assert_error(
        &e,
        "metadata.name",
        r#"value "1234-test" is not a valid name"#,
    );
    let long = "a".repeat(41);
    let e = err_with(RANDOM, |v| set(v, "/metadata/name", json!(long)));
    assert_error(&e, "metadata.name", "is 41 characters long");
    for bad in ["Bad_NS", "-team", "team-", &"a".repeat(64)] {
        let e = err_with(RANDOM, |v| set(v, "/metadata/namespace", json!(bad)));
        assert_error(
            &e,
            "metadata.namespace",
            "is not a Kubernetes namespace name",
        );
    }
    for good in ["1team", "kubeflow-user-example-com"] {
        parse_ok(&mutated(RANDOM, |v| {
            set(v, "/metadata/namespace", json!(good))
        }));
    }
}

#[test]
fn unknown_algorithm_lists_known_ones() {
    let e = err_with(RANDOM, |v| {
        set(v, "/spec/algorithm/algorithmName", json!("bayesian"))
    });
    assert_error(
        &e,
        "spec.algorithm.algorithmName",
        r#"value "bayesian" is not supported; hint: did you mean "bayesianoptimization"? use one of random, grid, sobol, tpe, multivariate-tpe, bayesianoptimization, cmaes, hyperband, asha"#,
    );
}

/// Names a plugin serves join the list once, also one that is a built-in name.
#[test]
fn unknown_algorithm_lists_served_names_once() {
    let yaml = mutated(RANDOM, |v| {
        set(v, "/spec/algorithm/algorithmName", json!("goptuna"))
    });
    let e = crate::parse_experiment_served(&yaml, &["random", "my-ladder"]).unwrap_err();
    assert_error(
        &e,
        "spec.algorithm.algorithmName",
        r#"value "goptuna" is not supported; hint: use one of random, grid, sobol, tpe, multivariate-tpe, bayesianoptimization, cmaes, hyperband, asha, nsga2, pbt, bohb, darts, enas, my-ladder"#,
    );
}

#[test]
fn unknown_early_stopping() {
    let e = err_with(RANDOM, |v| {
        set(
            v,
            "/spec/earlyStopping",
            json!({"algorithmName": "truncation"}),
        )
    });
    assert_error(
        &e,
        "spec.earlyStopping.algorithmName",
        r#"value "truncation" is not supported; hint: use one of medianstop, asha"#,
    );
}

#[test]
fn int_step_must_be_a_positive_integer() {
    let e = err_with(TFJOB, |v| {
        set(v, "/spec/parameters/0/feasibleSpace/step", json!("0.5"))
    });
    assert_error(
        &e,
        "spec.parameters[0].feasibleSpace.step",
        r#"value "0.5" is not an integer"#,
    );
    let e = err_with(TFJOB, |v| {
        set(v, "/spec/parameters/0/feasibleSpace/step", json!("0"))
    });
    assert_error(
        &e,
        "spec.parameters[0].feasibleSpace.step",
        r#"value "0" must be greater than 0"#,
    );
}

#[test]
fn min_must_not_be_above_max() {
    let e = err_with(RANDOM, |v| {
        set(v, "/spec/parameters/0/feasibleSpace/min", json!("0.06"))
    });
    assert_error(
        &e,
        "spec.parameters[0].feasibleSpace.max",
        r#"value "0.05" must not be less than min "0.06""#,
    );
}

#[test]
fn shape_rules_by_parameter_type() {
    let e = err_with(RANDOM, |v| {
        set(v, "/spec/parameters/0/feasibleSpace/list", json!(["1"]));
        set(v, "/spec/parameters/2/feasibleSpace/min", json!("1"));
        set(v, "/spec/parameters/1/parameterType", json!("float"));
    });
    assert_error(
        &e,
        "spec.parameters[0].feasibleSpace.list",
        "must not be set for a double parameter",
    );
    assert_error(
        &e,
        "spec.parameters[2].feasibleSpace.min",
        "must not be set for a categorical parameter",
    );
    assert_error(&e, "spec.parameters[1].parameterType", r#"value "float""#);
}

#[test]
fn duplicate_parameter_names() {
    let e = err_with(RANDOM, |v| set(v, "/spec/parameters/1/name", json!("lr")));
    assert_error(
        &e,
        "spec.parameters[1].name",
        r#"value "lr" is already the name of spec.parameters[0]"#,
    );
}

#[test]
fn metric_strategy_rules() {
    let e = err_with(RANDOM, |v| {
        set(
            v,
            "/spec/objective/metricStrategies",
            json!([{"name": "loss", "value": "median"}, {"name": "f1", "value": "max"}]),
        )
    });
    assert_error(
        &e,
        "spec.objective.metricStrategies[0].value",
        r#"value "median" is not supported; hint: use one of min, max, latest"#,
    );
    // A strategy for a metric the objective does not list is Katib-valid (a warning only).
    assert_eq!(e.len(), 1, "{e}");
}

#[test]
fn additional_metric_equal_to_objective() {
    let e = err_with(RANDOM, |v| {
        set(v, "/spec/objective/additionalMetricNames/1", json!("loss"))
    });
    assert_error(
        &e,
        "spec.objective.additionalMetricNames[1]",
        r#"value "loss" is already the objective metric"#,
    );
}

#[test]
fn resume_policy_and_nas_exclusivity() {
    let e = err_with(RANDOM, |v| {
        set(v, "/spec/resumePolicy", json!("Always"));
        set(
            v,
            "/spec/nasConfig",
            json!({"graphConfig": {"numLayers": 8}}),
        );
    });
    assert_error(
        &e,
        "spec.resumePolicy",
        r#"value "Always" is not supported"#,
    );
    assert_error(
        &e,
        "spec.nasConfig",
        "must not be set together with spec.parameters",
    );
}

#[test]
fn trial_spec_must_not_name_itself() {
    let e = err_with(RANDOM, |v| {
        set(
            v,
            "/spec/trialTemplate/trialSpec/metadata",
            json!({"name": "fixed"}),
        );
        v["spec"]["trialTemplate"]["trialSpec"]
            .as_object_mut()
            .unwrap()
            .remove("apiVersion");
    });
    assert_error(
        &e,
        "spec.trialTemplate.trialSpec.metadata.name",
        r#"value "fixed" must not be set"#,
    );
    assert_error(&e, "spec.trialTemplate.trialSpec.apiVersion", "is required");
}

/// A version its group does not serve for the kind (`batch/v2` Job): Katib's webhook passes
/// it, and every trial would fail to be created; custom groups are the cluster's to judge.
#[test]
fn a_job_under_a_version_its_group_does_not_serve_is_refused() {
    for (version, hint) in [
        ("batch/v2", "use batch/v1"),
        ("batch/v1beta1", "use batch/v1"),
    ] {
        let e = err_with(RANDOM, |v| {
            set(
                v,
                "/spec/trialTemplate/trialSpec/apiVersion",
                json!(version),
            );
        });
        assert_error(
            &e,
            "spec.trialTemplate.trialSpec.apiVersion",
            &format!("value {version:?} is not served for kind Job"),
        );
        assert_error(&e, "spec.trialTemplate.trialSpec.apiVersion", hint);
    }
}

#[test]
fn config_map_source_is_shape_checked() {
    let e = err_with(RANDOM, |v| {
        let tt = v["spec"]["trialTemplate"].as_object_mut().unwrap();
        tt.remove("trialSpec");
        tt.insert(
            "configMap".into(),
            json!({"configMapName": "trial-templates", "configMapNamespace": "kubeflow"}),
        );
    });
    assert_error(
        &e,
        "spec.trialTemplate.configMap.templatePath",
        "is required",
    );
    // No default conditions for a ConfigMap template.
    assert_error(&e, "spec.trialTemplate.successCondition", "is required");
}

#[test]
fn file_collector_needs_absolute_path_and_no_filter_with_json() {
    let e = err_with(RANDOM, |v| {
        set(
            v,
            "/spec/metricsCollectorSpec",
            json!({"collector": {"kind": "File"},
                   "source": {"fileSystemPath": {"path": "logs/m.log", "format": "JSON"},
                              "filter": {"metricsFormat": ["(\\w+)=(\\d+)"]}}}),
        )
    });
    assert_error(
        &e,
        "spec.metricsCollectorSpec.source.fileSystemPath.path",
        r#"value "logs/m.log" must be an absolute path"#,
    );
    assert_error(
        &e,
        "spec.metricsCollectorSpec.source.filter",
        "must not be set with format JSON",
    );
}

#[test]
fn unknown_collector_kind_and_missing_custom_container() {
    let e = err_with(RANDOM, |v| {
        set(
            v,
            "/spec/metricsCollectorSpec",
            json!({"collector": {"kind": "None"}}),
        )
    });
    assert_error(
        &e,
        "spec.metricsCollectorSpec.collector.kind",
        r#"value "None" is not supported"#,
    );
    assert!(e.to_string().contains("hint: write Push"), "{e}");
    let e = err_with(RANDOM, |v| {
        set(
            v,
            "/spec/metricsCollectorSpec",
            json!({"collector": {"kind": "Custom"}}),
        )
    });
    assert_error(
        &e,
        "spec.metricsCollectorSpec.collector.customCollector",
        "is required",
    );
    // Katib fills in StdOut only for a missing collector; one without a kind is refused.
    for collector in [json!({}), json!({"kind": ""})] {
        let e = err_with(RANDOM, |v| {
            set(
                v,
                "/spec/metricsCollectorSpec",
                json!({ "collector": collector }),
            )
        });
        assert_error(
            &e,
            "spec.metricsCollectorSpec.collector.kind",
            r#"value "" is not supported"#,
        );
    }
}

#[test]
fn trial_parameter_name_and_meta_reference_rules() {
    let e = err_with(RANDOM, |v| {
        set(
            v,
            "/spec/trialTemplate/trialParameters/1/name",
            json!("mo{m}"),
        );
        set(
            v,
            "/spec/trialTemplate/trialParameters/3",
            json!({"name": "team", "reference": "${trialSpec.Labels[team]}"}),
        );
        set(
            v,
            "/spec/trialTemplate/trialParameters/4",
            json!({"name": "bad", "reference": "${trialSpec.Uid}"}),
        );
    });
    assert_error(
        &e,
        "spec.trialTemplate.trialParameters[1].name",
        "must not contain",
    );
    // Said once: not also "not used", with a placeholder nobody could write.
    let about_it = e
        .errors()
        .iter()
        .filter(|x| x.path() == "spec.trialTemplate.trialParameters[1].name")
        .count();
    assert_eq!(about_it, 1, "{e}");
    assert_error(
        &e,
        "spec.trialTemplate.trialParameters[3].reference",
        r#"labels key "team" is not set"#,
    );
    assert_error(
        &e,
        "spec.trialTemplate.trialParameters[4].reference",
        "unknown meta reference",
    );
}

#[test]
fn missing_required_sections() {
    let e = parse_err(
        "apiVersion: kubeflow.org/v1beta1\nkind: Experiment\nmetadata:\n  name: x\nspec: {}\n",
    );
    for path in [
        "spec.objective",
        "spec.algorithm",
        "spec.parameters",
        "spec.trialTemplate",
    ] {
        assert_error(&e, path, "is required");
    }
}

#[test]
fn several_errors_are_reported_at_once() {
    let e = err_with(RANDOM, |v| {
        set(v, "/spec/objective/type", json!("up"));
        set(v, "/spec/parameters/0/feasibleSpace/max", json!("x"));
        set(v, "/spec/algorithm/algorithmName", json!("magic"));
        set(v, "/spec/paralelTrialCount", json!(2));
    });
    assert!(e.len() >= 4, "{e}");
    assert_error(&e, "spec.objective.type", "\"up\"");
    assert_error(&e, "spec.parameters[0].feasibleSpace.max", "\"x\"");
    assert_error(&e, "spec.algorithm.algorithmName", "\"magic\"");
    assert_error(&e, "spec.paralelTrialCount", "unknown field");
    // One error per line, `path: message`.
    assert_eq!(e.to_string().lines().count(), e.len());
}

#[test]
fn metric_names_longer_than_any_store_keys() {
    let long = "m".repeat(256);
    let e = err_with(RANDOM, |v| {
        set(v, "/spec/objective/objectiveMetricName", json!(long));
        set(v, "/spec/objective/additionalMetricNames", json!([long]));
    });
    assert_error(
        &e,
        "spec.objective.objectiveMetricName",
        "is 256 bytes long, more than the 255 a metric name may have",
    );
    assert_error(
        &e,
        "spec.objective.additionalMetricNames[0]",
        "is 256 bytes long",
    );
    // 255 is fine.
    let ok = mutated(RANDOM, |v| {
        set(
            v,
            "/spec/objective/objectiveMetricName",
            json!("m".repeat(255)),
        )
    });
    assert!(crate::parse_experiment(&ok).is_ok());
}

/// Fields whose refusal no other test reached: each names its path and the value written.
#[test]
fn less_common_mistakes_name_the_field_and_value() {
    let pod = "/spec/trialTemplate/trialSpec/spec/template/spec";
    type Change = Box<dyn FnOnce(&mut Value)>;
    let cases: Vec<(Change, &str, &str)> = vec![
        (
            Box::new(|v| {
                set(
                    v,
                    "/spec/metricsCollectorSpec",
                    json!({"collector": {"kind": "PrometheusMetric"},
                           "source": {"httpGet": {"port": -1, "path": "metrics"}}}),
                )
            }),
            "spec.metricsCollectorSpec.source.httpGet.port",
            "value -1 must be a port number from 1 to 65535; hint:",
        ),
        (
            Box::new(|v| {
                set(
                    v,
                    "/spec/metricsCollectorSpec",
                    json!({"collector": {"kind": "PrometheusMetric"},
                           "source": {"httpGet": {"port": 70000, "path": "/metrics"}}}),
                )
            }),
            "spec.metricsCollectorSpec.source.httpGet.port",
            "value 70000 must be a port number from 1 to 65535",
        ),
        (
            Box::new(|v| {
                set(
                    v,
                    "/spec/metricsCollectorSpec",
                    json!({"collector": {"kind": "PrometheusMetric"},
                           "source": {"httpGet": {"port": "abc", "path": "metrics"}}}),
                )
            }),
            "spec.metricsCollectorSpec.source.httpGet.path",
            r#"value "metrics" must start with '/'; hint: e.g. /metrics"#,
        ),
        (
            Box::new(|v| {
                set(
                    v,
                    "/spec/trialTemplate/trialSpec/spec/backoffLimitt",
                    json!(3),
                )
            }),
            "spec.trialTemplate.trialSpec.spec.backoffLimitt",
            "is not a field of a batch/v1 Job",
        ),
        (
            Box::new(|v| {
                set(
                    v,
                    "/spec/trialTemplate/trialParameters/1/reference",
                    json!("lr"),
                )
            }),
            "spec.trialTemplate.trialParameters[1].reference",
            r#"value "lr" is referenced twice; hint:"#,
        ),
        (
            Box::new(|v| {
                set(
                    v,
                    "/spec/trialTemplate/configMap",
                    json!({"configMapName": "templates", "configMapNamespace": "kubeflow",
                           "templatePath": "job.yaml"}),
                )
            }),
            "spec.trialTemplate",
            "only one of trialSpec and configMap may be set; hint: remove one of them",
        ),
        (
            Box::new(move |v| {
                set(
                    v,
                    &format!("{pod}/containers/0/resources/limits/cpu"),
                    json!("abc"),
                )
            }),
            "spec.trialTemplate.trialSpec.spec.template.spec.containers[0].resources.limits.cpu",
            r#"value "abc" is not a quantity; hint: write a number"#,
        ),
        (
            Box::new(|v| set(v, "/spec/objective/additionalMetricNames/0", json!(" "))),
            "spec.objective.additionalMetricNames[0]",
            r#"value " " is not a metric name; hint: remove the empty entry"#,
        ),
        (
            Box::new(|v| set(v, "/spec/parameters/2/feasibleSpace/list/1", json!(""))),
            "spec.parameters[2].feasibleSpace.list[1]",
            r#"value "" is empty; hint:"#,
        ),
    ];
    for (change, path, needle) in cases {
        let e = err_with(RANDOM, change);
        assert_error(&e, path, needle);
    }
}
