//! DARTS and ENAS over the Katib-wire Suggestion API, with the requests of Katib's own
//! `test_darts_service.py` and `test_enas_service.py` (nasConfig, no parameters).

#![allow(clippy::unwrap_used)]

mod support;

use tonic::Code;
use tonic::transport::Channel;
use vernier_api::proto::api::{
    AlgorithmSetting, Experiment, ExperimentSpec, FeasibleSpace, GetSuggestionsRequest,
    GraphConfig, Metric, NasConfig, ObjectiveType, Observation, Operation, ParameterAssignment,
    ParameterSpec, ParameterType, Trial, TrialSpec, TrialStatus, ValidateAlgorithmSettingsRequest,
    nas_config::Operations, operation, suggestion_client::SuggestionClient, trial_spec,
    trial_status::TrialConditionType,
};

async fn client() -> (SuggestionClient<Channel>, tokio::sync::oneshot::Sender<()>) {
    let store = vernier_store::SqlStore::connect(":memory:").await.unwrap();
    let router = vernier_api::router(store).unwrap();
    let (channel, tx) = support::serve(router).await;
    (SuggestionClient::new(channel), tx)
}

fn categorical(name: &str, list: &[&str]) -> ParameterSpec {
    ParameterSpec {
        name: name.into(),
        parameter_type: ParameterType::Categorical as i32,
        feasible_space: Some(FeasibleSpace {
            list: list.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }),
    }
}

fn op(kind: &str, parameters: Vec<ParameterSpec>) -> Operation {
    Operation {
        operation_type: kind.into(),
        parameter_specs: Some(operation::ParameterSpecs { parameters }),
    }
}

fn experiment(
    algorithm: &str,
    settings: &[(&str, &str)],
    metric: &str,
    graph: GraphConfig,
    ops: Vec<Operation>,
) -> Experiment {
    Experiment {
        name: format!("{algorithm}-experiment"),
        spec: Some(ExperimentSpec {
            parameter_specs: None,
            objective: Some(support::objective(ObjectiveType::Maximize, metric, 0.9)),
            algorithm: Some(support::algorithm(algorithm, settings)),
            early_stopping: None,
            parallel_trial_count: 2,
            max_trial_count: 10,
            nas_config: Some(NasConfig {
                graph_config: Some(graph),
                operations: Some(Operations { operation: ops }),
            }),
        }),
    }
}

fn request(exp: &Experiment, trials: Vec<Trial>, n: i32) -> GetSuggestionsRequest {
    GetSuggestionsRequest {
        experiment: Some(exp.clone()),
        trials,
        current_request_number: n,
        total_request_number: n,
    }
}

fn value<'a>(a: &'a [ParameterAssignment], name: &str) -> &'a str {
    &a.iter().find(|p| p.name == name).unwrap().value
}

