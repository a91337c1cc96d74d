//! Running a container's `command` + `args` as a local process, the part of a kubelet the
//! simulation needs: no shell, environment from the container spec (values, and `fieldRef`s
//! to the pod's metadata), `$(VAR)` references expanded as Kubernetes does, stdout and stderr
//! into the pod log through one pipe, so the log keeps the order the process wrote in (two
//! pipes read by two tasks could interleave a late stderr line before earlier stdout). The
//! process is killed when its task is dropped (job deleted).

use crate::logs::LogSink;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;
use tokio::sync::watch;

/// How a container ended, as its `state.terminated` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Termination {
    /// Exit code (128 + signal for a killed process).
    pub exit_code: i32,
    /// `Completed`, `Error`, `StartError`, `ContainerCannotRun`.
    pub reason: String,
    /// Extra text for the container status.
    pub message: String,
}

impl Termination {
    /// Did the container succeed?
    pub fn succeeded(&self) -> bool {
        self.exit_code == 0
    }

    /// A termination with the reason the kubelet gives an exit code.
    pub fn from_exit_code(exit_code: i32, message: String) -> Self {
        Termination {
            exit_code,
            reason: if exit_code == 0 { "Completed" } else { "Error" }.to_owned(),
            message,
        }
    }
}

/// Run `container` of `pod` to completion, writing its output to `sink`.
pub async fn run_container(container: &Value, pod: &Value, sink: LogSink) -> Termination {
    match start_container(container, pod, sink, &[]) {
        Ok(started) => started.wait(None).await,
        Err(ended) => ended,
    }
}

/// A container whose process has been spawned.
#[derive(Debug)]
pub struct Started {
    child: tokio::process::Child,
    sink: LogSink,
    /// The read end of the pipe the process has as both stdout and stderr.
    output: std::io::PipeReader,
}

/// Spawn `container`'s process; a program without a `/` is looked for in `program_dirs`
/// first (the image's binaries), then on the test process's `PATH`. A container that cannot
/// start ends at once, its reason in the log.
pub fn start_container(
    container: &Value,
    pod: &Value,
    sink: LogSink,
    program_dirs: &[PathBuf],
) -> Result<Started, Termination> {
    let env = environment(container, pod);
    let words: Vec<String> = ["command", "args"]
        .iter()
        .flat_map(|field| {
            container
                .get(*field)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|v| v.as_str().map(|s| expand(s, &env)))
        .collect();
    let name = container.get("name").and_then(Value::as_str).unwrap_or("?");
    let Some((program, args)) = words.split_first() else {
        let message = format!(
            "kube double: container {name} has no command; the simulated kubelet cannot run an image's entrypoint (hint: set command in the pod template)\n"
        );
        return Err(cannot_start(&sink, "ContainerCannotRun", message));
    };
    let resolved = resolve_program(program, program_dirs);
    let pipe = std::io::pipe().and_then(|(read, write)| Ok((read, write.try_clone()?, write)));
    let (output, stdout, stderr) = match pipe {
        Ok(ends) => ends,
        Err(e) => {
            let message = format!("kube double: cannot make the log pipe: {e}\n");
            return Err(cannot_start(&sink, "StartError", message));
        }
    };
    let mut command = tokio::process::Command::new(resolved);
    command
        .args(args)
        .envs(&env)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .kill_on_drop(true);
    if let Some(dir) = container.get("workingDir").and_then(Value::as_str)
        && std::path::Path::new(dir).is_dir()
    {
        command.current_dir(dir);
    }
    let spawned = command.spawn();
    // The write ends must close here, or the log would never reach its end.
    drop(command);
    match spawned {
        Ok(child) => Ok(Started {
            child,
            sink,
            output,
        }),
        Err(e) => Err(cannot_start(
            &sink,
            "StartError",
            format!("exec: {program:?}: {e}\n"),
        )),
    }
}

/// A container that never ran: its reason is the whole log, and it ends as the kubelet
/// reports such a container (exit code 128).
fn cannot_start(sink: &LogSink, reason: &str, message: String) -> Termination {
    sink.write(message.as_bytes());
    sink.finish();
    Termination {
        exit_code: 128,
        reason: reason.to_owned(),
        message,
    }
}

/// Copies the process's output to the log until every writer has closed the pipe.
fn copy_to(mut output: std::io::PipeReader, sink: &LogSink) {
    use std::io::Read;
    let mut buffer = vec![0u8; 8192];
    while let Ok(n) = output.read(&mut buffer) {
        if n == 0 {
            break;
        }
        sink.write(&buffer[..n]);
    }
}

impl Started {
    /// Copy the output to the log until the process exits. When `stop` turns true the process
    /// gets SIGTERM, as the kubelet stops a sidecar; a process still there after `grace`
    /// gets SIGKILL.
    pub async fn wait(self, stop: Option<(watch::Receiver<bool>, Duration)>) -> Termination {
        let Started {
            mut child,
            sink,
            output,
        } = self;
        let copy = tokio::task::spawn_blocking({
            let sink = sink.clone();
            move || copy_to(output, &sink)
        });
        let exited = async {
            let Some((mut stop, grace)) = stop else {
                return child.wait().await;
            };
            tokio::select! {
                status = child.wait() => return status,
                _ = stop.wait_for(|s| *s) => {}
            }
            if let Some(pid) = child.id().and_then(|id| i32::try_from(id).ok()) {
                // ESRCH: it exited meanwhile, which `wait` below reports.
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGTERM,
                );
            }
            match tokio::time::timeout(grace, child.wait()).await {
                Ok(status) => status,
                Err(_) => {
                    let _ = child.start_kill();
                    child.wait().await
                }
            }
        };
        let (_, status) = tokio::join!(copy, exited);
        sink.finish();
        match status {
            Ok(status) => {
                use std::os::unix::process::ExitStatusExt;
                let code = status
                    .code()
                    .or_else(|| status.signal().map(|s| 128 + s))
                    .unwrap_or(1);
                Termination::from_exit_code(code, String::new())
            }
            Err(e) => {
                Termination::from_exit_code(1, format!("waiting for the process failed: {e}"))
            }
        }
    }
}

