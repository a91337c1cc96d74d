//! Finds the primary container in a rendered trial spec of any kind, since local mode runs that
//! container's command as a process instead of submitting the object to Kubernetes.

use super::downward_api::{PodFacts, PodValue, is_optional, pod_value};
use super::expansion::{expand, expand_words, lookup};
use super::shell_quotes::unquote_katib_words;
use crate::error::SpecError;
use serde_json::Value;

/// What local mode needs from the primary container. The image is informational only.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ContainerSpec {
    pub name: String,
    /// The container's field path in the experiment file, for messages about it.
    pub path: String,
    pub image: Option<String>,
    pub command: Vec<String>,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub working_dir: Option<String>,
    pub resources: Option<Value>,
    /// `volumeMounts` as written ([`super::mounts::volume_mounts`] reads them).
    pub volume_mounts: Option<Value>,
    /// `command` and `args` as written, before `$(VAR)` expansion ([`Self::append_env`]).
    written: (Vec<String>, Vec<String>),
    /// `env` as written ([`Self::for_pod`]).
    written_env: Vec<(String, EnvValue)>,
}

/// One env entry as written: a literal `value`, expanded against the entries before it, or
/// a value the pod gives (the downward API), taken as it is.
#[derive(Debug, Clone, PartialEq)]
enum EnvValue {
    Literal(String),
    Pod(PodValue),
}

impl ContainerSpec {
    /// Appends `extra` to the environment, as a training operator appends its variables
    /// (`MASTER_ADDR`, `RANK`, `TF_CONFIG`, ...) to the container's own, and expands `command`
    /// and `args` again from what was written against the whole environment: the kubelet
    /// expands them after the operator has added its variables, and the later definition of
    /// a name wins, so `--rank=$(RANK)` sees the operator's value.
    pub fn append_env(&mut self, extra: impl IntoIterator<Item = (String, String)>) {
        self.env.extend(extra);
        let (mut command, mut args) = self.written.clone();
        expand_words(&self.env, &mut command, &mut args);
        (self.command, self.args) = (command, args);
    }

    /// Resolves the variables the pod gives (`fieldRef`, `resourceFieldRef`) for pod `pod`
    /// and expands `env`, `command` and `args` again: until then those variables are empty.
    /// Called before [`Self::append_env`], as the kubelet resolves the container's own env
    /// before anything runs.
    pub fn for_pod(&mut self, pod: &PodFacts) {
        let own = self
            .written_env
            .iter()
            .filter(|(_, v)| *v != EnvValue::Pod(PodValue::Unset))
            .count();
        let appended = self.env.split_off(own.min(self.env.len()));
        self.env = resolve_env(&self.written_env, Some(pod), self.resources.as_ref());
        self.append_env(appended);
    }

    /// `command` and `args` as the shell Katib's webhook runs the primary container of a
    /// StdOut, File or TensorFlowEvent trial under reads them ([`unquote_katib_words`]).
    /// Called once the environment is complete.
    pub fn unquote_as_katibs_shell(&mut self) {
        unquote_katib_words(&mut self.command, &mut self.args);
    }
}

/// Searches `run_spec` depth-first (in document order) for the first `containers` array that
/// holds a container named `primary_container_name`. Works for a Job's
/// `spec.template.spec.containers`, a TFJob's replica specs, or any CRD embedding a pod spec.
pub fn primary_container(
    run_spec: &Value,
    primary_container_name: &str,
) -> Result<ContainerSpec, SpecError> {
    let (path, c) = locate(run_spec, primary_container_name)?;
    container_from(c, primary_container_name, &path)
}

/// The pod template (`metadata` and `spec`) whose `spec.containers` holds the container
/// named `primary_container_name`, the first in document order as [`primary_container`]
/// finds it: what the downward API reads of the trial's pod.
pub fn pod_template_of<'a>(run_spec: &'a Value, primary_container_name: &str) -> Option<&'a Value> {
    match run_spec {
        Value::Object(map) => {
            let containers = run_spec
                .pointer("/spec/containers")
                .and_then(Value::as_array);
            let holds = containers
                .into_iter()
                .flatten()
                .any(|c| c.get("name").and_then(Value::as_str) == Some(primary_container_name));
            if holds {
                return Some(run_spec);
            }
            map.iter()
                .filter(|(k, _)| k.as_str() != "containers")
                .find_map(|(_, child)| pod_template_of(child, primary_container_name))
        }
        Value::Array(items) => items
            .iter()
            .find_map(|child| pod_template_of(child, primary_container_name)),
        _ => None,
    }
}

