//! `vernier serve` driven as Katib's controller drives its suggestion and early-stopping
//! services: specs Katib accepts are served, finite spaces smaller than maxTrialCount end,
//! early-stopping rules come from the DBManager the request names, and refusals carry the
//! messages Katib users know.

// Helpers outside #[test] functions unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used)]

mod support;

use tonic::Code;
use tonic::transport::Channel;
use vernier_api::proto::api::{
    self, DeleteObservationLogRequest, Experiment, ExperimentSpec, FeasibleSpace,
    GetEarlyStoppingRulesRequest, GetSuggestionsReply, GetSuggestionsRequest, Metric, MetricLog,
    ObjectiveType, ObservationLog, ParameterAssignment, ParameterSpec, ParameterType,
    ReportObservationLogRequest, Trial, TrialSpec, TrialStatus, ValidateAlgorithmSettingsRequest,
    db_manager_client::DbManagerClient, early_stopping_client::EarlyStoppingClient,
    experiment_spec::ParameterSpecs, suggestion_client::SuggestionClient, trial_spec,
    trial_status::TrialConditionType,
};
use vernier_store::SqlStore;

struct Server {
    channel: Channel,
    address: String,
    _shutdown: tokio::sync::oneshot::Sender<()>,
}

/// A server on a free loopback port, with its address for requests that name it.
async fn start_on(store: SqlStore) -> Server {
    let (channel, address, tx) = support::serve_at(vernier_api::router(store).unwrap()).await;
    Server {
        channel,
        address,
        _shutdown: tx,
    }
}

async fn start() -> Server {
    start_on(SqlStore::connect(":memory:").await.unwrap()).await
}

fn space(list: &[&str], min: &str, max: &str) -> FeasibleSpace {
    FeasibleSpace {
        min: min.into(),
        max: max.into(),
        list: list.iter().map(|v| v.to_string()).collect(),
        ..Default::default()
    }
}

fn param(name: &str, kind: ParameterType, fs: FeasibleSpace) -> ParameterSpec {
    ParameterSpec {
        name: name.into(),
        parameter_type: kind as i32,
        feasible_space: Some(fs),
    }
}

fn experiment(algorithm: &str, parameters: Vec<ParameterSpec>, max_trials: i32) -> Experiment {
    Experiment {
        name: "ctl".into(),
        spec: Some(ExperimentSpec {
            parameter_specs: Some(ParameterSpecs { parameters }),
            objective: Some(support::objective(ObjectiveType::Minimize, "loss", 0.0)),
            algorithm: Some(support::algorithm(algorithm, &[("random_state", "7")])),
            early_stopping: Some(support::medianstop_two_and_two()),
            parallel_trial_count: 1,
            max_trial_count: max_trials,
            nas_config: None,
        }),
    }
}

/// A trial as Katib's controller sends it back: the reply's assignment, a name, a result.
fn trial(name: &str, assignments: Vec<ParameterAssignment>, loss: f64) -> Trial {
    Trial {
        name: name.into(),
        spec: Some(TrialSpec {
            objective: None,
            parameter_assignments: Some(trial_spec::ParameterAssignments { assignments }),
            labels: Default::default(),
        }),
        status: Some(TrialStatus {
            condition: TrialConditionType::Succeeded as i32,
            observation: Some(api::Observation {
                metrics: vec![Metric {
                    name: "loss".into(),
                    value: loss.to_string(),
                }],
            }),
            ..Default::default()
        }),
    }
}

