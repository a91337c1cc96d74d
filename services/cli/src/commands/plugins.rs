//! External suggestion plugins for local runs: which algorithm is served by which gRPC
//! address (a file modelled on katib-config's `suggestions` section, and/or
//! `--suggestion-plugin NAME=ADDR` flags), and the runner's `SuggestionSource` over them.
//!
//! Requests are shaped as Katib's controller (`suggestionclient.go`, v0.19) shapes them, so
//! Katib's own suggestion services accept them: only this experiment's trials (no warm-start
//! results), MetricsUnavailable ones left out, the start and completion times recorded in the
//! store (empty while unset), no labels, and the settings the plugin returned merged by name.
//!
//! The file is YAML or JSON:
//! ```yaml
//! suggestions:            # also accepted under `runtime:` as in katib-config
//!   - algorithmName: random
//!     address: 127.0.0.1:7000
//!     timeoutSeconds: 60  # optional per-call deadline, Katib's 60 s by default
//! ```

use crate::out::errln;
use anyhow::{Context, bail};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use vernier_api::plugin::{CallFailure, DEFAULT_DEADLINE, PluginClient, check_address};
use vernier_api::proto::api::{
    AlgorithmSetting, GetSuggestionsRequest, ValidateAlgorithmSettingsRequest,
};
use vernier_api::proto::convert::{
    ExperimentView, experiment_to_wire, proposals_from_wire, trial_to_wire,
};
use vernier_core::{Suggestions, TrialRecord, TrialState};
use vernier_engine::AlgorithmSource;
use vernier_runner::{LocalExperiment, SourceError, SourceRequest, SuggestionSource};
use vernier_store::{SqlStore, TrialRow};

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PluginEntry {
    algorithm_name: String,
    /// Absent from a katib-config entry (which has an image instead): refused below by name.
    #[serde(default)]
    address: String,
    #[serde(default)]
    timeout_seconds: Option<u64>,
    #[serde(default)]
    image: Option<String>,
    /// The rest of a katib-config entry (its container's fields, its volume); checked
    /// against [`KATIB_ENTRY_FIELDS`] so a misspelt field is still refused.
    #[serde(flatten)]
    katib: BTreeMap<String, serde::de::IgnoredAny>,
}

/// What a katib-config `suggestions` entry may hold besides the fields above: Katib's
/// `SuggestionConfig` and the Kubernetes container it embeds. They mean nothing locally.
const KATIB_ENTRY_FIELDS: [&str; 28] = [
    "serviceAccountName",
    "volumeMountPath",
    "persistentVolumeClaimSpec",
    "persistentVolumeSpec",
    "persistentVolumeLabels",
    "name",
    "command",
    "args",
    "workingDir",
    "ports",
    "envFrom",
    "env",
    "resources",
    "resizePolicy",
    "restartPolicy",
    "volumeMounts",
    "volumeDevices",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
    "terminationMessagePath",
    "terminationMessagePolicy",
    "imagePullPolicy",
    "securityContext",
    "stdin",
    "stdinOnce",
    "tty",
];

#[derive(Debug, Deserialize, Default)]
struct PluginFile {
    #[serde(default)]
    suggestions: Vec<PluginEntry>,
    #[serde(default)]
    runtime: Option<Box<PluginFile>>,
}

/// Algorithm name → (address, deadline).
#[derive(Debug, Clone, Default)]
pub struct Plugins {
    by_algorithm: BTreeMap<String, (String, Duration)>,
    /// Names given with `--suggestion-plugin`, each meant for the experiment at hand.
    flagged: Vec<String>,
}

