//! What every reconcile shares: the Kubernetes client, the store, the configuration, metrics,
//! the event recorder, the running pod-log followers and the trial cache.

pub use crate::config::OperatorConfig;
use crate::experiment_lease::ExperimentLeases;
use crate::jobs::TrialKind;
use crate::logs::Followers;
use crate::metrics::Metrics;
use crate::shared::Shared;
use crate::suggestion_services::{Checked, Endpoint, SuggestionServices};
use kube::Client;
use kube::runtime::events::{Recorder, Reporter};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;
use vernier_store::SqlStore;

/// Shared by both controllers.
pub struct Context {
    pub client: Client,
    pub store: SqlStore,
    pub config: OperatorConfig,
    pub metrics: Arc<Metrics>,
    pub recorder: Recorder,
    pub followers: Followers,
    pub backoff: Backoff,
    /// The trial cache and wake-ups, while the controllers run.
    pub shared: Arc<Shared>,
    /// Builds the early-stopping rule named in an experiment; `None` leaves early stopping off.
    pub early_stopping: Option<EarlyStopperFactory>,
    /// Suggestion services (Katib's suggestion images) serving algorithms by name; `None`:
    /// every experiment runs a built-in algorithm.
    pub suggestion_services: Option<Arc<dyn SuggestionServices>>,
    /// Where each of those services runs, by algorithm name.
    pub suggestion_endpoints: BTreeMap<String, Endpoint>,
    /// The algorithm specs the services accepted, per experiment.
    pub checked: Checked,
    /// Waits before asking again a service that gave no answer, per experiment.
    pub service_backoff: Backoff,
    /// The store leases of the experiments this operator drives.
    pub leases: ExperimentLeases,
    /// Trials created and not yet in the cache, per experiment.
    pub expectations: crate::expectations::Expectations,
    /// The refusals already announced, so a reconcile repeats no Warning event.
    pub announced: Announced,
    /// How many objective values of each trial the early-stopping rule has seen.
    pub judged: Judged,
    /// Until when this replica may write to the store as the leader.
    pub tenure: Arc<crate::tenure::Tenure>,
}

/// How many objective values of each running trial (by experiment, then trial UID) the
/// early-stopping rule was shown at the last reconcile, so a rung a trial passed between two
/// reconciles is judged all the same (`TrialProgress::judged`). A trial new to an experiment
/// this operator has judged before has been judged on none of its values. In an experiment
/// first seen, as after a restart, each trial counts as judged up to what it has: a rung it may
/// have passed long ago is not judged again against trials that came later.
#[derive(Debug, Default)]
pub struct Judged {
    counts: std::sync::Mutex<HashMap<String, HashMap<String, usize>>>,
    /// The step each trial a rule ranking by step stopped was stopped at (by experiment, then
    /// trial UID): the rule is shown that trial's values up to it only. The step is also written
    /// on the Trial (`names::STOP_STEP_ANNOTATION`) for an operator started later; this copy
    /// covers the moments the trial cache does not show that annotation yet.
    stop_steps: std::sync::Mutex<HashMap<String, HashMap<String, usize>>>,
}

impl Judged {
    /// For each `(uid, count)` of an experiment's running trials, the count recorded at the
    /// last call ([`Judged::seen`]); records these counts in place of the last call's.
    pub fn swap(&self, experiment: &str, now: &[(String, usize)]) -> Vec<usize> {
        let mut all = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let before = all.remove(experiment);
        let judged = now
            .iter()
            .map(|(uid, n)| judged_of(before.as_ref(), uid, *n))
            .collect();
        all.insert(experiment.to_string(), now.iter().cloned().collect());
        judged
    }

    /// Records that the rule stopped trial `uid` at `step`.
    pub fn stopped_at(&self, experiment: &str, uid: &str, step: usize) {
        let mut all = self.stop_steps.lock().unwrap_or_else(|p| p.into_inner());
        let steps = all.entry(experiment.to_string()).or_default();
        steps.insert(uid.to_string(), step);
    }

    /// The step the rule stopped trial `uid` at, when this replica recorded one.
    pub fn stop_step(&self, experiment: &str, uid: &str) -> Option<usize> {
        let all = self.stop_steps.lock().unwrap_or_else(|p| p.into_inner());
        all.get(experiment)?.get(uid).copied()
    }

    /// How many of the `count` values of trial `uid` the rule has judged, without recording.
    pub fn seen(&self, experiment: &str, uid: &str, count: usize) -> usize {
        let all = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        judged_of(all.get(experiment), uid, count)
    }
}

fn judged_of(before: Option<&HashMap<String, usize>>, uid: &str, count: usize) -> usize {
    match before {
        Some(counts) => counts.get(uid).copied().unwrap_or(0).min(count),
        None => count,
    }
}

/// The last note announced under each key (an experiment and the kind of refusal): a
/// condition that holds over many reconciles, such as a refused edit left in the stored spec,
/// is told once, and again only when it changes or after it has cleared.
#[derive(Debug, Default)]
pub struct Announced {
    notes: std::sync::Mutex<std::collections::HashMap<String, String>>,
}

impl Announced {
    /// Records `note` (or, with `None`, that the condition cleared) under `key`; true when
    /// `note` is new there and should be told.
    pub fn first(&self, key: &str, note: Option<&str>) -> bool {
        let mut notes = self.notes.lock().unwrap_or_else(|e| e.into_inner());
        match note {
            None => {
                notes.remove(key);
                false
            }
            Some(n) if notes.get(key).map(String::as_str) == Some(n) => false,
            Some(n) => {
                notes.insert(key.to_string(), n.to_string());
                true
            }
        }
    }
}