/// Emulates Katib's suggestion controller: asks for `rounds[i]` assignments in turn, sending
/// back every earlier one as a succeeded trial and merging the reply's algorithm settings into
/// the next request. Returns each reply.
async fn drive(
    client: &mut SuggestionClient<Channel>,
    exp: &Experiment,
    rounds: &[i32],
) -> Result<Vec<GetSuggestionsReply>, tonic::Status> {
    let mut exp = exp.clone();
    let mut trials: Vec<Trial> = Vec::new();
    let mut replies = Vec::new();
    let mut total = 0;
    for &n in rounds {
        total += n;
        let reply = client
            .get_suggestions(GetSuggestionsRequest {
                experiment: Some(exp.clone()),
                trials: trials.clone(),
                current_request_number: n,
                total_request_number: total,
            })
            .await?
            .into_inner();
        for pa in &reply.parameter_assignments {
            let k = trials.len();
            trials.push(trial(&format!("ctl-{k}"), pa.assignments.clone(), k as f64));
        }
        if let Some(algorithm) = &reply.algorithm {
            support::merge_settings(&mut exp, &algorithm.algorithm_settings);
        }
        replies.push(reply);
    }
    Ok(replies)
}

fn values_of(replies: &[GetSuggestionsReply], name: &str) -> Vec<String> {
    replies
        .iter()
        .flat_map(|r| &r.parameter_assignments)
        .flat_map(|pa| &pa.assignments)
        .filter(|a| a.name == name)
        .map(|a| a.value.clone())
        .collect()
}

/// What `vernier validate` accepts with a warning, a Katib controller gets served: validated,
/// suggested from the space `vernier run` searches, and the trials sent back convert.
#[tokio::test]
async fn specs_katib_accepts_with_a_warning_are_validated_and_suggested() {
    let server = start().await;
    let mut client = SuggestionClient::new(server.channel.clone());
    let mut log_from_zero = space(&[], "0", "0.05");
    log_from_zero.distribution = api::Distribution::LogUniform as i32;
    // (parameter, the values the replies may hold)
    let cases: [(ParameterSpec, &[&str]); 3] = [
        (
            param(
                "optimizer",
                ParameterType::Categorical,
                space(&["sgd", "adam", "sgd"], "", ""),
            ),
            &["sgd", "adam"],
        ),
        (
            param(
                "batch",
                ParameterType::Discrete,
                space(&["16", "32", "auto"], "", ""),
            ),
            &["16", "32", "auto"],
        ),
        (param("lr", ParameterType::Double, log_from_zero), &[]),
    ];
    for algorithm in ["random", "tpe"] {
        for (p, allowed) in &cases {
            let exp = experiment(algorithm, vec![p.clone()], 6);
            client
                .validate_algorithm_settings(ValidateAlgorithmSettingsRequest {
                    experiment: Some(exp.clone()),
                })
                .await
                .unwrap_or_else(|s| panic!("{algorithm} {}: {s:?}", p.name));
            let replies = drive(&mut client, &exp, &[2, 2, 2])
                .await
                .unwrap_or_else(|s| panic!("{algorithm} {}: {s:?}", p.name));
            let values = values_of(&replies, &p.name);
            assert_eq!(values.len(), 6, "{algorithm} {}: {values:?}", p.name);
            for v in &values {
                if allowed.is_empty() {
                    let x: f64 = v.parse().unwrap();
                    assert!((0.0..=0.05).contains(&x), "{algorithm}: {v}");
                } else {
                    assert!(allowed.contains(&v.as_str()), "{algorithm}: {v}");
                }
            }
        }
    }
}

/// Each reply's assignments as `name=value,...` lines, in reply order.
fn points(replies: &[GetSuggestionsReply]) -> Vec<String> {
    replies
        .iter()
        .flat_map(|r| &r.parameter_assignments)
        .map(|pa| {
            let parts: Vec<String> = pa
                .assignments
                .iter()
                .map(|a| format!("{}={}", a.name, a.value))
                .collect();
            parts.join(",")
        })
        .collect()
}