impl Plugins {
    /// Reads the optional file, then the flags (which win for the same algorithm).
    pub fn load(file: Option<&Path>, flags: &[String]) -> anyhow::Result<Plugins> {
        let mut plugins = Plugins::default();
        if let Some(path) = file {
            let text = std::fs::read_to_string(path).with_context(|| {
                format!(
                    "--suggestion-config {}: cannot read the file\nhint: check the path, relative to the current directory",
                    path.display()
                )
            })?;
            let parsed: PluginFile = yaml_serde::from_str(&text).with_context(|| {
                format!("{}: not a suggestions file\nhint: write `suggestions: [{{algorithmName: random, address: 127.0.0.1:7000}}]`", path.display())
            })?;
            let entries = parsed
                .suggestions
                .into_iter()
                .chain(parsed.runtime.map(|r| r.suggestions).unwrap_or_default());
            for (i, e) in entries.enumerate() {
                if let Some(field) = e
                    .katib
                    .keys()
                    .find(|k| !KATIB_ENTRY_FIELDS.contains(&k.as_str()))
                {
                    bail!(
                        "{}: suggestions[{i}].{field} is not a field of a suggestion entry\nhint: an entry holds algorithmName, address and timeoutSeconds (katib-config's image, resources and other container fields are accepted and ignored)",
                        path.display()
                    );
                }
                if e.address.trim().is_empty() {
                    bail!(
                        "{}: suggestions[{i}].address is missing or empty{}\nhint: give the host:port the plugin listens on",
                        path.display(),
                        e.image
                            .map(|img| format!(" (image {img} cannot run locally)"))
                            .unwrap_or_default()
                    );
                }
                let deadline = e
                    .timeout_seconds
                    .map_or(DEFAULT_DEADLINE, Duration::from_secs);
                check_address(&e.address)
                    .with_context(|| format!("{}: suggestions[{i}].address", path.display()))?;
                plugins
                    .by_algorithm
                    .insert(e.algorithm_name, (e.address, deadline));
            }
        }
        for flag in flags {
            let Some((name, addr)) = flag
                .split_once('=')
                .filter(|(n, a)| !n.is_empty() && !a.is_empty())
            else {
                bail!(
                    "--suggestion-plugin {flag:?} is not NAME=ADDR\nhint: e.g. --suggestion-plugin random=127.0.0.1:7000"
                );
            };
            // A bad address is the flag's mistake, said before any file is read.
            check_address(addr).with_context(|| format!("--suggestion-plugin {flag}"))?;
            plugins
                .by_algorithm
                .insert(name.to_string(), (addr.to_string(), DEFAULT_DEADLINE));
            plugins.flagged.push(name.to_string());
        }
        Ok(plugins)
    }

    /// Refuses a `--suggestion-plugin` name that is not `algorithm` (a typo would otherwise
    /// leave the built-in algorithm running unnoticed); a file's entries may serve others.
    pub fn check_flags_for(&self, algorithm: &str) -> anyhow::Result<()> {
        match self.flagged.iter().find(|n| *n != algorithm) {
            Some(name) => bail!(
                "--suggestion-plugin {name}=...: the experiment's algorithm is {algorithm:?}, so no request would reach it\nhint: name the plugin after spec.algorithm.algorithmName ({algorithm}=HOST:PORT)"
            ),
            None => Ok(()),
        }
    }

    /// The address of the plugin serving `algorithm`, if one does.
    pub fn address_for(&self, algorithm: &str) -> Option<&str> {
        self.by_algorithm.get(algorithm).map(|(a, _)| a.as_str())
    }

    /// These plugins and, unless one already serves `algorithm`, the plugin at `address`
    /// for it (the one an experiment was run with).
    pub fn or_recorded(&self, algorithm: &str, address: &str) -> Plugins {
        let mut plugins = self.clone();
        plugins
            .by_algorithm
            .entry(algorithm.to_string())
            .or_insert_with(|| (address.to_string(), DEFAULT_DEADLINE));
        plugins
    }

    /// The algorithm names the plugins serve: an experiment may name one Vernier lacks.
    pub fn algorithms(&self) -> Vec<&str> {
        self.by_algorithm.keys().map(String::as_str).collect()
    }

    /// Whether the algorithm is built in or served by a plugin, whose check of the settings
    /// must pass (or be put off while it does not answer yet).
    pub async fn algorithm_source(&self, exp: &LocalExperiment) -> anyhow::Result<AlgorithmSource> {
        let Some(source) = self.source_for(exp, None)? else {
            return Ok(AlgorithmSource::BuiltIn);
        };
        match source.validate(exp).await {
            Ok(()) => {}
            Err(SourceError::Rejected(m)) => bail!(
                "spec.algorithm: checking the settings with {} failed: {m}",
                source.describe()
            ),
            Err(SourceError::Unavailable(m)) => errln!(
                "warning: {} is not reachable yet ({m}); its settings are not checked before it answers a request for suggestions, which may refuse them",
                source.describe()
            ),
        }
        Ok(AlgorithmSource::External)
    }

    /// The source serving this experiment's algorithm, if a plugin is configured for it;
    /// `store` (the run's) gives the trials' times, and is not needed to validate.
    pub fn source_for(
        &self,
        exp: &LocalExperiment,
        store: Option<&SqlStore>,
    ) -> anyhow::Result<Option<Arc<dyn SuggestionSource>>> {
        let Some((address, deadline)) = self.by_algorithm.get(&exp.algorithm) else {
            return Ok(None);
        };
        Ok(Some(Arc::new(PluginSource {
            algorithm: exp.algorithm.clone(),
            client: PluginClient::new(address, *deadline)?,
            store: store.cloned(),
        })))
    }
}

