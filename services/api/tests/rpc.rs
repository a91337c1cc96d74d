//! Every RPC of the router, called through a real gRPC connection to an in-process server,
//! with good and malformed requests.

// Helpers outside #[test] functions unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::BTreeMap;
use tonic::Code;
use tonic::transport::Channel;
use vernier_api::proto::api::{
    self, DeleteObservationLogRequest, EarlyStoppingSetting, EarlyStoppingSpec, Experiment,
    ExperimentSpec, FeasibleSpace, GetEarlyStoppingRulesRequest, GetObservationLogRequest,
    GetSuggestionsRequest, Metric, MetricLog, ObjectiveType, ObservationLog, ParameterSpec,
    ParameterType, ReportObservationLogRequest, SetTrialStatusRequest, Trial,
    ValidateAlgorithmSettingsRequest, ValidateEarlyStoppingSettingsRequest,
    db_manager_client::DbManagerClient, early_stopping_client::EarlyStoppingClient,
    experiment_spec::ParameterSpecs, suggestion_client::SuggestionClient,
    trial_status::TrialConditionType,
};
use vernier_api::proto::convert::{experiment_from_wire, proposals_from_wire, trial_to_wire};
use vernier_api::proto::health::{
    HealthCheckRequest, health_check_response::ServingStatus, health_client::HealthClient,
};
use vernier_core::{TrialRecord, TrialState};
use vernier_store::{ExperimentRow, ExperimentStatusRow, SqlStore, TrialRow};

struct Server {
    channel: Channel,
    store: SqlStore,
    _shutdown: tokio::sync::oneshot::Sender<()>,
}

async fn start() -> Server {
    let store = SqlStore::connect(":memory:").await.unwrap();
    let router = vernier_api::router(store.clone()).unwrap();
    let (channel, tx) = support::serve(router).await;
    Server {
        channel,
        store,
        _shutdown: tx,
    }
}

fn param(
    name: &str,
    kind: ParameterType,
    min: &str,
    max: &str,
    step: &str,
    list: &[&str],
) -> ParameterSpec {
    ParameterSpec {
        name: name.into(),
        parameter_type: kind as i32,
        feasible_space: Some(FeasibleSpace {
            min: min.into(),
            max: max.into(),
            step: step.into(),
            list: list.iter().map(|s| s.to_string()).collect(),
            distribution: 0,
        }),
    }
}

fn experiment(algorithm: &str, settings: &[(&str, &str)]) -> Experiment {
    Experiment {
        name: "rpc".into(),
        spec: Some(ExperimentSpec {
            parameter_specs: Some(ParameterSpecs {
                parameters: vec![
                    param("lr", ParameterType::Double, "0.0", "1.0", "0.25", &[]),
                    param("units", ParameterType::Int, "1", "8", "", &[]),
                    param("epochs", ParameterType::Int, "1", "9", "", &[]),
                    param(
                        "opt",
                        ParameterType::Categorical,
                        "",
                        "",
                        "",
                        &["sgd", "adam"],
                    ),
                ],
            }),
            objective: Some(support::objective(ObjectiveType::Maximize, "acc", 0.0)),
            algorithm: Some(support::algorithm(algorithm, settings)),
            early_stopping: Some(support::medianstop_two_and_two()),
            parallel_trial_count: 3,
            max_trial_count: 12,
            nas_config: None,
        }),
    }
}

fn settings_for(algorithm: &str) -> Vec<(&'static str, &'static str)> {
    match algorithm {
        "hyperband" | "bohb" => vec![("r_l", "9"), ("resource_name", "epochs"), ("eta", "3")],
        "asha" => vec![
            ("resource_name", "epochs"),
            ("max_resource", "9"),
            ("eta", "3"),
        ],
        "pbt" => vec![
            ("suggestion_trial_dir", "/var/log/katib/checkpoints/"),
            ("n_population", "5"),
            ("truncation_threshold", "0.2"),
            ("random_state", "7"),
        ],
        _ => vec![("random_state", "7")],
    }
}

/// Trials the way Katib's controller sends them: earlier replies' assignments with results.
fn succeeded(exp: &Experiment, reply: &api::GetSuggestionsReply, offset: usize) -> Vec<Trial> {
    let view = experiment_from_wire("experiment", Some(exp)).unwrap();
    let proposals = proposals_from_wire(&reply.parameter_assignments, &view.space).unwrap();
    proposals
        .into_iter()
        .zip(&reply.parameter_assignments)
        .enumerate()
        .map(|(i, (p, wire))| {
            let acc = 0.1 * (i + offset) as f64;
            let record = TrialRecord {
                name: if wire.trial_name.is_empty() {
                    format!("t{}", i + offset)
                } else {
                    wire.trial_name.clone()
                },
                assignment: p.assignment,
                state: TrialState::Succeeded,
                objective: Some(acc),
                labels: BTreeMap::new(),
                metrics: BTreeMap::from([("acc".to_string(), acc)]),
            };
            trial_to_wire(&record, &view.objective, Some(0), Some(1_000_000))
        })
        .collect()
}

