//! The metrics-collector sidecar for the File and TensorFlowEvent collectors, added by the
//! operator when it renders a trial's job (Katib adds it with a mutating pod webhook; Vernier
//! has no webhook, so the job's pod templates carry it from the start), and the environment a
//! `Push` trial needs (its name and where to push), which the same webhook sets in Katib.
//!
//! The sidecar is a Kubernetes native sidecar: an `initContainers` entry with
//! `restartPolicy: Always` (Kubernetes 1.29+), so it starts before the training container,
//! keeps running beside it, and gets SIGTERM once the training container has exited; it then
//! reads what is left of the metrics and reports everything to the DBManager
//! (`vernier collect`). The pod, and so the job, completes only after it exits, which is why
//! the trial can be judged from the store as soon as the job has succeeded.
//!
//! The metrics directory is shared through an `emptyDir` volume mounted at the same path in
//! both containers (or, when the training container already mounts a volume there, through
//! that volume).

use crate::config::OperatorConfig;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use vernier_engine::Collector;
use vernier_spec::template::unquote_katib_words;
use vernier_spec::trial::{PUSH_ADDRESS_ENV, TRIAL_NAME_ENV, TrialSpec};

pub use crate::config::{DEFAULT_COLLECTOR_IMAGE, DEFAULT_DB_MANAGER_ADDRESS};

/// The volume Katib's webhook uses for the same purpose.
const METRICS_VOLUME: &str = "metrics-volume";

/// Katib's name for the File collector's container (it also logs stdout there for StdOut).
const FILE_COLLECTOR_NAME: &str = "metrics-logger-and-collector";

/// Katib's name for the other collectors' container.
const COLLECTOR_NAME: &str = "metrics-collector";

/// The label the Kubeflow training operator puts on the primary pod only; Katib's default
/// `primaryPodLabels` for Kubeflow kinds.
const JOB_ROLE_LABEL: &str = "training.kubeflow.org/job-role";

/// Replica types whose index-0 pod gets `job-role: master`, in the training operator's order
/// of preference (TFJob Chief/Master, PyTorchJob and XGBoostJob Master, MPIJob Launcher;
/// Worker when none of those is present).
const PRIMARY_REPLICA_TYPES: [&str; 4] = ["Chief", "Master", "Launcher", "Worker"];

/// Environment variable prefix carrying the pod's own value of a primary label.
const LABEL_ENV_PREFIX: &str = "VERNIER_PRIMARY_LABEL_";

/// What the sidecar collects for one trial.
#[derive(Debug, Clone, PartialEq)]
struct Collection {
    kind: &'static str,
    /// The file (File) or directory (TensorFlowEvent) as the training container sees it.
    path: String,
    /// `JSON` or `TEXT` (File only).
    format: Option<String>,
    metrics_formats: Vec<String>,
    metrics: Vec<String>,
}

impl Collection {
    fn of(spec: &TrialSpec) -> Option<Collection> {
        let mc = spec.metrics_collector.as_ref()?;
        // Where and how the trial writes comes from the engine, as for `vernier run`.
        let (kind, path, format) = match Collector::of(Some(mc)) {
            Collector::File { path, json } => (
                "File",
                path,
                Some(if json { "JSON" } else { "TEXT" }.into()),
            ),
            Collector::TensorFlowEvent { dir } => ("TensorFlowEvent", dir, None),
            _ => return None,
        };
        let metrics_formats = mc
            .source
            .as_ref()
            .and_then(|s| s.filter.as_ref())
            .map(|f| f.metrics_format.clone())
            .unwrap_or_default();
        let metrics = crate::trial_spec::objective_of(spec)?.metric_names();
        Some(Collection {
            kind,
            path,
            format,
            metrics_formats,
            metrics,
        })
    }

    /// The directory the shared volume is mounted at: the file's directory, or the event
    /// directory itself (as Katib's webhook mounts them).
    fn mount_dir(&self) -> String {
        mount_dir(&self.path, self.kind == "File")
    }
}

/// Where the sidecar of a File or TensorFlowEvent trial reads metrics: the collector kind and
/// the file or event directory (for messages); `None` for other collectors.
pub fn metrics_location(spec: &TrialSpec) -> Option<(&'static str, String)> {
    Collection::of(spec).map(|c| (c.kind, c.path))
}

/// The directory a metrics path is shared through: a file's directory, or the directory itself.
fn mount_dir(path: &str, is_file: bool) -> String {
    let trimmed = path.trim_end_matches('/');
    if is_file {
        match trimmed.rsplit_once('/') {
            Some(("", _)) | None => "/".into(),
            Some((dir, _)) => dir.into(),
        }
    } else if trimmed.is_empty() {
        "/".into()
    } else {
        trimmed.into()
    }
}

