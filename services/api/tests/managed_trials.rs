//! `SetTrialStatus` through a managed-trials hook (what `vernier operator` composes), then the
//! store.

#![allow(clippy::unwrap_used)]

mod support;

use std::sync::{Arc, Mutex};
use tonic::Code;
use vernier_api::proto::api::{SetTrialStatusRequest, early_stopping_client::EarlyStoppingClient};
use vernier_api::{ManagedOutcome, ManagedTrials};
use vernier_store::SqlStore;

/// Manages `op-running` (stops it), `op-done` (ended), `dup` (ambiguous) and fails for `down`.
#[derive(Debug, Default)]
struct Fake {
    stopped: Mutex<Vec<String>>,
}

#[tonic::async_trait]
impl ManagedTrials for Fake {
    async fn early_stop(&self, trial: &str) -> Result<ManagedOutcome, String> {
        Ok(match trial {
            "op-running" => {
                self.stopped.lock().unwrap().push(trial.into());
                ManagedOutcome::Stopped
            }
            "op-done" => ManagedOutcome::AlreadyEnded {
                state: "Succeeded".into(),
            },
            "dup" => ManagedOutcome::Refused("in two namespaces\nhint: NAMESPACE/NAME".into()),
            "down" => return Err("kubernetes api: connection refused".into()),
            _ => ManagedOutcome::NotManaged,
        })
    }
}

#[tokio::test]
async fn set_trial_status_asks_the_managed_trials_first() {
    let store = SqlStore::connect(":memory:").await.unwrap();
    let fake = Arc::new(Fake::default());
    let router = vernier_api::router_with_managed_trials(store, fake.clone()).unwrap();
    let (channel, _stop) = support::serve(router).await;
    let mut client = EarlyStoppingClient::new(channel);
    let mut call = async |name: &str| {
        client
            .set_trial_status(SetTrialStatusRequest {
                trial_name: name.into(),
            })
            .await
    };
    call("op-running").await.unwrap();
    assert_eq!(
        *fake.stopped.lock().unwrap(),
        vec!["op-running".to_string()]
    );
    let e = call("op-done").await.unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition);
    assert!(
        e.message().contains("already ended as Succeeded"),
        "{}",
        e.message()
    );
    let e = call("dup").await.unwrap_err();
    assert_eq!(
        (e.code(), e.message()),
        (
            Code::FailedPrecondition,
            "in two namespaces\nhint: NAMESPACE/NAME"
        )
    );
    let e = call("down").await.unwrap_err();
    assert_eq!(e.code(), Code::Unavailable);
    assert!(
        e.message().starts_with(
            "cannot mark trial \"down\" EarlyStopped: kubernetes api: connection refused"
        ),
        "{}",
        e.message()
    );
    // Neither managed nor in the store.
    let e = call("ghost").await.unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    assert!(
        e.message().contains("Trials `vernier operator` watches"),
        "{}",
        e.message()
    );
}
