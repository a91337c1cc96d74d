//! End to end through the Kubernetes API test double: the operator talks to it with the
//! ordinary kube client, and the simulated training operator runs each job's primary
//! container as a local process whose output is the pod log the operator follows.
//!
//! Waits poll the API until a condition holds, with a generous deadline only so that a broken
//! build fails instead of hanging; nothing here asserts on time. The one use of the deadline
//! as a bound is the graceful handover test: its lease is five times longer than the deadline,
//! so finishing at all shows that the lease was released rather than left to expire.

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use vernier_kube_double::KubeDouble;
use vernier_kube_double::training::{Outcome, SimulatedTrainingOperator, SimulationOptions};
use vernier_operator::metrics::Metrics;
use vernier_operator::objects::{experiment_resource, trial_resource};
use vernier_operator::suggestion_services::{Endpoint, ImageVolume, SuggestionServices};
use vernier_operator::{Context, EarlyStopperFactory, LeaseConfig, OperatorConfig};
use vernier_store::SqlStore;

const DEADLINE: Duration = Duration::from_secs(120);

/// How long the test operators' leader lease lasts and how often its holder renews it.
#[derive(Debug, Clone, Copy)]
struct LeaseTiming {
    duration: Duration,
    renew_every: Duration,
}

/// The lease of [`Env::operator`] and [`Env::operator_with`].
const DEFAULT_LEASE: LeaseTiming = LeaseTiming {
    duration: Duration::from_secs(15),
    renew_every: Duration::from_millis(500),
};

/// The operators' `--observation-interval`, short so that tests do not wait on it.
const OBSERVATION: Duration = Duration::from_millis(200);

/// A trainer for the simulated pods: accuracy peaks at lr = 0.03; prints three epochs.
const TRAINER: &str = "import sys\n\
a = dict(x.lstrip('-').split('=', 1) for x in sys.argv[1:])\n\
lr = float(a['lr'])\n\
for e in range(3):\n    acc = round(1 - abs(lr - 0.03) * 10 / (e + 1), 6)\n    print(f'epoch={e} accuracy={acc} loss={round(1 - acc, 6)}', flush=True)\n";

/// The accuracy the trainer reports last for `lr`.
fn final_accuracy(lr: f64) -> f64 {
    ((1.0 - (lr - 0.03).abs() * 10.0 / 3.0) * 1e6).round() / 1e6
}

struct Env {
    double: Option<KubeDouble>,
    sim: Option<SimulatedTrainingOperator>,
    client: Client,
    store: SqlStore,
    _db: tempfile::TempDir,
}

impl Env {
    async fn start(options: SimulationOptions) -> Env {
        let double = KubeDouble::start().await.expect("double starts");
        let client = double.client().expect("client");
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        for crd in [
            vernier_operator::crd::experiment_crd(),
            vernier_operator::crd::trial_crd(),
        ] {
            crds.create(&PostParams::default(), &crd)
                .await
                .expect("crd created");
        }
        let sim = SimulatedTrainingOperator::spawn(&double, options)
            .await
            .expect("simulator");
        let db = tempfile::tempdir().expect("tempdir");
        let url = format!("sqlite://{}", db.path().join("vernier.db").display());
        let store = SqlStore::connect(&url).await.expect("store");
        Env {
            double: Some(double),
            sim: Some(sim),
            client,
            store,
            _db: db,
        }
    }

    fn operator(&self, identity: &str) -> Operator {
        self.operator_with(identity, None)
    }

    fn operator_with(
        &self,
        identity: &str,
        early_stopping: Option<EarlyStopperFactory>,
    ) -> Operator {
        self.spawn_operator(identity, early_stopping, DEFAULT_LEASE, &[], OBSERVATION)
    }

    /// An operator that asks `services` for the algorithms they serve
    /// (`--suggestion-plugin`).
    fn operator_served(&self, identity: &str, services: Arc<dyn SuggestionServices>) -> Operator {
        let ctx = self.context(identity, None, &[], OBSERVATION);
        self.spawn(ctx.with_suggestion_services(services), DEFAULT_LEASE)
    }

    /// An operator with early stopping whose experiments look at running trials only every
    /// `interval` (`--observation-interval`), so a short trial ends between two looks.
    fn operator_observing(
        &self,
        identity: &str,
        early_stopping: EarlyStopperFactory,
        interval: Duration,
    ) -> Operator {
        self.spawn_operator(identity, Some(early_stopping), DEFAULT_LEASE, &[], interval)
    }

    /// An operator whose leader lease is timed by `lease`.
    fn operator_leased(&self, identity: &str, lease: LeaseTiming) -> Operator {
        self.spawn_operator(identity, None, lease, &[], OBSERVATION)
    }

    /// An operator that may also create trials of `kinds` (`--trial-resources` entries).
    fn operator_for_kinds(&self, identity: &str, kinds: &[&str]) -> Operator {
        self.spawn_operator(identity, None, DEFAULT_LEASE, kinds, OBSERVATION)
    }

    fn spawn_operator(
        &self,
        identity: &str,
        early_stopping: Option<EarlyStopperFactory>,
        timing: LeaseTiming,
        extra_kinds: &[&str],
        observation_interval: Duration,
    ) -> Operator {
        let ctx = self.context(identity, early_stopping, extra_kinds, observation_interval);
        self.spawn(ctx, timing)
    }

    fn context(
        &self,
        identity: &str,
        early_stopping: Option<EarlyStopperFactory>,
        extra_kinds: &[&str],
        observation_interval: Duration,
    ) -> Context {
        let metrics = Arc::new(Metrics::new());
        let mut config = OperatorConfig {
            concurrency: 4,
            observation_interval,
            config_map_recheck: Duration::from_millis(300),
            identity: identity.to_string(),
            ..OperatorConfig::default()
        };
        let extra = vernier_operator::jobs::parse_trial_kinds(extra_kinds).expect("kinds");
        config.trial_kinds.extend(extra);
        let mut ctx = Context::new(
            self.client.clone(),
            self.store.clone(),
            config,
            metrics.clone(),
        );
        if let Some(factory) = early_stopping {
            ctx = ctx.with_early_stopping(factory);
        }
        ctx
    }

    fn spawn(&self, ctx: Context, timing: LeaseTiming) -> Operator {
        let identity = ctx.config.identity.clone();
        let metrics = ctx.metrics.clone();
        let ctx = Arc::new(ctx);
        let lease = LeaseConfig {
            name: "vernier-operator".into(),
            namespace: "default".into(),
            identity: identity.clone(),
            lease_duration: timing.duration,
            renew_every: timing.renew_every,
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(vernier_operator::run::run_with_leader_election(
            ctx,
            lease,
            async move {
                let _ = stopped.await;
            },
        ));
        Operator {
            identity,
            stop: Some(stop),
            task: Some(task),
            metrics,
        }
    }

    fn experiments(&self) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), "default", &experiment_resource())
    }

    fn trials(&self) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), "default", &trial_resource())
    }

    /// Objects of any kind in the test namespace, e.g. ("batch", "v1", "Job").
    fn api(&self, group: &str, version: &str, kind: &str) -> Api<DynamicObject> {
        let gvk = kube::api::GroupVersionKind::gvk(group, version, kind);
        let resource = kube::api::ApiResource::from_gvk(&gvk);
        Api::namespaced_with(self.client.clone(), "default", &resource)
    }

    async fn create(&self, yaml: &str) -> DynamicObject {
        let obj: DynamicObject = yaml_serde::from_str(yaml).expect("experiment yaml");
        self.experiments()
            .create(&PostParams::default(), &obj)
            .await
            .expect("experiment created")
    }

    /// Merge-patches the experiment `name`, as `kubectl patch --type merge` does.
    async fn edit(&self, name: &str, patch: serde_json::Value) {
        self.experiments()
            .patch(
                name,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(&patch),
            )
            .await
            .expect("patched");
    }

    /// Writes the experiment back whole, as `kubectl replace -f` does: the spec edited by
    /// `change`, with none of the annotations the operator put on it. A write that meets the
    /// operator's own (409 Conflict) reads the object again, as a user would retry.
    async fn replace(&self, name: &str, change: impl Fn(&mut serde_json::Value)) {
        for _ in 0..20 {
            let mut obj = self.experiments().get(name).await.expect("read");
            obj.metadata.annotations = None;
            change(&mut obj.data["spec"]);
            match self
                .experiments()
                .replace(name, &kube::api::PostParams::default(), &obj)
                .await
            {
                Ok(_) => return,
                Err(kube::Error::Api(e)) if e.code == 409 => continue,
                Err(e) => panic!("replaced: {e}"),
            }
        }
        panic!("replace of {name}: 20 conflicts in a row");
    }

    /// Waits for an event with `reason` about the object `name`.
    async fn event(&self, name: &str, reason: &str) -> DynamicObject {
        let events = self.api("events.k8s.io", "v1", "Event");
        let about =
            |e: &DynamicObject| e.data["reason"] == reason && e.data["regarding"]["name"] == name;
        let found = wait_until(
            &format!("a {reason} event about {name}"),
            || async {
                events
                    .list(&ListParams::default())
                    .await
                    .expect("events")
                    .items
            },
            |items| items.iter().any(about),
        )
        .await;
        found.into_iter().find(about).expect("event")
    }

    /// A context for calling a reconciler directly, as no running operator: default config,
    /// no controllers (so trials are listed from the API).
    fn bare_context(&self) -> Arc<Context> {
        let config = OperatorConfig::default();
        let (client, store) = (self.client.clone(), self.store.clone());
        Arc::new(Context::new(
            client,
            store,
            config,
            Arc::new(Metrics::new()),
        ))
    }

    /// How often an event with `reason` was published about `name`: the events' counts
    /// summed, since a recorder folds repeats of one event into its `series`.
    async fn times_published(&self, name: &str, reason: &str) -> u64 {
        let events = self.api("events.k8s.io", "v1", "Event");
        let items = events.list(&ListParams::default()).await.expect("events");
        items
            .items
            .iter()
            .filter(|e| e.data["reason"] == reason && e.data["regarding"]["name"] == name)
            .map(|e| e.data["series"]["count"].as_u64().unwrap_or(1))
            .sum()
    }

    async fn trials_of(&self, experiment: &str) -> Vec<DynamicObject> {
        let lp =
            ListParams::default().labels(&format!("katib.kubeflow.org/experiment={experiment}"));
        self.trials().list(&lp).await.expect("trials").items
    }

    async fn shutdown(mut self) {
        if let Some(sim) = self.sim.take() {
            sim.shutdown().await;
        }
        if let Some(d) = self.double.take() {
            d.shutdown().await;
        }
    }
}

struct Operator {
    identity: String,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
    metrics: Arc<Metrics>,
}

impl Operator {
    async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.task.take() {
            t.await.expect("operator task ends cleanly");
        }
    }

    /// Ends the operator as a crash would: its task is aborted wherever it is, and nothing of
    /// it runs afterwards, so in particular it does not release the lease it holds.
    async fn crash(mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
            let ended = t.await;
            assert!(
                ended.as_ref().is_err_and(|e| e.is_cancelled()),
                "the operator task was running until aborted: {ended:?}"
            );
        }
    }
}

/// The holder of the operators' leader Lease, "" for none.
async fn lease_holder(env: &Env) -> String {
    let leases: Api<Lease> = Api::namespaced(env.client.clone(), "default");
    leases
        .get_opt("vernier-operator")
        .await
        .expect("lease readable")
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity)
        .unwrap_or_default()
}

/// The experiment `name` has exactly `n` trials, numbered 0..n by their sequence annotation
/// with no gap or repeat, and no two with the same parameter assignments.
async fn assert_trials_exactly_once(env: &Env, name: &str, n: usize) {
    let trials = env.trials_of(name).await;
    assert_eq!(trials.len(), n, "trials of {name}");
    let mut seqs: Vec<usize> = trials
        .iter()
        .map(|t| {
            t.annotations()
                .get("vernier/trial-seq")
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("trial {} has a sequence number", t.name_any()))
        })
        .collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (0..n).collect::<Vec<_>>());
    let assignments: BTreeSet<String> = trials
        .iter()
        .map(|t| t.data["spec"]["parameterAssignments"].to_string())
        .collect();
    assert_eq!(assignments.len(), n, "no configuration proposed twice");
}

/// Polls `get` until `done` holds for its result.
async fn wait_until<T, F, Fut>(what: &str, mut get: F, done: impl Fn(&T) -> bool) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = T>,
    T: std::fmt::Debug,
{
    let start = tokio::time::Instant::now();
    loop {
        let v = get().await;
        if done(&v) {
            return v;
        }
        if start.elapsed() > DEADLINE {
            panic!("gave up waiting for {what}; last seen: {v:#?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn condition<'a>(obj: &'a Value, type_: &str) -> Option<&'a Value> {
    condition_is(obj, type_, "True")
}

fn condition_is<'a>(obj: &'a Value, type_: &str, status: &str) -> Option<&'a Value> {
    obj.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_ && c["status"] == status)
}

/// Katib's webhook lets an update change only parallelTrialCount, maxTrialCount and
/// maxFailedTrialCount. An edit of the goal (which the first trial already beats) is refused
/// with a Warning event naming the field, and the experiment runs on with the spec it was
/// accepted with; the maxTrialCount raised in the same edit is applied.
#[tokio::test]
async fn an_edit_katibs_webhook_refuses_does_not_change_the_experiment() {
    let options = SimulationOptions {
        min_running: Duration::from_secs(2),
        ..SimulationOptions::default()
    };
    let env = Env::start(options).await;
    let op = env.operator("replica-a");
    env.create(&experiment_yaml("locked", "Job", 1, 3, ""))
        .await;
    let exp = wait_until(
        "the first trial counted and the spec kept",
        || experiment_json(&env, "locked"),
        |e| e["status"]["trials"].as_i64().unwrap_or(0) >= 1,
    )
    .await;
    let kept = exp["metadata"]["annotations"][vernier_operator::accepted_spec::ANNOTATION]
        .as_str()
        .unwrap_or_default();
    assert!(kept.contains("\"maxTrialCount\":3"), "{exp:#}");
    env.edit(
        "locked",
        serde_json::json!({"spec": {"maxTrialCount": 4, "objective": {"goal": 0.5}}}),
    )
    .await;
    let refused = env.event("locked", "EditRefused").await;
    let note = refused.data["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("the edit of spec.objective.goal is not applied"),
        "{note}"
    );
    let exp = finished(&env, "locked").await;
    let ended = condition(&exp, "Succeeded").expect("succeeded");
    assert_eq!(ended["reason"], "ExperimentMaxTrialsReached", "{exp:#}");
    assert_eq!(exp["status"]["trials"], 4, "{exp:#}");
    // A restarted operator finds the refused edit still in the spec, and does not tell it
    // again: what was told is kept on the Experiment.
    op.stop().await;
    let op = env.operator("replica-b");
    wait_until(
        "the new operator leading",
        || lease_holder(&env),
        |h| h == "replica-b",
    )
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let events = env.api("events.k8s.io", "v1", "Event");
    let told = events.list(&ListParams::default()).await.expect("events");
    let refusals = told
        .items
        .iter()
        .filter(|e| e.data["reason"] == "EditRefused" && e.data["regarding"]["name"] == "locked")
        .count();
    assert_eq!(refusals, 1, "{:#?}", told.items);
    op.stop().await;
    env.shutdown().await;
}

