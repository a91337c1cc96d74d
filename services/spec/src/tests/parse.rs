//! Parsing valid specs: Katib's example shape, YAML numbers as written, JSON input, round trip.

use super::{RANDOM, TFJOB, parse_err, parse_ok};
use crate::types::Experiment;
use crate::{parse_experiment, parse_experiment_file};
use serde_json::json;
use vernier_core::{Direction, Distribution, Domain, MetricStrategy};

#[test]
fn parses_katib_random_example() {
    let exp = parse_ok(RANDOM);
    assert_eq!(exp.name(), "random");
    assert_eq!(exp.metadata.namespace.as_deref(), Some("kubeflow"));
    assert_eq!(exp.metadata.labels["team"], "ml");
    assert_eq!(exp.spec.max_trial_count, Some(12));
    let tt = exp.spec.trial_template.as_ref().unwrap();
    assert_eq!(tt.trial_parameters.len(), 3);
    assert_eq!(
        tt.trial_spec.as_ref().unwrap()["spec"]["template"]["spec"]["containers"][0]["command"][3],
        json!("--lr=${trialParameters.learningRate}")
    );
}

#[test]
fn unquoted_yaml_numbers_keep_their_text() {
    let exp = parse_ok(RANDOM);
    let fs = exp.spec.parameters[1].feasible_space.as_ref().unwrap();
    assert_eq!(fs.min.as_deref(), Some("0.5"));
    assert_eq!(fs.max.as_deref(), Some("0.90"));
}

#[test]
fn converts_to_core_types() {
    let exp = parse_ok(RANDOM);
    let space = exp.search_space().unwrap();
    assert_eq!(space.len(), 3);
    assert_eq!(
        space.parameters()[0].domain,
        Domain::Double {
            min: 0.01,
            max: 0.05,
            step: None
        }
    );
    assert_eq!(space.parameters()[0].distribution, Distribution::Uniform);
    assert_eq!(
        space.parameters()[2].domain,
        Domain::Categorical {
            values: vec!["sgd".into(), "adam".into()]
        }
    );
    let obj = exp.objective().unwrap();
    assert_eq!(obj.direction, Direction::Minimize);
    assert_eq!(obj.goal, Some(0.001));
    assert_eq!(obj.strategy, MetricStrategy::Min);
    assert_eq!(
        obj.additional,
        vec![("accuracy".to_string(), MetricStrategy::Min)]
    );
    assert_eq!(exp.metric_names(), vec!["loss", "accuracy"]);

    let tf = parse_ok(TFJOB);
    assert_eq!(
        tf.search_space().unwrap().parameters()[0].domain,
        Domain::Int {
            min: 100,
            max: 200,
            step: Some(10)
        }
    );
    assert_eq!(tf.objective().unwrap().strategy, MetricStrategy::Max);
}

#[test]
fn int_bounds_accept_integral_floats_and_discrete_keeps_text() {
    let text = super::mutated(RANDOM, |v| {
        super::set(
            v,
            "/spec/parameters/0",
            json!({"name": "lr", "parameterType": "int",
                   "feasibleSpace": {"min": "1.0", "max": "8", "step": "2.0"}}),
        );
        super::set(
            v,
            "/spec/parameters/1",
            json!({"name": "momentum", "parameterType": "discrete",
                   "feasibleSpace": {"list": ["0.50", "1e-3", "2"]}}),
        );
    });
    let exp = parse_ok(&text);
    let space = exp.search_space().unwrap();
    assert_eq!(
        space.parameters()[0].domain,
        Domain::Int {
            min: 1,
            max: 8,
            step: Some(2)
        }
    );
    assert_eq!(
        space.parameters()[1].domain,
        Domain::Discrete {
            values: vec!["0.50".into(), "1e-3".into(), "2".into()]
        }
    );
}

#[test]
fn yaml_to_types_to_json_to_types_is_identity() {
    for fixture in [RANDOM, TFJOB] {
        let exp = parse_ok(fixture);
        let json = serde_json::to_string(&exp).unwrap();
        let back: Experiment = serde_json::from_str(&json).unwrap();
        assert_eq!(back, exp);
        // And through the full parser again, in both compact and pretty JSON.
        assert_eq!(parse_ok(&json), exp);
        assert_eq!(parse_ok(&serde_json::to_string_pretty(&exp).unwrap()), exp);
    }
}