#[tokio::test]
async fn every_algorithm_suggests_inside_the_space_twice() {
    let server = start().await;
    let mut client = SuggestionClient::new(server.channel.clone());
    // The NAS algorithms search nasConfig, not these parameters: tests/nas_rpc.rs.
    for algorithm in vernier_algorithms::KNOWN_ALGORITHMS
        .iter()
        .filter(|a| !vernier_core::NAS_ALGORITHM_NAMES.contains(a))
    {
        let mut exp = experiment(algorithm, &settings_for(algorithm));
        let first = client
            .get_suggestions(GetSuggestionsRequest {
                experiment: Some(exp.clone()),
                trials: vec![],
                current_request_number: 3,
                total_request_number: 3,
            })
            .await
            .unwrap_or_else(|e| panic!("{algorithm}: {e}"))
            .into_inner();
        assert_eq!(first.parameter_assignments.len(), 3, "{algorithm}");
        // Katib merges the returned settings into the next request.
        if let Some(returned) = &first.algorithm {
            let spec = exp.spec.as_mut().unwrap().algorithm.as_mut().unwrap();
            for s in &returned.algorithm_settings {
                spec.algorithm_settings.retain(|x| x.name != s.name);
                spec.algorithm_settings.push(s.clone());
            }
        }
        let trials = succeeded(&exp, &first, 0);
        let second = client
            .get_suggestions(GetSuggestionsRequest {
                experiment: Some(exp.clone()),
                trials,
                current_request_number: 2,
                total_request_number: 5,
            })
            .await
            .unwrap_or_else(|e| panic!("{algorithm} second call: {e}"))
            .into_inner();
        let view = experiment_from_wire("experiment", Some(&exp)).unwrap();
        let proposals = proposals_from_wire(&second.parameter_assignments, &view.space).unwrap();
        for p in &proposals {
            view.space.check(&p.assignment).unwrap();
        }
        if *algorithm == "hyperband" {
            // Rung 0 of bracket 2 holds 9 configurations; the labels that place the first
            // three came back through the settings, so the next ones continue the rung.
            assert!(
                first
                    .parameter_assignments
                    .iter()
                    .all(|a| !a.trial_name.is_empty())
            );
            let carried = first
                .algorithm
                .as_ref()
                .unwrap()
                .algorithm_settings
                .iter()
                .find(|s| s.name == vernier_api::LABELS_SETTING)
                .unwrap();
            assert!(
                carried.value.contains("vernier.hyperband/bracket"),
                "{}",
                carried.value
            );
            assert_eq!(proposals.len(), 2);
            assert!(
                second.parameter_assignments.iter().all(|a| a
                    .labels
                    .get("vernier.hyperband/rung")
                    .map(String::as_str)
                    == Some("0"))
            );
        } else {
            assert_eq!(proposals.len(), 2, "{algorithm}");
        }
    }
}

/// PBT over the wire: Katib's labels come back in the reply, the names the service chose ride
/// in the returned settings, and the next generation names its parents by those names.
#[tokio::test]
async fn pbt_generations_carry_katib_labels_and_parents_over_the_wire() {
    let server = start().await;
    let mut client = SuggestionClient::new(server.channel.clone());
    let mut exp = experiment("pbt", &settings_for("pbt"));
    let ask = |exp: &Experiment, trials: Vec<Trial>| GetSuggestionsRequest {
        experiment: Some(exp.clone()),
        trials,
        current_request_number: 5,
        total_request_number: 5,
    };
    let first = client
        .get_suggestions(ask(&exp, vec![]))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(first.parameter_assignments.len(), 5);
    for a in &first.parameter_assignments {
        assert_eq!(
            a.labels["pbt.suggestion.katib.kubeflow.org/generation"],
            "0"
        );
        assert!(!a.trial_name.is_empty());
    }
    let returned = first.algorithm.clone().unwrap().algorithm_settings;
    let spec = exp.spec.as_mut().unwrap().algorithm.as_mut().unwrap();
    spec.algorithm_settings.extend(returned);
    let trials = succeeded(&exp, &first, 0);
    let second = client
        .get_suggestions(ask(&exp, trials))
        .await
        .unwrap()
        .into_inner();
    let names: Vec<&str> = first
        .parameter_assignments
        .iter()
        .map(|a| a.trial_name.as_str())
        .collect();
    assert_eq!(second.parameter_assignments.len(), 5);
    for a in &second.parameter_assignments {
        assert_eq!(
            a.labels["pbt.suggestion.katib.kubeflow.org/generation"],
            "1"
        );
        let parent = a.labels["pbt.suggestion.katib.kubeflow.org/parent"].as_str();
        assert!(names.contains(&parent), "{parent} not in {names:?}");
    }
    // Accuracy rises with the index, so the worst member (the first) takes the best's
    // checkpoint; the others continue their own.
    assert_eq!(
        second.parameter_assignments[0].labels["pbt.suggestion.katib.kubeflow.org/parent"],
        names[4]
    );
    let s = status_of(
        client
            .validate_algorithm_settings(ValidateAlgorithmSettingsRequest {
                experiment: Some(experiment("pbt", &[("n_population", "10")])),
            })
            .await,
    );
    assert_eq!(s.code(), tonic::Code::InvalidArgument);
    assert!(
        s.message().contains("suggestion_trial_dir"),
        "{}",
        s.message()
    );
}

