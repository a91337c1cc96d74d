//! Katib's `Custom` metrics collector, run locally. On a cluster the user's collector container
//! (`collector.customCollector`, a core/v1 Container) is injected beside the training container
//! and reports the trial's metrics to the DBManager itself. Here its command runs beside the
//! trial process: the same working directory, the trial's name in `KATIB_TRIAL_NAME`, and the
//! run's DBManager endpoint in `VERNIER_DB_MANAGER_ADDRESS` (and in Katib's
//! `KATIB_DB_MANAGER_SERVICE_*` variables). When the trial has ended it gets SIGTERM, as a
//! Kubernetes native sidecar does, and [`COLLECTOR_GRACE`] to report what is left.

use crate::child::{
    PUSH_ADDRESS_ENV, SharedLog, TrialCommand, map_spec_path, signal_group, write_log,
};
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use serde_json::Value;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;
use tokio::process::Command;
use tokio::sync::watch;
use tokio::time::Instant;
use vernier_collector::LineReader;
use vernier_engine::SharedPath;
use vernier_spec::trial::TRIAL_NAME_ENV;
use vernier_spec::{ContainerSpec, SpecError};

/// How long the collector has between SIGTERM (the trial has ended) and SIGKILL.
pub const COLLECTOR_GRACE: Duration = Duration::from_secs(10);

/// The least time the collector runs before SIGTERM. A native sidecar starts before the
/// training container, so on a cluster its SIGTERM handler is in place long before training
/// ends; here the collector starts beside the trial, and a trial shorter than an interpreter's
/// start-up would otherwise kill it before its handler exists, losing its report.
pub const COLLECTOR_START: Duration = Duration::from_secs(2);

/// Where the spec's collector container is.
const FIELD: &str = "spec.metricsCollectorSpec.collector.customCollector";

/// Katib's variables for the DBManager address (`IP.NAMESPACE:PORT`, or `IP:PORT` when the
/// namespace is empty), set for collectors written against Katib's controller settings.
const KATIB_IP_ENV: &str = "KATIB_DB_MANAGER_SERVICE_IP";
const KATIB_PORT_ENV: &str = "KATIB_DB_MANAGER_SERVICE_PORT";
const KATIB_NAMESPACE_ENV: &str = "KATIB_DB_MANAGER_SERVICE_NAMESPACE";

/// The collector container, as local mode runs it.
#[derive(Debug, Clone, PartialEq)]
pub struct CustomCollector {
    /// Its command, arguments and env; the variables its pod gives (the downward API) are
    /// resolved for each trial's pod.
    pub container: ContainerSpec,
    /// `source.fileSystemPath` as the spec writes it: where its path appears in the
    /// collector's arguments or environment, the trial's own copy is used, as for the trial
    /// itself.
    pub shared: Option<SharedPath>,
}

/// Why local mode cannot run the experiment's Custom collector, if its collector is Custom and
/// it cannot.
pub fn local_refusal(exp: &vernier_spec::Experiment) -> Option<SpecError> {
    let collector = exp
        .spec
        .metrics_collector_spec
        .as_ref()?
        .collector
        .as_ref()?;
    if collector.kind.as_deref() != Some("Custom") {
        return None;
    }
    CustomCollector::from_spec(collector.custom_collector.as_ref(), None).err()
}

/// The collector's command, arguments and environment for one trial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectorCommand {
    pub program: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

impl CustomCollector {
    /// The collector container as local mode runs it. One that cannot run here (see
    /// [`CustomCollector::from_spec`]) has no program: local mode refuses its experiment up
    /// front (`local_verdict`), and a cluster runs the container itself.
    pub fn of(container: Option<&Value>, shared: Option<SharedPath>) -> CustomCollector {
        CustomCollector::from_spec(container, shared.clone()).unwrap_or(CustomCollector {
            container: ContainerSpec::default(),
            shared,
        })
    }