/// `kubectl replace` writes the object back without the operator's annotations: the edit
/// it carries is refused all the same (the accepted spec is also kept in the status), on a
/// running experiment and on a finished one, whose best trial stays the same.
#[tokio::test]
async fn an_edit_written_back_whole_is_refused_too() {
    let options = SimulationOptions {
        min_running: Duration::from_secs(1),
        ..SimulationOptions::default()
    };
    let env = Env::start(options).await;
    let op = env.operator("replica-a");
    env.create(&experiment_yaml("whole", "Job", 1, 3, "")).await;
    wait_until(
        "the first trial counted and the spec kept in the status",
        || experiment_json(&env, "whole"),
        |e| {
            e["status"]["trials"].as_i64().unwrap_or(0) >= 1
                && e["status"]["vernierAccepted"]["spec"]["maxTrialCount"] == 3
        },
    )
    .await;
    env.replace("whole", |spec| spec["objective"]["goal"] = 0.5.into())
        .await;
    let refused = env.event("whole", "EditRefused").await;
    let note = refused.data["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("the edit of spec.objective.goal is not applied"),
        "{note}"
    );
    let exp = finished(&env, "whole").await;
    let ended = condition(&exp, "Succeeded").expect("succeeded");
    assert_eq!(ended["reason"], "ExperimentMaxTrialsReached", "{exp:#}");
    assert_eq!(exp["status"]["trials"], 3, "{exp:#}");
    let best = exp["status"]["currentOptimalTrial"].clone();
    // Finished: the objective turned around, written back whole, changes nothing.
    env.replace("whole", |spec| {
        let flipped = match spec["objective"]["type"].as_str() {
            Some("maximize") => "minimize",
            _ => "maximize",
        };
        spec["objective"]["type"] = flipped.into();
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let exp = experiment_json(&env, "whole").await;
    assert_eq!(exp["status"]["currentOptimalTrial"], best, "{exp:#}");
    op.stop().await;
    env.shutdown().await;
}

/// Katib's webhook refuses an update whose maxTrialCount is not above the trials the
/// experiment has: lowering it below them is refused with a Warning event, and the
/// experiment runs on to the count it had instead of ending at once.
#[tokio::test]
async fn lowering_max_trials_below_the_trials_so_far_is_refused() {
    let options = SimulationOptions {
        min_running: Duration::from_secs(1),
        ..SimulationOptions::default()
    };
    let env = Env::start(options).await;
    let op = env.operator("replica-a");
    env.create(&experiment_yaml("lowered", "Job", 1, 4, ""))
        .await;
    wait_until(
        "two trials counted",
        || experiment_json(&env, "lowered"),
        |e| e["status"]["trials"].as_i64().unwrap_or(0) >= 2,
    )
    .await;
    env.edit("lowered", serde_json::json!({"spec": {"maxTrialCount": 1}}))
        .await;
    let refused = env.event("lowered", "EditRefused").await;
    let note = refused.data["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("the edit of the trial counts is not applied: spec.maxTrialCount 1 must be greater than status.trials count"),
        "{note}"
    );
    let exp = finished(&env, "lowered").await;
    let ended = condition(&exp, "Succeeded").expect("succeeded");
    assert_eq!(ended["reason"], "ExperimentMaxTrialsReached", "{exp:#}");
    assert_eq!(exp["status"]["trials"], 4, "{exp:#}");
    // One edit, one refusal, though its note counts the trials as they grow.
    let events = env.api("events.k8s.io", "v1", "Event");
    let told = events.list(&ListParams::default()).await.expect("events");
    let refusals = told
        .items
        .iter()
        .filter(|e| e.data["reason"] == "EditRefused" && e.data["regarding"]["name"] == "lowered")
        .count();
    assert_eq!(refusals, 1, "{:#?}", told.items);
    op.stop().await;
    env.shutdown().await;
}

async fn experiment_json(env: &Env, name: &str) -> Value {
    let obj = env
        .experiments()
        .get(name)
        .await
        .expect("experiment exists");
    serde_json::to_value(obj).expect("json")
}

async fn finished(env: &Env, name: &str) -> Value {
    wait_until(
        &format!("experiment {name} to finish"),
        || experiment_json(env, name),
        |e| condition(e, "Succeeded").is_some() || condition(e, "Failed").is_some(),
    )
    .await
}

fn experiment_yaml(name: &str, kind: &str, parallel: u32, max: u32, extra_spec: &str) -> String {
    experiment_yaml_with(name, kind, parallel, max, extra_spec, TRAINER)
}

/// [`experiment_yaml`] with `trainer` as the pods' Python script.
fn experiment_yaml_with(
    name: &str,
    kind: &str,
    parallel: u32,
    max: u32,
    extra_spec: &str,
    trainer: &str,
) -> String {
    let (api, replicas, container) = match kind {
        "TFJob" => (
            "kubeflow.org/v1",
            "tfReplicaSpecs:\n          Chief",
            "tensorflow",
        ),
        "PyTorchJob" => (
            "kubeflow.org/v1",
            "pytorchReplicaSpecs:\n          Master",
            "pytorch",
        ),
        _ => ("batch/v1", "", "trainer"),
    };
    let script = trainer
        .trim_end()
        .replace('\n', "\n                        ");
    let container_block = format!(
        "containers:
                  - name: {container}
                    image: docker.io/kubeflowkatib/pytorch-mnist-cpu:latest
                    command:
                      - python3
                      - -c
                      - |
                        {script}
                      - --lr=${{trialParameters.learningRate}}
                      - --batch-size=${{trialParameters.batchSize}}"
    );
    let trial_spec = if kind == "Job" {
        format!(
            "apiVersion: batch/v1
      kind: Job
      spec:
        backoffLimit: 0
        template:
              spec:
                restartPolicy: Never
                {container_block}"
        )
    } else {
        format!(
            "apiVersion: {api}
      kind: {kind}
      spec:
        {replicas}:
            replicas: 1
            restartPolicy: OnFailure
            template:
              metadata:
                annotations:
                  sidecar.istio.io/inject: \"false\"
              spec:
                {container_block}
          Worker:
            replicas: 1
            restartPolicy: OnFailure
            template:
              spec:
                {container_block}"
        )
    };
    format!(
        "apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata:
  name: {name}
  namespace: default
spec:
  parallelTrialCount: {parallel}
  maxTrialCount: {max}
  maxFailedTrialCount: 2
  objective:
    type: maximize
    objectiveMetricName: accuracy
    additionalMetricNames:
      - loss
  algorithm:
    algorithmName: random
{extra_spec}  parameters:
    - name: lr
      parameterType: double
      feasibleSpace:
        min: \"0.01\"
        max: \"0.05\"
    - name: batch_size
      parameterType: int
      feasibleSpace:
        min: \"100\"
        max: \"200\"
  trialTemplate:
    primaryContainerName: {container}
    trialParameters:
      - name: learningRate
        description: Learning rate for the training model
        reference: lr
      - name: batchSize
        description: Batch Size
        reference: batch_size
    trialSpec:
      {trial_spec}
"
    )
}

/// Runs a Katib-style experiment of `kind` to Succeeded and checks every trial's observation
/// against what its trainer printed, and the optimal trial against all of them.
async fn runs_to_success(kind: &str, name: &str) {
    let env = Env::start(SimulationOptions::default()).await;
    let op = env.operator("replica-a");
    env.create(&experiment_yaml(name, kind, 2, 4, "")).await;
    let exp = finished(&env, name).await;
    let ok =
        condition(&exp, "Succeeded").unwrap_or_else(|| panic!("{name} did not succeed: {exp:#}"));
    assert_eq!(ok["reason"], "ExperimentMaxTrialsReached");
    assert_eq!(exp["status"]["trials"], 4);
    assert_eq!(exp["status"]["trialsSucceeded"], 4);

    let trials = env.trials_of(name).await;
    assert_eq!(trials.len(), 4);
    let mut best = (String::new(), f64::MIN);
    for t in &trials {
        let t = serde_json::to_value(t).expect("json");
        let trial = t["metadata"]["name"].as_str().expect("name").to_string();
        assert!(trial.starts_with(&format!("{name}-")), "{trial}");
        let done = condition(&t, "Succeeded").unwrap_or_else(|| panic!("{t:#}"));
        // Katib's form: the job's own reason after the trial's.
        let reason = done["reason"].as_str().unwrap_or_default();
        assert!(
            reason.starts_with("TrialSucceeded. Job reason: ") && reason.ends_with("Succeeded"),
            "{t:#}"
        );
        let lr: f64 = t["spec"]["parameterAssignments"]
            .as_array()
            .and_then(|a| a.iter().find(|p| p["name"] == "lr"))
            .and_then(|p| p["value"].as_str())
            .and_then(|v| v.parse().ok())
            .expect("lr assignment");
        let metrics = t["status"]["observation"]["metrics"]
            .as_array()
            .expect("observation");
        let acc = metrics
            .iter()
            .find(|m| m["name"] == "accuracy")
            .expect("accuracy observed");
        let latest: f64 = acc["latest"]
            .as_str()
            .and_then(|v| v.parse().ok())
            .expect("latest");
        assert!(
            (latest - final_accuracy(lr)).abs() < 1e-6,
            "trial {trial} lr {lr}: {latest}"
        );
        let max: f64 = acc["max"]
            .as_str()
            .and_then(|v| v.parse().ok())
            .expect("max");
        if max > best.1 {
            best = (trial.clone(), max);
        }
        assert!(
            metrics.iter().any(|m| m["name"] == "loss"),
            "loss observed too"
        );
        // Three epochs were read from the pod log into the store.
        let logs = env
            .store
            .observations(&trial, Some("accuracy"), None, None)
            .await
            .expect("logs");
        assert_eq!(logs.len(), 3, "trial {trial}");
        for reason in ["JobCreated", "JobRunning", "JobSucceeded"] {
            let times = env.times_published(&trial, reason).await;
            assert_eq!(times, 1, "{reason} events about {trial}");
        }
    }
    assert_eq!(
        exp["status"]["currentOptimalTrial"]["bestTrialName"],
        best.0.as_str()
    );
    assert_eq!(
        exp["status"]["currentOptimalTrial"]["parameterAssignments"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    op.stop().await;
    env.shutdown().await;
}

/// `spec.enqueuedTrials` run first on a cluster as they do locally (the engine picks them),
/// each once, labelled with its entry; then the algorithm proposes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enqueued_configurations_run_first_once_each() {
    let env = Env::start(SimulationOptions::default()).await;
    let op = env.operator("replica-a");
    let queue = "  enqueuedTrials:
    - parameterAssignments:
        - {name: lr, value: \"0.02\"}
        - {name: batch_size, value: \"150\"}
    - parameterAssignments:
        - {name: lr, value: \"0.04\"}
        - {name: batch_size, value: \"120\"}
";
    env.create(&experiment_yaml("queued", "Job", 1, 3, queue))
        .await;
    let exp = finished(&env, "queued").await;
    assert!(condition(&exp, "Succeeded").is_some(), "{exp:#}");
    let trials = env.trials_of("queued").await;
    assert_eq!(trials.len(), 3);
    let assignment = |t: &Value, name: &str| {
        let all = t["spec"]["parameterAssignments"]
            .as_array()
            .expect("assignments");
        let p = all.iter().find(|p| p["name"] == name).expect(name);
        p["value"].as_str().expect("text").to_string()
    };
    let mut entries = Vec::new();
    for t in &trials {
        let t = serde_json::to_value(t).expect("json");
        let Some(index) = t["metadata"]["labels"]["vernier.enqueue/index"].as_str() else {
            continue;
        };
        let pair = (assignment(&t, "lr"), assignment(&t, "batch_size"));
        entries.push((index.to_string(), pair));
    }
    entries.sort();
    let pair = |lr: &str, bs: &str| (lr.to_string(), bs.to_string());
    assert_eq!(
        entries,
        [
            ("0".to_string(), pair("0.02", "150")),
            ("1".to_string(), pair("0.04", "120"))
        ]
    );
    op.stop().await;
    env.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tfjob_experiment_succeeds_with_observations() {
    runs_to_success("TFJob", "tfjob-quadratic").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pytorchjob_experiment_succeeds_with_observations() {
    runs_to_success("PyTorchJob", "pytorch-quadratic").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_jobs_fail_the_experiment_at_max_failed() {
    let options = SimulationOptions {
        default_outcome: Outcome::Fail {
            exit_code: 3,
            message: "out of memory".into(),
        },
        ..SimulationOptions::default()
    };
    let env = Env::start(options).await;
    let op = env.operator("replica-a");
    env.create(&experiment_yaml("failing", "Job", 1, 6, ""))
        .await;
    let exp = finished(&env, "failing").await;
    let failed = condition(&exp, "Failed").unwrap_or_else(|| panic!("not failed: {exp:#}"));
    assert_eq!(failed["reason"], "ExperimentFailed");
    assert_eq!(exp["status"]["trialsFailed"], 2);
    for t in env.trials_of("failing").await {
        let t = serde_json::to_value(&t).expect("json");
        let c = condition(&t, "Failed").unwrap_or_else(|| panic!("trial not failed: {t:#}"));
        let reason = c["reason"].as_str().unwrap_or_default();
        assert!(reason.starts_with("TrialFailed. Job reason: "), "{reason}");
        let name = t["metadata"]["name"].as_str().unwrap_or_default();
        // As Katib's trial controller: a Normal event, the Failed condition being the alarm.
        assert_eq!(env.event(name, "JobFailed").await.data["type"], "Normal");
    }
    // Katib's webhook refuses a larger budget for a failed experiment; a Warning says so.
    env.edit(
        "failing",
        serde_json::json!({"spec": {"maxTrialCount": 10}}),
    )
    .await;
    let refused = env.event("failing", "RestartRefused").await;
    let note = refused.data["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("an experiment that ended with ExperimentFailed does not continue"),
        "{note}"
    );
    assert_eq!(env.trials_of("failing").await.len(), 2);
    op.stop().await;
    env.shutdown().await;
}

/// A batch Job that retries runs its next attempt in a new pod: the trial is judged on every
/// attempt's metrics (as Katib's collector in each pod reports them), not only the first
/// pod's, which failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_job_is_judged_on_the_attempt_that_succeeded() {
    let env = Env::start(SimulationOptions::default()).await;
    let op = env.operator("replica-a");
    let marker = tempfile::tempdir().expect("tempdir");
    let trainer = format!(
        "import os, sys\n\
         m = {:?}\n\
         if not os.path.exists(m):\n    open(m, 'w').close(); print('accuracy=0.5 loss=0.5', flush=True); sys.exit(1)\n\
         print('accuracy=0.9 loss=0.1', flush=True)\n",
        marker.path().join("attempted").display().to_string()
    );
    let yaml = experiment_yaml_with("retried", "Job", 1, 2, "", &trainer)
        .replace("backoffLimit: 0", "backoffLimit: 2");
    env.create(&yaml).await;
    let exp = finished(&env, "retried").await;
    assert!(condition(&exp, "Succeeded").is_some(), "{exp:#}");
    // The first trial's first attempt fails and its retry succeeds; the second trial's
    // attempt succeeds at once.
    let mut minima = Vec::new();
    for t in env.trials_of("retried").await {
        let trial = serde_json::to_value(&t).expect("json");
        assert!(condition(&trial, "Succeeded").is_some(), "{trial:#}");
        let accuracy = trial["status"]["observation"]["metrics"]
            .as_array()
            .and_then(|m| m.iter().find(|m| m["name"] == "accuracy").cloned())
            .unwrap_or_else(|| panic!("no accuracy in {trial:#}"));
        assert_eq!(accuracy["latest"], "0.9", "{trial:#}");
        assert_eq!(accuracy["max"], "0.9", "{trial:#}");
        minima.push(accuracy["min"].as_str().unwrap_or_default().to_string());
    }
    minima.sort();
    // Both attempts of the retried trial are recorded.
    assert_eq!(minima, ["0.5", "0.9"]);
    op.stop().await;
    env.shutdown().await;
}

/// A Job removed the moment it completes (`ttlSecondsAfterFinished: 0`, common on shared
/// clusters) succeeded all the same: its trial ends Succeeded on what it reported, not
/// failed as a job deleted before it finished.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_its_ttl_removes_at_once_still_succeeds() {
    // A trainer that runs a moment, as real ones do: its log is read while its pod runs (a
    // pod deleted with its job before its log was read leaves the trial MetricsUnavailable).
    let options = SimulationOptions {
        min_running: Duration::from_secs(1),
        ..SimulationOptions::default()
    };
    let env = Env::start(options).await;
    let op = env.operator("replica-a");
    let yaml = experiment_yaml("expiring", "Job", 2, 4, "").replace(
        "backoffLimit: 0",
        "backoffLimit: 0\n        ttlSecondsAfterFinished: 0",
    );
    env.create(&yaml).await;
    let exp = finished(&env, "expiring").await;
    assert!(condition(&exp, "Succeeded").is_some(), "{exp:#}");
    assert_eq!(exp["status"]["trialsSucceeded"], 4, "{exp:#}");
    let jobs = env.api("batch", "v1", "Job");
    let left = jobs.list(&ListParams::default()).await.expect("jobs").items;
    assert!(left.is_empty(), "the TTL removes every job: {left:?}");
    for t in env.trials_of("expiring").await {
        let t = serde_json::to_value(&t).expect("json");
        let ok = condition_is(&t, "Succeeded", "True").unwrap_or_else(|| panic!("{t:#}"));
        assert_eq!(
            ok["reason"],
            "TrialSucceeded. Job reason: CompletionsReached"
        );
    }
    op.stop().await;
    env.shutdown().await;
}

/// The operator's finalizer keeps a trial's job until the trial is judged: a running job
/// deleted by hand fails its trial as deleted and then goes; with `retain` a finished
/// job stays, let go by the operator.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_finalizer_holds_it_until_its_trial_is_judged() {
    let options = SimulationOptions {
        default_outcome: Outcome::Hang,
        ..SimulationOptions::default()
    };
    let env = Env::start(options).await;
    let op = env.operator("replica-a");
    env.create(&experiment_yaml("by-hand", "Job", 1, 2, ""))
        .await;
    let jobs = env.api("batch", "v1", "Job");
    let selector = ListParams::default().labels("katib.kubeflow.org/experiment=by-hand");
    // Each of the two trials' jobs, deleted as it runs; the second failure ends the experiment.
    for _ in 0..2 {
        let running = wait_until(
            "a running job",
            || async { jobs_of(&env, &selector).await },
            |items| {
                items
                    .iter()
                    .any(|j| j.metadata.deletion_timestamp.is_none())
            },
        )
        .await;
        let job = running
            .iter()
            .find(|j| j.metadata.deletion_timestamp.is_none())
            .expect("running job");
        assert_eq!(job.finalizers(), ["vernier.kubeflow.org/trial-judged"]);
        jobs.delete(&job.name_any(), &kube::api::DeleteParams::background())
            .await
            .expect("deleted");
    }
    let exp = finished(&env, "by-hand").await;
    let trial = serde_json::to_value(&env.trials_of("by-hand").await[0]).expect("json");
    let failed = condition_is(&trial, "Failed", "True").unwrap_or_else(|| panic!("{trial:#}"));
    assert_eq!(
        failed["reason"], "TrialFailed. Job reason: JobDeleted",
        "{exp:#}"
    );
    wait_until(
        "the deleted job gone",
        || async { jobs.list(&selector).await.expect("jobs").items.len() },
        |n| *n == 0,
    )
    .await;
    op.stop().await;
    env.shutdown().await;

    let env = Env::start(SimulationOptions::default()).await;
    let op = env.operator("replica-a");
    let yaml = experiment_yaml("kept", "Job", 1, 2, "")
        .replace("    trialSpec:", "    retain: true\n    trialSpec:");
    env.create(&yaml).await;
    let exp = finished(&env, "kept").await;
    assert!(condition(&exp, "Succeeded").is_some(), "{exp:#}");
    let selector = ListParams::default().labels("katib.kubeflow.org/experiment=kept");
    let kept = wait_until(
        "the kept job let go",
        || async { jobs_of(&env, &selector).await },
        |items| items.len() == 2 && items.iter().all(|j| j.finalizers().is_empty()),
    )
    .await;
    assert!(kept.iter().all(|j| j.metadata.deletion_timestamp.is_none()));
    op.stop().await;
    env.shutdown().await;
}

async fn jobs_of(env: &Env, selector: &ListParams) -> Vec<DynamicObject> {
    let jobs = env.api("batch", "v1", "Job");
    jobs.list(selector).await.expect("jobs").items
}

/// A job the API server refuses as invalid (a label value with a space) cannot be created
/// by any retry: its trial fails with the server's words instead of waiting forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_the_api_server_refuses_fails_its_trial_with_the_servers_words() {
    let env = Env::start(SimulationOptions::default()).await;
    let op = env.operator("replica-a");
    let yaml = experiment_yaml("refused", "Job", 1, 2, "").replace(
        "      kind: Job\n      spec:",
        "      kind: Job\n      metadata:\n        labels:\n          team: ml team\n      spec:",
    );
    env.create(&yaml).await;
    let exp = finished(&env, "refused").await;
    assert!(condition(&exp, "Failed").is_some(), "{exp:#}");
    for trial in env.trials_of("refused").await {
        let trial = serde_json::to_value(&trial).expect("json");
        let failed = condition_is(&trial, "Failed", "True").unwrap_or_else(|| panic!("{trial:#}"));
        assert_eq!(failed["reason"], "TrialFailed. Job reason: Invalid");
        let message = failed["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("the API server refused the Job: ")
                && message.contains("Invalid value: \"ml team\""),
            "{message}"
        );
    }
    op.stop().await;
    env.shutdown().await;
}

/// An objective reported as text, as Katib's DARTS example reports `Best-Genotype`: the trial
/// succeeds, as in Katib (its objective has a `latest` that is not `unavailable`), and is the
/// best trial for want of a number.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_objective_like_darts_genotype_succeeds() {
    let env = Env::start(SimulationOptions::default()).await;
    let op = env.operator("replica-a");
    let trainer = "print(\"accuracy=Genotype(normal=[[('max_pooling_3x3', 0)]])\", flush=True)\n";
    let collector = "  metricsCollectorSpec:\n    source:\n      filter:\n        metricsFormat:\n          - \"([\\\\w-]+)=(Genotype.*)\"\n";
    let yaml = experiment_yaml_with("text-objective", "Job", 1, 2, collector, trainer);
    env.create(&yaml).await;
    let exp = finished(&env, "text-objective").await;
    assert_eq!(exp["status"]["trialsSucceeded"], 2, "{exp:#}");
    let t = serde_json::to_value(&env.trials_of("text-objective").await[0]).expect("json");
    assert!(condition(&t, "Succeeded").is_some(), "{t:#}");
    let best = &exp["status"]["currentOptimalTrial"]["observation"]["metrics"][0];
    assert_eq!(best["name"], "accuracy");
    assert!(
        best["latest"]
            .as_str()
            .unwrap_or_default()
            .starts_with("Genotype("),
        "{exp:#}"
    );
    op.stop().await;
    env.shutdown().await;
}

/// A trainer that prints only its loss: the trial ends MetricsUnavailable, written as Katib's
/// trial controller writes it (a `MetricsUnavailable` condition, `Running` False keeping its
/// reason), with the engine's sentence naming the metrics its log showed, as local mode names
/// them. A second trial prints its objective as `nan`: it reported no usable value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trial_without_its_objective_says_which_metrics_it_reported() {
    let env = Env::start(SimulationOptions::default()).await;
    let op = env.operator("replica-a");
    let marker = tempfile::tempdir().expect("tempdir");
    let trainer = "import os\nm = os.path.join('DIR', 'first')\nfirst = not os.path.exists(m)\n\
                   open(m, 'a').close()\n\
                   print('epoch=0 loss=0.25' if first else 'accuracy=nan', flush=True)\n"
        .replace("DIR", &marker.path().display().to_string());
    let yaml = experiment_yaml_with("no-objective", "Job", 1, 2, "", &trainer);
    env.create(&yaml).await;
    let trials = wait_until(
        "the trial to end MetricsUnavailable",
        || async {
            let trials = env.trials_of("no-objective").await;
            trials
                .iter()
                .map(|t| serde_json::to_value(t).expect("json"))
                .collect::<Vec<_>>()
        },
        |ts| {
            ts.iter()
                .any(|t| condition(t, "MetricsUnavailable").is_some())
        },
    )
    .await;
    let t = trials
        .iter()
        .find(|t| condition(t, "MetricsUnavailable").is_some())
        .expect("trial");
    let c = condition(t, "MetricsUnavailable").expect("condition");
    assert_eq!(
        c["reason"], "MetricsUnavailable. Job reason: CompletionsReached",
        "{t:#}"
    );
    let running = condition_is(t, "Running", "False").expect("running condition");
    assert_eq!(running["reason"], "TrialRunning", "{t:#}");
    assert_eq!(
        c["message"],
        "Metrics are not available: the job succeeded but never reported the objective metric \"accuracy\" (saw epoch, loss); hint: from container \"trainer\", print a line such as `accuracy=0.5`"
    );
    let exp = finished(&env, "no-objective").await;
    let messages: Vec<String> = env
        .trials_of("no-objective")
        .await
        .iter()
        .map(|t| serde_json::to_value(t).expect("json"))
        .filter_map(|t| {
            Some(
                condition(&t, "MetricsUnavailable")?["message"]
                    .as_str()?
                    .to_string(),
            )
        })
        .collect();
    let unusable = "never reported a usable value of the objective metric \"accuracy\": every \
                    value printed for it was unusable";
    assert!(
        messages
            .iter()
            .any(|m| m.contains(unusable) && m.contains("(saw accuracy)")),
        "{messages:#?} {exp:#}"
    );
    op.stop().await;
    env.shutdown().await;
}

/// A metric the experiment collects that a trial never reported is `unavailable` in the
/// Trial's observation, as Katib's trial controller writes it (and `vernier report` shows it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_metric_never_reported_is_unavailable_in_the_observation() {
    let env = Env::start(SimulationOptions::default()).await;
    let op = env.operator("replica-a");
    let trainer = "print('accuracy=0.75', flush=True)\n";
    let yaml = experiment_yaml_with("partial", "Job", 1, 2, "", trainer);
    env.create(&yaml).await;
    finished(&env, "partial").await;
    let trials = env.trials_of("partial").await;
    let t = serde_json::to_value(&trials[0]).expect("json");
    let metrics = &t["status"]["observation"]["metrics"];
    let loss = metrics
        .as_array()
        .and_then(|m| m.iter().find(|m| m["name"] == "loss"))
        .unwrap_or_else(|| panic!("no loss in {t:#}"));
    assert_eq!(
        loss,
        &serde_json::json!({"name": "loss", "min": "unavailable", "max": "unavailable", "latest": "unavailable"}),
        "{t:#}"
    );
    assert!(condition(&t, "Succeeded").is_some(), "{t:#}");
    op.stop().await;
    env.shutdown().await;
}

/// A trial deleted by hand is created again under its name (its sequence number is free); the
/// deleted trial's job, held by a finalizer as the garbage collector may hold it, is not taken
/// over: the new trial waits until it is gone, then runs a job of its own and succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recreated_trial_waits_for_its_namesakes_job_instead_of_taking_it_over() {
    let options = SimulationOptions {
        min_running: Duration::from_secs(2),
        ..SimulationOptions::default()
    };
    let env = Env::start(options).await;
    let op = env.operator("replica-a");
    env.create(&experiment_yaml("reused", "Job", 1, 2, ""))
        .await;
    let jobs = env.api("batch", "v1", "Job");
    let first = wait_until(
        "the first trial's job",
        || async { env.trials_of("reused").await },
        |ts| ts.len() == 1,
    )
    .await;
    let name = first[0].name_any();
    let old_uid = first[0].uid().expect("uid");
    wait_until(
        "the job to exist",
        || async { jobs.get_opt(&name).await.expect("get") },
        |j| j.is_some(),
    )
    .await;
    let hold = serde_json::json!({"metadata": {"finalizers": ["example.com/hold"]}});
    jobs.patch(&name, &PatchParams::default(), &Patch::Merge(&hold))
        .await
        .expect("hold the job");
    env.trials()
        .delete(&name, &DeleteParams::default())
        .await
        .expect("delete the trial");
    wait_until(
        "the trial created again under its name",
        || async { env.trials().get_opt(&name).await.expect("get") },
        |t| {
            t.as_ref()
                .is_some_and(|t| t.uid().as_deref() != Some(old_uid.as_str()))
        },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let job = jobs.get_opt(&name).await.expect("get").expect("held job");
    assert_eq!(job.owner_references()[0].uid, old_uid, "{job:?}");
    let waiting = env.trials().get(&name).await.expect("trial");
    let waiting = serde_json::to_value(&waiting).expect("json");
    assert!(condition(&waiting, "Running").is_none(), "{waiting:#}");
    let release = serde_json::json!({"metadata": {"finalizers": null}});
    jobs.patch(&name, &PatchParams::default(), &Patch::Merge(&release))
        .await
        .expect("release the job");
    let exp = finished(&env, "reused").await;
    assert!(condition(&exp, "Succeeded").is_some(), "{exp:#}");
    assert_eq!(
        exp["status"]["trialsFailed"].as_i64().unwrap_or(0),
        0,
        "{exp:#}"
    );
    let job = jobs.get_opt(&name).await.expect("get");
    if let Some(job) = job {
        assert_ne!(job.owner_references()[0].uid, old_uid, "{job:?}");
    }
    op.stop().await;
    env.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_experiment_removes_trials_jobs_and_observations() {
    let options = SimulationOptions {
        default_outcome: Outcome::Hang,
        ..SimulationOptions::default()
    };
    let env = Env::start(options).await;
    let op = env.operator("replica-a");
    env.create(&experiment_yaml("doomed", "Job", 2, 4, ""))
        .await;
    let jobs = env.api("batch", "v1", "Job");
    let selector = ListParams::default().labels("katib.kubeflow.org/experiment=doomed");
    wait_until(
        "two running jobs",
        || async { jobs.list(&selector).await.expect("jobs").items.len() },
        |n| *n == 2,
    )
    .await;
    let trial_names: Vec<String> = env
        .trials_of("doomed")
        .await
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    // Something for the finalizer to delete.
    env.store
        .report_observations(
            &trial_names[0],
            &[vernier_core::Observation {
                metric: "accuracy".into(),
                timestamp_us: 0,
                value: "0.5".into(),
            }],
        )
        .await
        .expect("observation");
    env.experiments()
        .delete("doomed", &DeleteParams::background())
        .await
        .expect("deleted");
    wait_until("trials gone", || env.trials_of("doomed"), |t| t.is_empty()).await;
    wait_until(
        "jobs gone",
        || async { jobs.list(&selector).await.expect("jobs").items.len() },
        |n| *n == 0,
    )
    .await;
    for t in &trial_names {
        assert!(
            env.store
                .observations(t, None, None, None)
                .await
                .expect("logs")
                .is_empty(),
            "{t}"
        );
    }
    // Its lease goes too, or a local run of the same name would be refused for ever.
    let lease = wait_until(
        "the deleted experiment's lease to be released",
        || env.store.get_lease("doomed"),
        |l| matches!(l, Ok(None)),
    )
    .await;
    assert!(matches!(lease, Ok(None)));
    op.stop().await;
    env.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarted_operator_finishes_without_duplicate_trials() {
    let env = Env::start(SimulationOptions::default()).await;
    let first = env.operator("replica-a");
    env.create(&experiment_yaml("restarted", "Job", 1, 5, ""))
        .await;
    wait_until(
        "two trials",
        || env.trials_of("restarted"),
        |t| t.len() >= 2,
    )
    .await;
    first.stop().await;
    // A new process: nothing carried over in memory, only the API server and the store.
    let second = env.operator("replica-a");
    let exp = finished(&env, "restarted").await;
    assert!(condition(&exp, "Succeeded").is_some(), "{exp:#}");
    assert_trials_exactly_once(&env, "restarted", 5).await;
    second.stop().await;
    env.shutdown().await;
}

/// A trainer that prints an accuracy every 0.3 s for 3 s.
const SLOW_TRAINER: &str = "import time\n\
for e in range(10):\n    print(f'epoch={e} accuracy={e / 10}', flush=True)\n    time.sleep(0.3)\n";

/// A restarted operator reads a running trial's log again from its start: the values it
/// records again keep the times they were printed at, not the time of the re-read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_operator_keeps_the_times_of_the_values_it_reads_again() {
    let env = Env::start(SimulationOptions::default()).await;
    let first = env.operator("replica-a");
    let yaml = experiment_yaml_with("retimed", "Job", 1, 1, "", SLOW_TRAINER)
        .replace("maxFailedTrialCount: 2", "maxFailedTrialCount: 1");
    env.create(&yaml).await;
    let trials = wait_until("a trial", || env.trials_of("retimed"), |t| !t.is_empty()).await;
    let trial = trials[0].name_any();
    let accuracy = || async {
        let found = env.store.observations(&trial, Some("accuracy"), None, None);
        found.await.expect("observations")
    };
    let before = wait_until("three values", accuracy, |o| o.len() >= 3).await;
    first.stop().await;
    let second = env.operator("replica-a");
    let exp = finished(&env, "retimed").await;
    assert!(condition(&exp, "Succeeded").is_some(), "{exp:#}");
    let after = accuracy().await;
    assert_eq!(after.len(), 10, "{after:?}");
    assert_eq!(
        after[..before.len()],
        before[..],
        "re-read values keep their times"
    );
    second.stop().await;
    env.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_leader_creates_trials() {
    let env = Env::start(SimulationOptions::default()).await;
    let a = env.operator("replica-a");
    let b = env.operator("replica-b");
    env.create(&experiment_yaml("two-replicas", "Job", 2, 4, ""))
        .await;
    let exp = finished(&env, "two-replicas").await;
    assert!(condition(&exp, "Succeeded").is_some(), "{exp:#}");
    assert_eq!(env.trials_of("two-replicas").await.len(), 4);
    let created = (a.metrics.trials_created(), b.metrics.trials_created());
    assert!(
        created == (4, 0) || created == (0, 4),
        "both replicas created trials: {created:?}"
    );
    a.stop().await;
    b.stop().await;
    env.shutdown().await;
}

/// Controllers asked to stop before their caches have filled (a standby that gains the lease
/// just as it is stopped) stop, instead of waiting for reconciles that can never start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controllers_stopped_as_they_start_stop() {
    let env = Env::start(SimulationOptions::default()).await;
    let run = vernier_operator::run::run_controllers(env.bare_context(), async {});
    tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .expect("controllers asked to stop at once have stopped");
    env.shutdown().await;
}

/// A replica stopped the moment it has started its controllers on gaining the lease stops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_stopped_as_it_gains_the_lease_stops() {
    let env = Env::start(SimulationOptions::default()).await;
    let ctx = Arc::new(Context::new(
        env.client.clone(),
        env.store.clone(),
        OperatorConfig {
            identity: "replica-b".into(),
            ..OperatorConfig::default()
        },
        Arc::new(Metrics::new()),
    ));
    let lease = LeaseConfig {
        name: "vernier-operator".into(),
        namespace: "default".into(),
        identity: "replica-b".into(),
        lease_duration: DEFAULT_LEASE.duration,
        renew_every: DEFAULT_LEASE.renew_every,
    };
    let started = Arc::downgrade(&ctx);
    let shutdown = async move {
        while !started.upgrade().is_some_and(|c| c.shared.is_running()) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    };
    let run = vernier_operator::run::run_with_leader_election(ctx, lease, shutdown);
    tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the replica stopped as it gained the lease has stopped");
    env.shutdown().await;
}

/// Two replicas with the given lease timing run an experiment of `max` trials one at a time;
/// once the leader has created two of them it crashes (`crash`) or is stopped gracefully, and
/// the other replica must finish the experiment with every trial created exactly once between
/// the two.
async fn failover(name: &str, max: usize, lease: LeaseTiming, crash: bool) {
    let env = Env::start(SimulationOptions::default()).await;
    let a = env.operator_leased("replica-a", lease);
    let b = env.operator_leased("replica-b", lease);
    env.create(&experiment_yaml(name, "Job", 1, max as u32, ""))
        .await;
    wait_until(
        "the leader to create two trials",
        || async { a.metrics.trials_created() + b.metrics.trials_created() },
        |n| *n >= 2,
    )
    .await;
    let (leader, survivor) = match lease_holder(&env).await.as_str() {
        "replica-a" => (a, b),
        "replica-b" => (b, a),
        other => panic!("the lease is held by {other:?}, not by a replica"),
    };
    assert!(
        leader.metrics.trials_created() >= 2,
        "the lease holder is the replica that created the trials"
    );
    assert_eq!(survivor.metrics.trials_created(), 0, "only the leader did");
    let leader_metrics = leader.metrics.clone();
    let leader_identity = leader.identity.clone();
    if crash {
        leader.crash().await;
    } else {
        leader.stop().await;
        // The graceful stop returns only after the release: the lease is free or already
        // the survivor's, never still the stopped leader's.
        let holder = lease_holder(&env).await;
        assert!(
            holder.is_empty() || holder == survivor.identity,
            "after the graceful stop of {leader_identity} the lease is held by {holder:?}"
        );
    }
    let exp = finished(&env, name).await;
    let ok = condition(&exp, "Succeeded").unwrap_or_else(|| panic!("not succeeded: {exp:#}"));
    assert_eq!(ok["reason"], "ExperimentMaxTrialsReached", "{exp:#}");
    assert_eq!(exp["status"]["trials"], max, "{exp:#}");
    assert_trials_exactly_once(&env, name, max).await;
    let by_survivor = survivor.metrics.trials_created();
    assert!(by_survivor > 0, "{} took over", survivor.identity);
    // Each successful create counts once; a re-create of an existing trial is a 409 that
    // does not count. So the two counts add up to the trials only if none was made twice.
    assert_eq!(
        leader_metrics.trials_created() + by_survivor,
        max as u64,
        "trials created by {leader_identity} and {}",
        survivor.identity
    );
    assert_eq!(lease_holder(&env).await, survivor.identity);
    survivor.stop().await;
    env.shutdown().await;
}

/// The leader crashes holding its lease: the other replica takes over once the lease has
/// expired (2 s here, so that this comes within seconds) and finishes the experiment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_failover_finishes_the_experiment_without_duplicates() {
    let lease = LeaseTiming {
        duration: Duration::from_secs(2),
        renew_every: Duration::from_millis(300),
    };
    failover("failover", 6, lease, true).await;
}

/// A lease far longer than [`DEADLINE`], so that the graceful handover test can only pass if
/// the stopped leader released its lease: waiting for it to expire would outlast every wait.
const HANDOVER_LEASE: Duration = Duration::from_secs(600);
const _: () = assert!(DEADLINE.as_secs() < HANDOVER_LEASE.as_secs());

/// The leader is stopped gracefully: it releases its lease on the way out and the other
/// replica takes over at its next round, long before the lease could have expired.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gracefully_stopped_leader_releases_the_lease_to_the_other_replica() {
    let lease = LeaseTiming {
        duration: HANDOVER_LEASE,
        renew_every: Duration::from_millis(300),
    };
    failover("handover", 6, lease, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_driver_and_the_operator_never_drive_one_experiment() {
    use vernier_store::{LEASE_TTL, LeaseClaim, OPERATOR_LEASE_OWNER, StoreError};
    let env = Env::start(SimulationOptions::default()).await;
    // A live `vernier run` of an experiment of the same name, on the operator's database.
    let local = LeaseClaim {
        owner: "local-run".into(),
        host: "laptop".into(),
        pid: 4242,
    };
    let now = vernier_operator::objects::now_us;
    let alive = |_: &vernier_store::LeaseRow| false;
    env.store
        .acquire_lease("shared", &local, now(), LEASE_TTL, &alive)
        .await
        .expect("the local driver holds the lease");
    let op = env.operator("replica-a");
    env.create(&experiment_yaml("shared", "Job", 1, 2, ""))
        .await;
    let event = env.event("shared", "LeaseHeld").await;
    let note = event.data["note"].as_str().unwrap_or_default();
    assert!(note.contains("pid 4242 on host laptop"), "{note}");
    assert!(note.contains("hint:"), "{note}");
    assert!(env.trials_of("shared").await.is_empty());

    // The local driver ends; the next look at the experiment takes the lease and drives it.
    assert!(
        env.store
            .release_lease("shared", "local-run")
            .await
            .unwrap()
    );
    env.edit(
        "shared",
        serde_json::json!({"metadata": {"labels": {"poke": "1"}}}),
    )
    .await;
    wait_until(
        "the operator to create a trial",
        || env.trials_of("shared"),
        |t| !t.is_empty(),
    )
    .await;
    let lease = env.store.get_lease("shared").await.unwrap().expect("lease");
    assert_eq!(lease.owner, OPERATOR_LEASE_OWNER);
    // Now a local driver is refused, told that the operator drives it.
    let refused = env
        .store
        .acquire_lease("shared", &local, now(), LEASE_TTL, &alive)
        .await
        .unwrap_err();
    assert!(
        matches!(refused, StoreError::LeaseHeldByOperator { .. }),
        "{refused}"
    );
    // The finished experiment frees its lease.
    let done = finished(&env, "shared").await;
    assert!(condition(&done, "Succeeded").is_some(), "{done:#}");
    let released = wait_until(
        "the lease to be released",
        || env.store.get_lease("shared"),
        |l| matches!(l, Ok(None)),
    )
    .await;
    assert!(matches!(released, Ok(None)));
    op.stop().await;
    env.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_experiments_fail_with_field_and_value_and_an_event() {
    let env = Env::start(SimulationOptions::default()).await;
    let op = env.operator("replica-a");
    let bad =
        experiment_yaml("bad-bounds", "Job", 1, 2, "").replace("min: \"0.01\"", "min: \"0.9\"");
    env.create(&bad).await;
    // Malformed objects: wrong types where the schema-less CRD lets anything in.
    env.create("apiVersion: kubeflow.org/v1beta1\nkind: Experiment\nmetadata:\n  name: garbage\nspec: 42\n").await;
    env.create("apiVersion: kubeflow.org/v1beta1\nkind: Experiment\nmetadata:\n  name: wrong-types\nspec:\n  parameters: {a: 1}\n  parallelTrialCount: many\n").await;
    let exp = finished(&env, "bad-bounds").await;
    let failed = condition(&exp, "Failed").unwrap_or_else(|| panic!("{exp:#}"));
    let message = failed["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("spec.parameters[0].feasibleSpace"),
        "{message}"
    );
    assert!(message.contains("0.9"), "{message}");
    for name in ["garbage", "wrong-types"] {
        let e = finished(&env, name).await;
        assert!(condition(&e, "Failed").is_some(), "{e:#}");
    }
    let event = env.event("bad-bounds", "ValidationFailed").await;
    assert!(
        event.data["note"]
            .as_str()
            .unwrap_or_default()
            .contains("0.9")
    );
    // The operator survived them all: a valid experiment still runs.
    env.create(&experiment_yaml("still-works", "Job", 1, 2, ""))
        .await;
    let ok = finished(&env, "still-works").await;
    assert!(condition(&ok, "Succeeded").is_some(), "{ok:#}");
    op.stop().await;
    env.shutdown().await;
}

/// Stops every running trial that has reported its objective at least twice.
#[derive(Debug)]
struct StopAfterTwo;

impl vernier_core::EarlyStopper for StopAfterTwo {
    fn name(&self) -> &str {
        "stop-after-two"
    }

    fn trials_to_stop(
        &self,
        request: &vernier_core::EarlyStoppingRequest<'_>,
    ) -> Result<Vec<String>, vernier_core::CoreError> {
        Ok(request
            .trials
            .iter()
            .filter(|t| t.state == vernier_core::TrialState::Running && t.values.len() >= 2)
            .map(|t| t.name.to_string())
            .collect())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn early_stopping_deletes_the_job_and_marks_the_trial() {
    let env = Env::start(SimulationOptions::default()).await;
    let factory: EarlyStopperFactory = Arc::new(|name, _settings| {
        assert_eq!(name, "medianstop");
        Ok(Box::new(StopAfterTwo) as Box<dyn vernier_core::EarlyStopper>)
    });
    let op = env.operator_with("replica-a", Some(factory));
    // The trainer prints two epochs, then waits long enough to be stopped while running.
    let yaml = experiment_yaml(
        "stopped",
        "Job",
        1,
        2,
        "  earlyStopping:\n    algorithmName: medianstop\n",
    )
    .replace(
        "for e in range(3):",
        "import time\n                        for e in range(2):",
    )
    .replace(
        "flush=True)",
        "flush=True)\n                        time.sleep(600)",
    );
    env.create(&yaml).await;
    let exp = finished(&env, "stopped").await;
    assert!(condition(&exp, "Succeeded").is_some(), "{exp:#}");
    assert_eq!(exp["status"]["trialsEarlyStopped"], 2, "{exp:#}");
    let jobs = env.api("batch", "v1", "Job");
    let selector = ListParams::default().labels("katib.kubeflow.org/experiment=stopped");
    wait_until(
        "stopped jobs deleted",
        || async { jobs.list(&selector).await.expect("jobs").items.len() },
        |n| *n == 0,
    )
    .await;
    for t in env.trials_of("stopped").await {
        let t = serde_json::to_value(&t).expect("json");
        let c = condition(&t, "EarlyStopped").unwrap_or_else(|| panic!("{t:#}"));
        assert_eq!(c["reason"], "TrialEarlyStopped");
        // Its observation shows what it had reported when it was stopped, as Katib's trial
        // controller updates an early-stopped trial's observation.
        let name = t["metadata"]["name"].as_str().expect("name");
        let stored = env
            .store
            .trial_metric_summaries(name, &["accuracy".to_string()])
            .await
            .expect("summaries");
        let shown = t["status"]["observation"]["metrics"]
            .as_array()
            .and_then(|m| m.iter().find(|m| m["name"] == "accuracy"))
            .unwrap_or_else(|| panic!("no accuracy in {t:#}"));
        assert_eq!(shown["latest"], stored[0].latest, "{t:#}");
    }
    // Early-stopped trials with observations count for the optimal trial, as in Katib.
    assert!(
        exp["status"]["currentOptimalTrial"]["bestTrialName"].is_string(),
        "{exp:#}"
    );
    op.stop().await;
    env.shutdown().await;
}

/// A trainer for the medianstop test: each pod takes the next number `n` from a directory
/// shared by the test's pods (in the order they start) and prints the accuracies of row `n`,
/// pod 3 a second apart. Pod 1 then waits until pod 3 has started; pod 3 waits to be stopped.
const MEDIAN_TRAINER: &str = "import os, time\n\
d = 'DIR'\n\
n = 0\n\
while True:\n    try:\n        os.close(os.open(os.path.join(d, str(n)), os.O_CREAT | os.O_EXCL))\n        break\n    except FileExistsError:\n        n += 1\n\
rows = [[0.5, 0.75, 1.0], [0.125, 0.25, 0.25], [0.75, 1.0, 1.0], [0.25, 0.25]]\n\
for e, v in enumerate(rows[n]):\n    time.sleep(1 if n == 3 else 0)\n    print(f'epoch={e} accuracy={v} loss={1 - v}', flush=True)\n\
while n == 1 and not os.path.exists(os.path.join(d, '3')):\n    time.sleep(0.05)\n\
if n == 3:\n    time.sleep(600)\n";

/// The early-stopping rules `vernier operator` offers.
fn registry_stoppers() -> EarlyStopperFactory {
    Arc::new(|name, settings| {
        vernier_algorithms::build_early_stopper(name, settings).map_err(|e| e.to_string())
    })
}

/// Medianstop from two succeeded trials, judged on each trial's first two values.
const MEDIAN_STOPPING: &str = "  earlyStopping:\n    algorithmName: medianstop\n    algorithmSettings:\n      - name: min_trials_required\n        value: \"2\"\n      - name: start_step\n        value: \"2\"\n";

/// Katib's medianstop timing, hand-computed (maximise accuracy, `min_trials_required` 2,
/// `start_step` 2, two trials at a time, four in all). Pods 0 and 1 start together, with no
/// rule (nothing succeeded yet). Pod 0 succeeds; the trial created then (pod 2) has no rule
/// either (one succeeded). Pod 2 succeeds; the trial created then (pod 3) is given the rule
/// `accuracy less 0.75` from step 2: the mean of pod 0's first two values (0.625) and pod 2's
/// (0.875). Pod 3 reports 0.25 twice, a second apart, and is stopped at the second: the same
/// value again leaves its Trial object as it was, after every other trial has ended, so only
/// the experiment's own look at its running trials sees it. Pod 1 (0.125, 0.25, 0.25) is worse than
/// the rule too but was created without one: it keeps running until pod 3 exists (created by
/// the reconcile that would have stopped it under a rule applied to everything running) and
/// then succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn medianstop_rules_are_frozen_into_trials_when_they_are_created() {
    let env = Env::start(SimulationOptions::default()).await;
    let op = env.operator_with("replica-a", Some(registry_stoppers()));
    let pods = tempfile::tempdir().expect("tempdir");
    let trainer = MEDIAN_TRAINER.replace("DIR", &pods.path().display().to_string());
    let yaml = experiment_yaml_with("frozen", "Job", 2, 4, MEDIAN_STOPPING, &trainer);
    env.create(&yaml).await;
    let exp = finished(&env, "frozen").await;
    assert!(condition(&exp, "Succeeded").is_some(), "{exp:#}");
    assert_eq!(exp["status"]["trialsSucceeded"], 3, "{exp:#}");
    assert_eq!(exp["status"]["trialsEarlyStopped"], 1, "{exp:#}");
    let mut trials: Vec<Value> = env
        .trials_of("frozen")
        .await
        .iter()
        .map(|t| serde_json::to_value(t).expect("json"))
        .collect();
    trials.sort_by_key(|t| {
        let seq = &t["metadata"]["annotations"]["vernier/trial-seq"];
        seq.as_str().and_then(|s| s.parse::<u32>().ok())
    });
    let rules: Vec<&Value> = trials
        .iter()
        .map(|t| &t["spec"]["earlyStoppingRules"])
        .collect();
    assert_eq!(
        rules[..3],
        [&Value::Null, &Value::Null, &Value::Null],
        "{trials:#?}"
    );
    assert_eq!(
        rules[3],
        &serde_json::json!([{"name": "accuracy", "value": "0.75", "comparison": "less", "startStep": 2}])
    );
    let stopped =
        condition(&trials[3], "EarlyStopped").unwrap_or_else(|| panic!("{:#}", trials[3]));
    assert_eq!(stopped["message"], "Trial is early stopped");
    for t in &trials[..3] {
        assert!(condition(t, "Succeeded").is_some(), "{t:#}");
    }
    op.stop().await;
    env.shutdown().await;
}

/// As above, but pod 3 prints its values at once and exits: its job can end before any
/// experiment reconcile looked at it running, and its frozen rule stops it all the same
/// (Katib's collector applies the rule to each value as it reads it, whatever the job does
/// next); `trial_decide`'s table pins the judgement of an ended job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn medianstop_stops_a_trial_whose_job_ended_before_a_check() {
    let env = Env::start(SimulationOptions::default()).await;
    let op = env.operator_with("replica-a", Some(registry_stoppers()));
    let pods = tempfile::tempdir().expect("tempdir");
    let trainer = MEDIAN_TRAINER
        .replace("DIR", &pods.path().display().to_string())
        .replace("time.sleep(1 if n == 3 else 0)", "pass")
        .replace("if n == 3:\n    time.sleep(600)\n", "");
    let yaml = experiment_yaml_with("fast", "Job", 2, 4, MEDIAN_STOPPING, &trainer);
    env.create(&yaml).await;
    let exp = finished(&env, "fast").await;
    assert_eq!(exp["status"]["trialsSucceeded"], 3, "{exp:#}");
    assert_eq!(exp["status"]["trialsEarlyStopped"], 1, "{exp:#}");
    let stopped: Vec<Value> = env
        .trials_of("fast")
        .await
        .iter()
        .map(|t| serde_json::to_value(t).expect("json"))
        .filter(|t| condition(t, "EarlyStopped").is_some())
        .collect();
    let rules = &stopped[0]["spec"]["earlyStoppingRules"];
    assert_eq!(rules[0]["value"], "0.75", "{:#}", stopped[0]);
    let condition = condition(&stopped[0], "EarlyStopped").expect("condition");
    assert_eq!(condition["reason"], "TrialEarlyStopped");
    assert_eq!(condition["message"], "Trial is early stopped");
    op.stop().await;
    env.shutdown().await;
}

/// ASHA ranks trials at each rung as the experiment's reconciles look at them; a trial whose
/// job passes a rung and ends between two reconciles is judged when its job ends, as the local
/// driver judges a trial whose process ended between two checks. Pod 0 reports accuracy 0.5
/// at step 1 and 0.9 at step 3. Pod 1, started after it ended, reports 0.6 (best at rung 1),
/// waits for the experiment to look at it, then prints 0.1 twice at once and exits: ranked 2
/// of 2 at rung 3, where ASHA (eta 3) keeps the best 1, it is stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asha_stops_a_trial_whose_job_passed_its_rung_between_reconciles() {
    let env = Env::start(SimulationOptions::default()).await;
    // The experiment looks at its running trials every 5 s (the default), so pod 1 ends
    // between two looks.
    let interval = Duration::from_secs(5);
    let op = env.operator_observing("replica-a", registry_stoppers(), interval);
    let pods = tempfile::tempdir().expect("tempdir");
    let trainer = MEDIAN_TRAINER
        .replace("DIR", &pods.path().display().to_string())
        .replace(
            "[[0.5, 0.75, 1.0], [0.125, 0.25, 0.25], [0.75, 1.0, 1.0], [0.25, 0.25]]",
            "[[0.5, 0.9, 0.9], [0.6, 0.1, 0.1]]",
        )
        .replace(
            "time.sleep(1 if n == 3 else 0)",
            "time.sleep(2 if (n, e) == (1, 1) else 0)",
        )
        .replace("while n == 1 and", "while False and")
        .replace("if n == 3:\n    time.sleep(600)\n", "");
    let asha = "  earlyStopping:\n    algorithmName: asha\n";
    let yaml = experiment_yaml_with("rungs", "Job", 1, 2, asha, &trainer);
    env.create(&yaml).await;
    let exp = finished(&env, "rungs").await;
    assert_eq!(exp["status"]["trialsSucceeded"], 1, "{exp:#}");
    assert_eq!(exp["status"]["trialsEarlyStopped"], 1, "{exp:#}");
    let stopped: Vec<Value> = env
        .trials_of("rungs")
        .await
        .iter()
        .map(|t| serde_json::to_value(t).expect("json"))
        .filter(|t| condition(t, "EarlyStopped").is_some())
        .collect();
    let shown = &stopped[0]["status"]["observation"]["metrics"];
    assert!(shown.to_string().contains("0.1"), "{:#}", stopped[0]);
    let condition = condition(&stopped[0], "EarlyStopped").expect("condition");
    assert_eq!(condition["reason"], "TrialEarlyStopped");
    op.stop().await;
    env.shutdown().await;
}

/// A trainer for the ASHA restart test: each pod takes the next number `n` as
/// [`MEDIAN_TRAINER`] does and prints row `n`'s accuracies on one line (recorded together);
/// pod 2 first waits for the file `go`.
const ASHA_RESTART_TRAINER: &str = "import os, time\n\
d = 'DIR'\n\
n = 0\n\
while True:\n    try:\n        os.close(os.open(os.path.join(d, str(n)), os.O_CREAT | os.O_EXCL))\n        break\n    except FileExistsError:\n        n += 1\n\
while n == 2 and not os.path.exists(os.path.join(d, 'go')):\n    time.sleep(0.05)\n\
rows = [[0.9, 0.1, 0.1], [0.5, 0.95, 0.95], [0.95, 0.5, 0.5]]\n\
print(' '.join(f'accuracy={v}' for v in rows[n]), flush=True)\n";

/// The step ASHA stopped a trial at outlives the operator that stopped it. ASHA (eta 3, rungs
/// at steps 1 and 3), one trial at a time. Pod 0 reports accuracy 0.9, 0.1, 0.1; pod 1 0.5,
/// 0.95, 0.95: ranked 2 of 2 at rung 1, it is stopped at step 1, its 0.95 at step 3 already
/// recorded. The operator is then replaced, and pod 2, held until then, reports 0.95, 0.5, 0.5:
/// first at rung 1 and, beside pod 0 alone, at rung 3, so it succeeds, as under an operator
/// never restarted. An operator that forgot pod 1's stop step would rank pod 2 second of
/// three at rung 3, behind pod 1's 0.95, and stop it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asha_stop_steps_outlive_an_operator_restart() {
    let env = Env::start(SimulationOptions::default()).await;
    let first = env.operator_with("replica-a", Some(registry_stoppers()));
    let pods = tempfile::tempdir().expect("tempdir");
    let trainer = ASHA_RESTART_TRAINER.replace("DIR", &pods.path().display().to_string());
    let asha = "  earlyStopping:\n    algorithmName: asha\n";
    let yaml = experiment_yaml_with("asha-restart", "Job", 1, 3, asha, &trainer);
    env.create(&yaml).await;
    wait_until(
        "pod 1's trial early stopped and the third trial created",
        || env.trials_of("asha-restart"),
        |t| t.len() == 3 && t.iter().any(|t| has_condition(t, "EarlyStopped")),
    )
    .await;
    first.stop().await;
    // A new process: nothing carried over in memory, only the API server and the store.
    let second = env.operator_with("replica-a", Some(registry_stoppers()));
    std::fs::write(pods.path().join("go"), "").expect("go written");
    let exp = finished(&env, "asha-restart").await;
    assert_eq!(exp["status"]["trialsSucceeded"], 2, "{exp:#}");
    assert_eq!(exp["status"]["trialsEarlyStopped"], 1, "{exp:#}");
    let stopped: Vec<DynamicObject> = env
        .trials_of("asha-restart")
        .await
        .into_iter()
        .filter(|t| has_condition(t, "EarlyStopped"))
        .collect();
    let seq = stopped[0].annotations().get("vernier/trial-seq").cloned();
    assert_eq!(seq.as_deref(), Some("1"), "{stopped:#?}");
    let step = stopped[0].annotations().get("vernier/stop-step").cloned();
    assert_eq!(step.as_deref(), Some("1"), "{stopped:#?}");
    second.stop().await;
    env.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_running_experiment_resumes_when_max_trials_is_raised() {
    let env = Env::start(SimulationOptions::default()).await;
    let op = env.operator("replica-a");
    let yaml = experiment_yaml("resumable", "Job", 1, 2, "  resumePolicy: LongRunning\n")
        .replace("maxFailedTrialCount: 2", "maxFailedTrialCount: 1");
    env.create(&yaml).await;
    let exp = finished(&env, "resumable").await;
    assert_eq!(exp["status"]["trials"], 2, "{exp:#}");
    env.edit(
        "resumable",
        serde_json::json!({"spec": {"maxTrialCount": 3}}),
    )
    .await;
    let exp = wait_until(
        "the experiment to run a third trial and finish",
        || experiment_json(&env, "resumable"),
        |e| e["status"]["trials"] == 3 && condition(e, "Succeeded").is_some(),
    )
    .await;
    assert_eq!(exp["status"]["trialsSucceeded"], 3);
    // As in Katib, Restarting stays once set (the SDK's resume flow waits for it).
    let restarting = condition(&exp, "Restarting").unwrap_or_else(|| panic!("{exp:#}"));
    assert_eq!(restarting["status"], "True");
    assert_eq!(restarting["reason"], "ExperimentRestarting");
    // resumePolicy Never (the default) keeps a finished experiment finished.
    env.create(&experiment_yaml("final", "Job", 1, 2, "")).await;
    finished(&env, "final").await;
    let before = experiment_reconciles(&op.metrics);
    env.edit("final", serde_json::json!({"spec": {"maxTrialCount": 3}}))
        .await;
    // The edit wakes the reconciler; once it has run, nothing may have been created.
    wait_until(
        "a reconcile after the edit",
        || async { experiment_reconciles(&op.metrics) },
        |n| *n > before,
    )
    .await;
    let final_exp = experiment_json(&env, "final").await;
    assert!(
        condition(&final_exp, "Succeeded").is_some(),
        "{final_exp:#}"
    );
    assert_eq!(env.trials_of("final").await.len(), 2);
    // Katib's webhook refuses that edit; here a Warning event says why nothing happens.
    let refused = env.event("final", "RestartRefused").await;
    let note = refused.data["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("resumePolicy Never does not continue"),
        "{note}"
    );
    op.stop().await;
    env.shutdown().await;
}

/// An edit that makes a running experiment's spec invalid (Katib's webhook would refuse it)
/// does not end it: its running trials go on and are counted as they finish, none starts
/// until the spec is corrected, and then it finishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_edit_of_a_running_experiment_pauses_it_until_corrected() {
    let options = SimulationOptions {
        min_running: Duration::from_secs(2),
        ..SimulationOptions::default()
    };
    let env = Env::start(options).await;
    let op = env.operator("replica-a");
    env.create(&experiment_yaml("edited", "Job", 1, 3, ""))
        .await;
    wait_until(
        "the first trial counted in the status",
        || experiment_json(&env, "edited"),
        |e| e["status"]["trials"].as_i64().unwrap_or(0) >= 1,
    )
    .await;
    // maxTrialCount is 3: a maxFailedTrialCount of 5 makes the spec invalid.
    env.edit(
        "edited",
        serde_json::json!({"spec": {"maxFailedTrialCount": 5}}),
    )
    .await;
    let refused = env.event("edited", "ValidationFailed").await;
    let note = refused.data["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("no trial starts until it is corrected"),
        "{note}"
    );
    // The trial running at the edit finishes while the experiment waits, and is counted.
    let exp = wait_until(
        "the paused experiment to count its finished trial",
        || experiment_json(&env, "edited"),
        |e| e["status"]["trialsSucceeded"] == 1,
    )
    .await;
    assert!(condition(&exp, "Failed").is_none(), "{exp:#}");
    assert!(condition(&exp, "Succeeded").is_none(), "{exp:#}");
    assert_eq!(exp["status"]["trials"], 1, "{exp:#}");
    // A count of 0 is left out, as Katib's `omitempty` leaves it.
    assert_eq!(exp["status"]["trialsRunning"].as_i64().unwrap_or(0), 0);
    let best = &exp["status"]["currentOptimalTrial"]["bestTrialName"];
    assert_eq!(exp["status"]["succeededTrialList"][0], *best, "{exp:#}");
    assert_eq!(env.trials_of("edited").await.len(), 1);
    env.edit(
        "edited",
        serde_json::json!({"spec": {"maxFailedTrialCount": 2}}),
    )
    .await;
    let exp = wait_until(
        "the corrected experiment to finish",
        || experiment_json(&env, "edited"),
        |e| condition(e, "Succeeded").is_some() || condition(e, "Failed").is_some(),
    )
    .await;
    assert!(condition(&exp, "Succeeded").is_some(), "{exp:#}");
    assert_eq!(exp["status"]["trials"], 3, "{exp:#}");
    op.stop().await;
    env.shutdown().await;
}

fn experiment_reconciles(metrics: &Metrics) -> u64 {
    metrics
        .encode()
        .lines()
        .find_map(|l| {
            l.strip_prefix(r#"vernier_operator_reconciles_total{controller="experiment"} "#)
        })
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// GETs `path` from the HTTP server at `addr` with a plain HTTP/1.1 request.
async fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).await.expect("read");
    response
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_readiness_and_metrics_endpoints() {
    let env = Env::start(SimulationOptions::default()).await;
    let op = env.operator("replica-a");
    env.create(&experiment_yaml("observed", "Job", 1, 2, ""))
        .await;
    finished(&env, "observed").await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let app = vernier_operator::http::router(op.metrics.clone(), env.store.clone());
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    assert!(http_get(addr, "/healthz").await.starts_with("HTTP/1.1 200"));
    assert!(http_get(addr, "/readyz").await.starts_with("HTTP/1.1 200"));
    let metrics = http_get(addr, "/metrics").await;
    assert!(
        metrics.contains("vernier_operator_trials_created_total 2"),
        "{metrics}"
    );
    assert!(
        metrics
            .contains(r#"vernier_operator_reconcile_duration_seconds_count{controller="trial"}"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"vernier_operator_reconciles_total{controller="experiment"}"#),
        "{metrics}"
    );
    env.store.close().await;
    let not_ready = http_get(addr, "/readyz").await;
    assert!(not_ready.starts_with("HTTP/1.1 503"), "{not_ready}");
    server.abort();
    op.stop().await;
    env.shutdown().await;
}

/// `vernier report --kube`: the report read back from the Experiment and Trial objects the
/// operator wrote agrees with them, and every format renders it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_reads_the_cluster_objects() {
    use vernier_report::html::{self, HtmlOptions};
    use vernier_report::table::{self, TableOptions};
    let env = Env::start(SimulationOptions::default()).await;
    let op = env.operator("replica-a");
    env.create(&experiment_yaml("reported", "Job", 2, 4, ""))
        .await;
    let exp = finished(&env, "reported").await;
    op.stop().await;
    let optimal = exp["status"]["currentOptimalTrial"]["bestTrialName"]
        .as_str()
        .expect("optimal trial")
        .to_string();

    let r = vernier_operator::report_source::load_report(&env.client, "default", "reported")
        .await
        .expect("report loads");
    assert_eq!(r.row.status.phase, "Succeeded");
    assert_eq!(r.trials.len(), 4);
    let mut seqs: Vec<i64> = r.trials.iter().map(|t| t.row.seq).collect();
    seqs.dedup();
    assert_eq!(seqs.len(), 4, "each trial keeps its own sequence number");
    let best = &r.trials[r.best.expect("a best trial")];
    assert_eq!(best.row.name, optimal);
    let lr: f64 = best
        .row
        .assignment
        .iter()
        .find(|(n, _)| n == "lr")
        .and_then(|(_, v)| v.parse().ok())
        .expect("lr assignment");
    // The objective is the max of the accuracies printed, the last one for this trainer.
    let acc = best.objective.expect("objective value");
    assert!((acc - final_accuracy(lr)).abs() < 1e-6, "{acc} for lr {lr}");
    assert!(best.values.contains_key("loss"), "{:?}", best.values);

    let json = r.to_katib_json();
    assert_eq!(json["status"]["trials"], 4);
    assert_eq!(json["status"]["trialsSucceeded"], 4);
    assert_eq!(
        json["status"]["currentOptimalTrial"]["bestTrialName"],
        optimal.as_str()
    );
    assert_eq!(json["trials"].as_array().map(Vec::len), Some(4));

    let text = table::render(
        &r,
        TableOptions {
            top: None,
            highlight: false,
            width: None,
        },
    );
    let at = |name: &str| {
        text.find(name)
            .unwrap_or_else(|| panic!("{name} in\n{text}"))
    };
    let mut by_value: Vec<_> = r.trials.iter().collect();
    by_value.sort_by(|a, b| b.objective.partial_cmp(&a.objective).expect("numbers"));
    assert_eq!(by_value[0].row.name, optimal);
    let rows: Vec<usize> = by_value.iter().map(|t| at(&t.row.name)).collect();
    assert!(rows.is_sorted(), "trials best first:\n{text}");
    assert!(text.contains("Succeeded"), "{text}");
    let csv = vernier_report::csv::render(&r);
    assert_eq!(
        csv.lines().count(),
        5,
        "a header and one row per trial:\n{csv}"
    );
    let page = html::render(&r, HtmlOptions { top: None });
    assert!(
        page.contains("keep only each metric's min, max and latest value"),
        "the page says why there are no curves"
    );
    // The dashboard's experiment list.
    let names = vernier_operator::report_source::experiment_names(&env.client, "default")
        .await
        .expect("list experiments");
    assert!(names.contains(&"reported".to_string()), "{names:?}");
    let missing = vernier_operator::report_source::load_report(&env.client, "default", "nope")
        .await
        .expect_err("no such experiment")
        .to_string();
    assert!(
        missing.contains("default/nope") && missing.contains("hint:"),
        "{missing}"
    );
    env.shutdown().await;
}

#[tokio::test]
async fn report_from_an_unreachable_cluster_says_where_to_look() {
    // A port that was free a moment ago: nothing answers there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let client = vernier_operator::client::connect(Some(&format!("http://127.0.0.1:{port}")))
        .await
        .expect("client");
    let err = vernier_operator::report_source::load_report(&client, "default", "x")
        .await
        .expect_err("nothing listens")
        .to_string();
    assert!(
        err.starts_with("cannot reach the kubernetes api") && err.contains("--kube-url"),
        "{err}"
    );
}

/// The experiment `name` with its Job template moved into ConfigMap `trial-templates` under
/// `key` (Katib's `trial-configmap-source` example); returns the experiment.
fn with_config_map_template(name: &str, key: &str) -> (DynamicObject, String) {
    let mut exp: Value =
        yaml_serde::from_str(&experiment_yaml(name, "Job", 2, 3, "")).expect("experiment yaml");
    let tt = exp["spec"]["trialTemplate"]
        .as_object_mut()
        .expect("trialTemplate");
    let template = tt.remove("trialSpec").expect("trialSpec");
    tt.insert(
        "configMap".into(),
        serde_json::json!({
            "configMapName": "trial-templates",
            "configMapNamespace": "default",
            "templatePath": key,
        }),
    );
    let template = yaml_serde::to_string(&template).expect("template yaml");
    (serde_json::from_value(exp).expect("experiment"), template)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_map_trial_templates_are_read_from_the_cluster() {
    use k8s_openapi::api::core::v1::ConfigMap;
    let env = Env::start(SimulationOptions::default()).await;
    let op = env.operator("replica-a");
    let (exp, template) = with_config_map_template("cm-template", "job-template.yaml");
    let config_maps: Api<ConfigMap> = Api::namespaced(env.client.clone(), "default");
    let cm: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "trial-templates", "namespace": "default"},
        "data": {"job-template.yaml": template},
    }))
    .expect("configmap");
    config_maps
        .create(&PostParams::default(), &cm)
        .await
        .expect("configmap created");
    env.experiments()
        .create(&PostParams::default(), &exp)
        .await
        .expect("experiment created");
    let done = finished(&env, "cm-template").await;
    assert!(condition(&done, "Succeeded").is_some(), "{done:#}");
    let trials = env.trials_of("cm-template").await;
    assert_eq!(trials.len(), 3);
    for t in &trials {
        assert_eq!(t.data["spec"]["runSpec"]["kind"], "Job", "{:#}", t.data);
        assert!(
            t.data["status"]["observation"]["metrics"]
                .as_array()
                .is_some_and(|m| !m.is_empty()),
            "{:#}",
            t.data
        );
    }
    // The experiment object keeps its configMap source; nothing was written back.
    let stored = experiment_json(&env, "cm-template").await;
    assert!(
        stored["spec"]["trialTemplate"].get("trialSpec").is_none(),
        "{stored:#}"
    );
    // `vernier report --kube` reads the template as the operator did.
    let report =
        vernier_operator::report_source::load_report(&env.client, "default", "cm-template")
            .await
            .expect("a report of a configMap-template experiment");
    assert_eq!(report.trials.len(), 3);

    // A missing key and a missing ConfigMap fail the experiment naming field and value.
    let (exp, _) = with_config_map_template("cm-missing-key", "no-such.yaml");
    env.experiments()
        .create(&PostParams::default(), &exp)
        .await
        .expect("experiment created");
    let (mut gone, _) = with_config_map_template("cm-missing-map", "job-template.yaml");
    gone.data["spec"]["trialTemplate"]["configMap"]["configMapName"] = "nowhere".into();
    env.experiments()
        .create(&PostParams::default(), &gone)
        .await
        .expect("experiment created");
    for (name, needle) in [
        (
            "cm-missing-key",
            "spec.trialTemplate.configMap.templatePath: value \"no-such.yaml\"",
        ),
        (
            "cm-missing-map",
            "spec.trialTemplate.configMap.configMapName: value \"nowhere\"",
        ),
    ] {
        let exp = finished(&env, name).await;
        let failed = condition(&exp, "Failed").unwrap_or_else(|| panic!("{exp:#}"));
        let message = failed["message"].as_str().unwrap_or_default();
        assert!(message.contains(needle), "{message}");
        assert!(env.trials_of(name).await.is_empty());
    }
    // Once the missing ConfigMap appears, the experiment runs (nothing about it changed).
    let mut appeared = cm.clone();
    appeared.metadata = kube::api::ObjectMeta {
        name: Some("nowhere".into()),
        namespace: Some("default".into()),
        ..Default::default()
    };
    config_maps
        .create(&PostParams::default(), &appeared)
        .await
        .expect("configmap created");
    wait_until(
        "cm-missing-map to run once its ConfigMap appears",
        || experiment_json(&env, "cm-missing-map"),
        |e| condition(e, "Succeeded").is_some(),
    )
    .await;
    op.stop().await;
    env.shutdown().await;
}

