//! Conversion tests: good requests round-trip, each kind of bad field is named in the error.

use super::*;
use crate::api::{Observation, experiment_spec::ParameterSpecs};

fn param(name: &str, kind: ParameterType, min: &str, max: &str, step: &str) -> ParameterSpec {
    ParameterSpec {
        name: name.into(),
        parameter_type: kind as i32,
        feasible_space: Some(FeasibleSpace {
            min: min.into(),
            max: max.into(),
            step: step.into(),
            ..Default::default()
        }),
    }
}

fn experiment(params: Vec<ParameterSpec>) -> Experiment {
    Experiment {
        name: "e".into(),
        spec: Some(ExperimentSpec {
            parameter_specs: Some(ParameterSpecs { parameters: params }),
            objective: Some(ObjectiveSpec {
                r#type: ObjectiveType::Maximize as i32,
                goal: 0.9,
                objective_metric_name: "acc".into(),
                additional_metric_names: vec!["loss".into()],
            }),
            algorithm: Some(AlgorithmSpec {
                algorithm_name: "random".into(),
                algorithm_settings: vec![AlgorithmSetting {
                    name: "random_state".into(),
                    value: "3".into(),
                }],
            }),
            ..Default::default()
        }),
    }
}

fn good() -> Experiment {
    experiment(vec![
        param("lr", ParameterType::Double, "0.01", "0.1", ""),
        param("layers", ParameterType::Int, "1", "5", "2"),
        ParameterSpec {
            name: "opt".into(),
            parameter_type: ParameterType::Categorical as i32,
            feasible_space: Some(FeasibleSpace {
                list: vec!["sgd".into(), "adam".into()],
                distribution: api::Distribution::LogUniform as i32,
                ..Default::default()
            }),
        },
    ])
}

#[test]
fn reads_an_experiment_and_writes_it_back() {
    let view = experiment_from_wire("experiment", Some(&good())).unwrap();
    assert_eq!(view.space.len(), 3);
    assert_eq!(
        view.space.get("layers").unwrap().domain,
        Domain::Int {
            min: 1,
            max: 5,
            step: Some(2)
        }
    );
    assert_eq!(view.objective.direction, Direction::Maximize);
    assert_eq!(view.objective.goal, Some(0.9));
    assert_eq!(
        view.settings,
        vec![("random_state".to_string(), "3".to_string())]
    );
    let back = experiment_from_wire("experiment", Some(&experiment_to_wire(&view))).unwrap();
    assert_eq!(back, view);
}

#[test]
fn names_the_bad_field() {
    let err = |e: Experiment| {
        experiment_from_wire("experiment", Some(&e))
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        experiment_from_wire("experiment", None)
            .unwrap_err()
            .to_string(),
        "experiment is missing\nhint: send the experiment with its spec in every request, as Katib's controller does"
    );
    let e = err(experiment(vec![param(
        "x",
        ParameterType::Double,
        "5",
        "1",
        "",
    )]));
    assert_eq!(
        e,
        "experiment.spec.parameter_specs.parameters[0].feasible_space: min \"5\" is greater than max \"1\" for parameter \"x\"\nhint: swap min and max"
    );
    let e = err(experiment(vec![param(
        "x",
        ParameterType::Int,
        "1",
        "ten",
        "",
    )]));
    assert_eq!(
        e,
        "experiment.spec.parameter_specs.parameters[0].feasible_space.max: value \"ten\" is not an integer"
    );
    let e = err(experiment(vec![ParameterSpec {
        name: "x".into(),
        parameter_type: 9,
        feasible_space: None,
    }]));
    assert!(e.starts_with("experiment.spec.parameter_specs.parameters[0].parameter_type: value \"9\" is not a ParameterType"), "{e}");
    let e = err(experiment(vec![param(
        "x",
        ParameterType::UnknownType,
        "1",
        "2",
        "",
    )]));
    assert!(
        e.contains("value \"UNKNOWN_TYPE\" is not a usable type for parameter \"x\""),
        "{e}"
    );
    let mut no_objective = good();
    no_objective
        .spec
        .as_mut()
        .unwrap()
        .objective
        .as_mut()
        .unwrap()
        .r#type = 0;
    assert_eq!(
        err(no_objective),
        "experiment.spec.objective.type: value \"0\" is not MINIMIZE (1) or MAXIMIZE (2)"
    );
}