    /// Reads the collector container; refuses, naming the field, what cannot run on this
    /// machine (no command: the image's entrypoint; values from the cluster).
    pub fn from_spec(
        container: Option<&Value>,
        shared: Option<SharedPath>,
    ) -> Result<CustomCollector, SpecError> {
        let refused = |field: String, why: &str| {
            SpecError::new(
                field,
                format!("collector kind \"Custom\" cannot run locally: {why}"),
            )
        };
        let Some(container) = container else {
            return Err(refused(
                FIELD.into(),
                "there is no customCollector; hint: give the collector container, with a command",
            ));
        };
        let has_command = container
            .get("command")
            .and_then(Value::as_array)
            .is_some_and(|c| !c.is_empty());
        if !has_command {
            return Err(refused(
                format!("{FIELD}.command"),
                "it has no command, so its image's entrypoint would run, which local mode cannot do\nhint: set customCollector.command (e.g. [python3, collector.py]); it runs beside each trial in the experiment file's directory and reports to $VERNIER_DB_MANAGER_ADDRESS",
            ));
        }
        let name = container.get("name").and_then(Value::as_str).unwrap_or("");
        let container = vernier_spec::container_from(container, name, FIELD)
            .map_err(|e| refused(e.path(), e.message()))?;
        Ok(CustomCollector { container, shared })
    }

    /// The command beside `trial`: the spec path mapped to the trial's copy, told the trial's
    /// name and the DBManager address the trial was given.
    pub fn command_for(&self, trial: &TrialCommand) -> CollectorCommand {
        let map = |text: &str| match (&self.shared, &trial.metrics_path) {
            (Some(from), Some(to)) => map_spec_path(text, &from.path, &to.display().to_string()),
            _ => text.to_string(),
        };
        let mut container = self.container.clone();
        container.for_pod(&trial.pod);
        let mut argv = container.command.into_iter().chain(container.args);
        let program = argv.next().unwrap_or_default();
        let args: Vec<String> = argv.collect();
        let mut env: Vec<(String, String)> = container
            .env
            .iter()
            .map(|(k, v)| (k.clone(), map(v)))
            .collect();
        env.push((TRIAL_NAME_ENV.into(), trial.trial.clone()));
        let pushed = trial.env.iter().find(|(k, _)| k == PUSH_ADDRESS_ENV);
        if let Some((_, address)) = pushed {
            env.push((PUSH_ADDRESS_ENV.into(), address.clone()));
            if let Some((ip, port)) = address.rsplit_once(':') {
                env.push((KATIB_IP_ENV.into(), ip.into()));
                env.push((KATIB_PORT_ENV.into(), port.into()));
                env.push((KATIB_NAMESPACE_ENV.into(), String::new()));
            }
        }
        CollectorCommand {
            program: map(&program),
            args: args.iter().map(|a| map(a)).collect(),
            env,
        }
    }
}

/// Runs the collector in its own process group beside the trial, its output appended to the
/// trial's log, until it exits or the trial has ended (`ended`); then SIGTERM, and SIGKILL
/// after [`COLLECTOR_GRACE`] for the collector and anything it left running.
pub(crate) async fn run_beside(
    cmd: CollectorCommand,
    work_dir: PathBuf,
    log: SharedLog,
    mut ended: watch::Receiver<bool>,
) {
    let spawned = Command::new(&cmd.program)
        .args(&cmd.args)
        .envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&work_dir)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            let line = format!(
                "vernier: the custom collector's command {:?} cannot start (working directory {}): {e}\n",
                cmd.program,
                work_dir.display()
            );
            write_log(&log, line.as_bytes());
            return;
        }
    };
    let started = Instant::now();
    let pgid = child.id().map(|id| Pid::from_raw(id as i32));
    let copies: Vec<_> = [
        child
            .stdout
            .take()
            .map(|o| tokio::spawn(copy_to_log(o, log.clone()))),
        child
            .stderr
            .take()
            .map(|e| tokio::spawn(copy_to_log(e, log.clone()))),
    ]
    .into_iter()
    .flatten()
    .collect();
    let exited = tokio::select! {
        status = child.wait() => Some(status),
        _ = ended_after_start(&mut ended, started) => None,
    };
    let stopped_by_us = exited.is_none();
    let status = match exited {
        Some(status) => status,
        None => {
            signal_group(pgid, Signal::SIGTERM);
            match tokio::time::timeout(COLLECTOR_GRACE, child.wait()).await {
                Ok(status) => status,
                Err(_) => {
                    signal_group(pgid, Signal::SIGKILL);
                    child.wait().await
                }
            }
        }
    };
    signal_group(pgid, Signal::SIGKILL);
    for copy in copies {
        let _ = copy.await;
    }
    if let Ok(status) = status
        && !status.success()
    {
        let hint = if stopped_by_us && status.signal() == Some(Signal::SIGTERM as i32) {
            format!(
                "\nhint: it was sent SIGTERM when the trial ended (at least {} s after it started) and did not handle it; install the handler first thing, then report what is left and exit",
                COLLECTOR_START.as_secs()
            )
        } else {
            String::new()
        };
        let line = format!("vernier: the custom collector ended with {status}{hint}\n");
        write_log(&log, line.as_bytes());
    }
}

