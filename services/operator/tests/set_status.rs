//! `SetTrialStatus` for the operator's Trials, against the Kubernetes API test double.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::json;
use vernier_core::TrialState;
use vernier_kube_double::KubeDouble;
use vernier_operator::objects::trial_resource;
use vernier_operator::set_status::{EarlyStopOutcome, early_stop_trial};
use vernier_operator::trial_state::{state_of, trial_status};

async fn trial_in(client: &Client, ns: &str, name: &str, last: &str) {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &trial_resource());
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "kubeflow.org/v1beta1",
        "kind": "Trial",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"parameterAssignments": [], "objective": {"type": "maximize", "objectiveMetricName": "acc"}},
    }))
    .unwrap();
    let created = api.create(&PostParams::default(), &obj).await.unwrap();
    let condition = |type_: &str| {
        json!({"type": type_, "status": "True", "reason": format!("Trial{type_}"), "message": "",
               "lastUpdateTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"})
    };
    let mut conditions = vec![condition("Created")];
    if last != "Created" {
        conditions.push(condition(last));
    }
    vernier_operator::objects::replace_status(&api, &created, &json!({"conditions": conditions}))
        .await
        .unwrap();
}

async fn state(client: &Client, ns: &str, name: &str) -> TrialState {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &trial_resource());
    state_of(&trial_status(&api.get(name).await.unwrap()).conditions)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_trial_status_marks_a_running_trial_early_stopped() {
    let double = KubeDouble::start().await.expect("double starts");
    let client = double.client().expect("client");
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &vernier_operator::crd::trial_crd())
        .await
        .unwrap();
    trial_in(&client, "team-a", "exp-1", "Running").await;
    trial_in(&client, "team-a", "exp-2", "Succeeded").await;
    trial_in(&client, "team-a", "shared", "Running").await;
    trial_in(&client, "team-b", "shared", "Running").await;

    let outcome = early_stop_trial(&client, None, "exp-1").await.unwrap();
    assert_eq!(
        outcome,
        EarlyStopOutcome::Stopped {
            namespace: "team-a".into()
        }
    );
    assert_eq!(
        state(&client, "team-a", "exp-1").await,
        TrialState::EarlyStopped
    );
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "team-a", &trial_resource());
    let status = trial_status(&api.get("exp-1").await.unwrap());
    let last = status
        .conditions
        .iter()
        .find(|c| c.type_ == "EarlyStopped")
        .unwrap();
    assert_eq!(last.reason, "TrialEarlyStopped");
    assert!(status.completion_time.is_some());
    // Again: nothing changes, the answer is the same.
    assert_eq!(
        early_stop_trial(&client, None, "exp-1").await.unwrap(),
        EarlyStopOutcome::Stopped {
            namespace: "team-a".into()
        }
    );

    assert_eq!(
        early_stop_trial(&client, None, "exp-2").await.unwrap(),
        EarlyStopOutcome::AlreadyEnded {
            state: TrialState::Succeeded
        }
    );
    assert_eq!(
        state(&client, "team-a", "exp-2").await,
        TrialState::Succeeded
    );
    assert_eq!(
        early_stop_trial(&client, None, "ghost").await.unwrap(),
        EarlyStopOutcome::NotFound
    );
    assert_eq!(
        early_stop_trial(&client, None, "shared").await.unwrap(),
        EarlyStopOutcome::Ambiguous(vec!["team-a".into(), "team-b".into()])
    );
    assert_eq!(
        early_stop_trial(&client, None, "team-b/shared")
            .await
            .unwrap(),
        EarlyStopOutcome::Stopped {
            namespace: "team-b".into()
        }
    );
    assert_eq!(
        state(&client, "team-a", "shared").await,
        TrialState::Running
    );
    // A watched namespace limits the search.
    assert_eq!(
        early_stop_trial(&client, Some("team-b"), "exp-1")
            .await
            .unwrap(),
        EarlyStopOutcome::NotFound
    );
}