fn trial(name: &str, lr: &str, condition: TrialConditionType, acc: &str) -> Trial {
    Trial {
        name: name.into(),
        spec: Some(TrialSpec {
            objective: None,
            parameter_assignments: Some(trial_spec::ParameterAssignments {
                assignments: vec![
                    ParameterAssignment {
                        name: "lr".into(),
                        value: lr.into(),
                    },
                    ParameterAssignment {
                        name: "layers".into(),
                        value: "3".into(),
                    },
                    ParameterAssignment {
                        name: "opt".into(),
                        value: "adam".into(),
                    },
                ],
            }),
            labels: Default::default(),
        }),
        status: Some(TrialStatus {
            condition: condition as i32,
            observation: Some(Observation {
                metrics: vec![
                    Metric {
                        name: "acc".into(),
                        value: acc.into(),
                    },
                    Metric {
                        name: "loss".into(),
                        value: String::new(),
                    },
                ],
            }),
            ..Default::default()
        }),
    }
}

#[test]
fn reads_trials_and_rejects_non_numeric_metrics() {
    let view = experiment_from_wire("experiment", Some(&good())).unwrap();
    let mut extra = BTreeMap::new();
    extra.insert(
        "t1".to_string(),
        BTreeMap::from([("k".to_string(), "v".to_string())]),
    );
    let records = trials_from_wire(
        &[trial("t1", "0.05", TrialConditionType::Succeeded, "0.75")],
        &view.space,
        &view.objective,
        &extra,
    )
    .unwrap()
    .0;
    assert_eq!(records[0].objective, Some(0.75));
    assert_eq!(records[0].state, TrialState::Succeeded);
    assert_eq!(records[0].labels.get("k").map(String::as_str), Some("v"));
    assert_eq!(records[0].metrics.len(), 1, "empty values are skipped");
    let back = trial_to_wire(&records[0], &view.objective, Some(0), None);
    assert_eq!(
        back.status.as_ref().unwrap().start_time,
        "1970-01-01T00:00:00Z"
    );
    // Katib's controller sends an empty string for a time the trial does not have yet.
    assert_eq!(back.status.as_ref().unwrap().completion_time, "");

    // Text is no value (Katib's services never parse it): the trial stays, without an
    // objective, instead of failing the whole request.
    let records = trials_from_wire(
        &[
            trial("t1", "0.05", TrialConditionType::Succeeded, "0.75"),
            trial(
                "t2",
                "0.05",
                TrialConditionType::Succeeded,
                "Genotype(normal=[])",
            ),
            trial("t3", "0.05", TrialConditionType::Failed, "high"),
        ],
        &view.space,
        &view.objective,
        &BTreeMap::new(),
    )
    .unwrap()
    .0;
    let objectives: Vec<Option<f64>> = records.iter().map(|r| r.objective).collect();
    assert_eq!(objectives, [Some(0.75), None, None]);
    assert!(records[1].metrics.is_empty());
    // A value outside the space (as Katib's own services propose below a step's `min`) leaves
    // that trial out with a warning instead of refusing the request; the others stay.
    let (records, left_out) = trials_from_wire(
        &[
            trial("t3", "7", TrialConditionType::Running, "1"),
            trial("t4", "0.05", TrialConditionType::Succeeded, "0.5"),
        ],
        &view.space,
        &view.objective,
        &BTreeMap::new(),
    )
    .unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].name, "t4");
    assert_eq!(left_out[0].0, "t3");
    let w = left_out[0].1.to_string();
    assert!(
        w.starts_with("trials[0].spec.parameter_assignments (trial \"t3\"): parameter lr")
            && w.ends_with("; the algorithm does not learn from this trial"),
        "{w}"
    );
    assert_eq!(left_out.len(), 1);
}

#[test]
fn katib_unavailable_values_and_empty_observations_are_missing_metrics() {
    let view = experiment_from_wire("experiment", Some(&good())).unwrap();
    let mut running = trial("t2", "0.05", TrialConditionType::Running, "");
    running.status.as_mut().unwrap().observation = Some(Observation { metrics: vec![] });
    let records = trials_from_wire(
        &[
            trial("t1", "0.05", TrialConditionType::Succeeded, "unavailable"),
            running,
            trial("t3", "0.05", TrialConditionType::Succeeded, " unavailable "),
        ],
        &view.space,
        &view.objective,
        &BTreeMap::new(),
    )
    .unwrap()
    .0;
    assert_eq!(records.len(), 3);
    assert!(
        records
            .iter()
            .all(|r| r.objective.is_none() && r.metrics.is_empty())
    );
    assert_eq!(records[1].state, TrialState::Running);
}

