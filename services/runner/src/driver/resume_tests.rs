//! A resumed run shows the ASHA rule the values of a trial an earlier run stopped up to the
//! step it was stopped at only, as the run that stopped it did: the stop step is kept with
//! the trial in the store, not only in the earlier driver's memory.

#![allow(clippy::unwrap_used)]

use super::test_sandbox::{Sandbox, Warnings, experiment_yaml_with};
use super::{Outcome, run};
use crate::experiment::{LocalExperiment, LocalPaths};
use crate::extend::{NewLimits, extend};
use crate::lease::ExperimentLease;
use crate::process::StopLevel;
use tokio::sync::watch;
use vernier_core::TrialState;
use vernier_store::{SqlStore, StoreOptions};

/// ASHA with eta 2 (rungs at steps 1, 2 and 4), one trial at a time, the three enqueued
/// trials in order. Each prints its whole loss curve at once: x 0.4 `0.5` four times, x 0.6
/// `1 0.25 0.1 0.05` (ranked 2 of 2 at rung 1, so stopped at step 1, its better later values
/// already printed), x 0.8 `0.3` four times.
const ASHA_AND_QUEUE: &str = "  earlyStopping:
    algorithmName: asha
    algorithmSettings:
      - {name: eta, value: \"2\"}
  enqueuedTrials:
    - parameterAssignments: [{name: x, value: \"0.4\"}]
    - parameterAssignments: [{name: x, value: \"0.6\"}]
    - parameterAssignments: [{name: x, value: \"0.8\"}]
";

const CURVES: &str = "case ${trialParameters.x} in 0.4) c='0.5 0.5 0.5 0.5';; \
                      0.6) c='1 0.25 0.1 0.05';; *) c='0.3 0.3 0.3 0.3';; esac; \
                      for v in $c; do echo loss=$v; done";

/// Runs the stored experiment `resumed` to its end, as `vernier resume` does: the spec as
/// stored, a lease of its own.
async fn run_stored(store: &SqlStore, paths: &LocalPaths) -> Outcome {
    let row = store.get_experiment("resumed").await.unwrap().unwrap();
    let spec = vernier_spec::parse_stored_experiment(&row.spec_json).unwrap();
    let exp = LocalExperiment::new(spec, paths.clone()).unwrap();
    let lease = ExperimentLease::acquire(store, "resumed").await.unwrap();
    let (_stop, stop) = watch::channel(StopLevel::Run);
    let outcome = run(store, &exp, 1, stop, &mut Warnings::default(), &lease)
        .await
        .unwrap();
    lease.release().await.unwrap();
    outcome
}

/// The third trial, run by a resumed driver, leads every rung among the trials that reached
/// it: at step 2 its 0.3 ranks behind the second trial's 0.25 only if that trial's values past
/// its stop step (1) were shown to the rule, and it was then stopped there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_run_ranks_a_stopped_trial_only_up_to_its_stop_step() {
    let yaml = experiment_yaml_with("resumed", (2, 1), ASHA_AND_QUEUE, CURVES);
    let sb = Sandbox::new(&yaml, StoreOptions::default()).await;
    // Each run below takes the lease as `vernier resume` does.
    sb.lease.release().await.unwrap();
    let (store, paths) = (&sb.store, &sb.exp.paths);
    run_stored(store, paths).await;
    let limits = NewLimits {
        max_trial_count: Some(3),
        ..NewLimits::default()
    };
    assert!(extend(store, "resumed", limits).await.unwrap().reopened);
    run_stored(store, paths).await;

    let trials = store.list_trials("resumed").await.unwrap();
    let states: Vec<TrialState> = trials.iter().map(|t| t.state).collect();
    let steps: Vec<Option<i64>> = trials.iter().map(|t| t.stop_step).collect();
    let values = store.observations(&trials[1].name, Some("loss"), None, None);
    assert_eq!(
        values.await.unwrap().len(),
        4,
        "the stopped trial printed on"
    );
    assert_eq!(
        states,
        [
            TrialState::Succeeded,
            TrialState::EarlyStopped,
            TrialState::Succeeded
        ],
        "{trials:#?}"
    );
    assert_eq!(steps, [None, Some(1), None]);
}
