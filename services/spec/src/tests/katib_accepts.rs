//! Specs Katib's webhook accepts and that can run: accepted here too, with a warning naming
//! the field where the spec is odd, and converted the way the warning says.

use super::{RANDOM, mutated, parse_ok, set};
use crate::validate::warnings;
use serde_json::{Value, json};
use vernier_core::{Distribution, Domain};

/// One Katib-valid edit of the fixture, the warning it draws, and the domain parameter
/// `param` converts to.
struct Case {
    edit: fn(&mut Value),
    warning_at: &'static str,
    warning: &'static str,
    param: usize,
    domain: Domain,
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn katib_valid_parameters_are_accepted_with_a_warning() {
    let cases = [
        Case {
            edit: |v| set(v, "/spec/parameters/0/feasibleSpace/min", json!("0.05")),
            warning_at: "spec.parameters[0].feasibleSpace.max",
            warning: "min equals max (\"0.05\"): a fixed value",
            param: 0,
            domain: Domain::Discrete {
                values: strings(&["0.05"]),
            },
        },
        Case {
            edit: |v| {
                set(
                    v,
                    "/spec/parameters/2",
                    json!({"name": "optimizer", "parameterType": "discrete",
                           "feasibleSpace": {"list": ["1", "x", "1.0", "x"]}}),
                )
            },
            warning_at: "spec.parameters[2].feasibleSpace.list[1]",
            warning: "treated as categorical",
            param: 2,
            domain: Domain::Categorical {
                values: strings(&["1", "x", "1.0"]),
            },
        },
        Case {
            edit: |v| {
                set(
                    v,
                    "/spec/parameters/2",
                    json!({"name": "optimizer", "parameterType": "discrete",
                           "feasibleSpace": {"list": ["1", "2", "1.0"]}}),
                )
            },
            warning_at: "spec.parameters[2].feasibleSpace.list[2]",
            warning: "value \"1.0\" duplicates list[0]; it is sampled once",
            param: 2,
            domain: Domain::Discrete {
                values: strings(&["1", "2"]),
            },
        },
        Case {
            edit: |v| {
                set(
                    v,
                    "/spec/parameters/2/feasibleSpace/list",
                    json!(["sgd", "adam", "sgd"]),
                )
            },
            warning_at: "spec.parameters[2].feasibleSpace.list[2]",
            warning: "value \"sgd\" duplicates list[0]",
            param: 2,
            domain: Domain::Categorical {
                values: strings(&["sgd", "adam"]),
            },
        },
        Case {
            edit: |v| {
                set(
                    v,
                    "/spec/parameters/0/feasibleSpace",
                    json!({"min": "0", "max": "1", "distribution": "logUniform"}),
                )
            },
            warning_at: "spec.parameters[0].feasibleSpace.min",
            warning: "sampled uniformly instead",
            param: 0,
            domain: Domain::Double {
                min: 0.0,
                max: 1.0,
                step: None,
            },
        },
    ];
    for case in cases {
        let exp = parse_ok(&mutated(RANDOM, case.edit));
        let warned = warnings(&exp);
        assert!(
            warned
                .iter()
                .any(|w| w.path() == case.warning_at && w.message().contains(case.warning)),
            "no warning at {} containing {:?}: {warned:?}",
            case.warning_at,
            case.warning
        );
        let space = exp.search_space().expect("converts");
        let p = &space.parameters()[case.param];
        assert_eq!(p.domain, case.domain, "{}", case.warning_at);
        assert_eq!(p.distribution, Distribution::Uniform);
    }
}

/// A finite space smaller than `maxTrialCount` ends the run early under an algorithm that never
/// repeats a configuration; Katib's would repeat, so the user is told before anything runs.
#[test]
fn a_budget_above_a_finite_space_is_named() {
    let finite = |algorithm: &'static str, max_trials: i32| {
        let exp = parse_ok(&mutated(RANDOM, |v| {
            set(
                v,
                "/spec/parameters/0/feasibleSpace",
                json!({"min": "0", "max": "1", "step": "0.1"}),
            );
            set(
                v,
                "/spec/parameters/1/feasibleSpace",
                json!({"min": "0.5", "max": "0.9", "step": "0.2"}),
            );
            set(v, "/spec/maxTrialCount", json!(max_trials));
            set(v, "/spec/parallelTrialCount", json!(1));
            set(v, "/spec/maxFailedTrialCount", json!(1));
        }));
        let mut exp = exp;
        if let Some(a) = exp.spec.algorithm.as_mut() {
            a.algorithm_name = Some(algorithm.to_string());
        }
        warnings(&exp)
            .into_iter()
            .filter(|w| w.path() == "spec.maxTrialCount")
            .map(|w| w.message().to_string())
            .collect::<Vec<_>>()
    };
    // 11 × 3 × 2 configurations.
    assert_eq!(
        finite("random", 67),
        [
            "value 67 is more than the search space's 66 configuration(s): random runs each at \
          most once, so the experiment ends after 66 trial(s); hint: lower maxTrialCount to 66, \
          or widen the search space"
        ]
    );
    assert!(finite("random", 66).is_empty());
    assert_eq!(finite("grid", 100).len(), 1);
    // PBT and Hyperband run a configuration again by design (only the name is read here).
    assert!(finite("pbt", 100).is_empty());
    assert!(finite("hyperband", 100).is_empty());
}

