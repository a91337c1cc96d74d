//! Hostile and edge-case requests over a real gRPC connection: a call whose deadline passes
//! while its algorithm computes, a categorical list of a million values, and the `min == max`
//! parameters Katib's webhook accepts.

// Helpers outside #[test] functions unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::BTreeMap;
use std::time::Duration;
use tonic::Code;
use vernier_api::SuggestionService;
use vernier_api::proto::api::{
    Experiment, ExperimentSpec, FeasibleSpace, GetSuggestionsRequest, ObjectiveType, ParameterSpec,
    ParameterType, ValidateAlgorithmSettingsRequest, experiment_spec::ParameterSpecs,
    suggestion_client::SuggestionClient, suggestion_server::SuggestionServer,
};
use vernier_api::proto::convert::{experiment_from_wire, trial_to_wire};
use vernier_core::{Assignment, ParamValue, TrialRecord, TrialState};

fn range(name: &str, kind: ParameterType, min: &str, max: &str) -> ParameterSpec {
    ParameterSpec {
        name: name.into(),
        parameter_type: kind as i32,
        feasible_space: Some(FeasibleSpace {
            min: min.into(),
            max: max.into(),
            ..Default::default()
        }),
    }
}

fn experiment(
    algorithm: &str,
    settings: &[(&str, &str)],
    parameters: Vec<ParameterSpec>,
) -> Experiment {
    Experiment {
        name: "hostile".into(),
        spec: Some(ExperimentSpec {
            parameter_specs: Some(ParameterSpecs { parameters }),
            objective: Some(support::objective(ObjectiveType::Minimize, "loss", 0.0)),
            algorithm: Some(support::algorithm(algorithm, settings)),
            early_stopping: None,
            parallel_trial_count: 3,
            max_trial_count: 100,
            nas_config: None,
        }),
    }
}

/// `n` succeeded trials spread over the unit square, as a Katib controller sends them.
fn history(exp: &Experiment, n: usize) -> Vec<vernier_api::proto::api::Trial> {
    let view = experiment_from_wire("experiment", Some(exp)).unwrap();
    (0..n)
        .map(|i| {
            let (x, y) = ((i % 97) as f64 / 97.0, (i % 89) as f64 / 89.0);
            let loss = (x - 0.3).powi(2) + (y - 0.6).powi(2);
            let record = TrialRecord {
                name: format!("t{i}"),
                assignment: Assignment(vec![
                    ("x".into(), ParamValue::Double(x)),
                    ("y".into(), ParamValue::Double(y)),
                ]),
                state: TrialState::Succeeded,
                objective: Some(loss),
                labels: BTreeMap::new(),
                metrics: BTreeMap::from([("loss".to_string(), loss)]),
            };
            trial_to_wire(&record, &view.objective, Some(0), Some(1_000_000))
        })
        .collect()
}

fn square() -> Vec<ParameterSpec> {
    vec![
        range("x", ParameterType::Double, "0", "1"),
        range("y", ParameterType::Double, "0", "1"),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_passed_deadline_stops_the_algorithm_and_frees_its_slot() {
    // One slot: the cheap call below can only run once the expensive one has really stopped.
    let service = SuggestionService::with_limit(1);
    let router = vernier_api::server_builder().add_service(SuggestionServer::new(service.clone()));
    let (channel, _stop) = support::serve(router).await;
    let mut client = SuggestionClient::new(channel);

    // A GP refitted for each of 10,000 proposals over 1,000 trials: minutes of CPU.
    let gp = experiment("bayesianoptimization", &[("random_state", "1")], square());
    let mut request = tonic::Request::new(GetSuggestionsRequest {
        trials: history(&gp, 1000),
        experiment: Some(gp),
        current_request_number: 10_000,
        total_request_number: 10_000,
    });
    request.set_timeout(Duration::from_millis(200));
    let status = client.get_suggestions(request).await.unwrap_err();
    assert!(
        matches!(status.code(), Code::Cancelled | Code::DeadlineExceeded),
        "{status:?}"
    );

    let random = experiment("random", &[("random_state", "1")], square());
    let reply = client
        .get_suggestions(GetSuggestionsRequest {
            experiment: Some(random),
            trials: vec![],
            current_request_number: 2,
            total_request_number: 2,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(reply.parameter_assignments.len(), 2);
    assert_eq!(service.running(), 0, "the cancelled GP call still runs");
}

#[tokio::test]
async fn a_million_categorical_values_are_refused_naming_the_list() {
    let (channel, _stop) = support::serve(vernier_api::router(store().await).unwrap()).await;
    let mut client = SuggestionClient::new(channel)
        .max_encoding_message_size(vernier_api::MAX_MESSAGE_BYTES * 4);
    // Single-character values keep the request under the 4 MiB message cap.
    let values: Vec<String> = (0..1_000_000).map(|i| (i % 10).to_string()).collect();
    let mut params = square();
    params.push(ParameterSpec {
        name: "c".into(),
        parameter_type: ParameterType::Categorical as i32,
        feasible_space: Some(FeasibleSpace {
            list: values,
            ..Default::default()
        }),
    });
    let exp = experiment("random", &[], params);
    let status = client
        .validate_algorithm_settings(ValidateAlgorithmSettingsRequest {
            experiment: Some(exp),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(
        status
            .message()
            .contains("parameters[2].feasible_space.list")
            && status.message().contains("1000000 values")
            && status.message().contains("hint:"),
        "{}",
        status.message()
    );
}

async fn store() -> vernier_store::SqlStore {
    vernier_store::SqlStore::connect(":memory:").await.unwrap()
}

#[tokio::test]
async fn min_equal_to_max_is_a_fixed_value_over_the_wire_as_in_yaml() {
    let (channel, _stop) = support::serve(vernier_api::router(store().await).unwrap()).await;
    let mut client = SuggestionClient::new(channel);
    let mut params = square();
    params.push(range("batch", ParameterType::Int, "32", "32"));
    params.push(range("decay", ParameterType::Double, " 0.5", "0.5"));
    let reply = client
        .get_suggestions(GetSuggestionsRequest {
            experiment: Some(experiment("random", &[], params)),
            trials: vec![],
            current_request_number: 3,
            total_request_number: 3,
        })
        .await
        .unwrap()
        .into_inner();
    for a in &reply.parameter_assignments {
        let value = |name: &str| {
            a.assignments
                .iter()
                .find(|p| p.name == name)
                .map(|p| p.value.clone())
        };
        assert_eq!(value("batch").as_deref(), Some("32"));
        assert_eq!(value("decay").as_deref(), Some("0.5"));
    }

    // Katib's hyperband example: the resource parameter is a placeholder for the budgets.
    let hb = experiment(
        "hyperband",
        &[("r_l", "9"), ("resource_name", "epochs"), ("eta", "3")],
        vec![
            range("x", ParameterType::Double, "0", "1"),
            range("epochs", ParameterType::Int, "1", "1"),
        ],
    );
    let reply = client
        .get_suggestions(GetSuggestionsRequest {
            experiment: Some(hb),
            trials: vec![],
            current_request_number: 9,
            total_request_number: 9,
        })
        .await
        .unwrap()
        .into_inner();
    let epochs: Vec<String> = reply
        .parameter_assignments
        .iter()
        .flat_map(|a| a.assignments.iter().filter(|p| p.name == "epochs"))
        .map(|p| p.value.clone())
        .collect();
    assert_eq!(epochs, vec!["1"; 9], "the first bracket's budget is r_l/9");
}