/// `run_spec` with the trial's name in its primary containers (`KATIB_TRIAL_NAME`, as Katib's
/// pod webhook sets it for every trial whose collector is not `None`), and the collector
/// sidecar in its primary pod templates when the collector is File or TensorFlowEvent, or the
/// user's own collector container when it is Custom.
pub fn inject(
    config: &OperatorConfig,
    spec: &TrialSpec,
    trial: &str,
    mut run_spec: Value,
) -> Value {
    let collector = Collector::of(spec.metrics_collector.as_ref());
    if collector == Collector::Other("None".into()) {
        return run_spec;
    }
    let collection = Collection::of(spec);
    for (template, runtime) in primary_templates(spec, &mut run_spec) {
        add_env(spec, template, &[(TRIAL_NAME_ENV, trial.to_string())]);
        if collector.runs_command_as_shell_line() {
            unquote_as_katibs_shell(spec, template);
        }
        match &collector {
            Collector::Custom {
                container: Some(custom),
                path,
            } => {
                // Katib shares nothing when no fileSystemPath is given.
                let dir = path.as_ref().map(|p| mount_dir(&p.path, !p.directory));
                add_custom(config, spec, trial, custom, dir.as_deref(), template);
            }
            Collector::Push => add_env(spec, template, &push_env(config, trial)),
            _ => {
                if let Some(collection) = &collection {
                    add_sidecar(config, spec, trial, collection, template, &runtime);
                }
            }
        }
    }
    run_spec
}

/// The primary container of `template` as Katib's webhook runs it for the StdOut, File and
/// TensorFlowEvent collectors, under a shell: each word of its command and args that a shell
/// reads as one word loses its quotes ([`unquote_katib_words`]), so Katib's NAS examples'
/// `--architecture="${trialParameters.a}"` reaches the trainer as on Katib.
fn unquote_as_katibs_shell(spec: &TrialSpec, template: &mut Value) {
    let Some(container) = primary_of(spec, template) else {
        return;
    };
    let words = |field: &str| -> Option<Vec<String>> {
        match container.get(field) {
            None | Some(Value::Null) => Some(Vec::new()),
            Some(v) => serde_json::from_value(v.clone()).ok(),
        }
    };
    let (Some(mut command), Some(mut args)) = (words("command"), words("args")) else {
        return;
    };
    let before = (command.clone(), args.clone());
    unquote_katib_words(&mut command, &mut args);
    if (&command, &args) != (&before.0, &before.1) {
        container.insert("command".into(), json!(command));
        container.insert("args".into(), json!(args));
    }
}

/// The primary container of the pod template `template`.
fn primary_of<'a>(
    spec: &TrialSpec,
    template: &'a mut Value,
) -> Option<&'a mut serde_json::Map<String, Value>> {
    let containers = template
        .pointer_mut("/spec/containers")
        .and_then(Value::as_array_mut)?;
    let main = primary_container(containers, spec.primary_container_name.as_deref());
    containers.get_mut(main).and_then(Value::as_object_mut)
}

/// `vars` added to the primary container of `template`, each unless the container sets it
/// itself: the trial's name, and for a `Push` trial the operator's DBManager address in
/// `VERNIER_DB_MANAGER_ADDRESS` (the SDK's `report_metrics` reads both).
fn add_env(spec: &TrialSpec, template: &mut Value, vars: &[(&str, String)]) {
    let Some(container) = primary_of(spec, template) else {
        return;
    };
    let env = container.entry("env").or_insert_with(|| json!([]));
    let Some(env) = env.as_array_mut() else {
        return;
    };
    for (name, value) in vars {
        if !env.iter().any(|e| e["name"] == *name) {
            env.push(json!({"name": name, "value": value}));
        }
    }
}

/// Where a trial or its collector reports, and as which trial: what both a `Push` trial and
/// a Custom collector are given.
fn push_env(config: &OperatorConfig, trial: &str) -> [(&'static str, String); 2] {
    [
        (PUSH_ADDRESS_ENV, config.db_manager_address.clone()),
        (TRIAL_NAME_ENV, trial.to_string()),
    ]
}

/// The pod templates that can make the trial's primary pod, each with the primary labels the
/// job's controller adds to the pod itself (so a sidecar has to check them at run time).
fn primary_templates<'a>(
    spec: &TrialSpec,
    run_spec: &'a mut Value,
) -> Vec<(&'a mut Value, Vec<(String, String)>)> {
    let wanted = spec.primary_pod_labels.clone().unwrap_or_default();
    let mut templates = Vec::new();
    find_templates(run_spec, None, &mut templates);
    let mut chosen = Vec::new();
    let replica_types: Vec<String> = templates.iter().filter_map(|(_, t)| t.clone()).collect();
    let primary_type = PRIMARY_REPLICA_TYPES
        .iter()
        .find(|t| replica_types.iter().any(|r| r == *t));
    for (template, replica_type) in templates {
        let runtime = runtime_labels(template, replica_type.as_deref(), primary_type, &wanted);
        if let Some(runtime) = runtime {
            chosen.push((template, runtime));
        }
    }
    chosen
}

/// Whether `template` (of `replica_type`) can make the primary pod (the one with every
/// `wanted` label), and which of those labels the job's controller adds to the pod itself, so
/// that the sidecar has to check them at run time; `None` when it cannot be the primary pod.
fn runtime_labels(
    template: &Value,
    replica_type: Option<&str>,
    primary_type: Option<&&str>,
    wanted: &BTreeMap<String, String>,
) -> Option<Vec<(String, String)>> {
    let own = template
        .pointer("/metadata/labels")
        .and_then(Value::as_object);
    let mut runtime = Vec::new();
    for (k, v) in wanted {
        match own.and_then(|o| o.get(k)) {
            Some(Value::String(have)) if have == v => {}
            // The template sets the label to something else: never the primary pod.
            Some(_) => return None,
            // Only the primary replica type's first pod gets `job-role: master`.
            None if k == JOB_ROLE_LABEL && replica_type.is_some() => {
                if replica_type != primary_type.copied() || v != "master" {
                    return None;
                }
                runtime.push((k.clone(), v.clone()));
            }
            // Set by the job's controller on the pod, if at all: checked by the sidecar.
            None => runtime.push((k.clone(), v.clone())),
        }
    }
    Some(runtime)
}