/// Run a container's `startupProbe.exec` command once (with the container's environment, and
/// its `volumeMounts` so the caller can rewrite paths); did it exit 0?
pub async fn probe_once(container: &Value, pod: &Value, program_dirs: &[PathBuf]) -> bool {
    let Some(command) = container
        .pointer("/startupProbe/exec/command")
        .and_then(Value::as_array)
    else {
        return true;
    };
    let env = environment(container, pod);
    let words: Vec<String> = command
        .iter()
        .filter_map(|v| v.as_str().map(|s| expand(s, &env)))
        .collect();
    let Some((program, args)) = words.split_first() else {
        return false;
    };
    let resolved = resolve_program(program, program_dirs);
    tokio::process::Command::new(resolved)
        .args(args)
        .envs(&env)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .status()
        .await
        .is_ok_and(|s| s.success())
}

/// The container's environment: the simulation's own (so `PATH` finds interpreters), then
/// the spec's `env` in order, later entries seeing earlier ones in `$(VAR)`.
fn environment(container: &Value, pod: &Value) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    for entry in container
        .get("env")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(name) = entry.get("name").and_then(Value::as_str) else {
            continue;
        };
        let value = if let Some(value) = entry.get("value").and_then(Value::as_str) {
            Some(expand(value, &env))
        } else {
            entry
                .pointer("/valueFrom/fieldRef/fieldPath")
                .and_then(Value::as_str)
                .and_then(|path| field_ref(pod, path))
        };
        if let Some(value) = value {
            env.insert(name.to_owned(), value);
        }
    }
    env
}

/// Resolve a downward-API `fieldPath` against the pod.
fn field_ref(pod: &Value, path: &str) -> Option<String> {
    for (prefix, map) in [
        ("metadata.labels['", "labels"),
        ("metadata.annotations['", "annotations"),
    ] {
        if let Some(key) = path.strip_prefix(prefix).and_then(|k| k.strip_suffix("']")) {
            return pod
                .pointer(&format!("/metadata/{map}"))
                .and_then(|m| m.get(key))
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
    }
    let pointer = format!("/{}", path.replace('.', "/"));
    pod.pointer(&pointer)
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// Kubernetes' `$(VAR)` expansion: defined variables are replaced, `$$` is a literal `$`,
/// undefined references stay as written.
fn expand(text: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(stripped) = after.strip_prefix('$') {
            out.push('$');
            rest = stripped;
        } else if let Some(inner) = after.strip_prefix('(') {
            match inner.find(')') {
                Some(close) if env.contains_key(&inner[..close]) => {
                    out.push_str(&env[&inner[..close]]);
                    rest = &inner[close + 1..];
                }
                _ => {
                    out.push('$');
                    rest = after;
                }
            }
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// A bare program name is looked up in `program_dirs` first (test binaries standing in for the
/// images' programs), then left to the PATH.
fn resolve_program(program: &str, program_dirs: &[PathBuf]) -> PathBuf {
    (!program.contains('/'))
        .then(|| {
            program_dirs
                .iter()
                .map(|d| d.join(program))
                .find(|p| p.is_file())
        })
        .flatten()
        .unwrap_or_else(|| PathBuf::from(program))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn variable_references_expand_like_kubernetes() {
        let env = BTreeMap::from([("LR".to_owned(), "0.1".to_owned())]);
        assert_eq!(expand("--lr=$(LR)", &env), "--lr=0.1");
        assert_eq!(expand("$$(LR) $(MISSING) $", &env), "$(LR) $(MISSING) $");
    }

    #[test]
    fn env_takes_values_and_downward_api_fields() {
        let pod = json!({"metadata": {"name": "p", "namespace": "ns", "labels": {"a": "b"}}});
        let container = json!({"env": [
            {"name": "BASE", "value": "x"},
            {"name": "DERIVED", "value": "$(BASE)-y"},
            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "LABEL", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['a']"}}},
            {"name": "SECRET", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}
        ]});
        let env = environment(&container, &pod);
        assert_eq!(env["DERIVED"], "x-y");
        assert_eq!(env["POD"], "p");
        assert_eq!(env["LABEL"], "b");
        assert!(!env.contains_key("SECRET"));
    }
}