/// Builds an early-stopping rule from its Katib name and settings (e.g. medianstop).
pub type EarlyStopperFactory = Arc<
    dyn Fn(&str, &[(String, String)]) -> Result<Box<dyn vernier_core::EarlyStopper>, String>
        + Send
        + Sync,
>;

/// Per-object retry delays for `error_policy`: doubling from half a second to five minutes,
/// reset by the next successful reconcile.
#[derive(Debug, Default)]
pub struct Backoff {
    failures: std::sync::Mutex<std::collections::HashMap<String, u32>>,
}

impl Backoff {
    pub fn next(&self, key: &str) -> Duration {
        let mut f = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let n = f.entry(key.to_string()).or_insert(0);
        *n = n.saturating_add(1);
        let ms = 500u64.saturating_mul(1u64 << (*n - 1).min(10));
        Duration::from_millis(ms.min(300_000))
    }

    pub fn reset(&self, key: &str) {
        let mut f = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        f.remove(key);
    }
}

impl Context {
    pub fn new(
        client: Client,
        store: SqlStore,
        config: OperatorConfig,
        metrics: Arc<Metrics>,
    ) -> Self {
        let leases = ExperimentLeases::new(&config.identity);
        let recorder = Recorder::new(
            client.clone(),
            Reporter {
                controller: "vernier-operator".into(),
                instance: Some(config.identity.clone()),
            },
        );
        Context {
            client,
            store,
            config,
            metrics,
            recorder,
            followers: Followers::default(),
            backoff: Backoff::default(),
            shared: Arc::new(Shared::default()),
            early_stopping: None,
            suggestion_services: None,
            suggestion_endpoints: BTreeMap::new(),
            checked: Checked::default(),
            service_backoff: Backoff::default(),
            leases,
            expectations: Default::default(),
            announced: Announced::default(),
            judged: Judged::default(),
            tenure: Arc::default(),
        }
    }

    /// Uses `factory` for experiments that name an early-stopping rule.
    pub fn with_early_stopping(mut self, factory: EarlyStopperFactory) -> Self {
        self.early_stopping = Some(factory);
        self
    }

    /// Asks `services` for the proposals of the algorithms they serve.
    pub fn with_suggestion_services(mut self, services: Arc<dyn SuggestionServices>) -> Self {
        self.suggestion_endpoints = services.endpoints();
        self.suggestion_services = Some(services);
        self
    }

    pub fn trial_kind(&self, api_version: &str, kind: &str) -> Option<&TrialKind> {
        self.config
            .trial_kinds
            .iter()
            .find(|k| k.matches(api_version, kind))
    }

    pub fn allowed_kinds(&self) -> String {
        self.config
            .trial_kinds
            .iter()
            .map(|k| format!("{}.{}.{}", k.kind, k.version, k.group))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("config", &self.config)
            .field("early_stopping", &self.early_stopping.is_some())
            .field("suggestion_services", &self.suggestion_services)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In an experiment first seen a trial counts as judged up to what it has (a restart does
    /// not judge old rungs again); a trial new to a known experiment has been judged on none;
    /// later calls return the previous count; experiments do not share counts.
    #[test]
    fn judged_counts_are_the_last_reconciles_per_experiment() {
        let j = Judged::default();
        let t = |uid: &str, n: usize| (uid.to_string(), n);
        assert_eq!(j.swap("ns/e", &[t("a", 4), t("b", 0)]), [4, 0]);
        assert_eq!(j.swap("ns/f", &[t("a", 1)]), [1]);
        assert_eq!((j.seen("ns/e", "a", 9), j.seen("ns/e", "c", 2)), (4, 0));
        assert_eq!(j.seen("ns/g", "c", 2), 2);
        assert_eq!(
            j.swap("ns/e", &[t("a", 9), t("b", 3), t("c", 2)]),
            [4, 0, 0]
        );
        // "a" ended (not listed): forgotten.
        assert_eq!(j.swap("ns/e", &[t("b", 3)]), [3]);
        assert_eq!(j.swap("ns/e", &[t("a", 2), t("b", 1)]), [0, 1]);
        assert_eq!(j.swap("ns/f", &[t("a", 5)]), [1]);
    }

    #[test]
    fn backoff_doubles_caps_and_resets() {
        let b = Backoff::default();
        assert_eq!(b.next("a"), Duration::from_millis(500));
        assert_eq!(b.next("a"), Duration::from_millis(1000));
        assert_eq!(b.next("b"), Duration::from_millis(500));
        for _ in 0..20 {
            b.next("a");
        }
        assert_eq!(b.next("a"), Duration::from_secs(300));
        b.reset("a");
        assert_eq!(b.next("a"), Duration::from_millis(500));
    }

    /// A refusal is told once while it holds, again when its note changes, and again after
    /// it has cleared; keys do not share notes.
    #[test]
    fn a_condition_is_announced_once_while_it_holds() {
        let a = Announced::default();
        let steps = [
            ("e/spec", Some("goal"), true),
            ("e/spec", Some("goal"), false),
            ("e/counts", Some("goal"), true),
            ("e/spec", Some("image"), true),
            ("e/spec", None, false),
            ("e/spec", Some("image"), true),
        ];
        for (i, (key, note, told)) in steps.into_iter().enumerate() {
            assert_eq!(a.first(key, note), told, "step {i}");
        }
    }
}