/// A Katib suggestion service used as the experiment's algorithm.
#[derive(Debug)]
struct PluginSource {
    algorithm: String,
    client: PluginClient,
    store: Option<SqlStore>,
}

/// Katib's `ConvertTrials` over this experiment's recorded trials: `rows` are the store's rows
/// of the experiment (a history record without one is a warm-start result from elsewhere).
fn katib_trials(
    records: &[TrialRecord],
    rows: &[TrialRow],
    objective: &vernier_core::Objective,
) -> Vec<vernier_api::proto::api::Trial> {
    let by_name: HashMap<&str, &TrialRow> = rows.iter().map(|r| (r.name.as_str(), r)).collect();
    records
        .iter()
        .filter(|t| t.state != TrialState::MetricsUnavailable)
        .filter_map(|t| {
            let row = by_name.get(t.name.as_str())?;
            // The rows are read while the call is made, after the history was taken: a trial
            // that ended meanwhile is sent as the history has it, running, without its end.
            let completed_us = row.completed_us.filter(|_| t.state.is_terminal());
            let mut wire = trial_to_wire(t, objective, row.started_us, completed_us);
            if let Some(spec) = wire.spec.as_mut() {
                // Katib's controller sends no labels.
                spec.labels.clear();
            }
            Some(wire)
        })
        .collect()
}

/// The experiment as Katib's controller sends it, with the settings the plugin returned
/// earlier (kept as the run's algorithm state) merged over the spec's, as Katib does.
fn wire_experiment(
    exp: &LocalExperiment,
    state: Option<&str>,
) -> vernier_api::proto::api::Experiment {
    let mut settings = exp.settings.clone();
    if let Some(returned) =
        state.and_then(|s| serde_json::from_str::<Vec<(String, String)>>(s).ok())
    {
        for (name, value) in returned {
            match settings.iter_mut().find(|(n, _)| *n == name) {
                Some(slot) => slot.1 = value,
                None => settings.push((name, value)),
            }
        }
    }
    let early_stopping = exp.spec.spec.early_stopping.as_ref().map(|es| {
        (
            es.algorithm_name.clone().unwrap_or_default(),
            es.algorithm_settings
                .iter()
                .map(|s| (s.name.clone(), s.value.clone()))
                .collect(),
        )
    });
    experiment_to_wire(&ExperimentView {
        name: exp.name.clone(),
        space: exp.space.clone(),
        objective: exp.objective.clone(),
        algorithm: exp.algorithm.clone(),
        settings,
        early_stopping,
        parallel_trial_count: exp.limits.parallel as i32,
        max_trial_count: exp.limits.max_trials.map_or(0, |m| m as i32),
    })
}

fn source_error(f: CallFailure) -> SourceError {
    match f {
        CallFailure::Unavailable(m) => SourceError::Unavailable(m),
        CallFailure::Rejected(m) => SourceError::Rejected(m),
    }
}

#[async_trait::async_trait]
impl SuggestionSource for PluginSource {
    fn describe(&self) -> String {
        format!(
            "suggestion plugin {} at {}",
            self.algorithm,
            self.client.address()
        )
    }

    async fn validate(&self, exp: &LocalExperiment) -> Result<(), SourceError> {
        self.client
            .validate(ValidateAlgorithmSettingsRequest {
                experiment: Some(wire_experiment(exp, None)),
            })
            .await
            .map_err(source_error)
    }

