//! One job's life in the simulation: create its pods, run the primary container, and write
//! pod and job status as the real controllers do, all through the API.

use super::kinds::{JobKind, Replica, batch_condition, condition, set_condition};
use super::process::{Termination, probe_once, start_container};
use super::volumes::PodVolumes;
use super::{JobRef, Outcome, SimulationOptions};
use crate::logs::{LogSink, PodLogs};
use crate::meta;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::ApiResource;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// What every job task needs.
#[derive(Clone)]
pub struct Context {
    /// Client of the double.
    pub client: kube::Client,
    /// The kind this task's watcher handles.
    pub kind: JobKind,
    /// Where pod logs go.
    pub logs: PodLogs,
    /// Test switches.
    pub options: Arc<SimulationOptions>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("kind", &self.kind)
            .field("options", &self.options)
            .finish()
    }
}

/// A created pod and the replica it plays.
struct PodRun {
    name: String,
    object: Value,
    replica: Replica,
    started_at: String,
    /// One log per container, opened before the pod is reported Running so a client that
    /// follows the log as soon as it sees Running never gets "waiting to start".
    sinks: Vec<LogSink>,
}

/// Run a job to its end; API failures (typically: the job was deleted meanwhile) end it
/// quietly.
pub async fn run_job(context: Context, job: Value) {
    let name = meta::meta_str(&job, "name").to_owned();
    if let Err(e) = run(&context, &job).await {
        tracing::debug!("simulated {} {name}: {e}", context.kind.kind());
    }
}

struct Apis {
    jobs: Api<DynamicObject>,
    pods: Api<DynamicObject>,
}

async fn run(context: &Context, job: &Value) -> Result<(), kube::Error> {
    let namespace = meta::meta_str(job, "namespace");
    let name = meta::meta_str(job, "name");
    let apis = Apis {
        jobs: Api::namespaced_with(
            context.client.clone(),
            namespace,
            &context.kind.api_resource(),
        ),
        pods: Api::namespaced_with(
            context.client.clone(),
            namespace,
            &ApiResource::erase::<Pod>(&()),
        ),
    };
    let outcome = context.options.outcome_for(&JobRef {
        kind: context.kind.kind(),
        namespace,
        name,
        object: job,
    });
    match context.kind {
        JobKind::BatchJob => {
            run_batch(context, &apis, job, &outcome).await?;
            expire(&apis, job).await
        }
        _ => run_training(context, &apis, job, &outcome).await,
    }
}

/// The TTL-after-finished controller: a finished Job with `spec.ttlSecondsAfterFinished` is
/// deleted (with its pods, in the foreground) that many seconds after it ended.
async fn expire(apis: &Apis, job: &Value) -> Result<(), kube::Error> {
    let Some(ttl) = job
        .pointer("/spec/ttlSecondsAfterFinished")
        .and_then(Value::as_u64)
    else {
        return Ok(());
    };
    tokio::time::sleep(std::time::Duration::from_secs(ttl)).await;
    let params = kube::api::DeleteParams::foreground();
    apis.jobs
        .delete(meta::meta_str(job, "name"), &params)
        .await
        .map(drop)
}

async fn patch_job_status(apis: &Apis, name: &str, status: Value) -> Result<(), kube::Error> {
    apis.jobs
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": status})),
        )
        .await
        .map(drop)
}

async fn run_batch(
    context: &Context,
    apis: &Apis,
    job: &Value,
    outcome: &Outcome,
) -> Result<(), kube::Error> {
    let name = meta::meta_str(job, "name");
    let start = meta::now();
    let backoff_limit = job
        .pointer("/spec/backoffLimit")
        .and_then(Value::as_u64)
        .unwrap_or(6);
    let completions = job
        .pointer("/spec/completions")
        .and_then(Value::as_u64)
        .unwrap_or(1);
    let replica = context.kind.replicas(job).remove(0);
    let (mut succeeded, mut failed) = (0u64, 0u64);
    patch_job_status(
        apis,
        name,
        json!({"startTime": start, "active": 1, "ready": 0, "terminating": 0,
               "uncountedTerminatedPods": {}}),
    )
    .await?;
    loop {
        let pod = create_pod(context, apis, job, &replica).await?;
        let pod = mark_running(context, apis, pod).await?;
        patch_job_status(apis, name, json!({"active": 1, "ready": 1})).await?;
        let ended = run_pod(context, &pod, outcome, true).await;
        finish_pod(apis, &pod, &ended).await?;
        if ended.succeeded() {
            succeeded += 1;
        } else {
            failed += 1;
        }
        let counts = json!({"succeeded": succeeded, "failed": failed, "ready": 0});
        if succeeded >= completions {
            let message = "Reached expected number of succeeded pods";
            let mut status = counts;
            status["active"] = json!(0);
            status["completionTime"] = json!(meta::now());
            status["conditions"] = json!([
                batch_condition("SuccessCriteriaMet", "CompletionsReached", message),
                batch_condition("Complete", "CompletionsReached", message),
            ]);
            return patch_job_status(apis, name, status).await;
        }
        if failed > backoff_limit {
            let message = "Job has reached the specified backoff limit";
            let mut status = counts;
            status["active"] = json!(0);
            status["conditions"] = json!([
                batch_condition("FailureTarget", "BackoffLimitExceeded", message),
                batch_condition("Failed", "BackoffLimitExceeded", message),
            ]);
            return patch_job_status(apis, name, status).await;
        }
        patch_job_status(apis, name, counts).await?;
    }
}