/// A TFJob a cluster runs but local mode cannot: the image's entrypoint (no command or args),
/// env taken from a Secret and the pod's own name, envFrom, a volume and an init container.
const ENTRYPOINT_TFJOB: &str = r#"apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata:
  name: entrypoint
  namespace: default
spec:
  parallelTrialCount: 1
  maxTrialCount: 1
  objective:
    type: maximize
    objectiveMetricName: accuracy
  algorithm:
    algorithmName: random
  parameters:
    - name: lr
      parameterType: double
      feasibleSpace:
        min: "0.01"
        max: "0.05"
  trialTemplate:
    primaryContainerName: tensorflow
    trialParameters:
      - name: learningRate
        reference: lr
    trialSpec:
      apiVersion: kubeflow.org/v1
      kind: TFJob
      spec:
        tfReplicaSpecs:
          Chief:
            replicas: 1
            restartPolicy: OnFailure
            template:
              spec:
                initContainers:
                  - name: fetch-data
                    image: busybox
                    args: [wget, -O, /data/train.csv, http://data.example/train.csv]
                    volumeMounts: [{name: data, mountPath: /data}]
                containers:
                  - name: tensorflow
                    image: registry.example/train:1
                    env:
                      - name: LEARNING_RATE
                        value: "${trialParameters.learningRate}"
                      - name: API_TOKEN
                        valueFrom:
                          secretKeyRef: {name: training-secrets, key: token}
                      - name: POD_NAME
                        valueFrom:
                          fieldRef: {fieldPath: metadata.name}
                    envFrom:
                      - configMapRef: {name: training-settings}
                    volumeMounts: [{name: data, mountPath: /data}]
                volumes:
                  - name: data
                    persistentVolumeClaim: {claimName: training-data}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entrypoint_only_tfjob_with_value_from_is_rendered_as_written() {
    // The double cannot run an image's entrypoint; the job is only looked at, so it hangs.
    let env = Env::start(SimulationOptions {
        default_outcome: Outcome::Hang,
        ..SimulationOptions::default()
    })
    .await;
    let op = env.operator("replica-a");
    env.create(ENTRYPOINT_TFJOB).await;
    let tfjobs = env.api("kubeflow.org", "v1", "TFJob");
    let selector = ListParams::default().labels("katib.kubeflow.org/experiment=entrypoint");
    let jobs = wait_until(
        "the trial's TFJob",
        || async { tfjobs.list(&selector).await.expect("tfjobs").items },
        |items| !items.is_empty(),
    )
    .await;
    let job = serde_json::to_value(&jobs[0]).expect("json");
    let trial = env.trials_of("entrypoint").await;
    let trial = serde_json::to_value(&trial[0]).expect("json");
    let lr = trial["spec"]["parameterAssignments"][0]["value"]
        .as_str()
        .expect("lr")
        .to_string();

    let template: Value = yaml_serde::from_str(ENTRYPOINT_TFJOB).expect("yaml");
    let mut expected =
        template["spec"]["trialTemplate"]["trialSpec"]["spec"]["tfReplicaSpecs"]["Chief"]
            ["template"]["spec"]
            .clone();
    expected["containers"][0]["env"][0]["value"] = Value::String(lr);
    // What Katib's pod webhook adds to every trial's primary container.
    let name = trial["metadata"]["name"].clone();
    expected["containers"][0]["env"]
        .as_array_mut()
        .expect("env")
        .push(serde_json::json!({"name": "KATIB_TRIAL_NAME", "value": name}));
    let pod = &job["spec"]["tfReplicaSpecs"]["Chief"]["template"]["spec"];
    for field in ["containers", "initContainers", "volumes"] {
        assert_eq!(pod[field], expected[field], "{field} in {job:#}");
    }
    let exp = experiment_json(&env, "entrypoint").await;
    assert!(condition(&exp, "Failed").is_none(), "{exp:#}");
    op.stop().await;
    env.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_algorithm_and_early_stopping_settings_fail_the_experiment() {
    let env = Env::start(SimulationOptions::default()).await;
    let op = env.operator_with("replica-a", Some(registry_stoppers()));
    let base = experiment_yaml("typo", "Job", 1, 2, "");
    let typo = base.replace(
        "    algorithmName: random\n",
        "    algorithmName: tpe\n    algorithmSettings:\n      - name: n_startup_trial\n        value: \"5\"\n",
    );
    env.create(&typo).await;
    let out_of_range = experiment_yaml("out-of-range", "Job", 1, 2, "").replace(
        "    algorithmName: random\n",
        "    algorithmName: random\n    algorithmSettings:\n      - name: random_state\n        value: \"-1\"\n",
    );
    env.create(&out_of_range).await;
    let stopping = experiment_yaml(
        "bad-stopping",
        "Job",
        1,
        2,
        "  earlyStopping:\n    algorithmName: medianstop\n    algorithmSettings:\n      - name: min_trials_required\n        value: \"many\"\n",
    );
    env.create(&stopping).await;
    for (name, needles) in [
        ("typo", ["spec.algorithm", "n_startup_trial"]),
        ("out-of-range", ["random_state", "\"-1\""]),
        ("bad-stopping", ["spec.earlyStopping", "\"many\""]),
    ] {
        let exp = finished(&env, name).await;
        let failed = condition(&exp, "Failed").unwrap_or_else(|| panic!("{exp:#}"));
        let message = failed["message"].as_str().unwrap_or_default();
        for needle in needles {
            assert!(message.contains(needle), "{name}: {message}");
        }
        assert!(env.trials_of(name).await.is_empty(), "{name}");
    }
    op.stop().await;
    env.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn from_volume_experiment_continues_when_its_budget_and_parallelism_are_raised() {
    let env = Env::start(SimulationOptions::default()).await;
    let op = env.operator("replica-a");
    env.create(&experiment_yaml(
        "from-volume",
        "Job",
        1,
        2,
        "  resumePolicy: FromVolume\n",
    ))
    .await;
    let exp = finished(&env, "from-volume").await;
    assert_eq!(exp["status"]["trials"], 2, "{exp:#}");

    // Raising only the parallelism does not continue it (Katib's webhook refuses that edit).
    let before = experiment_reconciles(&op.metrics);
    env.edit(
        "from-volume",
        serde_json::json!({"spec": {"parallelTrialCount": 2}}),
    )
    .await;
    wait_until(
        "a reconcile after the edit",
        || async { experiment_reconciles(&op.metrics) },
        |n| *n > before,
    )
    .await;
    assert_eq!(env.trials_of("from-volume").await.len(), 2);

    env.edit(
        "from-volume",
        serde_json::json!({"spec": {"maxTrialCount": 4, "parallelTrialCount": 2}}),
    )
    .await;
    let exp = wait_until(
        "the experiment to run two more trials and finish",
        || experiment_json(&env, "from-volume"),
        |e| e["status"]["trials"] == 4 && condition(e, "Succeeded").is_some(),
    )
    .await;
    assert_eq!(exp["status"]["trialsSucceeded"], 4, "{exp:#}");
    op.stop().await;
    env.shutdown().await;
}

/// PBT on the cluster: the experiment's checkpoint claim exists, and each trial's job mounts
/// its own `<experiment>/<trial>` directory of it at `suggestion_trial_dir`; a second
/// generation's job first copies its parent's directory into its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pbt_trials_get_checkpoint_directories_on_the_experiment_claim() {
    let env = Env::start(SimulationOptions::default()).await;
    let op = env.operator("replica-a");
    let yaml = experiment_yaml("pbt-ckpt", "Job", 5, 10, "")
        .replace(
            "    algorithmName: random\n",
            "    algorithmName: pbt
    algorithmSettings:
      - {name: suggestion_trial_dir, value: /var/log/katib/checkpoints/}
      - {name: n_population, value: \"5\"}
      - {name: truncation_threshold, value: \"0.2\"}
",
        )
        .replace("  trialTemplate:\n", "  trialTemplate:\n    retain: true\n");
    env.create(&yaml).await;
    let exp = finished(&env, "pbt-ckpt").await;
    assert!(condition(&exp, "Succeeded").is_some(), "{exp:#}");

    let claims: Api<k8s_openapi::api::core::v1::PersistentVolumeClaim> =
        Api::namespaced(env.client.clone(), "default");
    let claim = claims.get("pbt-ckpt-pbt").await.expect("the claim exists");
    assert_eq!(claim.metadata.owner_references.unwrap()[0].name, "pbt-ckpt");

    let jobs = env.api("batch", "v1", "Job");
    let trials = env.trials_of("pbt-ckpt").await;
    assert_eq!(trials.len(), 10);
    let mut copied = 0;
    for t in &trials {
        let name = t.name_any();
        let job = serde_json::to_value(jobs.get(&name).await.expect("job retained")).unwrap();
        let pod = &job["spec"]["template"]["spec"];
        assert_eq!(
            pod["volumes"][0]["persistentVolumeClaim"]["claimName"],
            "pbt-ckpt-pbt"
        );
        let mount = &pod["containers"][0]["volumeMounts"][0];
        assert_eq!(mount["mountPath"], "/var/log/katib/checkpoints/");
        assert_eq!(mount["subPath"], format!("pbt-ckpt/{name}"));
        let labels = t.labels();
        match labels.get("pbt.suggestion.katib.kubeflow.org/parent") {
            None => assert_eq!(labels["pbt.suggestion.katib.kubeflow.org/generation"], "0"),
            Some(parent) => {
                let copy = &pod["initContainers"][0];
                assert_eq!(copy["name"], "checkpoint-copy");
                assert_eq!(
                    copy["command"][4],
                    format!("/vernier-checkpoints/pbt-ckpt/{parent}")
                );
                assert_eq!(
                    copy["command"][5],
                    format!("/vernier-checkpoints/pbt-ckpt/{name}")
                );
                copied += 1;
            }
        }
    }
    assert_eq!(copied, 5, "the second generation continues the first");
    op.stop().await;
    env.shutdown().await;
}

/// Katib's Custom collector shape, with a command the simulated pod never runs.
const CUSTOM_COLLECTOR: &str = r#"apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata:
  name: custom
  namespace: default
spec:
  maxTrialCount: 1
  parallelTrialCount: 1
  objective:
    type: maximize
    objectiveMetricName: accuracy
  metricsCollectorSpec:
    source:
      fileSystemPath:
        path: /katib/mnist.log
        kind: File
    collector:
      kind: Custom
      customCollector:
        name: custom-metrics-logger-and-collector
        image: registry.example/collector:1
        args: [-m, accuracy, -path, /katib/mnist.log]
        env:
          - name: TrialNamePrefix
            valueFrom:
              fieldRef: {fieldPath: metadata.name}
  algorithm:
    algorithmName: random
  parameters:
    - name: lr
      parameterType: double
      feasibleSpace:
        min: "0.01"
        max: "0.05"
  trialTemplate:
    primaryContainerName: training-container
    trialParameters:
      - name: learningRate
        reference: lr
    trialSpec:
      apiVersion: batch/v1
      kind: Job
      spec:
        template:
          spec:
            restartPolicy: Never
            containers:
              - name: training-container
                image: registry.example/train:1
                command: [python3, train.py, "--lr=${trialParameters.learningRate}"]
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_collector_is_injected_beside_the_training_container() {
    // The job is only looked at, so it hangs.
    let env = Env::start(SimulationOptions {
        default_outcome: Outcome::Hang,
        ..SimulationOptions::default()
    })
    .await;
    let op = env.operator("replica-a");
    env.create(CUSTOM_COLLECTOR).await;
    let jobs = env.api("batch", "v1", "Job");
    let selector = ListParams::default().labels("katib.kubeflow.org/experiment=custom");
    let found = wait_until(
        "the trial's Job",
        || async { jobs.list(&selector).await.expect("jobs").items },
        |items| !items.is_empty(),
    )
    .await;
    let job = serde_json::to_value(&found[0]).expect("json");
    let pod = &job["spec"]["template"]["spec"];
    let mount = serde_json::json!([{"name": "metrics-volume", "mountPath": "/katib"}]);
    assert_eq!(
        pod["volumes"],
        serde_json::json!([{"name": "metrics-volume", "emptyDir": {}}])
    );
    assert_eq!(pod["containers"][0]["volumeMounts"], mount, "{job:#}");
    let collector = &pod["containers"][1];
    assert_eq!(collector["name"], "custom-metrics-logger-and-collector");
    assert_eq!(collector["image"], "registry.example/collector:1");
    assert_eq!(
        collector["args"],
        serde_json::json!(["-m", "accuracy", "-path", "/katib/mnist.log"])
    );
    assert_eq!(collector["volumeMounts"], mount);
    let env_vars = collector["env"].as_array().expect("env");
    let value = |name: &str| {
        env_vars
            .iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {collector:#}"))
            .clone()
    };
    assert!(value("TrialNamePrefix").get("valueFrom").is_some());
    let trial = env.trials_of("custom").await;
    let trial = trial[0].name_any();
    assert_eq!(value("KATIB_TRIAL_NAME")["value"], trial.as_str());
    let address = value("VERNIER_DB_MANAGER_ADDRESS")["value"].clone();
    let (host, port) = address
        .as_str()
        .and_then(|a| a.rsplit_once(':'))
        .expect("HOST:PORT");
    assert_eq!(value("KATIB_DB_MANAGER_SERVICE_IP")["value"], host);
    assert_eq!(value("KATIB_DB_MANAGER_SERVICE_PORT")["value"], port);
    assert!(pod.get("initContainers").is_none(), "{job:#}");
    let exp = experiment_json(&env, "custom").await;
    assert!(condition(&exp, "Failed").is_none(), "{exp:#}");
    op.stop().await;
    env.shutdown().await;
}

/// Katib's webhook refuses an invalid Experiment and accepts its corrected version; here the
/// invalid one is marked Failed and its correction runs. A finished experiment keeps its one
/// ending whatever its spec says later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrected_experiment_runs_and_a_finished_one_keeps_its_ending() {
    let env = Env::start(SimulationOptions::default()).await;
    let op = env.operator("replica-a");
    let bad = experiment_yaml("fixed", "Job", 1, 2, "").replace("min: \"0.01\"", "min: \"0.9\"");
    env.create(&bad).await;
    let exp = finished(&env, "fixed").await;
    assert!(condition(&exp, "Failed").is_some(), "{exp:#}");
    let bounds = json!({"spec": {"parameters": [
        {"name": "lr", "parameterType": "double", "feasibleSpace": {"min": "0.01", "max": "0.05"}},
        {"name": "batch_size", "parameterType": "int", "feasibleSpace": {"min": "100", "max": "200"}},
    ]}});
    env.edit("fixed", bounds).await;
    let exp = wait_until(
        "the corrected experiment to succeed",
        || experiment_json(&env, "fixed"),
        |e| condition(e, "Succeeded").is_some(),
    )
    .await;
    assert!(condition(&exp, "Failed").is_none(), "{exp:#}");
    assert_eq!(exp["status"]["trials"], 2, "{exp:#}");

    // Made invalid once finished: still Succeeded alone, after a reconcile has seen it.
    let seen = experiment_reconciles(&op.metrics);
    env.edit(
        "fixed",
        json!({"spec": {"algorithm": {"algorithmName": "no-such-algorithm"}}}),
    )
    .await;
    wait_until(
        "a reconcile after the edit",
        || async { experiment_reconciles(&op.metrics) },
        |n| *n > seen,
    )
    .await;
    let exp = experiment_json(&env, "fixed").await;
    assert!(condition(&exp, "Succeeded").is_some(), "{exp:#}");
    assert!(condition(&exp, "Failed").is_none(), "{exp:#}");
    op.stop().await;
    env.shutdown().await;
}

/// Trials still running when the goal is reached finish, and the ended experiment's counters,
/// lists and best trial follow them (Katib reconciles it until no trial runs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ended_experiments_status_follows_its_last_trials() {
    const SLOW_TRAINER: &str = "import sys, time\n\
a = dict(x.lstrip('-').split('=', 1) for x in sys.argv[1:])\n\
time.sleep(int(a['batch-size']) / 100)\n\
print(f\"accuracy={a['lr']} loss=0.5\", flush=True)\n";
    let env = Env::start(SimulationOptions::default()).await;
    let op = env.operator("replica-a");
    let goal = "    goal: 0.001\n    objectiveMetricName: accuracy";
    let yaml = experiment_yaml_with("goal", "Job", 3, 3, "", SLOW_TRAINER)
        .replace("    objectiveMetricName: accuracy", goal);
    env.create(&yaml).await;
    let exp = wait_until(
        "every trial to succeed and the status to say so",
        || experiment_json(&env, "goal"),
        |e| e["status"]["trialsSucceeded"] == 3,
    )
    .await;
    let ended = condition(&exp, "Succeeded").unwrap_or_else(|| panic!("{exp:#}"));
    assert_eq!(ended["reason"], "ExperimentGoalReached", "{exp:#}");
    assert!(exp["status"].get("runningTrialList").is_none(), "{exp:#}");
    let best = exp["status"]["currentOptimalTrial"]["observation"]["metrics"][0]["max"].clone();
    let trials = env.trials_of("goal").await;
    let top = trials
        .iter()
        .filter_map(|t| {
            t.data
                .pointer("/status/observation/metrics")?
                .as_array()?
                .iter()
                .find(|m| m["name"] == "accuracy")?["max"]
                .as_str()?
                .parse::<f64>()
                .ok()
        })
        .fold(f64::NEG_INFINITY, f64::max);
    assert_eq!(best.as_str().and_then(|v| v.parse::<f64>().ok()), Some(top));
    op.stop().await;
    env.shutdown().await;
}

/// Two experiments of one name in two namespaces with one `random_state` (as Katib's TPE and
/// BO examples set it) name their trials apart: observation logs are keyed by trial name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_named_experiments_in_two_namespaces_never_share_trial_names() {
    let env = Env::start(SimulationOptions::default()).await;
    let op = env.operator("replica-a");
    let seeded = "    algorithmSettings:\n      - {name: random_state, value: \"10\"}\n";
    let yaml = experiment_yaml("same", "Job", 1, 2, seeded);
    let other: Api<DynamicObject> =
        Api::namespaced_with(env.client.clone(), "team-b", &experiment_resource());
    let mut in_b: DynamicObject =
        yaml_serde::from_str(&yaml.replace("namespace: default", "namespace: team-b")).unwrap();
    in_b.metadata.resource_version = None;
    env.create(&yaml).await;
    other.create(&PostParams::default(), &in_b).await.unwrap();
    finished(&env, "same").await;
    let b_trials: Api<DynamicObject> =
        Api::namespaced_with(env.client.clone(), "team-b", &trial_resource());
    let names_b: Vec<String> = wait_until(
        "team-b's trials",
        || async {
            b_trials
                .list(&ListParams::default())
                .await
                .unwrap()
                .items
                .iter()
                .map(|t| t.name_any())
                .collect::<Vec<_>>()
        },
        |n| n.len() == 2,
    )
    .await;
    let names_a: Vec<String> = env
        .trials_of("same")
        .await
        .iter()
        .map(|t| t.name_any())
        .collect();
    assert_eq!(names_a.len(), 2);
    assert!(
        names_a.iter().all(|n| !names_b.contains(n)),
        "{names_a:?} {names_b:?}"
    );
    op.stop().await;
    env.shutdown().await;
}

/// A reconcile of a stale copy of a trial (the informer's cache lags the operator's own
/// status write) must not announce again what the write it loses already announced: before,
/// `JobRunning` was published by each stale reconcile, two or three times per trial.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_copy_of_a_trial_announces_nothing_twice() {
    let env = Env::start(SimulationOptions::default()).await;
    let op = env.operator("replica-a");
    let trainer = format!("import time\n{TRAINER}time.sleep(600)\n");
    let yaml = experiment_yaml_with("stale", "Job", 1, 2, "", &trainer);
    env.create(&yaml).await;
    let running = wait_until(
        "a running trial",
        || env.trials_of("stale"),
        |ts| ts.iter().any(|t| has_condition(t, "Running")),
    )
    .await;
    let mut stale = running.into_iter().next().expect("trial");
    let name = stale.name_any();
    env.event(&name, "JobRunning").await;
    // The copy as it was read before the operator marked it Running, then made stale by
    // another write to the trial.
    let conditions = stale.data["status"]["conditions"]
        .as_array_mut()
        .expect("conditions");
    conditions.retain(|c| c["type"] != "Running");
    touch(&env.trials(), &name).await;
    vernier_operator::trial::reconcile(Arc::new(stale), env.bare_context())
        .await
        .expect("a conflict is retried, not an error");
    assert_eq!(env.times_published(&name, "JobRunning").await, 1);
    op.stop().await;
    env.shutdown().await;
}

/// Writes to the object `name` (an annotation), so that every copy read before is stale.
async fn touch(api: &Api<DynamicObject>, name: &str) {
    let patch = json!({"metadata": {"annotations": {"test/touched": "yes"}}});
    let params = kube::api::PatchParams::default();
    api.patch(name, &params, &kube::api::Patch::Merge(&patch))
        .await
        .expect("touched");
}

fn has_condition(obj: &DynamicObject, type_: &str) -> bool {
    let json = serde_json::to_value(obj).expect("json");
    condition(&json, type_).is_some()
}

/// A reconcile of a stale copy of an experiment, read before it ended, must not end it (and
/// announce its end) again: its ending write is made over the experiment as read, and fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_copy_of_an_experiment_does_not_announce_its_end_again() {
    let env = Env::start(SimulationOptions::default()).await;
    let op = env.operator("replica-a");
    env.create(&experiment_yaml("ended", "Job", 1, 2, "")).await;
    let exp = finished(&env, "ended").await;
    assert!(condition(&exp, "Succeeded").is_some(), "{exp:#}");
    env.event("ended", "ExperimentSucceeded").await;
    op.stop().await;
    let mut stale = env.experiments().get("ended").await.expect("experiment");
    let status = &mut stale.data["status"];
    let conditions = status["conditions"].as_array_mut().expect("conditions");
    conditions.retain(|c| c["type"] != "Succeeded");
    status["completionTime"] = Value::Null;
    touch(&env.experiments(), "ended").await;
    vernier_operator::experiment::reconcile(Arc::new(stale), env.bare_context())
        .await
        .expect("a conflict is retried, not an error");
    assert_eq!(env.times_published("ended", "ExperimentSucceeded").await, 1);
    env.shutdown().await;
}