/// `nsga2` and `pbt` propose one generation before the next: a parallelTrialCount above it is
/// refused when validated, since Katib's controller would ask for that many at once forever.
#[tokio::test]
async fn more_parallel_trials_than_a_generation_are_refused() {
    let server = start().await;
    let mut client = SuggestionClient::new(server.channel.clone());
    let pbt = [
        ("suggestion_trial_dir", "/x/"),
        ("n_population", "5"),
        ("truncation_threshold", "0.4"),
    ];
    type Settings<'a> = &'a [(&'a str, &'a str)];
    // (algorithm, settings, parallelTrialCount, what the refusal says)
    let cases: [(&str, Settings, i32, Option<&str>); 5] = [
        ("pbt", &pbt, 5, None),
        (
            "pbt",
            &pbt,
            8,
            Some("the 5 trials of one pbt generation (n_population)"),
        ),
        ("nsga2", &[], 50, None),
        (
            "nsga2",
            &[],
            60,
            Some("the 50 trials of one nsga2 generation (population_size)"),
        ),
        (
            "nsga2",
            &[("population_size", "10")],
            11,
            Some("the 10 trials"),
        ),
    ];
    for (algorithm, settings, parallel, refused) in cases {
        let mut exp = experiment(algorithm, settings);
        if let Some(spec) = exp.spec.as_mut() {
            spec.parallel_trial_count = parallel;
            spec.max_trial_count = 200;
        }
        let answer = client
            .validate_algorithm_settings(ValidateAlgorithmSettingsRequest {
                experiment: Some(exp),
            })
            .await;
        match (refused, answer) {
            (None, Ok(_)) => {}
            (Some(want), Err(s)) => {
                assert_eq!(s.code(), Code::InvalidArgument, "{algorithm} {parallel}");
                assert!(
                    s.message().starts_with(&format!(
                        "experiment.spec.parallel_trial_count: value \"{parallel}\""
                    )) && s.message().contains(want),
                    "{}",
                    s.message()
                );
            }
            (want, got) => panic!("{algorithm} with {parallel}: expected {want:?}, got {got:?}"),
        }
    }
}

fn status_of<T: std::fmt::Debug>(r: Result<tonic::Response<T>, tonic::Status>) -> tonic::Status {
    r.expect_err("the call should fail")
}

