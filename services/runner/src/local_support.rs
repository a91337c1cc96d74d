//! What local mode can run of an experiment that is valid for a cluster. The spec crate judges
//! validity (what Katib and a cluster accept); this module judges the narrower question of
//! running each trial as a process here, so `vernier run` refuses up front, naming the field,
//! instead of failing trial after trial, and `vernier validate` can show both verdicts.

use crate::replicas::launch::check_primary_replica;
use serde_json::Value;
use std::collections::BTreeMap;
use vernier_spec::template::downward_api::is_optional;
use vernier_spec::template::mounts::{VolumeMount, volume_mounts};
use vernier_spec::template::{
    JobKind, primary_container_blockers, replica_local_blockers, replica_set, training_job_ignored,
};
use vernier_spec::{Experiment, SpecError};

const T: &str = "spec.trialTemplate";

/// Local mode's verdict on a valid experiment.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LocalVerdict {
    /// Fields local mode cannot run: `vernier run` refuses the experiment.
    pub refused: Vec<SpecError>,
    /// Fields local mode runs without (not mounted, not started); the trials still run.
    pub ignored: Vec<SpecError>,
}

impl LocalVerdict {
    pub fn runnable(&self) -> bool {
        self.refused.is_empty()
    }
}

/// Judges a parsed (valid) experiment. The template is inspected as written, before
/// substitution, exactly as each trial would be run.
pub fn local_verdict(exp: &Experiment) -> LocalVerdict {
    let mut verdict = LocalVerdict::default();
    verdict.refused.extend(crate::custom::local_refusal(exp));
    let Some(tt) = exp.spec.trial_template.as_ref() else {
        return verdict;
    };
    if tt.config_map.is_some() {
        verdict.refused.push(SpecError::new(
            format!("{T}.configMap"),
            "the trial template is kept in a Kubernetes ConfigMap, which local mode cannot read; \
             hint: copy the template inline into trialSpec to run locally",
        ));
    }
    let Some(spec) = tt.trial_spec.as_ref() else {
        return verdict;
    };
    let primary = tt.primary_container_name.as_deref().unwrap_or("");
    let labels = tt.primary_pod_labels.clone().unwrap_or_default();
    verdict.refused.extend(refusals(spec, primary, &labels));
    ignored_fields(spec, &format!("{T}.trialSpec"), &mut verdict.ignored);
    if spec.get("kind").and_then(Value::as_str) == Some("Job") {
        verdict.ignored.extend(job_ignored(spec, primary));
    }
    verdict.ignored.extend(replica_job_ignored(spec, primary));
    verdict.ignored.extend(conditions_ignored(tt, spec));
    verdict
}

/// A success or failure condition other than the one Katib fills in for the kind: a cluster
/// judges the job by it, local mode by the processes' exits.
fn conditions_ignored(tt: &vernier_spec::types::TrialTemplate, spec: &Value) -> Vec<SpecError> {
    let kind = spec.get("kind").and_then(Value::as_str).unwrap_or("");
    let Some((success, failure)) = vernier_spec::defaults::default_conditions(kind) else {
        return Vec::new();
    };
    [
        ("successCondition", &tt.success_condition, success),
        ("failureCondition", &tt.failure_condition, failure),
    ]
    .into_iter()
    .filter(|(_, given, default)| given.as_deref().is_some_and(|g| g != *default))
    .map(|(field, _, _)| {
        SpecError::new(
            format!("{T}.{field}"),
            "is not applied locally: a local trial is judged by its processes' exit codes \
             (a Job's container, a training job's replicas); a cluster applies it to the job's \
             status",
        )
    })
    .collect()
}

/// The fields of a training-operator job that local mode reads but does not apply (its run
/// policy's cleanup and scheduling, `elasticPolicy`, `enableDynamicWorker`), as the trial's
/// log notes them, and each replica's containers that do not run.
fn replica_job_ignored(spec: &Value, primary: &str) -> Vec<SpecError> {
    let sidecars = match replica_set(spec, primary) {
        Ok(Some(set)) => set.replicas,
        _ => Vec::new(),
    };
    let sidecars = sidecars
        .into_iter()
        .filter(|r| !r.skipped_containers.is_empty())
        .map(|r| {
            SpecError::new(
                format!("{}.template.spec.containers", r.path),
                format!(
                    "only the training container runs locally; not run: {}",
                    r.skipped_containers.join(", ")
                ),
            )
        });
    training_job_ignored(spec)
        .iter()
        .map(|field| {
            let (name, why) = field.split_once(' ').unwrap_or((field, ""));
            let why = why.trim_start_matches('(').trim_end_matches(')');
            let note = if why.is_empty() {
                "is not applied locally".to_string()
            } else {
                format!("is not applied locally: {why}")
            };
            SpecError::new(format!("{T}.trialSpec.{name}"), note)
        })
        .chain(sidecars)
        .collect()
}