/// Every pod template (an object with `spec.containers` under a `template` key) with the
/// replica type it belongs to (the key above `template` in a `...ReplicaSpecs` map).
pub(crate) fn find_templates<'a>(
    value: &'a mut Value,
    replica_type: Option<&str>,
    out: &mut Vec<(&'a mut Value, Option<String>)>,
) {
    match value {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if k == "template" && v.pointer("/spec/containers").is_some_and(Value::is_array) {
                    out.push((v, replica_type.map(str::to_owned)));
                } else if k.ends_with("ReplicaSpecs")
                    && let Value::Object(specs) = v
                {
                    for (t, s) in specs.iter_mut() {
                        find_templates(s, Some(t), out);
                    }
                } else {
                    find_templates(v, None, out);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| find_templates(v, None, out)),
        _ => {}
    }
}

/// The training container's index: `primaryContainerName`, else the only container, else the
/// Kubeflow kind's training container name, else the first.
pub(crate) fn primary_container(containers: &[Value], name: Option<&str>) -> usize {
    let named = |n: &str| containers.iter().position(|c| c["name"] == n);
    name.filter(|n| !n.is_empty())
        .and_then(named)
        .or_else(|| {
            ["tensorflow", "pytorch", "xgboost", "mpi"]
                .iter()
                .find_map(|n| named(n))
        })
        .unwrap_or(0)
}

/// Is `dir` at or under `mount`, on a path-component boundary?
fn covers(mount: &str, dir: &str) -> bool {
    let mount = mount.trim_end_matches('/');
    mount.is_empty()
        || dir == mount
        || dir
            .strip_prefix(mount)
            .is_some_and(|rest| rest.starts_with('/'))
}

fn add_sidecar(
    config: &OperatorConfig,
    spec: &TrialSpec,
    trial: &str,
    collection: &Collection,
    template: &mut Value,
    runtime_labels: &[(String, String)],
) {
    let name = if collection.kind == "File" {
        FILE_COLLECTOR_NAME
    } else {
        COLLECTOR_NAME
    };
    let Some(pod) = template.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let already = pod
        .get("initContainers")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|c| c["name"] == name));
    if already {
        return;
    }
    let dir = collection.mount_dir();
    let Some(mount) = metrics_mount(pod, spec.primary_container_name.as_deref(), &dir) else {
        return;
    };
    let needs = mount_env(pod, spec.primary_container_name.as_deref(), &mount);
    let collect = Collect::new(config, trial, collection, &dir, runtime_labels);
    let mut sidecar = collect.container(name, &config.collector_image, mount);
    needs.add_to(&mut sidecar);
    let init = pod.entry("initContainers").or_insert_with(|| json!([]));
    if let Some(init) = init.as_array_mut() {
        init.push(sidecar);
    }
}