/// Katib's Argo example: the Workflow's step pods carry the step template's labels but not the
/// trial's (Argo copies no Workflow label to its pods), so its primary pod is found through its
/// owners, as Katib's pod webhook finds it; a pod that comes after the first minutes is waited
/// for. The test plays Argo: the step runs as a Job the Workflow owns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_trials_step_pod_is_found_through_its_owners() {
    let env = Env::start(SimulationOptions::default()).await;
    let crds: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "workflows.argoproj.io"},
        "spec": {"group": "argoproj.io", "scope": "Namespaced",
            "names": {"kind": "Workflow", "plural": "workflows", "singular": "workflow", "listKind": "WorkflowList"},
            "versions": [{"name": "v1alpha1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    }))
    .expect("crd");
    crds.create(&PostParams::default(), &crd)
        .await
        .expect("crd");
    let op = env.operator_for_kinds("replica-a", &["Workflow.v1alpha1.argoproj.io"]);
    let yaml = r#"apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata: {name: argo, namespace: default}
spec:
  maxTrialCount: 1
  parallelTrialCount: 1
  objective: {type: maximize, objectiveMetricName: accuracy}
  algorithm: {algorithmName: random}
  parameters:
    - {name: lr, parameterType: double, feasibleSpace: {min: "0.01", max: "0.05"}}
  trialTemplate:
    primaryContainerName: main
    primaryPodLabels: {katib.kubeflow.org/model-training: "true"}
    successCondition: status.[@this].#(phase=="Succeeded")#
    failureCondition: status.[@this].#(phase=="Failed")#
    trialParameters: [{name: learningRate, reference: lr}]
    trialSpec:
      apiVersion: argoproj.io/v1alpha1
      kind: Workflow
      spec:
        entrypoint: model-training
        templates:
          - name: model-training
            metadata:
              labels: {katib.kubeflow.org/model-training: "true"}
            container:
              name: main
              image: docker.io/kubeflowkatib/mxnet-mnist:latest
              command: [python3, -c, "print('accuracy=${trialParameters.learningRate}')"]
"#;
    env.create(yaml).await;
    let workflows = env.api("argoproj.io", "v1alpha1", "Workflow");
    let wf = wait_until(
        "the trial's Workflow",
        || async {
            workflows
                .list(&ListParams::default())
                .await
                .expect("list")
                .items
        },
        |items| !items.is_empty(),
    )
    .await
    .remove(0);
    let template = &wf.data["spec"]["templates"][0];
    // Argo's step pod: the template's labels, owned by the Workflow (here through a Job).
    let step = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": format!("{}-step", wf.name_any()), "namespace": "default",
            "ownerReferences": [{"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
                "name": wf.name_any(), "uid": wf.uid().expect("uid"), "controller": true}]},
        "spec": {"backoffLimit": 0, "template": {
            "metadata": {"labels": template["metadata"]["labels"]},
            "spec": {"restartPolicy": "Never", "containers": [template["container"]]}}}
    });
    let step: DynamicObject = serde_json::from_value(step).expect("job");
    let jobs = env.api("batch", "v1", "Job");
    jobs.create(&PostParams::default(), &step)
        .await
        .expect("step");
    let done = |j: &DynamicObject| j.data["status"]["succeeded"].as_i64() == Some(1);
    wait_until(
        "the step to succeed",
        || async { jobs.get(&step.name_any()).await.expect("job") },
        done,
    )
    .await;
    let phase = json!({"status": {"phase": "Succeeded"}});
    workflows
        .patch_status(
            &wf.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&phase),
        )
        .await
        .expect("workflow status");
    let exp = finished(&env, "argo").await;
    assert_eq!(exp["status"]["trialsSucceeded"], 1, "{exp:#}");
    let trial = serde_json::to_value(&env.trials_of("argo").await[0]).expect("json");
    let lr = trial["spec"]["parameterAssignments"][0]["value"].clone();
    let metrics = &trial["status"]["observation"]["metrics"][0];
    assert_eq!(metrics["name"], "accuracy", "{trial:#}");
    assert_eq!(metrics["latest"], lr, "{trial:#}");
    op.stop().await;
    env.shutdown().await;
}