/// A 3-value space with maxTrialCount 5 (cmaes, which needs two numeric dimensions: a 4-point
/// one), asked as Katib's controller asks: every point sampler answers every request in full,
/// trying each point before any repeat, the same for a retried request, so the experiment ends
/// instead of retrying OUT_OF_RANGE forever.
#[tokio::test]
async fn an_exhausted_finite_space_is_answered_with_repeats() {
    let server = start().await;
    let mut client = SuggestionClient::new(server.channel.clone());
    let three = vec![param(
        "optimizer",
        ParameterType::Categorical,
        space(&["sgd", "adam", "rmsprop"], "", ""),
    )];
    let four = vec![
        param("a", ParameterType::Int, space(&[], "1", "2")),
        param("b", ParameterType::Int, space(&[], "1", "2")),
    ];
    // The tree surrogates start their model after one trial, so the model picks the points.
    let tree = |estimator| vec![("base_estimator", estimator), ("n_initial_points", "1")];
    let none = Vec::new();
    let cases = [
        ("random", &three, 3, &none),
        ("sobol", &three, 3, &none),
        ("tpe", &three, 3, &none),
        ("multivariate-tpe", &three, 3, &none),
        ("bayesianoptimization", &three, 3, &none),
        ("bayesianoptimization", &three, 3, &tree("RF")),
        ("bayesianoptimization", &four, 4, &tree("GBRT")),
        ("cmaes", &four, 4, &none),
        ("nsga2", &three, 3, &none),
    ];
    for (algorithm, params, size, settings) in cases {
        let mut exp = experiment(algorithm, params.clone(), 5);
        if let Some(spec) = exp.spec.as_mut().and_then(|s| s.algorithm.as_mut()) {
            let extra = support::algorithm(algorithm, settings).algorithm_settings;
            spec.algorithm_settings.extend(extra);
        }
        for rounds in [&[1, 1, 1, 1, 1][..], &[2, 2, 1]] {
            let replies = drive(&mut client, &exp, rounds)
                .await
                .unwrap_or_else(|s| panic!("{algorithm} {settings:?} {rounds:?}: {s:?}"));
            for (reply, &n) in replies.iter().zip(rounds) {
                assert_eq!(
                    reply.parameter_assignments.len(),
                    n as usize,
                    "{algorithm} {settings:?} {rounds:?}"
                );
            }
            let got = points(&replies);
            let mut first = got[..size].to_vec();
            first.sort();
            first.dedup();
            assert_eq!(
                first.len(),
                size,
                "{algorithm} {settings:?} {rounds:?}: {got:?}"
            );
            let again = drive(&mut client, &exp, rounds).await.unwrap();
            assert_eq!(
                points(&again),
                got,
                "{algorithm} {settings:?} {rounds:?}: a retried request gets the same answer"
            );
        }
    }
}

/// Schedules keep the error: a repeat has no place in a Hyperband bracket or an ASHA rung.
#[tokio::test]
async fn grid_is_refused_with_katibs_message_and_grid_never_repeats() {
    let server = start().await;
    let mut client = SuggestionClient::new(server.channel.clone());
    let params = vec![
        param("a", ParameterType::Categorical, space(&["x", "y"], "", "")),
        param("b", ParameterType::Int, space(&[], "1", "2")),
    ];
    let s = client
        .validate_algorithm_settings(ValidateAlgorithmSettingsRequest {
            experiment: Some(experiment("grid", params.clone(), 5)),
        })
        .await
        .unwrap_err();
    assert_eq!(s.code(), Code::InvalidArgument);
    assert!(
        s.message().starts_with(
            "experiment.spec.max_trial_count: Max Trial Count: 5 > all possible search \
             combinations: 4 (grid); a controller would wait"
        ),
        "{}",
        s.message()
    );
    assert!(
        s.message()
            .contains("\nhint: set maxTrialCount to at most 4")
    );
    let s = drive(&mut client, &experiment("grid", params, 5), &[4, 1])
        .await
        .unwrap_err();
    assert_eq!(s.code(), Code::OutOfRange, "{}", s.message());
}