/// More enqueued configurations than maxTrialCount: the last ones never run, which is said
/// before anything runs (the operator says nothing at the end).
#[test]
fn a_queue_longer_than_the_budget_is_named() {
    let queued = |entries: usize, max_trials: i32| {
        let entry = json!({"parameterAssignments": [{"name": "lr", "value": "0.02"},
            {"name": "momentum", "value": "0.6"}, {"name": "optimizer", "value": "sgd"}]});
        let exp = parse_ok(&mutated(RANDOM, |v| {
            set(v, "/spec/maxTrialCount", json!(max_trials));
            set(v, "/spec/parallelTrialCount", json!(1));
            set(v, "/spec/maxFailedTrialCount", json!(1));
            set(
                v,
                "/spec/enqueuedTrials",
                json!(vec![entry.clone(); entries]),
            );
        }));
        warnings(&exp)
            .into_iter()
            .filter(|w| w.path() == "spec.enqueuedTrials")
            .map(|w| w.message().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        queued(3, 2),
        [
            "3 entries are more than maxTrialCount 2, so the last 1 never run; hint: raise \
          maxTrialCount to 3, or remove entries"
        ]
    );
    assert!(queued(2, 2).is_empty());
}

/// Katib's services (`if param.step:`) and webhook (`Step != ""`) read an empty `step` as
/// none, on a range and on a list alike.
#[test]
fn an_empty_step_is_no_step() {
    let exp = parse_ok(&mutated(RANDOM, |v| {
        set(v, "/spec/parameters/0/feasibleSpace/step", json!(""));
        set(v, "/spec/parameters/2/feasibleSpace/step", json!(" "));
    }));
    let space = exp.search_space().expect("converts");
    assert_eq!(
        space.parameters()[0].domain,
        Domain::Double {
            min: 0.01,
            max: 0.05,
            step: None
        }
    );
    assert_eq!(
        space.parameters()[2].domain,
        Domain::Categorical {
            values: strings(&["sgd", "adam"])
        }
    );
}

#[test]
fn odd_objectives_are_accepted_with_a_warning_and_deduplicated() {
    let exp = parse_ok(&mutated(RANDOM, |v| {
        set(
            v,
            "/spec/objective/additionalMetricNames",
            json!(["accuracy", "accuracy"]),
        );
        set(
            v,
            "/spec/objective/metricStrategies",
            json!([{"name": "f1", "value": "max"}, {"name": "accuracy", "value": "min"},
                   {"name": "accuracy", "value": "max"}]),
        );
    }));
    let w: Vec<String> = warnings(&exp).iter().map(|w| w.to_string()).collect();
    assert!(
        w.iter().any(|w| w.starts_with(
            "spec.objective.additionalMetricNames[1]: value \"accuracy\" appears twice"
        )),
        "{w:?}"
    );
    assert!(
        w.iter()
            .any(|w| w.starts_with("spec.objective.metricStrategies[0].name: value \"f1\"")),
        "{w:?}"
    );
    assert!(
        w.iter()
            .any(|w| w.starts_with("spec.objective.metricStrategies[2].name")
                && w.contains("metricStrategies[1]")),
        "{w:?}"
    );
    let objective = exp.objective().expect("converts");
    assert_eq!(objective.additional.len(), 1);
    assert_eq!(
        objective.additional[0],
        ("accuracy".to_string(), vernier_core::MetricStrategy::Min)
    );
    assert_eq!(exp.metric_names(), ["loss", "accuracy"]);
}

/// Katib's `hp-tuning/hyperband.yaml`: the resource parameter's `min: "1"`, `max: "1"` is a
/// placeholder that Hyperband fills with each rung's budget from `r_l` and `eta`.
#[test]
fn hyperband_resource_placeholder_spans_the_budgets() {
    let exp = parse_ok(&mutated(RANDOM, |v| {
        set(
            v,
            "/spec/algorithm",
            json!({"algorithmName": "hyperband", "algorithmSettings": [
                {"name": "resource_name", "value": "epochs"},
                {"name": "eta", "value": "2"}, {"name": "r_l", "value": "4"}]}),
        );
        let params = v["spec"]["parameters"].as_array_mut().unwrap();
        params.push(json!({"name": "epochs", "parameterType": "int",
                           "feasibleSpace": {"min": "1", "max": "1"}}));
        let tps = v["spec"]["trialTemplate"]["trialParameters"]
            .as_array_mut()
            .unwrap();
        tps.push(json!({"name": "epochs", "reference": "epochs"}));
        let cmd = v
            .pointer_mut("/spec/trialTemplate/trialSpec/spec/template/spec/containers/0/command")
            .and_then(Value::as_array_mut)
            .unwrap();
        cmd.push(json!("--epochs=${trialParameters.epochs}"));
    }));
    let w = warnings(&exp);
    assert!(
        w.iter()
            .any(|w| w.path() == "spec.parameters[3].feasibleSpace.max"
                && w.message()
                    .contains("placeholder for the resource parameter")),
        "{w:?}"
    );
    let space = exp.search_space().expect("converts");
    assert_eq!(
        space.get("epochs").unwrap().domain,
        Domain::Int {
            min: 1,
            max: 4,
            step: None
        }
    );
}

/// ASHA takes its budgets from `max_resource` the same way; a double placeholder spans
/// (0, max_resource].
#[test]
fn asha_resource_placeholder_spans_the_budgets() {
    let exp = parse_ok(&mutated(RANDOM, |v| {
        set(
            v,
            "/spec/algorithm",
            json!({"algorithmName": "asha", "algorithmSettings": [
                {"name": "resource_name", "value": "momentum"},
                {"name": "max_resource", "value": "9"}]}),
        );
        set(v, "/spec/parameters/1/feasibleSpace/min", json!("0.9"));
    }));
    let space = exp.search_space().expect("converts");
    assert_eq!(
        space.get("momentum").unwrap().domain,
        Domain::Double {
            min: 0.0,
            max: 9.0,
            step: None
        }
    );
    // Without a usable max_resource the placeholder stays a fixed value, and ASHA reports
    // the setting when it is built.
    let exp = parse_ok(&mutated(RANDOM, |v| {
        set(
            v,
            "/spec/algorithm",
            json!({"algorithmName": "asha", "algorithmSettings": [
                {"name": "resource_name", "value": "momentum"}]}),
        );
        set(v, "/spec/parameters/1/feasibleSpace/min", json!("0.9"));
    }));
    let space = exp.search_space().expect("converts");
    assert_eq!(
        space.get("momentum").unwrap().domain,
        Domain::Discrete {
            values: strings(&["0.9"])
        }
    );
}

/// A metric name Katib's default TEXT format cannot read whole is warned about while that
/// format is the one in use, and not once a `metricsFormat`, a JSON file or event files
/// read it.
#[test]
fn a_metric_name_the_default_format_cannot_read_is_warned_about() {
    let dotted = |v: &mut Value| {
        set(v, "/spec/objective/objectiveMetricName", json!("val.loss"));
        set(
            v,
            "/spec/objective/additionalMetricNames",
            json!(["acc", "top/5"]),
        );
    };
    let warned = |edit: fn(&mut Value)| -> Vec<String> {
        let exp = parse_ok(&mutated(RANDOM, |v| {
            dotted(v);
            edit(v);
        }));
        warnings(&exp)
            .iter()
            .filter(|w| w.message().contains("default metrics format"))
            .map(|w| w.path().to_string())
            .collect()
    };
    assert_eq!(
        warned(|_| {}),
        [
            "spec.objective.objectiveMetricName",
            "spec.objective.additionalMetricNames[1]"
        ]
    );
    let read_otherwise: [fn(&mut Value); 3] = [
        |v| {
            set(
                v,
                "/spec/metricsCollectorSpec",
                json!({"source": {"filter": {"metricsFormat": ["([\\w|./-]+)=(\\d+)"]}}}),
            )
        },
        |v| {
            set(
                v,
                "/spec/metricsCollectorSpec",
                json!({"collector": {"kind": "File"}, "source": {"fileSystemPath":
                    {"path": "/m.json", "kind": "File", "format": "JSON"}}}),
            )
        },
        |v| {
            set(
                v,
                "/spec/metricsCollectorSpec",
                json!({"collector": {"kind": "TensorFlowEvent"}, "source": {"fileSystemPath":
                    {"path": "/logs", "kind": "Directory"}}}),
            )
        },
    ];
    for edit in read_otherwise {
        assert!(warned(edit).is_empty(), "{:?}", warned(edit));
    }
    let exp = parse_ok(&mutated(RANDOM, |v| {
        set(
            v,
            "/spec/objective",
            json!({"objectives": [{"metricName": "val.loss", "type": "minimize"},
                                  {"metricName": "acc", "type": "maximize"}],
                   "constraints": [{"metricName": "mem.mb", "op": "<=", "value": 1.0}]}),
        );
    }));
    let paths: Vec<String> = warnings(&exp)
        .iter()
        .filter(|w| w.message().contains("default metrics format"))
        .map(|w| w.path().to_string())
        .collect();
    assert_eq!(
        paths,
        [
            "spec.objective.objectives[0].metricName",
            "spec.objective.constraints[0].metricName"
        ]
    );
}

/// A `${trialSpec.Name}` written in the template is left as written by Katib's generator
/// (only `${trialParameters.x}` is replaced), so the job would get the literal text.
#[test]
fn a_meta_reference_written_in_the_template_is_named() {
    let env = "/spec/trialTemplate/trialSpec/spec/template/spec/containers/0/env";
    let exp = parse_ok(&mutated(RANDOM, |v| {
        set(
            v,
            env,
            json!([{"name": "KATIB_TRIAL_NAME", "value": "${trialSpec.Name}"}]),
        );
    }));
    let path = "spec.trialTemplate.trialSpec.spec.template.spec.containers[0].env[0].value";
    let warned: Vec<String> = warnings(&exp)
        .into_iter()
        .filter(|w| w.path() == path)
        .map(|w| w.message().to_string())
        .collect();
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(
        warned[0].contains("reference: ${trialSpec.Name}"),
        "{warned:?}"
    );
    // As a trial parameter's reference it is substituted, and nothing is said.
    assert!(
        warnings(&parse_ok(RANDOM))
            .iter()
            .all(|w| !w.message().contains("trialSpec"))
    );
}