/// A trial kind's plural comes from the API server's discovery, not from a guess at the kind's
/// English plural (`Analysis` is served as `analyses`), so its jobs are created and watched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trial_kinds_take_their_plural_from_discovery() {
    let env = Env::start(SimulationOptions::default()).await;
    let crds: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "analyses.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Analysis", "plural": "analyses", "singular": "analysis", "listKind": "AnalysisList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    }))
    .expect("crd");
    crds.create(&PostParams::default(), &crd)
        .await
        .expect("crd");
    let kinds = vernier_operator::jobs::parse_trial_kinds(&[
        "Analysis.v1.example.com",
        "Job.v1.batch",
        "Missing.v1.example.com",
    ])
    .expect("kinds");
    let guessed = kinds[0].api_resource().plural;
    let served = vernier_operator::jobs::with_served_plurals(&env.client, kinds).await;
    let plurals: Vec<Option<&str>> = served.iter().map(|k| k.plural.as_deref()).collect();
    assert_eq!(
        plurals,
        [Some("analyses"), Some("jobs"), None],
        "guessed {guessed}"
    );
    let api: Api<DynamicObject> =
        Api::namespaced_with(env.client.clone(), "default", &served[0].api_resource());
    api.list(&ListParams::default())
        .await
        .expect("analyses listed");
    env.shutdown().await;
}