/// A name the YAML path refuses is refused over the wire too, naming the field.
#[tokio::test]
async fn an_ambiguous_parameter_name_is_refused() {
    let server = start().await;
    let mut client = SuggestionClient::new(server.channel.clone());
    for name in ["lr=1", "lr\tx"] {
        let p = param(name, ParameterType::Double, space(&[], "0", "1"));
        let s = client
            .validate_algorithm_settings(ValidateAlgorithmSettingsRequest {
                experiment: Some(experiment("random", vec![p], 3)),
            })
            .await
            .unwrap_err();
        assert_eq!(s.code(), Code::InvalidArgument);
        assert!(
            s.message()
                .starts_with("experiment.spec.parameter_specs.parameters[0].name: value "),
            "{}",
            s.message()
        );
        assert!(
            s.message().contains("contains '=' or a control character"),
            "{}",
            s.message()
        );
    }
}

fn log(value: &str, second: usize) -> MetricLog {
    MetricLog {
        time_stamp: format!("2024-01-01T00:00:0{second}Z"),
        metric: Some(Metric {
            name: "loss".into(),
            value: value.into(),
        }),
    }
}

fn one_double() -> Vec<ParameterSpec> {
    vec![param(
        "lr",
        ParameterType::Double,
        space(&[], "0.01", "0.1"),
    )]
}

fn succeeded(name: &str) -> Trial {
    Trial {
        name: name.into(),
        spec: None,
        status: Some(TrialStatus {
            condition: TrialConditionType::Succeeded as i32,
            ..Default::default()
        }),
    }
}

/// Logs `loss` 0.5, 0.7, 0.9 for trial `a` and 0.1, 0.3, 0.2 for `b` through `db`.
async fn report_two_trials(db: &mut DbManagerClient<tonic::transport::Channel>) {
    for (trial, values) in [("a", ["0.5", "0.7", "0.9"]), ("b", ["0.1", "0.3", "0.2"])] {
        db.report_observation_log(ReportObservationLogRequest {
            trial_name: trial.into(),
            observation_log: Some(ObservationLog {
                metric_logs: values.iter().enumerate().map(|(i, v)| log(v, i)).collect(),
            }),
        })
        .await
        .unwrap();
    }
}

/// A succeeded trial ending at `completed`.
fn succeeded_at(name: &str, completed: &str) -> Trial {
    let mut t = succeeded(name);
    if let Some(status) = t.status.as_mut() {
        status.completion_time = completed.into();
    }
    t
}

/// A succeeded trial's first values are read once, as Katib's medianstop keeps each trial's
/// average: the controller asks after every suggestion, and a succeeded trial's logs no
/// longer change. A trial of the same name that ended at another time is read again.
#[tokio::test]
async fn a_succeeded_trials_first_values_are_read_once() {
    let holder = start().await;
    let asked = start().await;
    let mut db = DbManagerClient::new(holder.channel.clone());
    report_two_trials(&mut db).await;
    let mut es = EarlyStoppingClient::new(asked.channel.clone());
    let mut rule = async |a_completed: &str| {
        let rules = es
            .get_early_stopping_rules(GetEarlyStoppingRulesRequest {
                experiment: Some(experiment("random", one_double(), 5)),
                trials: vec![
                    succeeded_at("a", a_completed),
                    succeeded_at("b", "2024-01-01T00:00:02Z"),
                ],
                db_manager_address: holder.address.clone(),
            })
            .await
            .unwrap()
            .into_inner()
            .early_stopping_rules;
        rules.first().map(|r| r.value.parse::<f64>().unwrap())
    };
    let first = rule("2024-01-01T00:00:01Z").await.unwrap();
    assert!((first - 0.4).abs() < 1e-12, "{first}");
    db.delete_observation_log(DeleteObservationLogRequest {
        trial_name: "a".into(),
    })
    .await
    .unwrap();
    assert_eq!(rule("2024-01-01T00:00:01Z").await, Some(first));
    // Another trial named `a`, with no logs: only b has values, fewer than the rule needs.
    assert_eq!(rule("2024-06-01T00:00:00Z").await, None);
}