/// The volume mount the sidecar shares with the training container: a volume the training
/// container already mounts over the metrics directory is shared as it is; otherwise an
/// emptyDir is added to the pod and mounted at the directory in the training container.
fn metrics_mount(
    pod: &mut serde_json::Map<String, Value>,
    primary: Option<&str>,
    dir: &str,
) -> Option<Value> {
    let containers = pod
        .get("containers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let main = primary_container(&containers, primary);
    let existing = containers
        .get(main)
        .and_then(|c| c.get("volumeMounts"))
        .and_then(Value::as_array)
        .and_then(|mounts| {
            mounts
                .iter()
                .filter(|m| m["mountPath"].as_str().is_some_and(|p| covers(p, dir)))
                .max_by_key(|m| m["mountPath"].as_str().map_or(0, str::len))
                .cloned()
        });
    if let Some(mut m) = existing {
        if let Some(m) = m.as_object_mut() {
            m.remove("readOnly");
        }
        return Some(m);
    }
    let volume = add_empty_dir(pod)?;
    let mount = json!({"name": volume, "mountPath": dir});
    if let Some(c) = pod
        .get_mut("containers")
        .and_then(Value::as_array_mut)
        .and_then(|cs| cs.get_mut(main))
        .and_then(Value::as_object_mut)
    {
        let mounts = c.entry("volumeMounts").or_insert_with(|| json!([]));
        if let Some(mounts) = mounts.as_array_mut() {
            mounts.push(mount.clone());
        }
    }
    Some(mount)
}

/// What a container sharing the training container's `mount` needs of its environment: a
/// `subPathExpr` is expanded by the kubelet from the container's own variables, so a mount
/// such as `subPathExpr: $(POD_NAME)` without `POD_NAME` keeps the pod from starting.
#[derive(Debug, Default, PartialEq)]
struct MountEnv {
    /// The training container's `env` entries the expression names, and those their values
    /// name in turn, in the container's order (a variable sees only those before it).
    env: Vec<Value>,
    /// Its `envFrom`, when a named variable is not in its `env`.
    env_from: Vec<Value>,
}

impl MountEnv {
    /// Adds what is needed to `container`, before its own variables, none it already names.
    fn add_to(self, container: &mut Value) {
        let Some(c) = container.as_object_mut() else {
            return;
        };
        if !self.env.is_empty() {
            let own = c
                .remove("env")
                .and_then(|e| e.as_array().cloned())
                .unwrap_or_default();
            let named = |v: &Value| own.iter().any(|o| o["name"] == v["name"]);
            let mut env: Vec<Value> = self.env.into_iter().filter(|v| !named(v)).collect();
            env.extend(own);
            c.insert("env".into(), Value::Array(env));
        }
        if !self.env_from.is_empty() {
            let from = c.entry("envFrom").or_insert_with(|| json!([]));
            if let Some(from) = from.as_array_mut() {
                from.extend(self.env_from);
            }
        }
    }
}

fn mount_env(
    pod: &serde_json::Map<String, Value>,
    primary: Option<&str>,
    mount: &Value,
) -> MountEnv {
    let containers = pod
        .get("containers")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let main = containers.get(primary_container(containers, primary));
    match (main, mount["subPathExpr"].as_str()) {
        (Some(main), Some(expr)) => env_for_expression(main, expr),
        _ => MountEnv::default(),
    }
}

/// Variable `e` of container `owner`, copied to the sidecar: a `resourceFieldRef` without a
/// `containerName` means the container it is written in, so the copy names `owner`, or the
/// sidecar would read its own requests and limits.
fn resources_of(owner: &str, e: &Value) -> Value {
    let mut e = e.clone();
    if let Some(field) = e
        .pointer_mut("/valueFrom/resourceFieldRef")
        .and_then(Value::as_object_mut)
        && !field.contains_key("containerName")
    {
        field.insert("containerName".into(), json!(owner));
    }
    e
}

/// The variables of `container` that expanding `expr` reads (see [`MountEnv`]).
fn env_for_expression(container: &Value, expr: &str) -> MountEnv {
    let env = container["env"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut wanted: Vec<String> = references(expr);
    let mut i = 0;
    while let Some(name) = wanted.get(i).cloned() {
        let defined = env.iter().filter(|e| e["name"] == name.as_str());
        for e in defined {
            for r in references(e["value"].as_str().unwrap_or_default()) {
                if !wanted.contains(&r) {
                    wanted.push(r);
                }
            }
        }
        i += 1;
    }
    let named = |e: &&Value| {
        e["name"]
            .as_str()
            .is_some_and(|n| wanted.iter().any(|w| w == n))
    };
    let undefined = wanted
        .iter()
        .any(|w| !env.iter().any(|e| e["name"] == w.as_str()));
    let owner = container["name"].as_str().unwrap_or_default();
    MountEnv {
        env: env
            .iter()
            .filter(named)
            .map(|e| resources_of(owner, e))
            .collect(),
        env_from: match undefined {
            true => container["envFrom"].as_array().cloned().unwrap_or_default(),
            false => Vec::new(),
        },
    }
}

/// The `$(NAME)` references in `text`, as the kubelet expands them (`$$` is a literal `$`).
fn references(text: &str) -> Vec<String> {
    let found = std::cell::RefCell::new(Vec::<String>::new());
    vernier_spec::template::expansion::expand(text, |name| {
        let mut found = found.borrow_mut();
        if !found.iter().any(|f| f == name) {
            found.push(name.to_string());
        }
        None
    });
    found.into_inner()
}

/// Adds an emptyDir volume named after Katib's metrics volume (suffixed when the name is
/// taken) and returns its name.
fn add_empty_dir(pod: &mut serde_json::Map<String, Value>) -> Option<String> {
    let volumes = pod.entry("volumes").or_insert_with(|| json!([]));
    let volumes = volumes.as_array_mut()?;
    let taken = |n: &str| volumes.iter().any(|v| v["name"] == n);
    let mut volume = METRICS_VOLUME.to_string();
    let mut i = 1;
    while taken(&volume) {
        volume = format!("{METRICS_VOLUME}-{i}");
        i += 1;
    }
    volumes.push(json!({"name": volume, "emptyDir": {}}));
    Some(volume)
}

/// The sidecar's `vernier collect` command line and environment.
struct Collect {
    args: Vec<String>,
    env: Vec<Value>,
    /// The file the collector creates once it handles SIGTERM (its startup probe).
    started: String,
}

impl Collect {
    fn new(
        config: &OperatorConfig,
        trial: &str,
        collection: &Collection,
        dir: &str,
        runtime_labels: &[(String, String)],
    ) -> Collect {
        let mut args: Vec<String> = vec![
            "vernier".into(),
            "collect".into(),
            "--trial".into(),
            trial.into(),
            "--metric-names".into(),
            collection.metrics.join(","),
            "--kind".into(),
            collection.kind.into(),
            "--path".into(),
            collection.path.clone(),
            "--db-manager-address".into(),
            config.db_manager_address.clone(),
        ];
        if let Some(format) = &collection.format {
            args.extend(["--file-format".into(), format.clone()]);
        }
        if collection.format.as_deref() != Some("JSON") {
            for f in &collection.metrics_formats {
                args.extend(["--metrics-format".into(), f.clone()]);
            }
        }
        // Katib's sidecar waits for the training process instead; a native sidecar is told
        // to stop, so the training container must not start (and possibly end) before the
        // collector handles SIGTERM.
        let started = format!(
            "{}/.vernier-collect-{trial}.started",
            dir.trim_end_matches('/')
        );
        args.extend(["--started-file".into(), started.clone()]);
        let mut collect = Collect {
            args,
            env: Vec::new(),
            started,
        };
        for (i, label) in runtime_labels.iter().enumerate() {
            collect.check_label(i, label);
        }
        collect
    }

    /// The sidecar checks at run time that its pod carries primary label `k=v`, read from
    /// the pod's own labels through the downward API.
    fn check_label(&mut self, i: usize, (k, v): &(String, String)) {
        let var = format!("{LABEL_ENV_PREFIX}{i}");
        self.env
            .push(json!({"name": var, "valueFrom": {"fieldRef": {
            "fieldPath": format!("metadata.labels['{k}']")}}}));
        self.args.extend([
            "--primary-label".into(),
            format!("{k}={v}"),
            "--pod-label".into(),
            // Expanded by the kubelet from the pod's own label.
            format!("{k}=$({var})"),
        ]);
    }

    /// The native sidecar container.
    fn container(self, name: &str, image: &str, mount: Value) -> Value {
        let mut sidecar = json!({
            "name": name,
            "image": image,
            "imagePullPolicy": "IfNotPresent",
            "restartPolicy": "Always",
            "command": self.args,
            "startupProbe": {
                "exec": {"command": ["test", "-e", self.started]},
                "periodSeconds": 1,
                "failureThreshold": 120,
            },
            "volumeMounts": [mount],
            // Katib's default collector resources.
            "resources": {
                "requests": {"cpu": "50m", "memory": "10Mi"},
                "limits": {"cpu": "500m", "memory": "100Mi"},
            },
        });
        if !self.env.is_empty() {
            sidecar["env"] = Value::Array(self.env);
        }
        sidecar
    }
}

/// Adds the user's collector container beside the training container, as Katib's webhook
/// does: an ordinary container of the pod (it reports to the DBManager itself and ends by
/// itself), the metrics directory shared when there is one, where to report in its
/// environment (what it sets itself is kept), and the pod's containers in one process
/// namespace, so that a collector built like Katib's own sees the training process end.
fn add_custom(
    config: &OperatorConfig,
    spec: &TrialSpec,
    trial: &str,
    custom: &Value,
    dir: Option<&str>,
    template: &mut Value,
) {
    let Some(pod) = template.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let mut collector = custom.clone();
    let Some(c) = collector.as_object_mut() else {
        return;
    };
    let name = c
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or(COLLECTOR_NAME)
        .to_string();
    c.insert("name".into(), Value::String(name.clone()));
    let already = pod
        .get("containers")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|c| c["name"] == name.as_str()));
    if already {
        return;
    }
    if let Some(dir) = dir {
        let Some(mount) = metrics_mount(pod, spec.primary_container_name.as_deref(), dir) else {
            return;
        };
        mount_env(pod, spec.primary_container_name.as_deref(), &mount).add_to(&mut collector);
        let Some(c) = collector.as_object_mut() else {
            return;
        };
        let mounts = c.entry("volumeMounts").or_insert_with(|| json!([]));
        if let Some(mounts) = mounts.as_array_mut() {
            mounts.push(mount);
        }
    }
    let Some(c) = collector.as_object_mut() else {
        return;
    };
    let env = c.entry("env").or_insert_with(|| json!([]));
    if let Some(env) = env.as_array_mut() {
        for (k, v) in custom_env(config, trial) {
            if !env.iter().any(|e| e["name"] == k) {
                env.push(json!({"name": k, "value": v}));
            }
        }
    }
    if let Some(containers) = pod.get_mut("containers").and_then(Value::as_array_mut) {
        containers.push(collector);
    }
    pod.insert("shareProcessNamespace".into(), Value::Bool(true));
}