/// What a batch Job runs that one local process does not: the job's other containers, and
/// the several pods `completions` and `parallelism` ask for (its `backoffLimit` and
/// `activeDeadlineSeconds` are applied, by `batch_job`).
fn job_ignored(spec: &Value, primary: &str) -> Vec<SpecError> {
    let path = format!("{T}.trialSpec.spec");
    let job = spec.get("spec");
    let mut out = Vec::new();
    let containers = job
        .and_then(|j| j.pointer("/template/spec/containers"))
        .and_then(Value::as_array);
    let others: Vec<&str> = containers
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str))
        .filter(|name| *name != primary)
        .collect();
    if !others.is_empty() {
        out.push(SpecError::new(
            format!("{path}.template.spec.containers"),
            format!(
                "only the primary container runs locally; not run: {}",
                others.join(", ")
            ),
        ));
    }
    if job.and_then(|j| j.get("suspend")) == Some(&Value::Bool(true)) {
        out.push(SpecError::new(
            format!("{path}.suspend"),
            "value true is not applied locally: the trial runs at once, where a cluster \
             waits until something (a queue such as Kueue) resumes the Job",
        ));
    }
    if job.and_then(|j| j.get("ttlSecondsAfterFinished")).is_some() {
        out.push(SpecError::new(
            format!("{path}.ttlSecondsAfterFinished"),
            "is not applied locally: no Job is left to delete",
        ));
    }
    for field in ["completions", "parallelism"] {
        if let Some(n) = job
            .and_then(|j| j.get(field))
            .and_then(Value::as_u64)
            .filter(|n| *n > 1)
        {
            out.push(SpecError::new(
                format!("{path}.{field}"),
                format!(
                    "value {n} is not applied locally: the trial runs one process, once, \
                     where a cluster would run {n} pods{}; hint: to run several processes, \
                     describe the trial as a PyTorchJob or TFJob with replicas",
                    if field == "completions" {
                        " to completion"
                    } else {
                        " at a time"
                    }
                ),
            ));
        }
    }
    out
}

/// Everything that keeps the primary container (or a replica's container) from running as a
/// process: every blocker of every container that would run, not only the first.
fn refusals(
    spec: &Value,
    primary: &str,
    primary_labels: &BTreeMap<String, String>,
) -> Vec<SpecError> {
    let kind = spec.get("kind").and_then(Value::as_str).unwrap_or("");
    if JobKind::of(kind).is_some() {
        let blockers = replica_local_blockers(spec, primary);
        if !blockers.is_empty() {
            return blockers;
        }
        return match replica_set(spec, primary) {
            Ok(Some(set)) => check_primary_replica(&set, primary_labels, "trial")
                .err()
                .into_iter()
                .collect(),
            Ok(None) => Vec::new(),
            Err(e) => vec![e],
        };
    }
    if kind == "MXJob" {
        return vec![SpecError::new(
            format!("{T}.trialSpec.kind"),
            "value \"MXJob\" is run as a process group only on a cluster: its Scheduler, \
             Server and Worker replicas find each other through the training operator's \
             DMLC_* and MX_CONFIG variables, which local mode does not set, and one replica \
             alone would wait for the others forever; hint: run it on a cluster (`vernier \
             operator`), or describe the trial as a batch/v1 Job to run it locally",
        )];
    }
    if !has_containers(spec) {
        return vec![SpecError::new(
            format!("{T}.trialSpec.kind"),
            format!(
                "value {kind:?} has no containers list, so local mode has no command to run; \
                 hint: run it on a cluster (`vernier operator`), or describe the trial as a \
                 batch/v1 Job to run it locally"
            ),
        )];
    }
    primary_container_blockers(spec, primary)
}

fn has_containers(v: &Value) -> bool {
    match v {
        Value::Object(map) => {
            map.get("containers").is_some_and(Value::is_array) || map.values().any(has_containers)
        }
        Value::Array(items) => items.iter().any(has_containers),
        _ => false,
    }
}