async fn run_training(
    context: &Context,
    apis: &Apis,
    job: &Value,
    outcome: &Outcome,
) -> Result<(), kube::Error> {
    let kind = context.kind.kind();
    let namespace = meta::meta_str(job, "namespace");
    let name = meta::meta_str(job, "name");
    let mut conditions = Vec::new();
    set_condition(
        &mut conditions,
        condition(
            "Created",
            &format!("{kind}Created"),
            &format!("{kind} {name} is created."),
            true,
        ),
    );
    patch_job_status(
        apis,
        name,
        json!({"conditions": conditions, "replicaStatuses": {}}),
    )
    .await?;
    let replicas = context.kind.replicas(job);
    let mut pods = Vec::new();
    for replica in &replicas {
        pods.push(create_pod(context, apis, job, replica).await?);
    }
    let mut running = Vec::new();
    for pod in pods {
        running.push(mark_running(context, apis, pod).await?);
    }
    set_condition(
        &mut conditions,
        condition(
            "Running",
            &format!("{kind}Running"),
            &format!("{kind} {namespace}/{name} is running."),
            true,
        ),
    );
    patch_job_status(
        apis,
        name,
        json!({"conditions": conditions, "startTime": meta::now(),
               "replicaStatuses": replica_statuses(&running, "active")}),
    )
    .await?;
    let execute = |pod: &PodRun| pod.replica.primary || context.options.run_all_replicas;
    let executed = running
        .iter()
        .filter(|p| execute(p))
        .map(|pod| async move { (pod.name.clone(), run_pod(context, pod, outcome, true).await) });
    for idle in running.iter().filter(|p| !execute(p)) {
        run_pod(context, idle, outcome, false).await;
    }
    let results = futures_util::future::join_all(executed).await;
    let failure = results.iter().find(|(_, t)| !t.succeeded()).cloned();
    for pod in &running {
        let ended = results
            .iter()
            .find(|(n, _)| *n == pod.name)
            .map(|(_, t)| t.clone())
            .unwrap_or_else(|| match &failure {
                Some(_) => {
                    Termination::from_exit_code(137, "stopped with the failed job".to_owned())
                }
                None => Termination::from_exit_code(0, String::new()),
            });
        finish_pod(apis, pod, &ended).await?;
    }
    let (condition_type, reason, message, field) = match &failure {
        None => (
            "Succeeded",
            format!("{kind}Succeeded"),
            format!("{kind} {namespace}/{name} successfully completed."),
            "succeeded",
        ),
        Some((pod_name, _)) => {
            let replica_type = running
                .iter()
                .find(|p| &p.name == pod_name)
                .map(|p| p.replica.replica_type.clone())
                .unwrap_or_default();
            (
                "Failed",
                format!("{kind}Failed"),
                format!(
                    "{kind} {namespace}/{name} has failed because 1 {replica_type} replica(s) failed."
                ),
                "failed",
            )
        }
    };
    set_condition(
        &mut conditions,
        condition(condition_type, &reason, &message, true),
    );
    patch_job_status(
        apis,
        name,
        json!({"conditions": conditions, "completionTime": meta::now(),
               "replicaStatuses": replica_statuses(&running, field)}),
    )
    .await
}

fn replica_statuses(pods: &[PodRun], field: &str) -> Value {
    let mut statuses = Map::new();
    for pod in pods {
        let entry = statuses
            .entry(pod.replica.replica_type.clone())
            .or_insert_with(|| json!({}));
        let count = entry.get(field).and_then(Value::as_u64).unwrap_or(0);
        entry[field] = json!(count + 1);
        if field != "active" {
            // Merge-patch null: the operator omits zero counters, so `active` disappears.
            entry["active"] = Value::Null;
        }
    }
    Value::Object(statuses)
}