#[test]
fn raw_types_round_trip_and_omit_absent_fields() {
    // Straight deserialisation, no defaults, so absent fields stay absent.
    let raw: Experiment = yaml_serde::from_str(RANDOM).unwrap();
    let value = serde_json::to_value(&raw).unwrap();
    let back: Experiment = serde_json::from_value(value.clone()).unwrap();
    assert_eq!(back, raw);
    let spec = value["spec"].as_object().unwrap();
    for absent in [
        "earlyStopping",
        "nasConfig",
        "resumePolicy",
        "metricsCollectorSpec",
    ] {
        assert!(!spec.contains_key(absent), "{absent} was serialised");
    }
    let tt = spec["trialTemplate"].as_object().unwrap();
    for absent in [
        "retain",
        "configMap",
        "successCondition",
        "primaryPodLabels",
    ] {
        assert!(!tt.contains_key(absent), "{absent} was serialised");
    }
    assert!(value.get("status").is_none());
    assert!(
        value["spec"]["parameters"][2]["feasibleSpace"]
            .get("min")
            .is_none()
    );
    assert_eq!(
        serde_json::to_value(Experiment::default()).unwrap(),
        json!({"apiVersion": "", "kind": "", "metadata": {}, "spec": {}})
    );
}

#[test]
fn json_input_with_numeric_bounds_is_accepted() {
    let mut v: serde_json::Value = yaml_serde::from_str(RANDOM).unwrap();
    v["spec"]["parameters"][0]["feasibleSpace"] = json!({"min": 0.010, "max": 0.05});
    let compact = v.to_string().replace("0.01,", "0.010,");
    let exp = parse_ok(&compact);
    let fs = exp.spec.parameters[0].feasible_space.as_ref().unwrap();
    assert_eq!(fs.max.as_deref(), Some("0.05"));
    assert!(matches!(fs.min.as_deref(), Some("0.010") | Some("0.01")));
}

#[test]
fn json_value_input_keeps_numeric_text() {
    let mut v: serde_json::Value = yaml_serde::from_str(RANDOM).unwrap();
    v["spec"]["parameters"][1]["feasibleSpace"]["max"] = json!(0.9);
    let exp = crate::parse_experiment_value(&v).unwrap();
    let fs = exp.spec.parameters[1].feasible_space.as_ref().unwrap();
    assert_eq!(fs.max.as_deref(), Some("0.9"));
}

/// A cluster's object arrives as JSON the user never wrote: a type error names the field and
/// the value, not a column of that text.
#[test]
fn json_value_type_errors_carry_no_text_position() {
    let mut v: serde_json::Value = yaml_serde::from_str(RANDOM).unwrap();
    v["spec"]["objective"]["goal"] = json!("high");
    let err = crate::parse_experiment_value(&v).unwrap_err().to_string();
    assert!(err.contains("spec.objective.goal"), "{err}");
    assert!(err.contains("\"high\""), "{err}");
    assert!(!err.contains(" at line "), "{err}");
    // A quoted count keeps its hint when the position goes.
    v["spec"]["objective"]["goal"] = json!(0.9);
    v["spec"]["maxTrialCount"] = json!("4");
    let err = crate::parse_experiment_value(&v).unwrap_err().to_string();
    assert!(
        err.contains("expected an integer; hint: write the number without quotes"),
        "{err}"
    );
}

#[test]
fn metadata_keeps_unknown_keys_and_status_is_free_form() {
    let text = RANDOM.replace(
        "  name: random\n",
        "  name: random\n  uid: abc-123\n  finalizers: [x]\n",
    ) + "status:\n  trials: 3\n  anything: {goes: here}\n";
    let exp = parse_ok(&text);
    assert_eq!(exp.metadata.extra["uid"], json!("abc-123"));
    assert_eq!(exp.status.as_ref().unwrap()["anything"]["goes"], "here");
    let back: Experiment = serde_json::from_str(&serde_json::to_string(&exp).unwrap()).unwrap();
    assert_eq!(back, exp);
}

#[test]
fn file_not_found_names_the_path() {
    let err = parse_experiment_file(std::path::Path::new("/nonexistent/exp.yaml")).unwrap_err();
    assert_eq!(err.errors()[0].path(), "/nonexistent/exp.yaml");
    assert!(err.to_string().contains("file not found"));
}

#[test]
fn reads_a_file() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tfjob.yaml");
    assert_eq!(
        parse_experiment_file(&path).unwrap().name(),
        "tfjob-example"
    );
}

#[test]
fn empty_document_is_an_error() {
    assert!(parse_experiment("  \n").is_err());
}

#[test]
fn repository_examples_are_valid() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml")
            && let Err(e) = parse_experiment_file(&path)
        {
            panic!("{}:\n{e}", path.display());
        }
    }
}