#[tokio::test]
async fn bad_settings_and_malformed_requests_get_invalid_argument() {
    let server = start().await;
    let mut client = SuggestionClient::new(server.channel.clone());
    let s = status_of(
        client
            .validate_algorithm_settings(ValidateAlgorithmSettingsRequest {
                experiment: Some(experiment("tpe", &[("gamma", "1.5")])),
            })
            .await,
    );
    assert_eq!(s.code(), Code::InvalidArgument);
    assert!(
        s.message().contains("gamma") && s.message().contains("\"1.5\""),
        "{}",
        s.message()
    );
    let s = status_of(
        client
            .validate_algorithm_settings(ValidateAlgorithmSettingsRequest {
                experiment: Some(experiment("random", &[("unknown_conf", "1")])),
            })
            .await,
    );
    assert!(
        s.message()
            .starts_with("unknown setting \"unknown_conf\" for algorithm random"),
        "{}",
        s.message()
    );
    let s = status_of(
        client
            .validate_algorithm_settings(ValidateAlgorithmSettingsRequest {
                experiment: Some(experiment("nope", &[])),
            })
            .await,
    );
    assert!(
        s.message().starts_with("unknown algorithm name \"nope\""),
        "{}",
        s.message()
    );
    // Katib's own validation tests send the algorithm alone: its name is judged first.
    let mut bare = experiment("nope", &[]);
    if let Some(spec) = bare.spec.as_mut() {
        spec.parameter_specs = None;
        spec.objective = None;
    }
    let s = status_of(
        client
            .validate_algorithm_settings(ValidateAlgorithmSettingsRequest {
                experiment: Some(bare),
            })
            .await,
    );
    assert_eq!(s.code(), Code::InvalidArgument);
    assert!(
        s.message().starts_with("unknown algorithm name \"nope\""),
        "{}",
        s.message()
    );
    client
        .validate_algorithm_settings(ValidateAlgorithmSettingsRequest {
            experiment: Some(experiment("random", &[("random_state", "3")])),
        })
        .await
        .unwrap();

    let ask = |exp: Option<Experiment>, trials: Vec<Trial>| GetSuggestionsRequest {
        experiment: exp,
        trials,
        current_request_number: 1,
        total_request_number: 1,
    };
    let s = status_of(client.get_suggestions(ask(None, vec![])).await);
    assert_eq!(s.code(), Code::InvalidArgument);
    assert!(
        s.message().starts_with("experiment is missing"),
        "{}",
        s.message()
    );

    let mut unknown_type = experiment("random", &[]);
    unknown_type
        .spec
        .as_mut()
        .unwrap()
        .parameter_specs
        .as_mut()
        .unwrap()
        .parameters[1]
        .parameter_type = 42;
    let s = status_of(
        client
            .get_suggestions(ask(Some(unknown_type), vec![]))
            .await,
    );
    assert_eq!(s.code(), Code::InvalidArgument);
    assert!(
        s.message().starts_with(
            "experiment.spec.parameter_specs.parameters[1].parameter_type: value \"42\""
        ),
        "{}",
        s.message()
    );

    let mut reversed = experiment("random", &[]);
    let fs = reversed
        .spec
        .as_mut()
        .unwrap()
        .parameter_specs
        .as_mut()
        .unwrap()
        .parameters[0]
        .feasible_space
        .as_mut()
        .unwrap();
    fs.min = "0.9".into();
    fs.max = "0.1".into();
    let s = status_of(client.get_suggestions(ask(Some(reversed), vec![])).await);
    assert!(
        s.message()
            .contains("min \"0.9\" is greater than max \"0.1\" for parameter \"lr\""),
        "{}",
        s.message()
    );

    let exp = experiment("random", &[("random_state", "1")]);
    let reply = client
        .get_suggestions(ask(Some(exp.clone()), vec![]))
        .await
        .unwrap()
        .into_inner();
    let mut trials = succeeded(&exp, &reply, 0);
    trials[0]
        .status
        .as_mut()
        .unwrap()
        .observation
        .as_mut()
        .unwrap()
        .metrics[0]
        .value = "Genotype(normal=[])".into();
    // Text is no value, as in Katib's services (a DARTS genotype, a label): the request is
    // answered, and the trial counts as one without an objective.
    let reply = client
        .get_suggestions(ask(Some(exp.clone()), trials))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(reply.parameter_assignments.len(), 1);

    let mut zero = ask(Some(exp.clone()), vec![]);
    zero.current_request_number = 0;
    let s = status_of(client.get_suggestions(zero).await);
    assert!(
        s.message()
            .starts_with("current_request_number: value \"0\""),
        "{}",
        s.message()
    );

    // 10 MB of trials: refused before decoding, and the server keeps serving.
    let mut huge = experiment("random", &[]);
    huge.name = "x".repeat(10 * 1024 * 1024);
    let mut big_client =
        SuggestionClient::new(server.channel.clone()).max_encoding_message_size(64 * 1024 * 1024);
    let s = status_of(big_client.get_suggestions(ask(Some(huge), vec![])).await);
    // Refused as Katib's grpc-go servers refuse it, with the sizes in the text.
    assert_eq!(s.code(), Code::ResourceExhausted, "{s:?}");
    assert!(
        s.message().contains("message length too large"),
        "{}",
        s.message()
    );
    let again = client
        .get_suggestions(ask(Some(exp), vec![]))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(again.parameter_assignments.len(), 1);
}

fn log(metric: &str, value: &str, time: &str) -> MetricLog {
    MetricLog {
        time_stamp: time.into(),
        metric: Some(Metric {
            name: metric.into(),
            value: value.into(),
        }),
    }
}