#[tokio::test]
async fn darts_answers_katibs_request_with_katibs_texts() {
    let (mut c, _stop) = client().await;
    let exp = experiment(
        "darts",
        &[("num_epoch", "10")],
        "Best-Genotype",
        GraphConfig {
            num_layers: 3,
            ..Default::default()
        },
        vec![op(
            "separable_convolution",
            vec![categorical("filter_size", &["3", "5"])],
        )],
    );
    let reply = c
        .get_suggestions(request(&exp, vec![], 1))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(reply.parameter_assignments.len(), 1);
    let a = &reply.parameter_assignments[0].assignments;
    let settings: serde_json::Value =
        serde_json::from_str(&value(a, "algorithm-settings").replace('\'', "\"")).unwrap();
    assert_eq!(settings["num_epoch"], "10");
    assert_eq!(settings["num_epochs"], 50);
    assert_eq!(
        value(a, "search-space"),
        "['separable_convolution_3x3', 'separable_convolution_5x5']"
    );
    assert_eq!(value(a, "num-layers"), "3");

    let bad = experiment(
        "darts",
        &[("batch_size", "0")],
        "Best-Genotype",
        GraphConfig {
            num_layers: 3,
            ..Default::default()
        },
        vec![op("max_pooling", vec![categorical("filter_size", &["3"])])],
    );
    let err = c
        .validate_algorithm_settings(ValidateAlgorithmSettingsRequest {
            experiment: Some(bad),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(
        err.message()
            .contains("batch_size should be greater than or equal to one"),
        "{}",
        err.message()
    );
}

fn enas_experiment() -> Experiment {
    let pool = ParameterSpec {
        name: "pool_size".into(),
        parameter_type: ParameterType::Int as i32,
        feasible_space: Some(FeasibleSpace {
            min: "2".into(),
            max: "3".into(),
            step: "1".into(),
            ..Default::default()
        }),
    };
    experiment(
        "enas",
        &[],
        "Validation-Accuracy",
        GraphConfig {
            num_layers: 4,
            input_sizes: vec![32, 32, 8],
            output_sizes: vec![10],
        },
        vec![
            op(
                "convolution",
                vec![
                    categorical("filter_size", &["5"]),
                    categorical("num_filter", &["128"]),
                    categorical("stride", &["1", "2"]),
                ],
            ),
            op(
                "reduction",
                vec![categorical("reduction_type", &["max_pooling"]), pool],
            ),
        ],
    )
}

/// A trial as Katib's controller sends it: assignments, condition, observation.
fn trial(name: &str, assignments: &[ParameterAssignment], accuracy: &str) -> Trial {
    Trial {
        name: name.into(),
        spec: Some(TrialSpec {
            objective: None,
            parameter_assignments: Some(trial_spec::ParameterAssignments {
                assignments: assignments.to_vec(),
            }),
            labels: Default::default(),
        }),
        status: Some(TrialStatus {
            start_time: "2024-01-01T00:00:00Z".into(),
            completion_time: "2024-01-01T00:10:00Z".into(),
            condition: TrialConditionType::Succeeded as i32,
            observation: Some(Observation {
                metrics: vec![Metric {
                    name: "Validation-Accuracy".into(),
                    value: accuracy.into(),
                }],
            }),
        }),
    }
}

#[tokio::test]
async fn enas_learns_from_katib_shaped_trials_and_replays_after_a_restart() {
    let exp = enas_experiment();
    let (mut c, stop) = client().await;
    let first = c
        .get_suggestions(request(&exp, vec![], 2))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(first.parameter_assignments.len(), 2);
    let a0 = &first.parameter_assignments[0].assignments;
    let rows: Vec<Vec<i64>> = serde_json::from_str(value(a0, "architecture")).unwrap();
    assert_eq!(
        rows.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![1, 2, 3, 4]
    );
    assert!(value(a0, "nn_config").starts_with(
        "{'num_layers': 4, 'input_sizes': [32, 32, 8], 'output_sizes': [10], 'embedding': {'"
    ));
    let trials = vec![
        trial("t0", a0, "0.88"),
        trial("t1", &first.parameter_assignments[1].assignments, "0.84"),
    ];
    let second = c
        .get_suggestions(request(&exp, trials.clone(), 2))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(second.parameter_assignments.len(), 2);
    // A restarted service (a new server) rebuilds the controller from the same trials.
    drop(stop);
    let (mut restarted, _stop) = client().await;
    let again = restarted
        .get_suggestions(request(&exp, trials, 2))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(again.parameter_assignments, second.parameter_assignments);
}

#[tokio::test]
async fn enas_validation_names_katibs_rules() {
    let (mut c, _stop) = client().await;
    let mut exp = enas_experiment();
    let spec = exp.spec.as_mut().unwrap();
    spec.nas_config
        .as_mut()
        .unwrap()
        .graph_config
        .as_mut()
        .unwrap()
        .output_sizes
        .clear();
    let err = c
        .validate_algorithm_settings(ValidateAlgorithmSettingsRequest {
            experiment: Some(exp),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(
        err.message()
            .contains("spec.nasConfig.graphConfig.outputSizes is required"),
        "{}",
        err.message()
    );
    let mut exp = enas_experiment();
    exp.spec
        .as_mut()
        .unwrap()
        .algorithm
        .as_mut()
        .unwrap()
        .algorithm_settings = vec![AlgorithmSetting {
        name: "controller_learning_rate".into(),
        value: "2".into(),
    }];
    let err = c
        .validate_algorithm_settings(ValidateAlgorithmSettingsRequest {
            experiment: Some(exp),
        })
        .await
        .unwrap_err();
    assert!(
        err.message().contains("controller_learning_rate"),
        "{}",
        err.message()
    );
}