/// `kubectl apply -f` takes several documents; the file's one Experiment is read, and errors
/// still name lines of the file.
#[test]
fn the_experiment_of_a_multi_document_file_is_read() {
    let config_map = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n";
    let file = format!("---\n{config_map}---\n{RANDOM}\n---\n# nothing\n");
    assert_eq!(parse_ok(&file).name(), "random");

    let broken = format!(
        "{config_map}---\n{}",
        RANDOM.replace("maxTrialCount: 12", "maxTrialCount: [12")
    );
    let e = parse_experiment(&broken).unwrap_err().to_string();
    let line = broken
        .lines()
        .position(|l| l.contains("maxTrialCount"))
        .unwrap()
        + 1;
    assert!(e.contains(&format!("at line {line} column")), "{e}");

    let e = parse_experiment(&format!("{config_map}---\n{config_map}")).unwrap_err();
    assert!(e.to_string().contains("none of the 2 YAML documents in the file is an Experiment (kinds: ConfigMap, ConfigMap)"), "{e}");
    let e = parse_experiment(&format!("{RANDOM}\n---\n{RANDOM}")).unwrap_err();
    assert!(
        e.to_string()
            .contains("2 of the YAML documents in the file are Experiments"),
        "{e}"
    );
}

/// A file saved with a UTF-8 byte-order mark (Notepad, CRLF lines too) reads as without it.
#[test]
fn a_byte_order_mark_is_read_past() {
    let crlf = RANDOM.replace('\n', "\r\n");
    for text in [format!("\u{feff}{RANDOM}"), format!("\u{feff}{crlf}")] {
        assert_eq!(parse_ok(&text).name(), "random");
    }
}

/// kubectl refuses a repeated key at the repeat ("line 9: key \"type\" already set in map");
/// the error names that line, the one to delete, not the mapping's first key.
#[test]
fn a_repeated_key_is_reported_at_the_repeat() {
    let text = RANDOM.replace(
        "    objectiveMetricName: loss\n",
        "    objectiveMetricName: loss\n    type: maximize\n",
    );
    let line = text
        .lines()
        .position(|l| l == "    type: maximize")
        .unwrap()
        + 1;
    let e = parse_err(&text).to_string();
    assert!(
        e.contains(&format!("duplicate field `type` at line {line} column 5")),
        "{e}"
    );
}

/// kubectl's reader applies YAML merge keys, so a file sharing fields through `<<: *anchor`
/// is the experiment it means, not one with an unknown field `<<`.
#[test]
fn merge_keys_are_applied_as_kubectl_applies_them() {
    let text = r#"
apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata: {name: merged}
spec:
  objective: {type: maximize, objectiveMetricName: accuracy}
  algorithm: {algorithmName: random}
  parameters:
    - name: lr
      parameterType: double
      feasibleSpace: &space {min: "0.01", max: "0.1"}
    - name: momentum
      parameterType: double
      feasibleSpace:
        <<: *space
        max: "0.9"
    - <<: [{name: wd}, {name: ignored, parameterType: double}]
      feasibleSpace: *space
  trialTemplate:
    primaryContainerName: main
    trialParameters: [{name: lr, reference: lr}, {name: m, reference: momentum}, {name: wd, reference: wd}]
    trialSpec:
      apiVersion: batch/v1
      kind: Job
      spec: {template: {spec: {restartPolicy: Never, containers: [{name: main, image: i, command: [t, "${trialParameters.lr}", "${trialParameters.m}", "${trialParameters.wd}"]}]}}}
"#;
    let exp = parse_ok(text);
    let params: Vec<(&str, Option<&str>, Option<&str>)> = exp
        .spec
        .parameters
        .iter()
        .map(|p| {
            let fs = p.feasible_space.as_ref().unwrap();
            (p.name.as_str(), fs.min.as_deref(), fs.max.as_deref())
        })
        .collect();
    assert_eq!(
        params,
        [
            ("lr", Some("0.01"), Some("0.1")),
            ("momentum", Some("0.01"), Some("0.9")),
            ("wd", Some("0.01"), Some("0.1")),
        ]
    );
    // A merge of a scalar is refused as kubectl refuses it; `<<:` inside text is no key.
    let scalar = text.replace("<<: *space", "<<: 3");
    let err = parse_err(&scalar).to_string();
    assert!(err.contains("merge key (<<) cannot be applied"), "{err}");
    let in_text = RANDOM.replace(
        "name: random",
        "name: random\n  annotations: {a: 'x <<: y'}",
    );
    assert_eq!(parse_ok(&in_text).name(), "random");
}
