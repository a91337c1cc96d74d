//! The job kinds the simulated operator handles and what differs between them: where the
//! replica specs live, how pods are named and labelled, which pod is primary, and the
//! condition vocabulary of the real controller (kube's Job controller, Kubeflow's training
//! operator v1).

use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Map, Value, json};

/// A kind of training job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobKind {
    /// `batch/v1` Job.
    BatchJob,
    /// `kubeflow.org/v1` TFJob.
    TfJob,
    /// `kubeflow.org/v1` PyTorchJob.
    PyTorchJob,
    /// `kubeflow.org/v1` XGBoostJob.
    XgBoostJob,
    /// `kubeflow.org/v1` MPIJob.
    MpiJob,
}

/// One pod the job needs.
#[derive(Debug, Clone)]
pub struct Replica {
    /// `Worker`, `Chief`, `Master`, `PS`, `Launcher`; empty for a batch Job.
    pub replica_type: String,
    /// Index within its type.
    pub index: usize,
    /// The pod template (`metadata`, `spec`).
    pub template: Value,
    /// Katib's primary pod: the one whose log carries the metrics.
    pub primary: bool,
}

impl JobKind {
    /// Every kind, batch Job first.
    pub const ALL: [JobKind; 5] = [
        JobKind::BatchJob,
        JobKind::TfJob,
        JobKind::PyTorchJob,
        JobKind::XgBoostJob,
        JobKind::MpiJob,
    ];