    async fn suggest(&self, request: SourceRequest<'_>) -> Result<Suggestions, SourceError> {
        let exp = request.experiment;
        let rows = match &self.store {
            Some(store) => store
                .list_trials(&exp.name)
                .await
                .map_err(|e| SourceError::Unavailable(format!("cannot read the trials: {e}")))?,
            None => Vec::new(),
        };
        let reply = self
            .client
            .get_suggestions(GetSuggestionsRequest {
                experiment: Some(wire_experiment(exp, request.state)),
                trials: katib_trials(request.trials, &rows, &exp.objective),
                current_request_number: request.count as i32,
                total_request_number: request.total as i32,
            })
            .await
            .map_err(source_error)?;
        if reply.parameter_assignments.len() != request.count {
            // Katib's controller refuses such a reply and asks again; it never ends a search.
            return Err(SourceError::Unavailable(format!(
                "its reply holds {} assignment(s) where {} were asked for, which Katib's controller refuses",
                reply.parameter_assignments.len(),
                request.count
            )));
        }
        let proposals = proposals_from_wire(&reply.parameter_assignments, &exp.space)
            .map_err(|e| SourceError::Rejected(format!("its reply is refused: {e}")))?;
        let mut returned: Vec<(String, String)> = request
            .state
            .and_then(|s| serde_json::from_str(s).ok())
            .unwrap_or_default();
        for AlgorithmSetting { name, value } in reply
            .algorithm
            .map(|a| a.algorithm_settings)
            .unwrap_or_default()
        {
            returned.retain(|(n, _)| *n != name);
            returned.push((name, value));
        }
        Ok(Suggestions {
            proposals,
            state: (!returned.is_empty())
                .then(|| serde_json::to_string(&returned).unwrap_or_default()),
            exhausted: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use vernier_core::{Assignment, Direction, Objective, ParamValue};

    fn load_file(text: &str) -> anyhow::Result<Plugins> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plugins.yaml");
        std::fs::write(&path, text).unwrap();
        Plugins::load(Some(&path), &[])
    }

    #[test]
    fn katib_config_entries_are_read_and_their_container_fields_ignored() {
        let plugins = load_file(
            "runtime:\n  suggestions:\n    - algorithmName: random\n      image: docker.io/kubeflowkatib/suggestion-hyperopt\n      imagePullPolicy: IfNotPresent\n      resources: {limits: {memory: 200Mi}}\n      address: 127.0.0.1:7000\n      timeoutSeconds: 5\n",
        )
        .unwrap();
        assert_eq!(plugins.algorithms(), ["random"]);
        assert_eq!(
            plugins.by_algorithm["random"],
            ("127.0.0.1:7000".to_string(), Duration::from_secs(5))
        );
    }

    #[test]
    fn a_misspelt_entry_field_is_refused_by_name() {
        let err = load_file(
            "suggestions:\n  - algorithmName: random\n    address: 127.0.0.1:7000\n    timeoutSecond: 5\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("suggestions[0].timeoutSecond is not a field"),
            "{err}"
        );
    }

    #[test]
    fn a_flag_for_another_algorithm_than_the_experiments_is_refused() {
        let flags = ["randmo=127.0.0.1:7000".to_string()];
        let plugins = Plugins::load(None, &flags).unwrap();
        let err = plugins.check_flags_for("random").unwrap_err().to_string();
        assert!(err.contains("--suggestion-plugin randmo=..."), "{err}");
        assert!(err.contains("\"random\""), "{err}");
        let flags = ["random=127.0.0.1:7000".to_string()];
        assert!(
            Plugins::load(None, &flags)
                .unwrap()
                .check_flags_for("random")
                .is_ok()
        );
    }

    #[test]
    fn a_flag_that_is_not_name_equals_addr_is_quoted_with_an_example() {
        for flag in ["foo", "=1.2.3.4:1", "random="] {
            let err = Plugins::load(None, &[flag.to_string()])
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with(&format!("--suggestion-plugin {flag:?} is not NAME=ADDR\n"))
                    && err.contains("hint: e.g. --suggestion-plugin random=127.0.0.1:7000"),
                "{flag}: {err}"
            );
        }
    }

    /// An address no plugin can be called at is the flag's or the entry's mistake, said when
    /// the flags are read, not as a problem of the experiment file.
    #[test]
    fn a_bad_address_is_named_by_its_flag_or_entry() {
        let flags = ["random=nonsense".to_string()];
        let err = format!("{:#}", Plugins::load(None, &flags).unwrap_err());
        assert!(
            err.starts_with("--suggestion-plugin random=nonsense: ")
                && err.contains("value \"nonsense\" has no port")
                && err.contains("hint: write host:port"),
            "{err}"
        );
        let err = load_file("suggestions:\n  - algorithmName: random\n    address: \"a b\"\n");
        let err = format!("{:#}", err.unwrap_err());
        assert!(
            err.contains("plugins.yaml: suggestions[0].address: ")
                && err.contains("value \"a b\" is not a valid address"),
            "{err}"
        );
    }

    #[test]
    fn a_config_file_that_cannot_be_read_is_named_by_its_flag() {
        let err = Plugins::load(Some(Path::new("/no/such.yaml")), &[]).unwrap_err();
        let text = format!("{err:#}");
        assert!(
            text.starts_with("--suggestion-config /no/such.yaml: cannot read the file")
                && text.contains("hint: check the path"),
            "{text}"
        );
    }

    #[test]
    fn a_file_that_is_not_a_suggestions_file_says_where_and_how_to_write_one() {
        for (content, detail) in [
            ("suggestions: [\n", "line 2"),
            (
                "suggestions: 3\n",
                "suggestions: invalid type: integer `3`, expected a sequence",
            ),
        ] {
            let err = load_file(content).unwrap_err();
            let text = format!("{err:#}");
            assert!(
                text.contains("plugins.yaml: not a suggestions file")
                    && text.contains("hint: write `suggestions: [{algorithmName: random, address: 127.0.0.1:7000}]`"),
                "{content}: {text}"
            );
            // The parser's own account follows, so the user sees what it tripped on.
            let cause = err.root_cause().to_string();
            assert!(cause.contains(detail), "{content}: {cause}");
        }
    }

    #[test]
    fn a_katib_entry_with_an_image_and_no_address_says_the_image_cannot_run_locally() {
        // As katib-config has it (no address), and with the address left empty.
        for address in ["", "    address: \"\"\n"] {
            let err = load_file(&format!(
                "suggestions:\n  - algorithmName: random\n    image: docker.io/kubeflowkatib/suggestion-hyperopt\n{address}",
            ))
            .unwrap_err()
            .to_string();
            assert!(
                err.contains("plugins.yaml: suggestions[0].address is missing or empty (image docker.io/kubeflowkatib/suggestion-hyperopt cannot run locally)")
                    && err.contains("hint: give the host:port"),
                "{address}: {err}"
            );
        }
        let err = load_file("suggestions:\n  - algorithmName: random\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.ends_with("suggestions[0].address is missing or empty\nhint: give the host:port the plugin listens on"),
            "{err}"
        );
    }

    fn record(name: &str, state: TrialState, objective: Option<f64>) -> TrialRecord {
        TrialRecord {
            name: name.into(),
            assignment: Assignment(vec![("x".into(), ParamValue::Int(1))]),
            state,
            objective,
            labels: BTreeMap::from([("vernier.hyperband/rung".into(), "0".into())]),
            metrics: objective
                .map(|v| ("acc".to_string(), v))
                .into_iter()
                .collect(),
        }
    }

    fn row(name: &str, started_us: Option<i64>, completed_us: Option<i64>) -> TrialRow {
        TrialRow {
            experiment: "e".into(),
            name: name.into(),
            seq: 0,
            assignment: vec![("x".into(), "1".into())],
            labels: BTreeMap::new(),
            state: TrialState::Created,
            reason: String::new(),
            message: String::new(),
            created_us: 0,
            started_us,
            completed_us,
            attempt: 0,
            early_stopping_rules: None,
            stop_step: None,
        }
    }

    #[test]
    fn trials_go_out_as_katib_controller_sends_them() {
        let o = Objective::new("acc", Direction::Maximize);
        let records = [
            record("warm-1", TrialState::Succeeded, Some(0.9)),
            record("e-done", TrialState::Succeeded, Some(0.5)),
            record("e-nometrics", TrialState::MetricsUnavailable, None),
            record("e-running", TrialState::Running, None),
            record("e-created", TrialState::Created, None),
        ];
        let rows = [
            row("e-done", Some(1_000_000), Some(61_000_000)),
            row("e-nometrics", Some(1_000_000), Some(2_000_000)),
            // It ended after the history was taken: it goes out as the history has it.
            row("e-running", Some(3_000_000), Some(4_000_000)),
            row("e-created", None, None),
        ];
        let wire = katib_trials(&records, &rows, &o);
        let names: Vec<&str> = wire.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["e-done", "e-running", "e-created"]);
        let times: Vec<(&str, &str)> = wire
            .iter()
            .map(|t| {
                let s = t.status.as_ref().unwrap();
                (s.start_time.as_str(), s.completion_time.as_str())
            })
            .collect();
        assert_eq!(
            times,
            [
                ("1970-01-01T00:00:01Z", "1970-01-01T00:01:01Z"),
                ("1970-01-01T00:00:03Z", ""),
                ("", ""),
            ]
        );
        assert!(
            wire.iter()
                .all(|t| t.spec.as_ref().unwrap().labels.is_empty())
        );
        assert!(
            wire[1]
                .status
                .as_ref()
                .unwrap()
                .observation
                .as_ref()
                .unwrap()
                .metrics
                .is_empty()
        );
    }
}