/// Resolves once the trial has ended and the collector has run for [`COLLECTOR_START`].
async fn ended_after_start(ended: &mut watch::Receiver<bool>, started: Instant) {
    // A dropped sender means the trial's task is gone: the trial has ended too.
    let _ = ended.wait_for(|ended| *ended).await;
    tokio::time::sleep_until(started + COLLECTOR_START).await;
}

async fn copy_to_log<R: tokio::io::AsyncRead + Unpin>(reader: R, log: SharedLog) {
    let mut lines = LineReader::new(reader);
    let mut on_raw = |raw: &[u8]| write_log(&log, raw);
    while let Ok(Some(_)) = lines.next_line(&mut on_raw).await {}
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;
    use std::path::PathBuf;
    use vernier_spec::template::downward_api::PodFacts;

    fn trial() -> TrialCommand {
        TrialCommand {
            trial: "e-abc".into(),
            program: "python3".into(),
            command_field: String::new(),
            args: vec![],
            env: vec![(PUSH_ADDRESS_ENV.into(), "127.0.0.1:4321".into())],
            work_dir: PathBuf::from("/w"),
            log_path: PathBuf::from("/l/e-abc.log"),
            metrics_path: Some(PathBuf::from("/l/e-abc/katib/mnist.log")),
            append_log: false,
            pid_file: None,
            pod: Box::new(PodFacts {
                name: "e-abc".into(),
                ..PodFacts::default()
            }),
            volume_dirs: Vec::new(),
        }
    }

    #[test]
    fn the_collector_gets_the_trial_its_copy_of_the_path_and_the_db_manager() {
        let container = json!({"name": "c", "image": "x",
            "command": ["python3", "collect.py"], "args": ["--path", "/katib/mnist.log"],
            "env": [{"name": "LOG", "value": "/katib/mnist.log"},
                {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]});
        let shared = SharedPath {
            path: "/katib/mnist.log".into(),
            directory: false,
        };
        let c = CustomCollector::from_spec(Some(&container), Some(shared)).unwrap();
        let cmd = c.command_for(&trial());
        assert_eq!(cmd.program, "python3");
        assert_eq!(
            cmd.args,
            ["collect.py", "--path", "/l/e-abc/katib/mnist.log"]
        );
        let env: Vec<(&str, &str)> = cmd
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            env,
            [
                ("LOG", "/l/e-abc/katib/mnist.log"),
                ("POD", "e-abc"),
                ("KATIB_TRIAL_NAME", "e-abc"),
                ("VERNIER_DB_MANAGER_ADDRESS", "127.0.0.1:4321"),
                ("KATIB_DB_MANAGER_SERVICE_IP", "127.0.0.1"),
                ("KATIB_DB_MANAGER_SERVICE_PORT", "4321"),
                ("KATIB_DB_MANAGER_SERVICE_NAMESPACE", ""),
            ]
        );
    }

    #[test]
    fn what_only_a_cluster_can_run_is_refused_naming_the_field() {
        let cases = [
            (
                None,
                "spec.metricsCollectorSpec.collector.customCollector",
                "there is no customCollector",
            ),
            (
                Some(json!({"name": "c", "image": "x", "args": ["-m", "accuracy"]})),
                "spec.metricsCollectorSpec.collector.customCollector.command",
                "image's entrypoint",
            ),
            (
                Some(json!({"name": "c", "command": ["c"], "env": [
                    {"name": "P", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]})),
                "spec.metricsCollectorSpec.collector.customCollector.env[0].valueFrom",
                "\"secretKeyRef\", a Kubernetes object local mode cannot read",
            ),
        ];
        for (container, path, why) in cases {
            let e = CustomCollector::from_spec(container.as_ref(), None).unwrap_err();
            assert_eq!(e.path(), path);
            let message = e.message();
            assert!(
                message.starts_with("collector kind \"Custom\" cannot run locally")
                    && message.contains(why)
                    && message.contains("hint:"),
                "{message}"
            );
        }
    }
}