/// Every local blocker ([`local_blockers`]) of the primary container, or why there is no
/// such container: what [`primary_container`] would refuse, all of it at once.
pub fn primary_container_blockers(
    run_spec: &Value,
    primary_container_name: &str,
) -> Vec<SpecError> {
    match locate(run_spec, primary_container_name) {
        Ok((path, c)) => local_blockers(c, &path),
        Err(e) => vec![e],
    }
}

/// Checks that some `containers` list of `run_spec` holds a container named
/// `primary_container_name`, whatever that container runs: the cluster-side check, where the
/// metrics collector attaches to that container.
pub fn check_primary_container(
    run_spec: &Value,
    primary_container_name: &str,
) -> Result<(), SpecError> {
    locate(run_spec, primary_container_name).map(|_| ())
}

fn locate<'a>(
    run_spec: &'a Value,
    primary_container_name: &str,
) -> Result<(String, &'a Value), SpecError> {
    let mut seen = Vec::new();
    // Paths point into the experiment file, where the user would fix the problem.
    let root = "spec.trialTemplate.trialSpec".to_string();
    find(run_spec, primary_container_name, root, &mut seen).ok_or_else(|| {
        let hint = if seen.is_empty() {
            "the trial spec has no containers".to_string()
        } else {
            format!("containers found: {}", seen.join(", "))
        };
        SpecError::new(
            "spec.trialTemplate.primaryContainerName",
            format!(
                "no container named {primary_container_name:?} in the trial spec; hint: {hint}"
            ),
        )
    })
}

/// The parts of one container object (at field path `path`) that local mode runs: the primary
/// container, or the `Custom` metrics collector's container; `$(VAR)` references expanded as
/// the kubelet expands them. The error is the first of [`local_blockers`].
pub fn container_from(c: &Value, name: &str, path: &str) -> Result<ContainerSpec, SpecError> {
    if let Some(first) = local_blockers(c, path).into_iter().next() {
        return Err(first);
    }
    let strings = |field: &str| strings(c, field, path).unwrap_or_default();
    let (mut command, mut args) = (strings("command"), strings("args"));
    let written = (command.clone(), args.clone());
    let written_env = env(c, path);
    let resources = c.get("resources").cloned();
    let env = resolve_env(&written_env, None, resources.as_ref());
    expand_words(&env, &mut command, &mut args);
    Ok(ContainerSpec {
        name: name.to_string(),
        path: path.to_string(),
        image: c.get("image").and_then(Value::as_str).map(str::to_string),
        command,
        args,
        env,
        working_dir: c
            .get("workingDir")
            .and_then(Value::as_str)
            .map(str::to_string),
        resources,
        volume_mounts: c.get("volumeMounts").cloned(),
        written,
        written_env,
    })
}

/// Everything in one container (at field path `path`) that keeps local mode from running it
/// as a process, each naming its field: `envFrom`, a `valueFrom` other than the downward
/// API's (or one the API server refuses), and a command that is missing, not a list of
/// strings, or only arguments to the image's entrypoint. All are listed, so `validate` shows
/// every problem of a file at once.
pub fn local_blockers(c: &Value, path: &str) -> Vec<SpecError> {
    let mut out = Vec::new();
    let sources = c.get("envFrom").and_then(Value::as_array);
    let required = sources.into_iter().flatten().any(|source| {
        let reference = source
            .get("configMapRef")
            .or_else(|| source.get("secretRef"));
        !is_optional(reference)
    });
    if required {
        out.push(SpecError::new(
            format!("{path}.envFrom"),
            "takes variables from a ConfigMap or Secret, which needs Kubernetes; \
             hint: list the variables under env with literal values to run locally (or mark \
             the reference optional: true, to run without them)",
        ));
    }
    let items = c.get("env").and_then(Value::as_array);
    for (i, e) in items.into_iter().flatten().enumerate() {
        out.extend(pod_value(e, &format!("{path}.env[{i}]")).err());
    }
    match (strings(c, "command", path), strings(c, "args", path)) {
        (Ok(command), Ok(args)) => out.extend(command_blocker(&command, &args, path)),
        (command, args) => out.extend(command.err().into_iter().chain(args.err())),
    }
    out
}