/// Pod features a process does not have: init containers are not started, and volumes are
/// not mounted (each says what stands for it here).
fn ignored_fields(v: &Value, path: &str, out: &mut Vec<SpecError>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                let here = format!("{path}.{k}");
                match k.as_str() {
                    _ if child.is_null() => {}
                    "initContainers" => out.push(SpecError::new(
                        here,
                        "init containers are not run locally; only the primary container's \
                         command runs; hint: do their work before `vernier run`",
                    )),
                    "volumes" => out.extend(volume_notes(v, &here)),
                    "env" | "envFrom" => out.extend(optional_notes(child, &here)),
                    "securityContext" | "lifecycle" | "livenessProbe" | "startupProbe" => {
                        out.push(SpecError::new(here, not_applied(k)));
                    }
                    _ => ignored_fields(child, &here, out),
                }
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                ignored_fields(child, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// Why a pod or container field that changes how the process runs is not applied here.
fn not_applied(field: &str) -> &'static str {
    match field {
        "securityContext" => {
            "is not applied locally: the trial runs as the user running vernier, with that \
             user's permissions"
        }
        "lifecycle" => "is not applied locally: postStart and preStop hooks are not run",
        _ => {
            "is not applied locally: the probe is not run, so a container it would restart or \
             fail keeps running"
        }
    }
}

/// The `optional` Secret and ConfigMap references of an `env` or `envFrom` list at `path`: a
/// cluster runs without them when the object is missing, as it always is here.
fn optional_notes(list: &Value, path: &str) -> Vec<SpecError> {
    let entries = list.as_array().into_iter().flatten().enumerate();
    entries
        .filter_map(|(i, e)| {
            let from = e.get("valueFrom").unwrap_or(e);
            let (kind, reference) = [
                "secretKeyRef",
                "configMapKeyRef",
                "secretRef",
                "configMapRef",
            ]
            .into_iter()
            .find_map(|k| Some((k, from.get(k)?)))?;
            if !is_optional(Some(reference)) {
                return None;
            }
            let object = reference.get("name").and_then(Value::as_str).unwrap_or("");
            let what = match e.get("name").and_then(Value::as_str) {
                Some(var) => format!("env var {var:?} is left unset"),
                None => "its variables are left unset".to_string(),
            };
            Some(SpecError::new(
                format!("{path}[{i}]"),
                format!(
                    "{kind} {object:?} is optional and there is none locally, so {what}, as a \
                     cluster does when the object is missing"
                ),
            ))
        })
        .collect()
}

/// What stands for each volume of pod spec `pod` (its `volumes` at `path`) here, from the
/// first mount of it in the pod's containers; a volume no container mounts is not named.
fn volume_notes(pod: &Value, path: &str) -> Vec<SpecError> {
    let volumes = pod.get("volumes").unwrap_or(&Value::Null);
    let containers = pod.get("containers").and_then(Value::as_array);
    let mounts: Vec<VolumeMount> = containers
        .into_iter()
        .flatten()
        .flat_map(|c| volume_mounts(c.get("volumeMounts"), volumes))
        .collect();
    let names = volumes.as_array().into_iter().flatten().enumerate();
    names
        .filter_map(|(i, v)| {
            let name = v.get("name").and_then(Value::as_str)?;
            let first = mounts.iter().find(|m| m.volume == name)?;
            Some(SpecError::new(format!("{path}[{i}]"), first.local_note()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An experiment of `trial_spec`; the success and failure conditions are written only for
    /// kinds Katib fills in none for, so known kinds keep their defaults.
    fn experiment(trial_spec: &str, primary: &str) -> Experiment {
        let kind = trial_spec
            .split("kind: ")
            .nth(1)
            .and_then(|rest| rest.split([',', '}']).next())
            .unwrap_or("");
        let conditions = if vernier_spec::defaults::default_conditions(kind).is_some() {
            ""
        } else {
            "successCondition: status.done\n    failureCondition: status.failed"
        };
        let yaml = format!(
            "apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata: {{name: e}}
spec:
  objective: {{type: maximize, objectiveMetricName: acc}}
  algorithm: {{algorithmName: random}}
  parameters:
    - {{name: lr, parameterType: double, feasibleSpace: {{min: '0.1', max: '0.2'}}}}
  trialTemplate:
    primaryContainerName: {primary}
    {conditions}
    trialParameters: [{{name: lr, reference: lr}}]
    trialSpec: {trial_spec}
"
        );
        vernier_spec::parse_experiment(&yaml).unwrap_or_else(|e| panic!("{e}"))
    }

    fn job(container: &str) -> String {
        format!(
            "{{apiVersion: batch/v1, kind: Job, spec: {{template: {{spec: {{containers: [{container}]}}}}}}}}"
        )
    }

    #[test]
    fn verdicts_name_the_field_local_mode_cannot_run() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            (
                "{name: main, image: i, command: [python3, t.py, '--lr=${trialParameters.lr}']}",
                "main",
                None,
            ),
            (
                "{name: main, image: i, args: [python3, t.py, '--lr=${trialParameters.lr}']}",
                "main",
                None,
            ),
            (
                "{name: main, image: i, args: ['--lr=${trialParameters.lr}']}",
                "main",
                Some("containers[0].command"),
            ),
            (
                "{name: main, image: i, env: [{name: LR, value: '${trialParameters.lr}'}]}",
                "main",
                Some("containers[0].command"),
            ),
            (
                "{name: main, image: i, command: [t, '${trialParameters.lr}'], env: [{name: K, valueFrom: {secretKeyRef: {name: s, key: k}}}]}",
                "main",
                Some("containers[0].env[0].valueFrom"),
            ),
            (
                "{name: main, image: i, command: [t, '${trialParameters.lr}'], env: [{name: P, valueFrom: {fieldRef: {fieldPath: metadata.name}}}, {name: N, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}]}",
                "main",
                None,
            ),
            (
                "{name: main, image: i, command: [t, '${trialParameters.lr}'], envFrom: [{configMapRef: {name: c}}]}",
                "main",
                Some("containers[0].envFrom"),
            ),
        ];
        for (container, primary, refused) in cases {
            let v = local_verdict(&experiment(&job(container), primary));
            match refused {
                None => assert!(v.runnable(), "{container}: {:?}", v.refused),
                Some(field) => {
                    assert_eq!(v.refused.len(), 1, "{container}");
                    let e = &v.refused[0];
                    assert!(e.path().ends_with(field), "{container}: {e}");
                    assert!(e.message().contains("hint:"), "{e}");
                }
            }
        }
    }

    #[test]
    fn every_blocker_of_every_container_is_listed() {
        let container = "{name: main, image: i, command: [t, '${trialParameters.lr}'], envFrom: [{configMapRef: {name: c}}], env: [{name: A, valueFrom: {configMapKeyRef: {name: c, key: a}}}, {name: B, value: b}, {name: C, valueFrom: {secretKeyRef: {name: s, key: k}}}]}";
        let v = local_verdict(&experiment(&job(container), "main"));
        let c = "spec.trialTemplate.trialSpec.spec.template.spec.containers[0]";
        let paths: Vec<String> = v.refused.iter().map(SpecError::path).collect();
        assert_eq!(
            paths,
            [
                format!("{c}.envFrom"),
                format!("{c}.env[0].valueFrom"),
                format!("{c}.env[2].valueFrom")
            ]
        );
        assert!(v.refused[2].message().contains("\"C\""), "{}", v.refused[2]);
        // Every replica's container, and within each every field.
        let pytorch = "{apiVersion: kubeflow.org/v1, kind: PyTorchJob, spec: {pytorchReplicaSpecs: {Master: {replicas: 1, template: {spec: {containers: [{name: pytorch, image: i, args: ['--lr=${trialParameters.lr}'], envFrom: [{secretRef: {name: s}}]}]}}}, Worker: {replicas: 2, template: {spec: {containers: [{name: pytorch, image: i, command: [t], env: [{name: K, valueFrom: {configMapKeyRef: {name: c, key: k}}}]}]}}}}}}";
        let v = local_verdict(&experiment(pytorch, "pytorch"));
        let r = "spec.trialTemplate.trialSpec.spec.pytorchReplicaSpecs";
        let paths: Vec<String> = v.refused.iter().map(SpecError::path).collect();
        assert_eq!(
            paths,
            [
                format!("{r}.Master.template.spec.containers[0].envFrom"),
                format!("{r}.Master.template.spec.containers[0].command"),
                format!("{r}.Worker.template.spec.containers[0].env[0].valueFrom"),
            ]
        );
        // A job that cannot run here still has its ignored fields listed beside the blockers.
        let with_policy = pytorch.replace(
            "spec: {pytorchReplicaSpecs",
            "spec: {runPolicy: {cleanPodPolicy: None}, pytorchReplicaSpecs",
        );
        let v = local_verdict(&experiment(&with_policy, "pytorch"));
        assert_eq!(v.refused.len(), 3);
        let ignored: Vec<String> = v.ignored.iter().map(SpecError::path).collect();
        assert!(
            ignored
                .iter()
                .any(|p| p.ends_with("runPolicy.cleanPodPolicy")),
            "{ignored:?}"
        );
    }

    #[test]
    fn what_runs_once_here_but_many_times_on_a_cluster_is_noted() {
        let job_with = |fields: &str| {
            format!(
                "{{apiVersion: batch/v1, kind: Job, spec: {{{fields} template: {{spec: {{restartPolicy: Never, containers: [{{name: main, image: i, command: [t, '${{trialParameters.lr}}']}}]}}}}}}}}"
            )
        };
        // (job spec fields, the notes' paths)
        let spec_path = "spec.trialTemplate.trialSpec.spec";
        let table: Vec<(&str, Vec<String>)> = vec![
            ("", vec![]),
            ("completions: 1, parallelism: 1,", vec![]),
            (
                "completions: 3, parallelism: 2,",
                vec![
                    format!("{spec_path}.completions"),
                    format!("{spec_path}.parallelism"),
                ],
            ),
        ];
        for (fields, want) in table {
            let v = local_verdict(&experiment(&job_with(fields), "main"));
            assert!(v.runnable(), "{:?}", v.refused);
            let paths: Vec<String> = v.ignored.iter().map(SpecError::path).collect();
            assert_eq!(paths, want, "{fields}");
            assert!(
                v.ignored
                    .iter()
                    .all(|e| e.message().contains("not applied locally"))
            );
        }
        let tfjob = |extra: &str| {
            format!(
                "{{apiVersion: kubeflow.org/v1, kind: TFJob, spec: {{{extra} tfReplicaSpecs: {{Worker: {{replicas: 2, template: {{spec: {{containers: [{{name: tensorflow, image: i, command: [t, '${{trialParameters.lr}}']}}]}}}}}}}}}}}}"
            )
        };
        let notes = |extra: &str| -> Vec<String> {
            let v = local_verdict(&experiment(&tfjob(extra), "tensorflow"));
            v.ignored.iter().map(ToString::to_string).collect()
        };
        assert!(notes("enableDynamicWorker: false,").is_empty());
        assert_eq!(
            notes("enableDynamicWorker: true, runPolicy: {cleanPodPolicy: None},"),
            [
                "spec.trialTemplate.trialSpec.spec.runPolicy.cleanPodPolicy: is not applied locally",
                "spec.trialTemplate.trialSpec.spec.enableDynamicWorker: is not applied locally: TF_CONFIG is the dense cluster spec, not the operator's sparseCluster one",
            ]
        );
    }

    /// A condition Katib would not fill in is noted for a known kind; the defaults are not.
    #[test]
    fn a_custom_success_or_failure_condition_is_noted_as_not_applied_locally() {
        let spec = job("{name: main, image: i, command: [t, '${trialParameters.lr}']}");
        assert!(local_verdict(&experiment(&spec, "main")).ignored.is_empty());
        let mut custom = experiment(&spec, "main");
        if let Some(tt) = custom.spec.trial_template.as_mut() {
            tt.failure_condition = Some("status.conditions.#(type==\"Complete\")#".into());
        }
        let v = local_verdict(&custom);
        assert!(v.runnable());
        let notes: Vec<String> = v.ignored.iter().map(ToString::to_string).collect();
        assert_eq!(
            notes,
            [
                "spec.trialTemplate.failureCondition: is not applied locally: a local trial is judged by its processes' exit codes (a Job's container, a training job's replicas); a cluster applies it to the job's status"
            ]
        );
    }

    #[test]
    fn kinds_without_containers_are_refused_locally_with_a_hint() {
        let workflow = "{apiVersion: argoproj.io/v1alpha1, kind: Workflow, spec: {entrypoint: t, templates: [{name: t, container: {name: main, image: i, command: [t, '${trialParameters.lr}']}}]}}";
        let v = local_verdict(&experiment(workflow, "main"));
        assert_eq!(v.refused.len(), 1);
        assert_eq!(v.refused[0].path(), "spec.trialTemplate.trialSpec.kind");
        assert!(
            v.refused[0].message().contains("\"Workflow\""),
            "{:?}",
            v.refused
        );
        assert!(v.refused[0].message().contains("vernier operator"));
    }

    /// Katib fills an MXJob's conditions in, so it is valid; its replicas need the training
    /// operator's environment, so it is not run here as one container.
    #[test]
    fn an_mxjob_is_refused_locally_not_run_as_one_replica() {
        let mxjob = "{apiVersion: kubeflow.org/v1, kind: MXJob, spec: {jobMode: MXTrain, mxReplicaSpecs: {Scheduler: {replicas: 1, template: {spec: {containers: [{name: mxnet, image: i, command: [bpslaunch]}]}}}, Worker: {replicas: 1, template: {spec: {containers: [{name: mxnet, image: i, command: [bpslaunch, python3, t.py, '--lr=${trialParameters.lr}']}]}}}}}}";
        let v = local_verdict(&experiment(mxjob, "mxnet"));
        assert_eq!(v.refused.len(), 1, "{:?}", v.refused);
        assert_eq!(v.refused[0].path(), "spec.trialTemplate.trialSpec.kind");
        assert!(v.refused[0].message().contains("DMLC_"), "{:?}", v.refused);
        assert!(v.refused[0].message().contains("vernier operator"));
    }

    #[test]
    fn primary_pod_labels_must_select_a_replica_that_runs() {
        let pytorch = "{apiVersion: kubeflow.org/v1, kind: PyTorchJob, spec: {pytorchReplicaSpecs: {Worker: {replicas: 2, template: {spec: {containers: [{name: pytorch, image: i, command: [t, '${trialParameters.lr}']}]}}}}}}";
        let v = local_verdict(&experiment(pytorch, "pytorch"));
        let why = v
            .refused
            .first()
            .map(ToString::to_string)
            .unwrap_or_default();
        assert!(
            why.starts_with("spec.trialTemplate.primaryPodLabels: {training.kubeflow.org/job-role: master} (Katib's default when primaryPodLabels is unset) matches no replica of this kubeflow.org/v1 PyTorchJob")
                && why.contains("{training.kubeflow.org/replica-type: worker}"),
            "{why}"
        );
        // Katib's mpijob-horovod example selects the launcher by the MPI controller's label.
        let mpi = "{apiVersion: kubeflow.org/v1, kind: MPIJob, spec: {mpiReplicaSpecs: {Launcher: {replicas: 1, template: {spec: {containers: [{name: mpi-launcher, image: i, command: [mpirun, t, '${trialParameters.lr}']}]}}}, Worker: {replicas: 2, template: {spec: {containers: [{name: mpi-worker, image: i}]}}}}}}";
        let mut exp = experiment(mpi, "mpi-launcher");
        let tt = exp.spec.trial_template.as_mut().unwrap();
        tt.primary_pod_labels = Some(BTreeMap::from([("mpi-job-role".into(), "launcher".into())]));
        assert!(
            local_verdict(&exp).runnable(),
            "{:?}",
            local_verdict(&exp).refused
        );
        let tt = exp.spec.trial_template.as_mut().unwrap();
        tt.primary_pod_labels = Some(BTreeMap::from([("mpi-job-role".into(), "worker".into())]));
        let why = local_verdict(&exp).refused[0].to_string();
        assert!(
            why.contains("e.g. {training.kubeflow.org/replica-type: launcher}"),
            "{why}"
        );
    }

    #[test]
    fn a_batch_jobs_other_containers_are_noted() {
        let spec = "{apiVersion: batch/v1, kind: Job, spec: {backoffLimit: 2, activeDeadlineSeconds: 60, template: {spec: {containers: [{name: side, image: i, command: [s]}, {name: main, image: i, command: [t, '${trialParameters.lr}']}]}}}}";
        let v = local_verdict(&experiment(spec, "main"));
        assert!(v.runnable(), "{:?}", v.refused);
        let notes: Vec<String> = v.ignored.iter().map(ToString::to_string).collect();
        assert_eq!(
            notes,
            [
                "spec.trialTemplate.trialSpec.spec.template.spec.containers: only the primary container runs locally; not run: side"
            ]
        );
        let plain = local_verdict(&experiment(&job_of_main(), "main"));
        assert!(plain.ignored.is_empty(), "{:?}", plain.ignored);
    }

    #[test]
    fn optional_secrets_and_config_maps_run_without_their_variables() {
        let container = "{name: main, image: i, command: [t, '${trialParameters.lr}'], envFrom: [{configMapRef: {name: c, optional: true}}], env: [{name: K, valueFrom: {secretKeyRef: {name: s, key: k, optional: true}}}]}";
        let v = local_verdict(&experiment(&job(container), "main"));
        assert!(v.runnable(), "{:?}", v.refused);
        let c = "spec.trialTemplate.trialSpec.spec.template.spec.containers[0]";
        let notes: Vec<String> = v.ignored.iter().map(ToString::to_string).collect();
        assert_eq!(
            notes,
            [
                format!(
                    "{c}.envFrom[0]: configMapRef \"c\" is optional and there is none locally, so its variables are left unset, as a cluster does when the object is missing"
                ),
                format!(
                    "{c}.env[0]: secretKeyRef \"s\" is optional and there is none locally, so env var \"K\" is left unset, as a cluster does when the object is missing"
                ),
            ]
        );
        let required = container.replacen(", optional: true", "", 1);
        let v = local_verdict(&experiment(&job(&required), "main"));
        let refused: Vec<String> = v.refused.iter().map(SpecError::path).collect();
        assert_eq!(refused, [format!("{c}.envFrom")]);
    }

    #[test]
    fn what_changes_how_a_process_runs_is_named_when_not_applied() {
        let spec = "{apiVersion: batch/v1, kind: Job, spec: {suspend: true, ttlSecondsAfterFinished: 60, template: {spec: {securityContext: {runAsUser: 1000}, containers: [{name: main, image: i, command: [t, '${trialParameters.lr}'], lifecycle: {postStart: {exec: {command: [x]}}}, livenessProbe: {exec: {command: ['false']}}}]}}}}";
        let v = local_verdict(&experiment(spec, "main"));
        let s = "spec.trialTemplate.trialSpec.spec";
        let c = format!("{s}.template.spec.containers[0]");
        let paths: Vec<String> = v.ignored.iter().map(SpecError::path).collect();
        assert_eq!(
            paths,
            [
                format!("{s}.template.spec.securityContext"),
                format!("{c}.lifecycle"),
                format!("{c}.livenessProbe"),
                format!("{s}.suspend"),
                format!("{s}.ttlSecondsAfterFinished"),
            ]
        );
        let pytorch = "{apiVersion: kubeflow.org/v1, kind: PyTorchJob, spec: {pytorchReplicaSpecs: {Master: {replicas: 1, template: {spec: {containers: [{name: pytorch, image: i, command: [t, '${trialParameters.lr}']}, {name: logger, image: l}]}}}}}}";
        let v = local_verdict(&experiment(pytorch, "pytorch"));
        let notes: Vec<String> = v.ignored.iter().map(ToString::to_string).collect();
        assert_eq!(
            notes,
            [
                "spec.trialTemplate.trialSpec.spec.pytorchReplicaSpecs.Master.template.spec.containers: only the training container runs locally; not run: logger"
            ]
        );
    }

    fn job_of_main() -> String {
        job("{name: main, image: i, command: [t, '${trialParameters.lr}']}")
    }

    #[test]
    fn volumes_and_init_containers_are_noted_not_refused() {
        let spec = "{apiVersion: batch/v1, kind: Job, spec: {template: {spec: {initContainers: [{name: fetch, image: i}], volumes: [{name: d, emptyDir: {}}, {name: unused, emptyDir: {}}, {name: c, configMap: {name: c}}], containers: [{name: main, image: i, command: [t, '${trialParameters.lr}'], volumeMounts: [{name: d, mountPath: /d}, {name: c, mountPath: /etc/c}]}]}}}}";
        let v = local_verdict(&experiment(spec, "main"));
        assert!(v.runnable(), "{:?}", v.refused);
        let pod = "spec.trialTemplate.trialSpec.spec.template.spec";
        let notes: Vec<(String, &str)> =
            v.ignored.iter().map(|e| (e.path(), e.message())).collect();
        let paths: Vec<&str> = notes.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            [
                format!("{pod}.initContainers"),
                format!("{pod}.volumes[0]"),
                format!("{pod}.volumes[2]")
            ]
        );
        assert!(
            notes[1]
                .1
                .starts_with("emptyDir \"d\" mounted at /d: each trial"),
            "{notes:?}"
        );
        assert!(
            notes[2]
                .1
                .starts_with("configMap volume \"c\" mounted at /etc/c is not mounted")
        );
    }
}