async fn create_pod(
    context: &Context,
    apis: &Apis,
    job: &Value,
    replica: &Replica,
) -> Result<PodRun, kube::Error> {
    let job_name = meta::meta_str(job, "name");
    let job_uid = meta::meta_str(job, "uid");
    let name = context
        .kind
        .pod_name(job_name, replica, &meta::name_suffix());
    let mut labels = replica
        .template
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    labels.extend(context.kind.pod_labels(job_name, job_uid, replica));
    let mut spec = replica
        .template
        .get("spec")
        .cloned()
        .unwrap_or_else(|| json!({}));
    spec["nodeName"] = json!("kube-double-node");
    let api_version = job.get("apiVersion").cloned().unwrap_or_default();
    let manifest = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": replica.template.pointer("/metadata/annotations").cloned().unwrap_or_else(|| json!({})),
            "ownerReferences": [{
                "apiVersion": api_version,
                "kind": context.kind.kind(),
                "name": job_name,
                "uid": job_uid,
                "controller": true,
                "blockOwnerDeletion": true,
            }],
        },
        "spec": spec,
    });
    let pod: DynamicObject = serde_json::from_value(manifest).map_err(kube::Error::SerdeError)?;
    let created = apis.pods.create(&PostParams::default(), &pod).await?;
    let object = serde_json::to_value(&created).map_err(kube::Error::SerdeError)?;
    Ok(PodRun {
        name,
        object,
        replica: replica.clone(),
        started_at: String::new(),
        sinks: Vec::new(),
    })
}