/// Why a container with this `command` and `args` runs the image's entrypoint, if it does.
fn command_blocker(command: &[String], args: &[String], path: &str) -> Option<SpecError> {
    if command.is_empty() && args.is_empty() {
        return Some(SpecError::new(
            format!("{path}.command"),
            "is empty, so the image's entrypoint would run, which local mode cannot do; \
             hint: set command (and args) on the primary container",
        ));
    }
    // Without a command, args run as the program, as in an image with no ENTRYPOINT; an
    // option or a parameter value first can only be arguments to an entrypoint.
    let first = args
        .first()
        .filter(|a| command.is_empty() && !could_be_program(a))?;
    Some(SpecError::new(
        format!("{path}.command"),
        format!(
            "is empty and args starts with {first:?}, an argument rather than a program, \
             so the image's entrypoint would run with args, which local mode cannot do; \
             hint: set command to what the image's entrypoint runs (e.g. [python3, train.py])"
        ),
    ))
}

/// A container's `command` or `args` as strings; absent is empty.
fn strings(c: &Value, field: &str, path: &str) -> Result<Vec<String>, SpecError> {
    match c.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_str().map(str::to_string).ok_or_else(|| {
                    SpecError::new(
                        format!("{path}.{field}[{i}]"),
                        format!("value {v} is not a string; hint: quote it"),
                    )
                })
            })
            .collect(),
        Some(v) => Err(SpecError::new(
            format!("{path}.{field}"),
            format!("value {v} is not a list of strings"),
        )),
    }
}

/// Whether the first of args may name a program: not an option, not a parameter value.
fn could_be_program(arg: &str) -> bool {
    let arg = arg.trim();
    !arg.is_empty() && !arg.starts_with('-') && !arg.contains("${")
}

/// The env entries as written (after [`local_blockers`] has refused a `valueFrom` local mode
/// cannot resolve).
fn env(c: &Value, path: &str) -> Vec<(String, EnvValue)> {
    let items = c.get("env").and_then(Value::as_array);
    items
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, e)| {
            let name = e.get("name").and_then(Value::as_str).unwrap_or("");
            let from_pod = pod_value(e, &format!("{path}.env[{i}]")).ok().flatten();
            let value = match (from_pod, e.get("value")) {
                (Some(pod), _) => EnvValue::Pod(pod),
                (None, None | Some(Value::Null)) => EnvValue::Literal(String::new()),
                (None, Some(Value::String(s))) => EnvValue::Literal(s.clone()),
                (None, Some(v)) => EnvValue::Literal(v.to_string()),
            };
            (name.to_string(), value)
        })
        .collect()
}

/// The env of a container whose own `resources` are `own` in pod `pod` (the pod's variables
/// empty without one), each literal value expanded against the entries before it.
fn resolve_env(
    written: &[(String, EnvValue)],
    pod: Option<&PodFacts>,
    own: Option<&Value>,
) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = Vec::with_capacity(written.len());
    for (name, value) in written {
        let value = match value {
            EnvValue::Pod(PodValue::Unset) => continue,
            EnvValue::Literal(text) => expand(text, |n| lookup(&env, n)),
            EnvValue::Pod(from) => pod.map(|p| from.resolve(p, own)).unwrap_or_default(),
        };
        env.push((name.clone(), value));
    }
    env
}

/// Returns the JSON path and the container; records every container name seen for the hint.
fn find<'a>(
    v: &'a Value,
    wanted: &str,
    path: String,
    seen: &mut Vec<String>,
) -> Option<(String, &'a Value)> {
    let join = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    match v {
        Value::Object(map) => {
            if let Some(Value::Array(items)) = map.get("containers") {
                for (i, c) in items.iter().enumerate() {
                    let name = c.get("name").and_then(Value::as_str);
                    if name == Some(wanted) {
                        return Some((format!("{}[{i}]", join("containers")), c));
                    }
                    seen.push(match name {
                        Some(n) => n.to_string(),
                        None => format!("one without a name at {}[{i}]", join("containers")),
                    });
                }
            }
            map.iter()
                .filter(|(k, _)| k.as_str() != "containers")
                .find_map(|(k, child)| find(child, wanted, join(k), seen))
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, child)| find(child, wanted, format!("{path}[{i}]"), seen)),
        _ => None,
    }
}