#[test]
fn reads_proposals_back_from_a_plugin_reply() {
    let view = experiment_from_wire("experiment", Some(&good())).unwrap();
    let records = trials_from_wire(
        &[trial("t1", "0.05", TrialConditionType::Running, "")],
        &view.space,
        &view.objective,
        &BTreeMap::new(),
    )
    .unwrap()
    .0;
    let proposal = Proposal::new(records[0].assignment.clone());
    let wire = proposals_to_wire(std::slice::from_ref(&proposal), &["n1".to_string()]);
    assert_eq!(wire[0].trial_name, "n1");
    assert_eq!(
        proposals_from_wire(&wire, &view.space).unwrap(),
        vec![proposal]
    );
    let mut bad = wire.clone();
    bad[0].assignments[0].value = "2".into();
    let e = proposals_from_wire(&bad, &view.space)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("parameter_assignments[0]: parameter lr"),
        "{e}"
    );
}

fn list_param(name: &str, kind: ParameterType, list: &[&str]) -> ParameterSpec {
    ParameterSpec {
        name: name.into(),
        parameter_type: kind as i32,
        feasible_space: Some(FeasibleSpace {
            list: list.iter().map(|v| v.to_string()).collect(),
            ..Default::default()
        }),
    }
}

/// What the YAML path accepts with a warning converts over the wire to the same space, with
/// the warning naming the wire field, and trials holding those values convert too.
#[test]
fn int_bounds_written_as_integral_floats_read_as_in_yaml() {
    // (min, max, step, domain or the refusal's start)
    let cases: [(&str, &str, &str, Result<Domain, &str>); 4] = [
        (
            "2.0",
            "4.0",
            "",
            Ok(Domain::Int {
                min: 2,
                max: 4,
                step: None,
            }),
        ),
        (
            "1e0",
            "1e1",
            "3.0",
            Ok(Domain::Int {
                min: 1,
                max: 10,
                step: Some(3),
            }),
        ),
        (
            "1",
            "9",
            "2.5",
            Err(
                "experiment.spec.parameter_specs.parameters[0].feasible_space.step: value \"2.5\" is not an integer",
            ),
        ),
        (
            "1.5",
            "9",
            "",
            Err(
                "experiment.spec.parameter_specs.parameters[0].feasible_space.min: value \"1.5\" is not an integer",
            ),
        ),
    ];
    for (min, max, step, want) in cases {
        let exp = experiment(vec![param("n", ParameterType::Int, min, max, step)]);
        let got = experiment_from_wire("experiment", Some(&exp));
        match (got, want) {
            (Ok(view), Ok(domain)) => assert_eq!(view.space.get("n").unwrap().domain, domain),
            (Err(e), Err(said)) => assert!(e.to_string().starts_with(said), "{e}"),
            (got, want) => panic!("{min} {max} {step}: {got:?}, wanted {want:?}"),
        }
    }
}

#[test]
fn katib_tolerated_spaces_convert_as_the_yaml_path_does_with_warnings() {
    let mut log_from_zero = param("lr", ParameterType::Double, "0", "0.1", "");
    if let Some(fs) = log_from_zero.feasible_space.as_mut() {
        fs.distribution = api::Distribution::LogUniform as i32;
    }
    let field = "experiment.spec.parameter_specs.parameters[0].feasible_space";
    // (parameter, domain, distribution, warned field, a value a trial may hold)
    let cases = [
        (
            list_param("opt", ParameterType::Categorical, &["sgd", "adam", "sgd"]),
            Domain::Categorical {
                values: vec!["sgd".into(), "adam".into()],
            },
            Distribution::Uniform,
            format!("{field}.list[2]"),
            "sgd",
        ),
        (
            list_param("batch", ParameterType::Discrete, &["16", "32", "auto"]),
            Domain::Categorical {
                values: vec!["16".into(), "32".into(), "auto".into()],
            },
            Distribution::Uniform,
            format!("{field}.list[2]"),
            "auto",
        ),
        (
            log_from_zero,
            Domain::Double {
                min: 0.0,
                max: 0.1,
                step: None,
            },
            Distribution::Uniform,
            format!("{field}.min"),
            "0.05",
        ),
    ];
    for (p, domain, distribution, warned, value) in cases {
        let name = p.name.clone();
        let (view, warnings) =
            experiment_from_wire_warned("experiment", Some(&experiment(vec![p]))).unwrap();
        let got = view.space.get(&name).unwrap();
        assert_eq!((&got.domain, got.distribution), (&domain, distribution));
        let fields: Vec<&str> = warnings.iter().map(|w| w.field.as_str()).collect();
        assert_eq!(fields, [warned.as_str()], "{warnings:?}");
        let mut t = trial("t1", "0", TrialConditionType::Succeeded, "0.5");
        if let Some(a) = t
            .spec
            .as_mut()
            .and_then(|s| s.parameter_assignments.as_mut())
        {
            a.assignments = vec![ParameterAssignment {
                name: name.clone(),
                value: value.into(),
            }];
        }
        let records = trials_from_wire(&[t], &view.space, &view.objective, &BTreeMap::new())
            .unwrap()
            .0;
        assert_eq!(records[0].assignment.to_strings(), [(name, value.into())]);
    }
}

