//! Finds the primary container in a rendered trial spec of any kind, since local mode runs that
//! container's command as a process instead of submitting the object to Kubernetes.

use super::expansion::expand_container;
use crate::error::SpecError;
use serde_json::Value;

/// What local mode needs from the primary container. The image is informational only.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ContainerSpec {
    pub name: String,
    pub image: Option<String>,
    pub command: Vec<String>,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub working_dir: Option<String>,
    pub resources: Option<Value>,
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
/// the kubelet expands them.
pub fn container_from(c: &Value, name: &str, path: &str) -> Result<ContainerSpec, SpecError> {
    let strings = |field: &str| -> Result<Vec<String>, SpecError> {
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
    };
    if c.get("envFrom").is_some_and(|v| !v.is_null()) {
        return Err(SpecError::new(
            format!("{path}.envFrom"),
            "takes variables from a ConfigMap or Secret, which needs Kubernetes; \
             hint: list the variables under env with literal values to run locally",
        ));
    }
    let command = strings("command")?;
    let args = strings("args")?;
    if command.is_empty() && args.is_empty() {
        return Err(SpecError::new(
            format!("{path}.command"),
            "is empty, so the image's entrypoint would run, which local mode cannot do; \
             hint: set command (and args) on the primary container",
        ));
    }
    // Without a command, args run as the program, as in an image with no ENTRYPOINT; an
    // option or a parameter value first can only be arguments to an entrypoint.
    if let Some(first) = args
        .first()
        .filter(|a| command.is_empty() && !could_be_program(a))
    {
        return Err(SpecError::new(
            format!("{path}.command"),
            format!(
                "is empty and args starts with {first:?}, an argument rather than a program, \
                 so the image's entrypoint would run with args, which local mode cannot do; \
                 hint: set command to what the image's entrypoint runs (e.g. [python3, train.py])"
            ),
        ));
    }
    let (mut command, mut args, mut env) = (command, args, env(c, path)?);
    expand_container(&mut env, &mut command, &mut args);
    Ok(ContainerSpec {
        name: name.to_string(),
        image: c.get("image").and_then(Value::as_str).map(str::to_string),
        command,
        args,
        env,
        working_dir: c
            .get("workingDir")
            .and_then(Value::as_str)
            .map(str::to_string),
        resources: c.get("resources").cloned(),
    })
}

/// Whether the first of args may name a program: not an option, not a parameter value.
fn could_be_program(arg: &str) -> bool {
    let arg = arg.trim();
    !arg.is_empty() && !arg.starts_with('-') && !arg.contains("${")
}

fn env(c: &Value, path: &str) -> Result<Vec<(String, String)>, SpecError> {
    let Some(items) = c.get("env").and_then(Value::as_array) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, e) in items.iter().enumerate() {
        let epath = format!("{path}.env[{i}]");
        let name = e.get("name").and_then(Value::as_str).unwrap_or("");
        if e.get("valueFrom").is_some() {
            return Err(SpecError::new(
                format!("{epath}.valueFrom"),
                format!(
                    "env var {name:?} uses valueFrom, which needs Kubernetes; \
                     hint: give it a literal value to run locally"
                ),
            ));
        }
        let value = match e.get("value") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
        };
        out.push((name.to_string(), value));
    }
    Ok(out)
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