fn containers(pod: &Value) -> Vec<Value> {
    pod.pointer("/spec/containers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

async fn mark_running(
    context: &Context,
    apis: &Apis,
    mut pod: PodRun,
) -> Result<PodRun, kube::Error> {
    let namespace = meta::meta_str(&pod.object, "namespace").to_owned();
    pod.sinks = containers(&pod.object)
        .iter()
        .map(|c| {
            context.logs.start(
                &namespace,
                &pod.name,
                c["name"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    let now = meta::now();
    let statuses: Vec<Value> = containers(&pod.object)
        .iter()
        .map(|c| {
            json!({"name": c["name"], "image": c.get("image").cloned().unwrap_or_else(|| json!("")),
                   "imageID": "", "containerID": format!("kube-double://{}", meta::new_uid()),
                   "ready": true, "started": true, "restartCount": 0,
                   "state": {"running": {"startedAt": now}}})
        })
        .collect();
    let status = json!({
        "phase": "Running", "startTime": now, "podIP": "127.0.0.1", "hostIP": "127.0.0.1",
        "qosClass": "BestEffort",
        "conditions": pod_conditions(true, &now),
        "containerStatuses": statuses,
    });
    apis.pods
        .patch_status(
            &pod.name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": status})),
        )
        .await?;
    pod.started_at = now;
    Ok(pod)
}

fn pod_conditions(ready: bool, now: &str) -> Value {
    let ready = if ready { "True" } else { "False" };
    json!([
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
        {"type": "Initialized", "status": "True", "lastTransitionTime": now},
        {"type": "ContainersReady", "status": ready, "lastTransitionTime": now},
        {"type": "Ready", "status": ready, "lastTransitionTime": now},
    ])
}

/// Start every container's log and run the training container (when `execute`), returning
/// how the training container ended.
async fn run_pod(context: &Context, pod: &PodRun, outcome: &Outcome, execute: bool) -> Termination {
    let containers = containers(&pod.object);
    let main = context
        .kind
        .default_container()
        .and_then(|name| containers.iter().position(|c| c["name"] == name))
        .unwrap_or(0);
    let mut main_sink = None;
    for (i, sink) in pod.sinks.iter().enumerate() {
        if i == main && execute {
            main_sink = Some(sink.clone());
        } else {
            sink.finish();
        }
    }
    let (ended, _) = tokio::join!(
        async {
            match (main_sink, outcome) {
                (None, _) => Termination::from_exit_code(0, String::new()),
                (Some(sink), Outcome::Run) => match containers.get(main) {
                    Some(container) => run_main(context, pod, container, sink).await,
                    None => Termination::from_exit_code(0, String::new()),
                },
                (Some(sink), Outcome::Fail { exit_code, message }) => {
                    sink.write(format!("{message}\n").as_bytes());
                    sink.finish();
                    Termination::from_exit_code(*exit_code, message.clone())
                }
                (Some(_), Outcome::Hang) => std::future::pending().await,
            }
        },
        tokio::time::sleep(if execute {
            context.options.min_running
        } else {
            std::time::Duration::ZERO
        })
    );
    ended
}

/// The pod's native sidecars: `initContainers` with `restartPolicy: Always`.
fn native_sidecars(pod: &Value) -> Vec<Value> {
    pod.pointer("/spec/initContainers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| c["restartPolicy"] == "Always")
        .cloned()
        .collect()
}

/// Run the training container; with [`SimulationOptions::run_sidecars`], its pod's native
/// sidecars run too: started first, sent SIGTERM once it has exited, and waited for (up to
/// the pod's `terminationGracePeriodSeconds`, then SIGKILL) before the pod ends. Each
/// `emptyDir` volume is a private directory for the pod's lifetime (see [`PodVolumes`]).
async fn run_main(
    context: &Context,
    pod: &PodRun,
    container: &Value,
    sink: LogSink,
) -> Termination {
    let dirs = &context.options.program_dirs;
    if !context.options.run_sidecars {
        return match start_container(container, &pod.object, sink, dirs) {
            Ok(started) => started.wait(None).await,
            Err(ended) => ended,
        };
    }
    let volumes = match PodVolumes::create(&pod.object) {
        Ok(v) => v,
        Err(e) => {
            let message = format!("kube double: cannot create the pod's emptyDir volumes: {e}\n");
            sink.write(message.as_bytes());
            sink.finish();
            return Termination {
                exit_code: 128,
                reason: "ContainerCannotRun".to_owned(),
                message,
            };
        }
    };
    let namespace = meta::meta_str(&pod.object, "namespace");
    let grace = std::time::Duration::from_secs(
        pod.object
            .pointer("/spec/terminationGracePeriodSeconds")
            .and_then(Value::as_u64)
            .unwrap_or(30),
    );
    let (stop, stopped) = tokio::sync::watch::channel(false);
    // Dropped with this future (the job deleted): the sidecar processes are killed.
    let mut sidecars = tokio::task::JoinSet::new();
    let cannot_start = |message: String, ended: Termination| {
        sink.write(message.as_bytes());
        sink.finish();
        let _ = stop.send(true);
        Termination { message, ..ended }
    };
    for sidecar in native_sidecars(&pod.object) {
        let name = sidecar["name"].as_str().unwrap_or_default().to_owned();
        let log = context.logs.start(namespace, &pod.name, &name);
        let sidecar = volumes.rewrite(&sidecar);
        match start_container(&sidecar, &pod.object, log, dirs) {
            Ok(started) => {
                sidecars.spawn(started.wait(Some((stopped.clone(), grace))));
            }
            // A kubelet would retry it and never start the training container; a test is
            // better served by a pod that fails and says why.
            Err(ended) => {
                let message = format!(
                    "kube double: sidecar {name} cannot start: {}",
                    ended.message
                );
                let ended = cannot_start(message, ended);
                sidecars.join_all().await;
                return ended;
            }
        }
        // As the kubelet does, the next container starts only once the sidecar's startup
        // probe has succeeded (polled more often than `periodSeconds`, to keep tests quick).
        let probe = sidecar.pointer("/startupProbe/exec").is_some();
        let attempts = sidecar
            .pointer("/startupProbe/failureThreshold")
            .and_then(Value::as_u64)
            .unwrap_or(3)
            * sidecar
                .pointer("/startupProbe/periodSeconds")
                .and_then(Value::as_u64)
                .unwrap_or(10)
            * 20;
        let mut tried = 0;
        while probe && !probe_once(&sidecar, &pod.object, dirs).await {
            tried += 1;
            if tried >= attempts {
                let message = format!("kube double: sidecar {name}: startup probe failed\n");
                let ended = cannot_start(message, Termination::from_exit_code(1, String::new()));
                sidecars.join_all().await;
                return ended;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
    let main = async {
        let ended =
            match start_container(&volumes.rewrite(container), &pod.object, sink.clone(), dirs) {
                Ok(started) => started.wait(None).await,
                Err(ended) => ended,
            };
        let _ = stop.send(true);
        ended
    };
    let ended = main.await;
    sidecars.join_all().await;
    drop(volumes);
    ended
}

async fn finish_pod(apis: &Apis, pod: &PodRun, ended: &Termination) -> Result<(), kube::Error> {
    let now = meta::now();
    let statuses: Vec<Value> = containers(&pod.object)
        .iter()
        .map(|c| {
            json!({"name": c["name"], "image": c.get("image").cloned().unwrap_or_else(|| json!("")),
                   "imageID": "", "ready": false, "started": false, "restartCount": 0,
                   "state": {"terminated": {"exitCode": ended.exit_code, "reason": ended.reason,
                             "message": ended.message, "startedAt": pod.started_at, "finishedAt": now}}})
        })
        .collect();
    let phase = if ended.succeeded() {
        "Succeeded"
    } else {
        "Failed"
    };
    let status = json!({"phase": phase, "conditions": pod_conditions(false, &now), "containerStatuses": statuses});
    apis.pods
        .patch_status(
            &pod.name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": status})),
        )
        .await
        .map(drop)
}