/// A suggestion service serving `ladder`, an algorithm Vernier does not have: it proposes
/// values on a ladder counted from the trials it is sent, refuses a setting named `bogus`, and
/// is unavailable while `down`. It answers at `test:6789`, or with `image` is an image the
/// operator deploys. It keeps what each request held and the address it was sent to.
#[derive(Debug, Default)]
struct Ladder {
    image: bool,
    down: std::sync::atomic::AtomicBool,
    /// (trials sent, of them with a completion time, current, total) per request.
    requests: std::sync::Mutex<Vec<(usize, usize, usize, usize)>>,
    addresses: std::sync::Mutex<BTreeSet<String>>,
    /// How many times it refused settings.
    refusals: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl SuggestionServices for Ladder {
    fn endpoints(&self) -> std::collections::BTreeMap<String, Endpoint> {
        let endpoint = match self.image {
            true => Endpoint::Image {
                container: json!({"image": "example.com/ladder:1"})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
                service_account: Some("suggester".into()),
                volume: ImageVolume::default(),
            },
            false => Endpoint::Address("test:6789".into()),
        };
        [("ladder".to_string(), endpoint)].into()
    }

    async fn validate(
        &self,
        _address: &str,
        exp: &vernier_engine::ResolvedExperiment,
    ) -> Result<(), vernier_engine::SourceError> {
        if !exp.settings.iter().any(|(name, _)| name == "bogus") {
            return Ok(());
        }
        self.refusals
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Err(vernier_engine::SourceError::Rejected(
            "InvalidArgument: unknown setting bogus".into(),
        ))
    }

    async fn suggest(
        &self,
        address: &str,
        request: vernier_engine::ExternalRequest<'_>,
    ) -> Result<vernier_core::Suggestions, vernier_engine::SourceError> {
        let mut addresses = self.addresses.lock().expect("not poisoned");
        addresses.insert(address.to_string());
        drop(addresses);
        if self.down.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(vernier_engine::SourceError::Unavailable(
                "test: connection refused".into(),
            ));
        }
        let ended = request.trials.iter().filter(|t| t.completed_us.is_some());
        let seen = (request.trials.len(), ended.count());
        let done = request.trials.len();
        self.requests.lock().expect("not poisoned").push((
            seen.0,
            seen.1,
            request.count,
            request.total,
        ));
        let space = &request.experiment.space;
        let proposals = (done..done + request.count)
            .map(|n| {
                let lr = format!("{:.3}", 0.011 + 0.001 * n as f64);
                let pairs = [("lr".to_string(), lr), ("batch_size".into(), "100".into())];
                let assignment = space.parse_assignment(&pairs).expect("in the space");
                vernier_core::Proposal::new(assignment)
            })
            .collect();
        Ok(vernier_core::Suggestions {
            proposals,
            state: None,
            exhausted: false,
        })
    }
}