/// Where a Custom collector reports: Vernier's variable, Katib's `KATIB_DB_MANAGER_SERVICE_*`
/// (`IP.NAMESPACE:PORT`, so an empty namespace), and the trial's name.
fn custom_env(config: &OperatorConfig, trial: &str) -> Vec<(&'static str, String)> {
    let address = &config.db_manager_address;
    let mut env = push_env(config, trial).to_vec();
    if let Some((host, port)) = address.rsplit_once(':') {
        env.push(("KATIB_DB_MANAGER_SERVICE_IP", host.to_string()));
        env.push(("KATIB_DB_MANAGER_SERVICE_PORT", port.to_string()));
        env.push(("KATIB_DB_MANAGER_SERVICE_NAMESPACE", String::new()));
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(collector: Value, pod_labels: Option<Value>) -> TrialSpec {
        let mut spec = json!({
            "objective": {"type": "minimize", "objectiveMetricName": "loss",
                          "additionalMetricNames": ["accuracy"]},
            "primaryContainerName": "training-container",
            "metricsCollector": collector,
        });
        if let Some(labels) = pod_labels {
            spec["primaryPodLabels"] = labels;
        }
        serde_json::from_value(spec).unwrap()
    }

    fn config() -> OperatorConfig {
        OperatorConfig {
            collector_image: "reg.example/vernier:1".into(),
            db_manager_address: "dbm.ns:6789".into(),
            ..OperatorConfig::default()
        }
    }

    fn job() -> Value {
        json!({"apiVersion": "batch/v1", "kind": "Job", "spec": {"template": {"spec": {
            "containers": [
                {"name": "helper", "command": ["sleep", "1"]},
                {"name": "training-container", "command": ["python", "train.py"]}
            ],
            "restartPolicy": "Never"}}}})
    }

    #[test]
    fn file_collector_gets_a_native_sidecar_and_a_shared_empty_dir() {
        let spec = trial(
            json!({"collector": {"kind": "File"}, "source": {
                "fileSystemPath": {"path": "/var/log/katib/metrics.log", "kind": "File", "format": "TEXT"},
                "filter": {"metricsFormat": ["([\\w]+):([\\d.]+)"]}}}),
            None,
        );
        let out = inject(&config(), &spec, "exp-abc", job());
        let pod = &out["spec"]["template"]["spec"];
        assert_eq!(
            pod["volumes"],
            json!([{"name": "metrics-volume", "emptyDir": {}}])
        );
        let mount = json!([{"name": "metrics-volume", "mountPath": "/var/log/katib"}]);
        assert_eq!(pod["containers"][1]["volumeMounts"], mount);
        assert!(pod["containers"][0].get("volumeMounts").is_none());
        let sidecar = &pod["initContainers"][0];
        assert_eq!(sidecar["name"], FILE_COLLECTOR_NAME);
        assert_eq!(sidecar["restartPolicy"], "Always");
        assert_eq!(sidecar["image"], "reg.example/vernier:1");
        assert_eq!(sidecar["volumeMounts"], mount);
        assert_eq!(
            sidecar["command"],
            json!([
                "vernier",
                "collect",
                "--trial",
                "exp-abc",
                "--metric-names",
                "loss,accuracy",
                "--kind",
                "File",
                "--path",
                "/var/log/katib/metrics.log",
                "--db-manager-address",
                "dbm.ns:6789",
                "--file-format",
                "TEXT",
                "--metrics-format",
                "([\\w]+):([\\d.]+)",
                "--started-file",
                "/var/log/katib/.vernier-collect-exp-abc.started"
            ])
        );
        // Rendering twice (a retried create) does not add a second sidecar.
        let again = inject(&config(), &spec, "exp-abc", out.clone());
        assert_eq!(again, out);
    }

    #[test]
    fn an_existing_mount_over_the_directory_is_shared_instead() {
        let spec = trial(
            json!({"collector": {"kind": "TensorFlowEvent"}, "source": {
                "fileSystemPath": {"path": "/data/logs/tfevent/", "kind": "Directory"}}}),
            None,
        );
        let mut job = job();
        job["spec"]["template"]["spec"]["containers"][1]["volumeMounts"] = json!([{"name": "data", "mountPath": "/data", "readOnly": true},
                   {"name": "other", "mountPath": "/data/log"}]);
        job["spec"]["template"]["spec"]["volumes"] =
            json!([{"name": "data", "persistentVolumeClaim": {"claimName": "c"}}]);
        let out = inject(&config(), &spec, "t", job);
        let pod = &out["spec"]["template"]["spec"];
        assert_eq!(pod["volumes"].as_array().unwrap().len(), 1);
        let sidecar = &pod["initContainers"][0];
        assert_eq!(sidecar["name"], COLLECTOR_NAME);
        assert_eq!(
            sidecar["volumeMounts"],
            json!([{"name": "data", "mountPath": "/data"}])
        );
        let command: Vec<&str> = sidecar["command"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert!(
            command.ends_with(&[
                "--started-file",
                "/data/logs/tfevent/.vernier-collect-t.started"
            ]),
            "{command:?}"
        );
        assert_eq!(
            sidecar["startupProbe"]["exec"]["command"],
            json!([
                "test",
                "-e",
                "/data/logs/tfevent/.vernier-collect-t.started"
            ])
        );
        assert!(command.contains(&"TensorFlowEvent") && command.contains(&"/data/logs/tfevent/"));
    }

    /// A shared mount with `subPathExpr` brings the variables it expands (and those they
    /// name) to the sidecar: the kubelet expands it from the sidecar's own environment.
    #[test]
    fn a_shared_mount_with_a_sub_path_expression_brings_its_variables() {
        let spec = trial(
            json!({"collector": {"kind": "File"}, "source": {"fileSystemPath": {
                "path": "/output/logs/metrics.log", "kind": "File", "format": "TEXT"}}}),
            None,
        );
        let mut job = job();
        let main = &mut job["spec"]["template"]["spec"]["containers"][1];
        main["volumeMounts"] =
            json!([{"name": "work", "mountPath": "/output", "subPathExpr": "$(RUN)/$$(LIT)"}]);
        main["env"] = json!([
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "UNRELATED", "value": "x"},
            {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory"}}},
            {"name": "RUN", "value": "run-$(POD_NAME)-$(MEM)"},
        ]);
        let out = inject(&config(), &spec, "t", job.clone());
        let sidecar = &out["spec"]["template"]["spec"]["initContainers"][0];
        // The primary's memory limit, not the sidecar's: its container is named in the copy.
        let main_name = job["spec"]["template"]["spec"]["containers"][1]["name"].clone();
        assert_eq!(
            sidecar["env"],
            json!([
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "MEM", "valueFrom": {"resourceFieldRef": {
                    "resource": "limits.memory", "containerName": main_name}}},
                {"name": "RUN", "value": "run-$(POD_NAME)-$(MEM)"},
            ])
        );
        assert!(sidecar.get("envFrom").is_none(), "{sidecar:#}");
        // A variable not in `env` may come from `envFrom`, which goes along.
        let main = &mut job["spec"]["template"]["spec"]["containers"][1];
        main["volumeMounts"][0]["subPathExpr"] = json!("$(FROM_MAP)");
        main["envFrom"] = json!([{"configMapRef": {"name": "paths"}}]);
        let out = inject(&config(), &spec, "t", job);
        let sidecar = &out["spec"]["template"]["spec"]["initContainers"][0];
        assert!(sidecar.get("env").is_none(), "{sidecar:#}");
        assert_eq!(
            sidecar["envFrom"],
            json!([{"configMapRef": {"name": "paths"}}])
        );
    }

    #[test]
    fn references_are_read_as_the_kubelet_expands_them() {
        let table: [(&str, &[&str]); 6] = [
            ("$(A)", &["A"]),
            ("$(A)/$(B)/$(A)", &["A", "B"]),
            ("$$(A)", &[]),
            ("$$$(A)", &["A"]),
            ("$(A", &[]),
            ("plain", &[]),
        ];
        for (text, want) in table {
            assert_eq!(references(text), want, "{text}");
        }
    }

    #[test]
    fn kubeflow_jobs_get_it_on_the_primary_replica_with_a_runtime_label_check() {
        let spec = trial(
            json!({"collector": {"kind": "File"}, "source": {"fileSystemPath": {
                "path": "/m/metrics.json", "kind": "File", "format": "JSON"}}}),
            Some(json!({"training.kubeflow.org/job-role": "master"})),
        );
        let template = json!({"spec": {"containers": [{"name": "pytorch", "command": ["train"]}]}});
        let job = json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": template},
                "Worker": {"replicas": 2, "template": template}}}});
        let out = inject(&config(), &spec, "t", job);
        let specs = &out["spec"]["pytorchReplicaSpecs"];
        assert!(
            specs["Worker"]["template"]["spec"]
                .get("initContainers")
                .is_none()
        );
        let pod = &specs["Master"]["template"]["spec"];
        assert_eq!(
            pod["containers"][0]["volumeMounts"],
            json!([{"name": "metrics-volume", "mountPath": "/m"}])
        );
        let sidecar = &pod["initContainers"][0];
        assert_eq!(
            sidecar["env"],
            json!([{"name": "VERNIER_PRIMARY_LABEL_0", "valueFrom": {"fieldRef": {
                "fieldPath": "metadata.labels['training.kubeflow.org/job-role']"}}}])
        );
        let command = sidecar["command"].as_array().unwrap();
        let tail: Vec<&str> = command[command.len() - 5..]
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(
            tail,
            vec![
                "/m/.vernier-collect-t.started",
                "--primary-label",
                "training.kubeflow.org/job-role=master",
                "--pod-label",
                "training.kubeflow.org/job-role=$(VERNIER_PRIMARY_LABEL_0)"
            ]
        );
    }

    /// As under the shell Katib's webhook adds for a StdOut, File or TensorFlowEvent trial,
    /// the primary container's words lose the quotes Katib's NAS examples put around a
    /// parameter; other collectors' and other containers' words are left as written, and
    /// rendering twice changes nothing more.
    #[test]
    fn the_primary_containers_words_lose_the_quotes_katibs_shell_takes() {
        let with = |command: Value| {
            let mut j = job();
            j["spec"]["template"]["spec"]["containers"][0]["command"] = command.clone();
            j["spec"]["template"]["spec"]["containers"][1]["command"] = command;
            j
        };
        let run = |collector: Value, j: Value| {
            let out = inject(&config(), &trial(collector, None), "t", j);
            let c = &out["spec"]["template"]["spec"]["containers"];
            (c[1]["command"].clone(), c[0]["command"].clone(), out)
        };
        let nas = with(json!([
            "python3",
            "RunTrial.py",
            "--arch=\"[[3], [0, 1]]\"",
            "-c",
            "print('a b')"
        ]));
        let unquoted = json!([
            "python3",
            "RunTrial.py",
            "--arch=[[3], [0, 1]]",
            "-c",
            "print('a b')"
        ]);
        let (primary, helper, once) = run(json!({"collector": {"kind": "StdOut"}}), nas.clone());
        assert_eq!(primary, unquoted);
        assert_eq!(
            helper,
            nas["spec"]["template"]["spec"]["containers"][0]["command"]
        );
        assert_eq!(
            run(json!({"collector": {"kind": "StdOut"}}), once.clone()).2,
            once
        );
        let tfevent = json!({"collector": {"kind": "TensorFlowEvent"},
            "source": {"fileSystemPath": {"path": "/var/log/katib/tfevent/", "kind": "Directory"}}});
        assert_eq!(run(tfevent, nas.clone()).0, unquoted);
        let push = run(json!({"collector": {"kind": "Push"}}), nas.clone());
        assert_eq!(
            push.0,
            nas["spec"]["template"]["spec"]["containers"][1]["command"]
        );
    }

    /// Katib's pod webhook names the trial in its primary container whatever the collector
    /// (its SDK and trainers that tag their runs read it), except with the `None` collector,
    /// whose pods it leaves alone; a container that sets it keeps its own.
    #[test]
    fn every_trial_learns_its_name_but_none_is_left_alone() {
        let named = |name: &str| {
            let mut j = job();
            let c = &mut j["spec"]["template"]["spec"]["containers"][1];
            c["env"] = json!([{"name": "KATIB_TRIAL_NAME", "value": name}]);
            j
        };
        let stdout = trial(json!({"collector": {"kind": "StdOut"}}), None);
        assert_eq!(inject(&config(), &stdout, "t", job()), named("t"));
        assert_eq!(
            inject(&config(), &stdout, "t", named("mine")),
            named("mine")
        );
        let none = trial(json!({"collector": {"kind": "None"}}), None);
        assert_eq!(inject(&config(), &none, "t", job()), job());
    }

    /// Katib's webhook gives a Push trial its name; the SDK's report_metrics needs it.
    #[test]
    fn a_push_trial_learns_its_name_and_where_to_push() {
        let spec = trial(json!({"collector": {"kind": "Push"}}), None);
        let out = inject(&config(), &spec, "exp-abc", job());
        let pod = &out["spec"]["template"]["spec"];
        assert!(pod.get("initContainers").is_none());
        assert!(pod["containers"][0].get("env").is_none(), "{pod:#}");
        let env = pod["containers"][1]["env"].as_array().expect("env");
        let value = |name: &str| {
            env.iter()
                .find(|e| e["name"] == name)
                .map(|e| e["value"].clone())
        };
        assert_eq!(value("KATIB_TRIAL_NAME"), Some(json!("exp-abc")));
        assert_eq!(
            value("VERNIER_DB_MANAGER_ADDRESS"),
            Some(json!(config().db_manager_address))
        );
    }

    #[test]
    fn a_custom_collector_joins_the_pod_with_the_metrics_directory_and_the_db_manager() {
        let spec = trial(
            json!({"collector": {"kind": "Custom", "customCollector": {
                "name": "my-collector", "image": "reg.example/collector:1",
                "args": ["-path", "/katib/mnist.log"],
                "env": [{"name": "KATIB_TRIAL_NAME", "value": "mine"}]}},
                "source": {"fileSystemPath": {"path": "/katib/mnist.log", "kind": "File"}}}),
            None,
        );
        let out = inject(&config(), &spec, "exp-abc", job());
        let pod = &out["spec"]["template"]["spec"];
        assert!(pod.get("initContainers").is_none());
        let mount = json!([{"name": "metrics-volume", "mountPath": "/katib"}]);
        assert_eq!(pod["containers"][1]["volumeMounts"], mount);
        let collector = &pod["containers"][2];
        assert_eq!(
            pod["shareProcessNamespace"], true,
            "as Katib's webhook sets it"
        );
        assert_eq!(collector["name"], "my-collector");
        assert_eq!(collector["image"], "reg.example/collector:1");
        assert_eq!(collector["args"], json!(["-path", "/katib/mnist.log"]));
        assert_eq!(collector["volumeMounts"], mount);
        assert_eq!(
            collector["env"],
            json!([
                {"name": "KATIB_TRIAL_NAME", "value": "mine"},
                {"name": "VERNIER_DB_MANAGER_ADDRESS", "value": "dbm.ns:6789"},
                {"name": "KATIB_DB_MANAGER_SERVICE_IP", "value": "dbm.ns"},
                {"name": "KATIB_DB_MANAGER_SERVICE_PORT", "value": "6789"},
                {"name": "KATIB_DB_MANAGER_SERVICE_NAMESPACE", "value": ""}
            ])
        );
        // Rendering twice (a retried create) does not add a second collector.
        assert_eq!(inject(&config(), &spec, "exp-abc", out.clone()), out);
        // Without a fileSystemPath nothing is shared.
        let spec = trial(
            json!({"collector": {"kind": "Custom", "customCollector": {
                "name": "my-collector", "image": "reg.example/collector:1"}}}),
            None,
        );
        let out = inject(&config(), &spec, "exp-abc", job());
        let pod = &out["spec"]["template"]["spec"];
        assert!(pod.get("volumes").is_none());
        assert!(pod["containers"][2].get("volumeMounts").is_none());
        // A Directory is shared itself, not its parent.
        let spec = trial(
            json!({"collector": {"kind": "Custom", "customCollector": {
                "name": "my-collector", "image": "reg.example/collector:1"}},
                "source": {"fileSystemPath": {"path": "/katib/out/", "kind": "Directory"}}}),
            None,
        );
        let out = inject(&config(), &spec, "exp-abc", job());
        let pod = &out["spec"]["template"]["spec"];
        let mount = json!([{"name": "metrics-volume", "mountPath": "/katib/out"}]);
        assert_eq!(pod["containers"][2]["volumeMounts"], mount);
    }
}