    /// `Kind` as in manifests.
    pub fn kind(self) -> &'static str {
        match self {
            JobKind::BatchJob => "Job",
            JobKind::TfJob => "TFJob",
            JobKind::PyTorchJob => "PyTorchJob",
            JobKind::XgBoostJob => "XGBoostJob",
            JobKind::MpiJob => "MPIJob",
        }
    }

    /// Plural resource name.
    pub fn plural(self) -> &'static str {
        match self {
            JobKind::BatchJob => "jobs",
            JobKind::TfJob => "tfjobs",
            JobKind::PyTorchJob => "pytorchjobs",
            JobKind::XgBoostJob => "xgboostjobs",
            JobKind::MpiJob => "mpijobs",
        }
    }

    /// The API resource for dynamic clients.
    pub fn api_resource(self) -> ApiResource {
        let (group, version) = match self {
            JobKind::BatchJob => ("batch", "v1"),
            _ => ("kubeflow.org", "v1"),
        };
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(group, version, self.kind()),
            self.plural(),
        )
    }

    /// The `spec` field holding the replica specs of a Kubeflow kind.
    fn replica_specs_field(self) -> Option<&'static str> {
        match self {
            JobKind::BatchJob => None,
            JobKind::TfJob => Some("tfReplicaSpecs"),
            JobKind::PyTorchJob => Some("pytorchReplicaSpecs"),
            JobKind::XgBoostJob => Some("xgbReplicaSpecs"),
            JobKind::MpiJob => Some("mpiReplicaSpecs"),
        }
    }

    /// The container the real operator treats as the training container.
    pub fn default_container(self) -> Option<&'static str> {
        match self {
            JobKind::BatchJob => None,
            JobKind::TfJob => Some("tensorflow"),
            JobKind::PyTorchJob => Some("pytorch"),
            JobKind::XgBoostJob => Some("xgboost"),
            JobKind::MpiJob => Some("mpi"),
        }
    }

    /// `operator-name` label value of training-operator v1.
    fn operator_name(self) -> &'static str {
        match self {
            JobKind::BatchJob => "job-controller",
            JobKind::TfJob => "tfjob-controller",
            JobKind::PyTorchJob => "pytorchjob-controller",
            JobKind::XgBoostJob => "xgboostjob-controller",
            JobKind::MpiJob => "mpijob-controller",
        }
    }

    /// The pods a job needs, primary marked. A batch Job has one pod at a time (a retry gets
    /// a new one); Kubeflow kinds have `replicas` (default 1) pods per replica type.
    pub fn replicas(self, job: &Value) -> Vec<Replica> {
        let Some(field) = self.replica_specs_field() else {
            return vec![Replica {
                replica_type: String::new(),
                index: 0,
                template: job
                    .pointer("/spec/template")
                    .cloned()
                    .unwrap_or_else(|| json!({})),
                primary: true,
            }];
        };
        let specs = job
            .pointer(&format!("/spec/{field}"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let primary_type = self.primary_type(&specs);
        let mut replicas = Vec::new();
        for (replica_type, spec) in &specs {
            let count = spec.get("replicas").and_then(Value::as_u64).unwrap_or(1);
            for index in 0..count as usize {
                replicas.push(Replica {
                    replica_type: replica_type.clone(),
                    index,
                    template: spec.get("template").cloned().unwrap_or_else(|| json!({})),
                    primary: primary_type.as_deref() == Some(replica_type.as_str()) && index == 0,
                });
            }
        }
        replicas
    }

    /// Which replica type holds the primary pod (index 0 of it): Chief/Master for TFJob when
    /// present (else Worker), Master for PyTorchJob and XGBoostJob (else Worker), Launcher for
    /// MPIJob.
    fn primary_type(self, specs: &Map<String, Value>) -> Option<String> {
        let preference: &[&str] = match self {
            JobKind::BatchJob => &[],
            JobKind::TfJob => &["Chief", "Master", "Worker"],
            JobKind::PyTorchJob | JobKind::XgBoostJob => &["Master", "Worker"],
            JobKind::MpiJob => &["Launcher", "Worker"],
        };
        preference
            .iter()
            .find(|t| specs.contains_key(**t))
            .map(|t| (*t).to_owned())
    }

    /// Pod name: `<job>-<type>-<index>` for Kubeflow kinds; batch Jobs get
    /// `<job>-<random suffix>` from the caller.
    pub fn pod_name(self, job_name: &str, replica: &Replica, suffix: &str) -> String {
        match self {
            JobKind::BatchJob => format!("{job_name}-{suffix}"),
            _ => format!(
                "{job_name}-{}-{}",
                replica.replica_type.to_lowercase(),
                replica.index
            ),
        }
    }

    /// Labels the real controller puts on the pod, besides the template's own.
    pub fn pod_labels(
        self,
        job_name: &str,
        job_uid: &str,
        replica: &Replica,
    ) -> Map<String, Value> {
        let mut labels = Map::new();
        let mut put = |k: &str, v: &str| {
            labels.insert(k.to_owned(), json!(v));
        };
        match self {
            JobKind::BatchJob => {
                put("batch.kubernetes.io/controller-uid", job_uid);
                put("batch.kubernetes.io/job-name", job_name);
                put("controller-uid", job_uid);
                put("job-name", job_name);
            }
            _ => {
                put("training.kubeflow.org/job-name", job_name);
                put("training.kubeflow.org/operator-name", self.operator_name());
                put(
                    "training.kubeflow.org/replica-type",
                    &replica.replica_type.to_lowercase(),
                );
                put(
                    "training.kubeflow.org/replica-index",
                    &replica.index.to_string(),
                );
                if replica.primary {
                    put("training.kubeflow.org/job-role", "master");
                }
            }
        }
        labels
    }
}

/// A `JobCondition` of the training operator / batch Job.
pub fn condition(kind: &str, reason: &str, message: &str, status: bool) -> Value {
    let now = crate::meta::now();
    json!({
        "type": kind,
        "status": if status { "True" } else { "False" },
        "reason": reason,
        "message": message,
        "lastUpdateTime": now,
        "lastTransitionTime": now,
    })
}

/// A batch/v1 Job condition (with `lastProbeTime` instead of `lastUpdateTime`).
pub fn batch_condition(kind: &str, reason: &str, message: &str) -> Value {
    let now = crate::meta::now();
    json!({
        "type": kind,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastProbeTime": now,
        "lastTransitionTime": now,
    })
}

/// Append a training-operator condition the way its `setCondition` does: an existing
/// condition of the same type is replaced, and Succeeded/Failed flip Running to False.
pub fn set_condition(conditions: &mut Vec<Value>, new: Value) {
    let new_type = new["type"].as_str().unwrap_or_default().to_owned();
    conditions.retain(|c| c["type"] != new_type.as_str());
    if new_type == "Succeeded" || new_type == "Failed" {
        for c in conditions.iter_mut() {
            if c["type"] == "Running" {
                c["status"] = json!("False");
            }
        }
    }
    conditions.push(new);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tfjob_primary_is_the_chief_when_present_else_worker_zero() {
        let template = json!({"spec": {"containers": [{"name": "tensorflow"}]}});
        let with_chief = json!({"spec": {"tfReplicaSpecs": {
            "Chief": {"replicas": 1, "template": template},
            "PS": {"replicas": 1, "template": template},
            "Worker": {"replicas": 2, "template": template}}}});
        let replicas = JobKind::TfJob.replicas(&with_chief);
        let names: Vec<(String, bool)> = replicas
            .iter()
            .map(|r| (JobKind::TfJob.pod_name("j", r, ""), r.primary))
            .collect();
        assert_eq!(
            names,
            vec![
                ("j-chief-0".to_owned(), true),
                ("j-ps-0".to_owned(), false),
                ("j-worker-0".to_owned(), false),
                ("j-worker-1".to_owned(), false)
            ]
        );
        let workers_only =
            json!({"spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2, "template": template}}}});
        let primaries: Vec<bool> = JobKind::TfJob
            .replicas(&workers_only)
            .iter()
            .map(|r| r.primary)
            .collect();
        assert_eq!(primaries, vec![true, false]);
    }

    #[test]
    fn pytorch_master_pod_gets_katibs_default_primary_label() {
        let template = json!({"spec": {"containers": [{"name": "pytorch"}]}});
        let job = json!({"spec": {"pytorchReplicaSpecs": {
            "Master": {"replicas": 1, "template": template},
            "Worker": {"replicas": 1, "template": template}}}});
        let replicas = JobKind::PyTorchJob.replicas(&job);
        let master = JobKind::PyTorchJob.pod_labels("j", "uid", &replicas[0]);
        assert_eq!(master["training.kubeflow.org/job-role"], "master");
        assert_eq!(master["training.kubeflow.org/replica-type"], "master");
        assert_eq!(master["training.kubeflow.org/replica-index"], "0");
        assert_eq!(master["training.kubeflow.org/job-name"], "j");
        let worker = JobKind::PyTorchJob.pod_labels("j", "uid", &replicas[1]);
        assert!(worker.get("training.kubeflow.org/job-role").is_none());
    }

    #[test]
    fn terminal_conditions_flip_running_to_false() {
        let mut conditions = vec![condition("Created", "TFJobCreated", "", true)];
        set_condition(
            &mut conditions,
            condition("Running", "TFJobRunning", "", true),
        );
        set_condition(
            &mut conditions,
            condition("Succeeded", "TFJobSucceeded", "", true),
        );
        let summary: Vec<(String, String)> = conditions
            .iter()
            .map(|c| {
                (
                    c["type"].as_str().unwrap().to_owned(),
                    c["status"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                ("Created".to_owned(), "True".to_owned()),
                ("Running".to_owned(), "False".to_owned()),
                ("Succeeded".to_owned(), "True".to_owned())
            ]
        );
    }
}
