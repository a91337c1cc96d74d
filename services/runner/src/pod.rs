//! What a trial's pod would be on a cluster, as far as its downward-API variables read it
//! (`fieldRef`, `resourceFieldRef`): its name, namespace, labels and this machine as its node.
//! The I/O shell around `vernier_spec::template::downward_api`, which resolves the values.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use vernier_spec::template::downward_api::{NodeFacts, PodFacts};

/// Every pod runs on the loopback interface here, as the replicas reach each other.
const LOOPBACK: &str = crate::replicas::env::LOOPBACK;

/// This machine as the node a cluster would schedule the trial on: its host name, and its
/// CPUs, memory and the disk of `work_dir` as allocatable (the kubelet's value for a limit
/// the container does not set). A figure that cannot be read counts as zero.
pub fn this_node(work_dir: &Path) -> NodeFacts {
    let name = nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_default();
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get() as u64);
    let storage = nix::sys::statvfs::statvfs(work_dir)
        .map(|s| s.blocks().saturating_mul(s.fragment_size()))
        .unwrap_or(0);
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    NodeFacts {
        name,
        ip: LOOPBACK.to_string(),
        cpus,
        memory_bytes: memory_total(&meminfo),
        storage_bytes: storage,
    }
}

/// `MemTotal` of `/proc/meminfo`, in bytes.
fn memory_total(meminfo: &str) -> u64 {
    let kib = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        });
    kib.unwrap_or(0).saturating_mul(1024)
}

/// The pod of a trial whose `rendered` spec holds the primary container directly (a Job, or
/// any kind but the training operators'), in `namespace`: named after the trial, as the Job's
/// pod is (Kubernetes adds a random suffix); a batch Job's pod carries the Job controller's
/// labels.
pub fn trial_pod(
    rendered: &Value,
    primary: &str,
    trial: &str,
    namespace: &str,
    node: &NodeFacts,
) -> PodFacts {
    let template = vernier_spec::template::pod_template_of(rendered, primary);
    let controller = match vernier_spec::template::is_batch_job(rendered) {
        true => BTreeMap::from([
            ("job-name".to_string(), trial.to_string()),
            (
                "batch.kubernetes.io/job-name".to_string(),
                trial.to_string(),
            ),
        ]),
        false => BTreeMap::new(),
    };
    PodFacts::from_template(
        template.unwrap_or(&Value::Null),
        trial,
        namespace,
        &new_uid(),
        controller,
        node.clone(),
    )
}

/// What the Job controller adds to the containers of an indexed Job's pod: its completion
/// index, 0 for the one pod local mode runs.
pub fn completion_index(rendered: &Value) -> Vec<(String, String)> {
    let indexed = vernier_spec::template::is_batch_job(rendered)
        && rendered
            .pointer("/spec/completionMode")
            .and_then(Value::as_str)
            == Some("Indexed");
    match indexed {
        true => vec![("JOB_COMPLETION_INDEX".to_string(), "0".to_string())],
        false => Vec::new(),
    }
}

/// A random version-4 UUID, as the API server gives each pod.
pub fn new_uid() -> String {
    uuid::Uuid::new_v4().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn memory_total_reads_mem_total_in_bytes() {
        let text = "MemFree:  10 kB\nMemTotal:       16384 kB\n";
        assert_eq!(memory_total(text), 16384 * 1024);
        assert_eq!(memory_total(""), 0);
    }

    #[test]
    fn a_uid_is_a_version_4_uuid() {
        let uid = new_uid();
        let parts: Vec<usize> = uid.split('-').map(str::len).collect();
        assert_eq!(parts, [8, 4, 4, 4, 12]);
        assert_eq!(&uid[14..15], "4");
        assert_ne!(uid, new_uid());
    }

    #[test]
    fn a_batch_jobs_pod_is_named_after_the_trial_with_the_job_controllers_labels() {
        let rendered = json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "t-1", "namespace": "kubeflow"},
            "spec": {"template": {"metadata": {"labels": {"app": "a"}},
                "spec": {"containers": [{"name": "main"}]}}}});
        let pod = trial_pod(&rendered, "main", "t-1", "kubeflow", &NodeFacts::default());
        assert_eq!(
            (pod.name.as_str(), pod.namespace.as_str()),
            ("t-1", "kubeflow")
        );
        let labels: Vec<&str> = pod.labels.keys().map(String::as_str).collect();
        assert_eq!(labels, ["app", "batch.kubernetes.io/job-name", "job-name"]);
        assert_eq!(pod.service_account, "default");
        assert!(completion_index(&rendered).is_empty());
        let mut indexed = rendered.clone();
        indexed["spec"]["completionMode"] = json!("Indexed");
        assert_eq!(
            completion_index(&indexed),
            [("JOB_COMPLETION_INDEX".to_string(), "0".to_string())]
        );
    }
}