#[tokio::test]
async fn db_manager_reports_filters_and_deletes_observation_logs() {
    let server = start().await;
    let mut db = DbManagerClient::new(server.channel.clone());
    db.report_observation_log(ReportObservationLogRequest {
        trial_name: "t1".into(),
        observation_log: Some(ObservationLog {
            metric_logs: vec![
                log("loss", "0.9", "2024-01-01T00:00:01Z"),
                log("acc", "0.5", "2024-01-01T00:00:02Z"),
                log("loss", "0.4", "2024-01-01T00:00:03.5Z"),
                log("loss", "skipped", ""),
            ],
        }),
    })
    .await
    .unwrap();
    let all = db
        .get_observation_log(GetObservationLogRequest {
            trial_name: "t1".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .observation_log
        .unwrap();
    assert_eq!(all.metric_logs.len(), 3);
    let loss = db
        .get_observation_log(GetObservationLogRequest {
            trial_name: "t1".into(),
            metric_name: "loss".into(),
            start_time: "2024-01-01T00:00:02Z".into(),
            end_time: "2024-01-01T00:00:04Z".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .observation_log
        .unwrap();
    assert_eq!(
        loss.metric_logs,
        vec![log("loss", "0.4", "2024-01-01T00:00:03.5Z")]
    );

    let s = status_of(
        db.report_observation_log(ReportObservationLogRequest {
            trial_name: "t1".into(),
            observation_log: Some(ObservationLog {
                metric_logs: vec![log("loss", "1", "last tuesday")],
            }),
        })
        .await,
    );
    assert_eq!(s.code(), Code::InvalidArgument);
    assert!(
        s.message()
            .starts_with("observation_log.metric_logs[0].time_stamp: value \"last tuesday\""),
        "{}",
        s.message()
    );
    // Longer than every store holds, or what one store would key or hold differently from
    // another (MySQL pads trailing spaces, PostgreSQL's text cannot hold NUL): the caller's
    // error on every store, not one to retry.
    let long_value = "1".repeat(70_000);
    let long_name = "m".repeat(300);
    for (metric, value, field) in [
        ("loss", long_value.as_str(), "metric.value: 70000 bytes"),
        (long_name.as_str(), "1", "metric.name: 300 bytes"),
        (
            "loss ",
            "1",
            "metric.name: value \"loss \" begins or ends with whitespace",
        ),
        (
            "lo\0ss",
            "1",
            "metric.name: value \"lo\\0ss\" holds a NUL byte",
        ),
        (
            "loss",
            "1\0",
            "metric.value: value \"1\\0\" holds a NUL byte",
        ),
    ] {
        let s = status_of(
            db.report_observation_log(ReportObservationLogRequest {
                trial_name: "t1".into(),
                observation_log: Some(ObservationLog {
                    metric_logs: vec![log(metric, value, "2024-01-01T00:00:09Z")],
                }),
            })
            .await,
        );
        assert_eq!(s.code(), Code::InvalidArgument, "{}", s.message());
        assert!(
            s.message()
                .starts_with(&format!("observation_log.metric_logs[0].{field}")),
            "{}",
            s.message()
        );
    }
    let s = status_of(
        db.get_observation_log(GetObservationLogRequest {
            trial_name: "t1".into(),
            metric_name: "loss ".into(),
            ..Default::default()
        })
        .await,
    );
    assert_eq!(s.code(), Code::InvalidArgument, "{}", s.message());
    assert!(
        s.message().starts_with("metric_name: value \"loss \""),
        "{}",
        s.message()
    );
    let s = status_of(
        db.delete_observation_log(DeleteObservationLogRequest {
            trial_name: "t1   ".into(),
        })
        .await,
    );
    assert_eq!(s.code(), Code::InvalidArgument, "{}", s.message());
    assert!(
        s.message().starts_with("trial_name: value \"t1   \""),
        "{}",
        s.message()
    );
    let s = status_of(
        db.report_observation_log(ReportObservationLogRequest {
            trial_name: String::new(),
            observation_log: None,
        })
        .await,
    );
    assert!(
        s.message().starts_with("trial_name is missing"),
        "{}",
        s.message()
    );
    // Nothing to record is no error (docs/katib-differences.md): an empty report, and one
    // whose only log has no time stamp, which Katib skips too.
    let before = server
        .store
        .observations("t1", None, None, None)
        .await
        .unwrap();
    for metric_logs in [vec![], vec![log("loss", "0.5", "")]] {
        db.report_observation_log(ReportObservationLogRequest {
            trial_name: "t1".into(),
            observation_log: Some(ObservationLog { metric_logs }),
        })
        .await
        .unwrap();
    }
    let after = server
        .store
        .observations("t1", None, None, None)
        .await
        .unwrap();
    assert_eq!(after, before);
    let s = status_of(
        db.get_observation_log(GetObservationLogRequest {
            trial_name: "t1".into(),
            start_time: "soon".into(),
            ..Default::default()
        })
        .await,
    );
    assert!(
        s.message().starts_with("start_time: value \"soon\""),
        "{}",
        s.message()
    );

    db.delete_observation_log(DeleteObservationLogRequest {
        trial_name: "t1".into(),
    })
    .await
    .unwrap();
    assert_eq!(
        server
            .store
            .observations("t1", None, None, None)
            .await
            .unwrap(),
        vec![]
    );
}

async fn record_trial(store: &SqlStore, name: &str, state: TrialState) {
    if store.get_experiment("rpc").await.unwrap().is_none() {
        store
            .create_experiment(&ExperimentRow {
                name: "rpc".into(),
                spec_json: "{}".into(),
                seed: 0,
                created_us: 0,
                work_dir: String::new(),
                log_dir: String::new(),
                status: ExperimentStatusRow {
                    phase: "Running".into(),
                    reason: String::new(),
                    message: String::new(),
                    started_us: None,
                    completed_us: None,
                    algorithm_state: None,
                    conditions_json: "[]".into(),
                },
            })
            .await
            .unwrap();
    }
    let seq = store.list_trials("rpc").await.unwrap().len() as i64;
    store
        .insert_trial(&TrialRow {
            experiment: "rpc".into(),
            name: name.into(),
            seq,
            assignment: vec![],
            labels: BTreeMap::new(),
            state,
            reason: String::new(),
            message: String::new(),
            created_us: 0,
            started_us: None,
            completed_us: None,
            attempt: 0,
            early_stopping_rules: None,
            stop_step: None,
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn early_stopping_rules_validation_and_trial_status() {
    let server = start().await;
    let mut es = EarlyStoppingClient::new(server.channel.clone());
    let mut db = DbManagerClient::new(server.channel.clone());
    for (trial, values) in [("a", ["0.5", "0.7", "0.9"]), ("b", ["0.1", "0.3", "0.2"])] {
        db.report_observation_log(ReportObservationLogRequest {
            trial_name: trial.into(),
            observation_log: Some(ObservationLog {
                metric_logs: values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| log("acc", v, &format!("2024-01-01T00:00:0{i}Z")))
                    .collect(),
            }),
        })
        .await
        .unwrap();
    }
    let exp = experiment("random", &[]);
    let trial = |name: &str, condition: TrialConditionType| Trial {
        name: name.into(),
        spec: None,
        status: Some(api::TrialStatus {
            condition: condition as i32,
            ..Default::default()
        }),
    };
    let ask = |trials: Vec<Trial>| GetEarlyStoppingRulesRequest {
        experiment: Some(exp.clone()),
        trials,
        db_manager_address: String::new(),
    };
    let none = es
        .get_early_stopping_rules(ask(vec![trial("a", TrialConditionType::Succeeded)]))
        .await
        .unwrap()
        .into_inner();
    assert!(
        none.early_stopping_rules.is_empty(),
        "one succeeded trial is below min_trials_required"
    );
    let rules = es
        .get_early_stopping_rules(ask(vec![
            trial("a", TrialConditionType::Succeeded),
            trial("b", TrialConditionType::Succeeded),
            trial("c", TrialConditionType::Running),
        ]))
        .await
        .unwrap()
        .into_inner()
        .early_stopping_rules;
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0].name, "acc");
    // mean of (0.5+0.7)/2 and (0.1+0.3)/2
    assert!(
        (rules[0].value.parse::<f64>().unwrap() - 0.4).abs() < 1e-12,
        "{}",
        rules[0].value
    );
    assert_eq!(rules[0].comparison, api::ComparisonType::Less as i32);
    assert_eq!(rules[0].start_step, 2);

    let s = status_of(
        es.validate_early_stopping_settings(ValidateEarlyStoppingSettingsRequest {
            early_stopping: Some(EarlyStoppingSpec {
                algorithm_name: "medianstop".into(),
                algorithm_settings: vec![EarlyStoppingSetting {
                    name: "start_step".into(),
                    value: "0".into(),
                }],
            }),
        })
        .await,
    );
    assert_eq!(s.code(), Code::InvalidArgument);
    assert!(
        s.message()
            .contains("start_step must be greater or equal than one (>=1)"),
        "{}",
        s.message()
    );
    // ASHA stops trials itself and has no rules to serve: refused before a controller starts.
    let s = status_of(
        es.validate_early_stopping_settings(ValidateEarlyStoppingSettingsRequest {
            early_stopping: Some(EarlyStoppingSpec {
                algorithm_name: "asha".into(),
                algorithm_settings: vec![],
            }),
        })
        .await,
    );
    assert_eq!(s.code(), Code::InvalidArgument);
    assert!(
        s.message()
            .contains("cannot be expressed as Katib early stopping rules"),
        "{}",
        s.message()
    );
    let s = status_of(
        es.validate_early_stopping_settings(ValidateEarlyStoppingSettingsRequest {
            early_stopping: None,
        })
        .await,
    );
    assert!(
        s.message().starts_with("early_stopping is missing"),
        "{}",
        s.message()
    );

    record_trial(&server.store, "running-one", TrialState::Running).await;
    record_trial(&server.store, "done-one", TrialState::Succeeded).await;
    es.set_trial_status(SetTrialStatusRequest {
        trial_name: "running-one".into(),
    })
    .await
    .unwrap();
    let row = server
        .store
        .get_trial("running-one")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.state, TrialState::EarlyStopped);
    assert_eq!(row.reason, "TrialEarlyStopped");
    assert_eq!(row.message, "Trial is early stopped");
    let s = status_of(
        es.set_trial_status(SetTrialStatusRequest {
            trial_name: "ghost".into(),
        })
        .await,
    );
    assert_eq!(s.code(), Code::NotFound);
    let s = status_of(
        es.set_trial_status(SetTrialStatusRequest {
            trial_name: "done-one".into(),
        })
        .await,
    );
    assert_eq!(s.code(), Code::FailedPrecondition);
    let message = s.message();
    assert!(
        message.contains("\"done-one\" already ended as Succeeded"),
        "{message}"
    );
    let s = status_of(
        es.set_trial_status(SetTrialStatusRequest {
            trial_name: String::new(),
        })
        .await,
    );
    assert_eq!(s.code(), Code::InvalidArgument);
    let message = s.message();
    assert!(
        message.starts_with("trial_name is missing\nhint: name the trial to mark EarlyStopped"),
        "{message}"
    );
}

#[tokio::test]
async fn health_follows_the_store() {
    let server = start().await;
    let mut health = HealthClient::new(server.channel.clone());
    for service in ["", "grpc.health.v1.Health", "manager.v1beta1.Suggestion"] {
        let r = health
            .check(HealthCheckRequest {
                service: service.into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.status, ServingStatus::Serving as i32, "{service:?}");
    }
    let s = status_of(
        health
            .check(HealthCheckRequest {
                service: "grpc.health.v1.1.Health".into(),
            })
            .await,
    );
    assert_eq!(s.code(), Code::NotFound);
    server.store.close().await;
    let r = health
        .check(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.status, ServingStatus::NotServing as i32);
}

/// A search that gives fewer trials than asked, with no trial running, never gives more:
/// OUT_OF_RANGE (the search is over), not UNAVAILABLE (wait), so a controller stops retrying.
/// (Point samplers such as random answer with repeats instead: `katib_controller.rs`.)
#[tokio::test]
async fn fewer_trials_than_asked_with_nothing_running_ends_the_search() {
    let server = start().await;
    let mut client = SuggestionClient::new(server.channel.clone());
    for (algorithm, settings) in [("grid", vec![]), ("asha", settings_for("asha"))] {
        let mut exp = experiment(algorithm, &settings);
        let spec = exp.spec.as_mut().unwrap();
        spec.parameter_specs.as_mut().unwrap().parameters = vec![
            param("opt", ParameterType::Categorical, "", "", "", &["a", "b"]),
            param("epochs", ParameterType::Int, "1", "9", "", &[]),
        ];
        if algorithm != "asha" {
            spec.parameter_specs.as_mut().unwrap().parameters.pop();
        }
        let req = GetSuggestionsRequest {
            experiment: Some(exp),
            trials: vec![],
            current_request_number: 3,
            total_request_number: 3,
        };
        let s = status_of(client.get_suggestions(req).await);
        assert_eq!(s.code(), Code::OutOfRange, "{algorithm}: {}", s.message());
        assert!(
            s.message().contains("2 of the 3"),
            "{algorithm}: {}",
            s.message()
        );
        assert!(!s.message().contains("()"), "{algorithm}: {}", s.message());
        assert!(!s.message().contains("  "), "{algorithm}: {}", s.message());
    }
}

/// Katib's controller keeps the reply's trial names and drops its labels: PBT members that
/// share one assignment (a two-value space) keep labels of their own and generations advance.
#[tokio::test]
async fn pbt_members_sharing_an_assignment_keep_their_own_labels() {
    let server = start().await;
    let mut client = SuggestionClient::new(server.channel.clone());
    let mut exp = experiment("pbt", &settings_for("pbt"));
    exp.spec
        .as_mut()
        .unwrap()
        .parameter_specs
        .as_mut()
        .unwrap()
        .parameters = vec![param(
        "opt",
        ParameterType::Categorical,
        "",
        "",
        "",
        &["a", "b"],
    )];
    let mut trials: Vec<Trial> = Vec::new();
    let mut generations = Vec::new();
    for round in 0..3 {
        let reply = client
            .get_suggestions(GetSuggestionsRequest {
                experiment: Some(exp.clone()),
                trials: trials.clone(),
                current_request_number: 5,
                total_request_number: 5 * (round + 1),
            })
            .await
            .unwrap()
            .into_inner();
        generations.extend(
            reply
                .parameter_assignments
                .iter()
                .map(|a| a.labels["pbt.suggestion.katib.kubeflow.org/generation"].clone()),
        );
        support::merge_settings(
            &mut exp,
            &reply.algorithm.clone().unwrap().algorithm_settings,
        );
        // As the controller sends them: the reply's names, no labels.
        let mut done = succeeded(&exp, &reply, trials.len());
        for t in &mut done {
            t.spec.as_mut().unwrap().labels.clear();
        }
        trials.extend(done);
    }
    assert_eq!(generations[..5], ["0"; 5]);
    assert_eq!(generations[5..10], ["1"; 5]);
    assert_eq!(generations[10..], ["2"; 5]);
}

/// Katib's controller refuses an answer shorter than it asked for and asks again for as many:
/// with a generation-0 member failed and nothing running it asks for all 5, and gets the
/// member's retry and 4 extra members of generation 0 (as Katib's service seeds extra members),
/// after which the population breeds generation 1 from its 5 slots.
#[tokio::test]
async fn a_failed_pbt_member_under_a_controller_asking_for_a_generation_does_not_stall() {
    let server = start().await;
    let mut client = SuggestionClient::new(server.channel.clone());
    let mut exp = experiment("pbt", &settings_for("pbt"));
    let labels = |r: &api::GetSuggestionsReply, key: &str| -> Vec<String> {
        r.parameter_assignments
            .iter()
            .map(|a| a.labels[key].clone())
            .collect()
    };
    let mut trials: Vec<Trial> = Vec::new();
    let mut replies = Vec::new();
    for round in 0..3 {
        let reply = client
            .get_suggestions(GetSuggestionsRequest {
                experiment: Some(exp.clone()),
                trials: trials.clone(),
                current_request_number: 5,
                total_request_number: 5 * (round + 1),
            })
            .await
            .unwrap_or_else(|s| panic!("round {round}: {s:?}"))
            .into_inner();
        support::merge_settings(
            &mut exp,
            &reply.algorithm.clone().unwrap().algorithm_settings,
        );
        let mut done = succeeded(&exp, &reply, trials.len());
        if round == 0 {
            let status = done[2].status.as_mut().unwrap();
            status.condition = TrialConditionType::Failed as i32;
            status.observation = None;
        }
        trials.extend(done);
        replies.push(reply);
    }
    let generation = "pbt.suggestion.katib.kubeflow.org/generation";
    assert_eq!(labels(&replies[1], generation), ["0"; 5]);
    assert_eq!(
        labels(&replies[1], "vernier.pbt/member"),
        ["2", "5", "6", "7", "8"]
    );
    assert_eq!(
        replies[1].parameter_assignments[0].assignments,
        replies[0].parameter_assignments[2].assignments,
        "the failed member is retried as it was"
    );
    assert_eq!(labels(&replies[2], generation), ["1"; 5]);
}

#[tokio::test]
async fn a_database_file_deleted_under_the_server_is_refused_for_reads_as_for_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("served.db");
    let store = SqlStore::connect(path.to_str().unwrap()).await.unwrap();
    let (channel, _shutdown) = support::serve(vernier_api::router(store.clone()).unwrap()).await;
    let mut db = DbManagerClient::new(channel);
    let report = ReportObservationLogRequest {
        trial_name: "t1".into(),
        observation_log: Some(ObservationLog {
            metric_logs: vec![log("loss", "0.5", "2024-01-01T00:00:01Z")],
        }),
    };
    db.report_observation_log(report.clone()).await.unwrap();
    std::fs::remove_file(&path).unwrap();
    let read = status_of(
        db.get_observation_log(GetObservationLogRequest {
            trial_name: "t1".into(),
            ..Default::default()
        })
        .await,
    );
    let write = status_of(db.report_observation_log(report).await);
    for s in [read, write] {
        assert_eq!(s.code(), Code::FailedPrecondition, "{}", s.message());
        assert!(
            s.message()
                .contains("was deleted while vernier had it open")
                && s.message()
                    .contains("`vernier serve` refuses its DBManager requests until restarted"),
            "{}",
            s.message()
        );
    }
}