fn lr_of(trial: &DynamicObject) -> String {
    let assignments = trial.data["spec"]["parameterAssignments"].as_array();
    let lr = assignments
        .into_iter()
        .flatten()
        .find(|a| a["name"] == "lr")
        .expect("lr assigned");
    lr["value"].as_str().expect("text").to_string()
}

/// Katib's suggestion images plug into the operator: an experiment naming an algorithm only a
/// service serves is accepted, its settings are checked by the service (a refusal fails the
/// experiment naming it), and its trials are the service's proposals, asked for with Katib's
/// controller semantics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suggestion_service_serves_an_algorithm_vernier_does_not_have() {
    let env = Env::start(SimulationOptions::default()).await;
    let ladder = Arc::new(Ladder::default());
    let op = env.operator_served("replica-a", ladder.clone());
    let served = experiment_yaml("served", "Job", 2, 4, "")
        .replace("algorithmName: random", "algorithmName: ladder");
    env.create(&served).await;
    let refused = refused_by_ladder("refused");
    env.create(&refused).await;
    let exp = finished(&env, "served").await;
    assert!(condition_is(&exp, "Succeeded", "True").is_some(), "{exp:#}");
    let mut lrs: Vec<String> = env.trials_of("served").await.iter().map(lr_of).collect();
    lrs.sort();
    assert_eq!(lrs, ["0.011", "0.012", "0.013", "0.014"]);
    let requests = ladder.requests.lock().expect("not poisoned").clone();
    // Katib's semantics: the first request has no trials and asks for the parallel count;
    // later ones send every trial, the ended ones with their completion times.
    assert_eq!(requests[0], (0, 0, 2, 2), "{requests:?}");
    assert!(
        requests[1..]
            .iter()
            .all(|&(sent, ended, current, total)| sent >= 2
                && ended >= 1
                && total == sent + current),
        "{requests:?}"
    );
    let exp = finished(&env, "refused").await;
    let failed = condition(&exp, "Failed").unwrap_or_else(|| panic!("{exp:#}"));
    assert_eq!(
        failed["message"],
        "spec.algorithm: checking the settings with suggestion plugin ladder at test:6789 \
         failed: InvalidArgument: unknown setting bogus"
    );
    assert!(env.trials_of("refused").await.is_empty());
    // A refused spec is not sent again while it is unchanged.
    let before = experiment_reconciles(&op.metrics);
    let touch = json!({"metadata": {"annotations": {"touched": "1"}}});
    env.experiments()
        .patch("refused", &PatchParams::default(), &Patch::Merge(touch))
        .await
        .expect("touched");
    let reconciles = || async { experiment_reconciles(&op.metrics) };
    wait_until("a reconcile after the touch", reconciles, |n| *n > before).await;
    let refusals = ladder.refusals.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(refusals, 1);
    op.stop().await;
    env.shutdown().await;
}

