//! External suggestion plugins: which algorithm is served by which gRPC address (a file
//! modelled on katib-config's `suggestions` section, and/or `--suggestion-plugin NAME=ADDR`
//! flags), as the runner's `SuggestionSource` for `vernier run` and as the operator's
//! `SuggestionServices` for `vernier operator`. Both send what Katib's controller sends
//! (`vernier_api::plugin`): a local run's trials with the times its store recorded, and
//! no warm-start results.
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
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;
use vernier_api::plugin::{DEFAULT_DEADLINE, PluginClient, check_address};
use vernier_core::{Suggestions, TrialRecord};
use vernier_engine::source::settings_refused;
use vernier_engine::{AlgorithmSource, ExternalRequest, ResolvedExperiment, TimedTrial};
use vernier_operator::suggestion_services::{Endpoint, ImageVolume, SuggestionServices};
use vernier_runner::{LocalExperiment, SourceError, SourceRequest, SuggestionSource};
use vernier_spec::SpecError;
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
    katib: BTreeMap<String, serde_json::Value>,
}

/// Fields of a katib-config entry that are not its container's; the rest of
/// [`KATIB_ENTRY_FIELDS`] is the container the operator deploys the image in.
const NOT_CONTAINER_FIELDS: [&str; 5] = [
    "serviceAccountName",
    "volumeMountPath",
    "persistentVolumeClaimSpec",
    "persistentVolumeSpec",
    "persistentVolumeLabels",
];

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
    /// Entries with an image and no address, which only the operator can run.
    images: BTreeMap<String, ImageEntry>,
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
                plugins.read_entry(&format!("{}: suggestions[{i}]", path.display()), e)?;
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

    /// One file entry, `at` naming it in messages: served at its address or, without one,
    /// by its image (which only the operator can run).
    fn read_entry(&mut self, at: &str, e: PluginEntry) -> anyhow::Result<()> {
        if let Some(field) = e
            .katib
            .keys()
            .find(|k| !KATIB_ENTRY_FIELDS.contains(&k.as_str()))
        {
            bail!(
                "{at}.{field} is not a field of a suggestion entry\nhint: an entry holds algorithmName, address or image, and timeoutSeconds (and katib-config's other fields: resources and other container fields, serviceAccountName)"
            );
        }
        let deadline = e
            .timeout_seconds
            .map_or(DEFAULT_DEADLINE, Duration::from_secs);
        if !e.address.trim().is_empty() {
            check_address(&e.address).with_context(|| format!("{at}.address"))?;
            self.by_algorithm
                .insert(e.algorithm_name, (e.address, deadline));
            return Ok(());
        }
        let Some(image) = e.image else {
            bail!(
                "{at}.address is missing or empty\nhint: give the host:port the plugin listens on"
            );
        };
        let shown = image.clone();
        let mut container: Map<String, Value> = e.katib.into_iter().collect();
        let account = container
            .remove("serviceAccountName")
            .and_then(|a| a.as_str().map(str::to_owned));
        let volume = image_volume(at, &mut container)?;
        let volume_spec = container.contains_key("persistentVolumeSpec");
        container.retain(|k, _| !NOT_CONTAINER_FIELDS.contains(&k.as_str()));
        container.insert("image".into(), Value::String(image));
        let endpoint = Endpoint::Image {
            container,
            service_account: account,
            volume,
        };
        let entry = ImageEntry {
            endpoint,
            deadline,
            at: at.to_string(),
            image: shown,
            volume_spec,
        };
        self.images.insert(e.algorithm_name, entry);
        Ok(())
    }

    /// Whether a local run may take `algorithm`, which an entry with only an image serves:
    /// Vernier's own algorithm of that name runs instead (katib-config lists an image for each
    /// of Katib's, so the whole file may be passed); another name is refused, naming the entry.
    fn image_only_locally(&self, algorithm: &str) -> anyhow::Result<()> {
        if let Some(entry) = self.image_only(algorithm) {
            bail!(
                "{}.address is missing or empty (image {} cannot run locally; `vernier operator` deploys it)\nhint: give the host:port the plugin listens on",
                entry.at,
                entry.image
            );
        }
        if !self.deploys(algorithm) {
            return Ok(());
        }
        errln!(
            "warning: the suggestion image for {algorithm} cannot run locally; Vernier's built-in {algorithm} runs instead"
        );
        Ok(())
    }

    /// The entry that alone serves `algorithm`, a name Vernier does not have, with an image.
    fn image_only(&self, algorithm: &str) -> Option<&ImageEntry> {
        let external = AlgorithmSource::by_name(algorithm) == AlgorithmSource::External;
        self.images
            .get(algorithm)
            .filter(|_| external && self.deploys(algorithm))
    }

    /// Why local mode cannot run `algorithm`, which only an image serves, as `vernier
    /// validate`'s local verdict says it.
    pub fn local_refusal(&self, algorithm: &str) -> Option<SpecError> {
        let entry = self.image_only(algorithm)?;
        Some(SpecError::new(
            "spec.algorithm.algorithmName",
            format!(
                "value {algorithm:?} is served only by the image {} ({}), which `vernier operator` deploys and local mode cannot run; hint: give that entry the address where the service listens",
                entry.image, entry.at
            ),
        ))
    }

    /// Whether an entry with only an image serves `algorithm`: `vernier operator` deploys it.
    pub fn deploys(&self, algorithm: &str) -> bool {
        self.images.contains_key(algorithm) && !self.by_algorithm.contains_key(algorithm)
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

    /// The algorithm names the plugins serve: an experiment may name one Vernier lacks (one
    /// only an image serves is refused by [`Plugins::algorithm_source`], naming the entry).
    pub fn algorithms(&self) -> Vec<&str> {
        let names = self.by_algorithm.keys().chain(self.images.keys());
        let mut names: Vec<&str> = names.map(String::as_str).collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// Whether the algorithm is built in or served by a plugin, whose check of the settings
    /// must pass (or be put off while it does not answer yet).
    pub async fn algorithm_source(&self, exp: &LocalExperiment) -> anyhow::Result<AlgorithmSource> {
        self.image_only_locally(&exp.algorithm)?;
        let Some(source) = self.source_for(exp, None)? else {
            return Ok(AlgorithmSource::BuiltIn);
        };
        match source.validate(exp).await {
            Ok(()) => {}
            Err(SourceError::Rejected(m)) => bail!(settings_refused(&source.describe(), &m)),
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

    /// These plugins as the operator's suggestion services; `None` when there are none.
    pub fn for_operator(&self) -> Option<Arc<dyn SuggestionServices>> {
        let at = self.by_algorithm.iter().map(|(name, (address, deadline))| {
            (
                name.clone(),
                (Endpoint::Address(address.clone()), *deadline),
            )
        });
        for entry in self.images.values().filter(|e| e.volume_spec) {
            errln!(
                "warning: {}.persistentVolumeSpec: the operator makes no PersistentVolume; a FromVolume experiment's claim binds to one the cluster provides\nhint: create the volume yourself, or let a storage class provision it (persistentVolumeClaimSpec.storageClassName)",
                entry.at
            );
        }
        let deployed = self
            .images
            .iter()
            .map(|(name, entry)| (name.clone(), (entry.endpoint.clone(), entry.deadline)));
        let served: BTreeMap<_, _> = deployed.chain(at).collect();
        (!served.is_empty()).then(|| {
            Arc::new(OperatorPlugins {
                served,
                clients: Mutex::default(),
            }) as Arc<dyn SuggestionServices>
        })
    }
}

/// katib-config's volume fields of an image entry (`at` in messages), taken out of its
/// container fields: what a `FromVolume` experiment's service mounts on a cluster.
fn image_volume(at: &str, fields: &mut Map<String, Value>) -> anyhow::Result<ImageVolume> {
    let mount_path = match fields.remove("volumeMountPath") {
        None | Some(Value::Null) => None,
        Some(Value::String(p)) if p.is_empty() => None,
        Some(Value::String(p)) if p.starts_with('/') => Some(p),
        Some(other) => bail!(
            "{at}.volumeMountPath {other} is not an absolute path\nhint: e.g. volumeMountPath: /opt/katib/data (Katib's default)"
        ),
    };
    let claim_spec = match fields.remove("persistentVolumeClaimSpec") {
        None | Some(Value::Null) => None,
        Some(Value::Object(spec)) => Some(spec),
        Some(other) => bail!(
            "{at}.persistentVolumeClaimSpec {other} is not a mapping\nhint: a PersistentVolumeClaim's spec, e.g. {{accessModes: [ReadWriteMany], storageClassName: standard}}"
        ),
    };
    Ok(ImageVolume {
        mount_path,
        claim_spec,
    })
}

/// A file entry with an image and no address.
#[derive(Debug, Clone)]
struct ImageEntry {
    /// [`Endpoint::Image`]: the container the operator deploys.
    endpoint: Endpoint,
    deadline: Duration,
    /// The entry in messages (`FILE: suggestions[I]`), and its image.
    at: String,
    image: String,
    /// It has a `persistentVolumeSpec`, which the operator does not create.
    volume_spec: bool,
}

/// A Katib suggestion service used as the experiment's algorithm.
#[derive(Debug)]
struct PluginSource {
    algorithm: String,
    client: PluginClient,
    store: Option<SqlStore>,
}

/// `records` (a run's history) with their times from `rows`, the store's rows of the
/// experiment: a record without one is a warm-start result from elsewhere, which Katib's
/// controller would not send.
fn timed_trials<'a>(records: &'a [TrialRecord], rows: &[TrialRow]) -> Vec<TimedTrial<'a>> {
    let by_name: HashMap<&str, &TrialRow> = rows.iter().map(|r| (r.name.as_str(), r)).collect();
    records
        .iter()
        .filter_map(|record| {
            let row = by_name.get(record.name.as_str())?;
            Some(TimedTrial {
                record,
                started_us: row.started_us,
                completed_us: row.completed_us,
            })
        })
        .collect()
}

fn describe(algorithm: &str, client: &PluginClient) -> String {
    format!("suggestion plugin {algorithm} at {}", client.address())
}

#[async_trait::async_trait]
impl SuggestionSource for PluginSource {
    fn describe(&self) -> String {
        describe(&self.algorithm, &self.client)
    }

    async fn validate(&self, exp: &LocalExperiment) -> Result<(), SourceError> {
        self.client.validate(&exp.resolved).await
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
        let request = ExternalRequest {
            experiment: &exp.resolved,
            trials: timed_trials(request.trials, &rows),
            count: request.count,
            total: request.total,
            state: request.state,
        };
        self.client.suggest(&request).await
    }
}

/// The plugins as `vernier operator`'s suggestion services: each algorithm's endpoint and
/// deadline, and a client per address called (one per experiment for deployed images).
#[derive(Debug)]
struct OperatorPlugins {
    served: BTreeMap<String, (Endpoint, Duration)>,
    clients: Mutex<HashMap<String, PluginClient>>,
}

impl OperatorPlugins {
    fn client(&self, address: &str, algorithm: &str) -> Result<PluginClient, SourceError> {
        let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(client) = clients.get(address) {
            return Ok(client.clone());
        }
        let deadline = self.served.get(algorithm).map_or(DEFAULT_DEADLINE, |s| s.1);
        let client = PluginClient::new(address, deadline)
            .map_err(|e| SourceError::Rejected(e.to_string()))?;
        clients.insert(address.to_string(), client.clone());
        Ok(client)
    }
}

#[async_trait::async_trait]
impl SuggestionServices for OperatorPlugins {
    fn endpoints(&self) -> BTreeMap<String, Endpoint> {
        let endpoints = self.served.iter();
        endpoints
            .map(|(name, (e, _))| (name.clone(), e.clone()))
            .collect()
    }

    async fn validate(&self, address: &str, exp: &ResolvedExperiment) -> Result<(), SourceError> {
        self.client(address, &exp.algorithm)?.validate(exp).await
    }

    async fn suggest(
        &self,
        address: &str,
        request: ExternalRequest<'_>,
    ) -> Result<Suggestions, SourceError> {
        let client = self.client(address, &request.experiment.algorithm)?;
        client.suggest(&request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use vernier_core::{Assignment, ParamValue, TrialState};

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
    fn an_image_entrys_volume_fields_are_kept_and_bad_ones_named() {
        let entry = |fields: &str| {
            let text = format!(
                "suggestions:\n  - algorithmName: pbt\n    image: example.com/pbt\n{fields}"
            );
            load_file(&text).map(|p| p.for_operator().unwrap().endpoints()["pbt"].clone())
        };
        let kept = entry(
            "    volumeMountPath: /data\n    persistentVolumeClaimSpec: {storageClassName: fast}\n",
        );
        let Ok(Endpoint::Image {
            volume, container, ..
        }) = kept
        else {
            panic!("{kept:?}");
        };
        assert_eq!(volume.mount_path.as_deref(), Some("/data"));
        assert_eq!(
            volume.claim_spec.map(Value::Object),
            Some(serde_json::json!({"storageClassName": "fast"}))
        );
        assert_eq!(container.keys().collect::<Vec<_>>(), ["image"]);
        let cases = [
            (
                "    volumeMountPath: data\n",
                "suggestions[0].volumeMountPath \"data\" is not an absolute path",
            ),
            (
                "    volumeMountPath: 3\n",
                "suggestions[0].volumeMountPath 3 is not an absolute path",
            ),
            (
                "    persistentVolumeClaimSpec: [1]\n",
                "suggestions[0].persistentVolumeClaimSpec [1] is not a mapping",
            ),
        ];
        for (fields, want) in cases {
            let err = format!("{:#}", entry(fields).unwrap_err());
            assert!(
                err.contains(want) && err.contains("hint: "),
                "{fields}: {err}"
            );
        }
        let default = entry("    volumeMountPath: \"\"\n");
        assert!(
            matches!(default, Ok(Endpoint::Image { volume, .. }) if volume == ImageVolume::default())
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
            let plugins = load_file(&format!(
                "suggestions:\n  - algorithmName: my-ladder\n    image: docker.io/example/ladder\n{address}  - algorithmName: tpe\n    image: docker.io/kubeflowkatib/suggestion-hyperopt\n",
            ))
            .unwrap();
            assert_eq!(plugins.algorithms(), ["my-ladder", "tpe"]);
            let err = plugins
                .image_only_locally("my-ladder")
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("plugins.yaml: suggestions[0].address is missing or empty (image docker.io/example/ladder cannot run locally; `vernier operator` deploys it)")
                    && err.contains("hint: give the host:port"),
                "{address}: {err}"
            );
            // Vernier's own tpe runs where katib-config lists Katib's image for it.
            assert!(plugins.image_only_locally("tpe").is_ok());
            assert!(plugins.image_only_locally("random").is_ok());
        }
        let err = load_file("suggestions:\n  - algorithmName: random\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.ends_with("suggestions[0].address is missing or empty\nhint: give the host:port the plugin listens on"),
            "{err}"
        );
    }

    /// For the operator, an entry with only an image is a service it deploys: the entry's
    /// container fields go with the image, its service account to the pod; an entry with an
    /// address is called there.
    #[test]
    fn the_operator_deploys_an_image_entry_and_calls_an_address_entry() {
        let plugins = load_file(
            "runtime:\n  suggestions:\n    - algorithmName: tpe\n      image: docker.io/kubeflowkatib/suggestion-hyperopt\n      serviceAccountName: suggester\n      volumeMountPath: /opt/katib/data\n      resources: {limits: {memory: 200Mi}}\n    - algorithmName: random\n      address: 10.0.0.5:6789\n",
        )
        .unwrap();
        let services = plugins.for_operator().unwrap();
        let endpoints = services.endpoints();
        assert_eq!(
            endpoints["random"],
            Endpoint::Address("10.0.0.5:6789".into())
        );
        let Endpoint::Image {
            container,
            service_account,
            volume,
        } = &endpoints["tpe"]
        else {
            panic!("{endpoints:?}");
        };
        assert_eq!(service_account.as_deref(), Some("suggester"));
        assert_eq!(volume.mount_path.as_deref(), Some("/opt/katib/data"));
        assert_eq!(volume.claim_spec, None);
        assert_eq!(
            Value::Object(container.clone()),
            serde_json::json!({"image": "docker.io/kubeflowkatib/suggestion-hyperopt", "resources": {"limits": {"memory": "200Mi"}}})
        );
        assert!(Plugins::default().for_operator().is_none());
    }

    fn record(name: &str, state: TrialState) -> TrialRecord {
        TrialRecord {
            name: name.into(),
            assignment: Assignment(vec![("x".into(), ParamValue::Int(1))]),
            state,
            objective: None,
            labels: BTreeMap::new(),
            metrics: BTreeMap::new(),
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

    /// Only the experiment's own trials go out (a warm-start result has no row), each with
    /// the times its row holds.
    #[test]
    fn a_runs_trials_go_out_with_the_times_its_store_recorded() {
        let records = [
            record("warm-1", TrialState::Succeeded),
            record("e-done", TrialState::Succeeded),
            record("e-created", TrialState::Created),
        ];
        let rows = [
            row("e-done", Some(1_000_000), Some(61_000_000)),
            row("e-created", None, None),
        ];
        let timed: Vec<(&str, Option<i64>, Option<i64>)> = timed_trials(&records, &rows)
            .iter()
            .map(|t| (t.record.name.as_str(), t.started_us, t.completed_us))
            .collect();
        assert_eq!(
            timed,
            [
                ("e-done", Some(1_000_000), Some(61_000_000)),
                ("e-created", None, None)
            ]
        );
    }
}