/// Katib's medianstop reads the logs from the DBManager the request names: a server asked with
/// another's address computes the rule from that one's logs; without an address, from its own.
#[tokio::test]
async fn early_stopping_rules_read_the_db_manager_the_request_names() {
    let holder = start().await;
    let asked = start().await;
    let mut db = DbManagerClient::new(holder.channel.clone());
    report_two_trials(&mut db).await;
    let mut es = EarlyStoppingClient::new(asked.channel.clone());
    let ask = |address: &str| GetEarlyStoppingRulesRequest {
        experiment: Some(experiment("random", one_double(), 5)),
        trials: vec![succeeded("a"), succeeded("b")],
        db_manager_address: address.into(),
    };
    let rules = es
        .get_early_stopping_rules(ask(&holder.address))
        .await
        .unwrap()
        .into_inner()
        .early_stopping_rules;
    assert_eq!(rules.len(), 1, "{rules:?}");
    // The mean over trials of each one's mean of its first start_step (2) values:
    // (0.5+0.7)/2 and (0.1+0.3)/2; minimizing, a trial above it is stopped.
    assert_eq!(rules[0].name, "loss");
    assert_eq!(rules[0].comparison, api::ComparisonType::Greater as i32);
    assert!(
        (rules[0].value.parse::<f64>().unwrap() - 0.4).abs() < 1e-12,
        "{}",
        rules[0].value
    );
    let own = es
        .get_early_stopping_rules(ask(""))
        .await
        .unwrap()
        .into_inner()
        .early_stopping_rules;
    assert!(
        own.is_empty(),
        "the asked server's store has no logs: {own:?}"
    );
}

#[tokio::test]
async fn an_unreachable_db_manager_is_unavailable_naming_its_address() {
    let server = start().await;
    // A port that was free a moment ago: nothing listens there.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    let mut es = EarlyStoppingClient::new(server.channel.clone());
    let s = es
        .get_early_stopping_rules(GetEarlyStoppingRulesRequest {
            experiment: Some(experiment("random", one_double(), 5)),
            trials: vec![succeeded("a")],
            db_manager_address: closed.clone(),
        })
        .await
        .unwrap_err();
    assert_eq!(s.code(), Code::Unavailable, "{}", s.message());
    assert!(
        s.message().starts_with(&format!(
            "cannot read observation logs from the DBManager at {closed} (db_manager_address): "
        )),
        "{}",
        s.message()
    );
    let s = es
        .get_early_stopping_rules(GetEarlyStoppingRulesRequest {
            experiment: Some(experiment("random", one_double(), 5)),
            trials: vec![],
            db_manager_address: "katib-db-manager".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(s.code(), Code::InvalidArgument, "{}", s.message());
    assert!(s.message().contains("has no port"), "{}", s.message());
}

/// Deleting logs from a database file deleted under the server is refused as reporting is,
/// not acknowledged.
#[tokio::test]
async fn deleting_logs_from_a_deleted_database_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vernier.db");
    let store = SqlStore::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    let server = start_on(store).await;
    let mut db = DbManagerClient::new(server.channel.clone());
    db.delete_observation_log(DeleteObservationLogRequest {
        trial_name: "t1".into(),
    })
    .await
    .unwrap();
    std::fs::remove_file(&path).unwrap();
    let report = db
        .report_observation_log(ReportObservationLogRequest {
            trial_name: "t1".into(),
            observation_log: Some(ObservationLog {
                metric_logs: vec![log("0.5", 1)],
            }),
        })
        .await
        .unwrap_err();
    let delete = db
        .delete_observation_log(DeleteObservationLogRequest {
            trial_name: "t1".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(
        delete.code(),
        Code::FailedPrecondition,
        "{}",
        delete.message()
    );
    assert_eq!(delete.code(), report.code());
    assert_eq!(delete.message(), report.message());
    assert!(
        delete.message().contains("vernier.db"),
        "{}",
        delete.message()
    );
}