/// A service that does not answer holds the experiment without ending it: a Warning event says
/// so once, no trial is created, and the experiment runs once the service answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unavailable_suggestion_service_is_told_and_asked_again() {
    let env = Env::start(SimulationOptions::default()).await;
    let ladder = Arc::new(Ladder::default());
    ladder.down.store(true, std::sync::atomic::Ordering::SeqCst);
    let op = env.operator_served("replica-a", ladder.clone());
    let yaml = experiment_yaml("waits", "Job", 1, 2, "")
        .replace("algorithmName: random", "algorithmName: ladder");
    env.create(&yaml).await;
    let event = env.event("waits", "SuggestionFailed").await;
    let note = event.data["note"].as_str().unwrap_or_default();
    assert!(
        note.starts_with(
            "suggestion plugin ladder at test:6789 is unavailable (test: connection refused); no trial is created until it answers"
        ) && note.contains("hint: check the service's log"),
        "{note}"
    );
    assert!(env.trials_of("waits").await.is_empty());
    let exp = experiment_json(&env, "waits").await;
    assert!(condition(&exp, "Failed").is_none(), "{exp:#}");
    ladder
        .down
        .store(false, std::sync::atomic::Ordering::SeqCst);
    let exp = finished(&env, "waits").await;
    assert!(condition_is(&exp, "Succeeded", "True").is_some(), "{exp:#}");
    assert_eq!(env.times_published("waits", "SuggestionFailed").await, 1);
    op.stop().await;
    env.shutdown().await;
}

/// A katib-config entry with only an image: the operator deploys it per experiment as Katib
/// does (a Deployment and a Service `<experiment>-<algorithm>`, owned by the Experiment), asks
/// it at the Service's address once the Deployment is available (making it again if it was
/// deleted meanwhile), and deletes both when the experiment ends, unless its resume policy is
/// LongRunning.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_served_algorithm_gets_a_suggestion_deployment_per_experiment() {
    let env = Env::start(SimulationOptions::default()).await;
    let (ladder, op) = image_served(&env);
    let policies = [
        ("kept", "LongRunning"),
        ("retired", "Never"),
        ("volume", "FromVolume"),
    ];
    for (name, policy) in policies {
        let yaml = experiment_yaml(name, "Job", 1, 2, &format!("  resumePolicy: {policy}\n"))
            .replace("algorithmName: random", "algorithmName: ladder");
        env.create(&yaml).await;
    }
    let refused = refused_by_ladder("refused");
    env.create(&refused).await;
    let deployments = env.api("apps", "v1", "Deployment");
    let made = || async {
        let d = deployments
            .list(&ListParams::default())
            .await
            .expect("list");
        d.items.len()
    };
    wait_until("the suggestion Deployments", made, |n| *n == 4).await;
    let volume = deployments.get("volume-ladder").await.expect("made");
    let pod = &volume.data["spec"]["template"]["spec"];
    assert_eq!(
        pod["volumes"][0]["persistentVolumeClaim"]["claimName"],
        "volume-ladder"
    );
    assert_eq!(
        pod["containers"][0]["volumeMounts"][0]["mountPath"],
        "/opt/katib/data"
    );
    let uid = |d: Option<DynamicObject>| d.and_then(|d| d.metadata.uid);
    let first = uid(deployments.get_opt("retired-ladder").await.expect("read"));
    deployments
        .delete("retired-ladder", &DeleteParams::default())
        .await
        .expect("deleted");
    wait_until(
        "the deleted Deployment made again",
        || async { uid(deployments.get_opt("retired-ladder").await.expect("read")) },
        |again| again.is_some() && *again != first,
    )
    .await;
    // Two polls of a starting Deployment later: not asked, nothing to warn about.
    tokio::time::sleep(Duration::from_millis(4500)).await;
    assert!(ladder.addresses.lock().expect("not poisoned").is_empty());
    assert_eq!(ladder.refusals.load(std::sync::atomic::Ordering::SeqCst), 0);
    let event = env.event("kept", "SuggestionDeploymentNotReady").await;
    assert_eq!(event.data["type"], "Normal");
    let note = event.data["note"].as_str().unwrap_or_default();
    assert!(
        note.starts_with(
            "suggestion service ladder (Deployment default/kept-ladder) at kept-ladder.default:6789 is starting: no trial is asked of it until its Deployment is Available"
        ),
        "{note}"
    );
    for name in ["kept", "retired", "volume", "refused"] {
        assert!(env.trials_of(name).await.is_empty());
        assert_eq!(env.times_published(name, "SuggestionFailed").await, 0);
        make_available(&deployments, &format!("{name}-ladder")).await;
    }
    for name in ["kept", "retired", "volume"] {
        let exp = finished(&env, name).await;
        assert!(condition_is(&exp, "Succeeded", "True").is_some(), "{exp:#}");
    }
    // Refused once its service answered: failed, and its service retired.
    let exp = finished(&env, "refused").await;
    assert!(condition_is(&exp, "Failed", "True").is_some(), "{exp:#}");
    // Told once while the Deployment started, over several looks.
    let told = env
        .times_published("kept", "SuggestionDeploymentNotReady")
        .await;
    assert_eq!(told, 1);
    let gone = || async { deployments.get_opt("refused-ladder").await.expect("read") };
    wait_until(
        "the refused experiment's Deployment to go",
        gone,
        Option::is_none,
    )
    .await;
    let addresses = ladder.addresses.lock().expect("not poisoned").clone();
    let want: BTreeSet<String> = ["kept", "retired", "volume"]
        .map(|name| format!("{name}-ladder.default:6789"))
        .into();
    assert_eq!(addresses, want);
    let kept = deployments.get("kept-ladder").await.expect("kept");
    let experiment = env.experiments().get("kept").await.expect("experiment");
    let owner = &kept.metadata.owner_references.as_ref().expect("owned")[0];
    assert_eq!(
        (owner.kind.as_str(), Some(owner.uid.as_str())),
        ("Experiment", experiment.metadata.uid.as_deref())
    );
    let pod = &kept.data["spec"]["template"]["spec"];
    assert_eq!(pod["containers"][0]["image"], "example.com/ladder:1");
    assert_eq!(pod["containers"][0]["ports"][0]["containerPort"], 6789);
    assert_eq!(pod["serviceAccountName"], "suggester");
    let services = env.api("", "v1", "Service");
    let service = services.get("kept-ladder").await.expect("its service");
    assert_eq!(
        service.data["spec"]["selector"]["katib.kubeflow.org/deployment"],
        "kept-ladder"
    );
    // FromVolume: the claim is mounted, and stays when the Deployment goes.
    let claims = env.api("", "v1", "PersistentVolumeClaim");
    let claim = claims.get("volume-ladder").await.expect("its claim");
    assert_eq!(claim.data["spec"]["accessModes"], json!(["ReadWriteOnce"]));
    assert!(claims.get_opt("kept-ladder").await.expect("read").is_none());
    let gone = || async { deployments.get_opt("volume-ladder").await.expect("read") };
    wait_until("the FromVolume Deployment to go", gone, Option::is_none).await;
    assert!(
        claims
            .get_opt("volume-ladder")
            .await
            .expect("read")
            .is_some()
    );
    wait_until(
        "the ended experiment's suggestion Deployment and Service to go",
        || async {
            let d = deployments.get_opt("retired-ladder").await.expect("read");
            let s = services.get_opt("retired-ladder").await.expect("read");
            (d.is_none(), s.is_none())
        },
        |gone| *gone == (true, true),
    )
    .await;
    op.stop().await;
    env.shutdown().await;
}

/// An experiment of the `ladder` algorithm with a setting [`Ladder`] refuses.
fn refused_by_ladder(name: &str) -> String {
    experiment_yaml(name, "Job", 1, 2, "").replace(
        "    algorithmName: random\n",
        "    algorithmName: ladder\n    algorithmSettings:\n      - name: bogus\n        value: \"1\"\n",
    )
}

/// An operator whose `ladder` algorithm is an image it deploys per experiment.
fn image_served(env: &Env) -> (Arc<Ladder>, Operator) {
    let ladder = Arc::new(Ladder {
        image: true,
        ..Ladder::default()
    });
    let op = env.operator_served("replica-a", ladder.clone());
    (ladder, op)
}

/// What a Deployment controller writes once the pods answer their readiness probe (the API
/// double runs no Deployment pods).
async fn make_available(deployments: &Api<DynamicObject>, name: &str) {
    let available = json!({"status": {"conditions": [{"type": "Available", "status": "True"}]}});
    deployments
        .patch_status(name, &PatchParams::default(), &Patch::Merge(available))
        .await
        .expect("available");
}

/// A LongRunning experiment keeps its service when it ends; if that Deployment is deleted
/// and the experiment resumes, the service that no longer answers is deployed again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_suggestion_deployment_is_made_again_when_its_service_stops_answering() {
    let env = Env::start(SimulationOptions::default()).await;
    let (ladder, op) = image_served(&env);
    let yaml = experiment_yaml("again", "Job", 1, 2, "  resumePolicy: LongRunning\n")
        .replace("algorithmName: random", "algorithmName: ladder");
    env.create(&yaml).await;
    let deployments = env.api("apps", "v1", "Deployment");
    let uid = || async {
        let d = deployments.get_opt("again-ladder").await.expect("read");
        d.and_then(|d| d.metadata.uid)
    };
    let first = wait_until("the Deployment", uid, Option::is_some).await;
    make_available(&deployments, "again-ladder").await;
    let exp = finished(&env, "again").await;
    assert!(condition_is(&exp, "Succeeded", "True").is_some(), "{exp:#}");
    deployments
        .delete("again-ladder", &DeleteParams::default())
        .await
        .expect("deleted");
    ladder.down.store(true, std::sync::atomic::Ordering::SeqCst);
    env.edit("again", json!({"spec": {"maxTrialCount": 3}}))
        .await;
    let made = |again: &Option<String>| again.is_some() && *again != first;
    wait_until("the Deployment made again", uid, made).await;
    ladder
        .down
        .store(false, std::sync::atomic::Ordering::SeqCst);
    make_available(&deployments, "again-ladder").await;
    wait_until(
        "the third trial",
        || async { env.trials_of("again").await.len() },
        |n| *n == 3,
    )
    .await;
    op.stop().await;
    env.shutdown().await;
}