#[test]
fn unusable_names_and_bounds_are_refused_naming_the_field() {
    let field = "experiment.spec.parameter_specs.parameters[0]";
    // (parameter, expected error)
    let cases = [
        (
            param("a=b", ParameterType::Double, "0", "1", ""),
            format!(
                "{field}.name: value \"a=b\" contains '=' or a control character, which makes \
                 every `name=value` line ambiguous\nhint: use letters, digits, '-', '_' or '.'"
            ),
        ),
        (
            list_param("a\nb", ParameterType::Categorical, &["x"]),
            format!("{field}.name: value \"a\\nb\" contains '=' or a control character"),
        ),
        (
            param("x", ParameterType::Double, "0", "inf", ""),
            format!("{field}.feasible_space.max: value \"inf\" is not a finite number\nhint: "),
        ),
        (
            param("x", ParameterType::Double, "nan", "0.05", ""),
            format!("{field}.feasible_space.min: value \"nan\" is not a finite number"),
        ),
        (
            param("x", ParameterType::Double, "0", "1", "-inf"),
            format!("{field}.feasible_space.step: value \"-inf\" is not a finite number"),
        ),
    ];
    for (p, expected) in cases {
        let e = experiment_from_wire("experiment", Some(&experiment(vec![p])))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with(&expected), "{e}\nexpected: {expected}");
    }
}

/// A request without one of the parts an experiment needs is refused naming that part's field,
/// whichever part it is.
#[test]
fn each_missing_part_is_named_by_its_field() {
    let without = |f: fn(&mut ExperimentSpec)| {
        let mut e = good();
        f(e.spec.as_mut().unwrap());
        experiment_from_wire("experiment", Some(&e))
            .unwrap_err()
            .to_string()
    };
    type Case = (fn(&mut ExperimentSpec), &'static str, &'static str);
    let cases: [Case; 6] = [
        (
            |s| s.algorithm = None,
            "experiment.spec.algorithm is missing",
            "hint: set algorithm_name",
        ),
        (
            |s| s.objective = None,
            "experiment.spec.objective is missing",
            "hint: set type and objective_metric_name",
        ),
        (
            |s| s.parameter_specs = None,
            "experiment.spec.parameter_specs",
            "hint: an experiment needs at least one parameter",
        ),
        (
            |s| {
                s.parameter_specs.as_mut().unwrap().parameters[1]
                    .name
                    .clear()
            },
            "experiment.spec.parameter_specs.parameters[1].name is missing",
            "hint: name every parameter",
        ),
        (
            |s| {
                let opt = &mut s.parameter_specs.as_mut().unwrap().parameters[2];
                opt.feasible_space.as_mut().unwrap().list.clear();
            },
            "experiment.spec.parameter_specs.parameters[2].feasible_space.list is missing",
            "hint: list the values of parameter \"opt\"",
        ),
        (
            |s| s.objective.as_mut().unwrap().objective_metric_name.clear(),
            "experiment.spec.objective.objective_metric_name",
            "hint:",
        ),
    ];
    for (change, starts, hint) in cases {
        let e = without(change);
        assert!(e.starts_with(starts), "{e}");
        assert!(e.contains(hint), "{e}");
    }
    let e = Experiment {
        name: "e".into(),
        ..Default::default()
    };
    let e = experiment_from_wire("experiment", Some(&e))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("experiment.spec is missing\nhint:"), "{e}");
}

#[test]
fn a_condition_out_of_range_is_named_with_its_value() {
    let e = state_from_wire("trials[3].status.condition", 99)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("trials[3].status.condition: value \"99\" is not a TrialConditionType"),
        "{e}"
    );
}
