//! Container resource requests and limits on one machine: read and reported, never silently
//! dropped. GPUs are counted with `nvidia-smi -L` and handed out to replicas through
//! `CUDA_VISIBLE_DEVICES`; CPU and memory figures are reported but not enforced.

use serde_json::Value;
use std::collections::BTreeMap;

/// Resource names that mean GPUs to a device plugin.
const GPU_RESOURCES: &[&str] = &["nvidia.com/gpu", "amd.com/gpu"];

/// What one container asks for: `limits` over `requests` for each name, as Kubernetes
/// schedules extended resources by their limit.
pub fn requested(resources: Option<&Value>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for section in ["requests", "limits"] {
        if let Some(map) = resources
            .and_then(|r| r.get(section))
            .and_then(Value::as_object)
        {
            for (k, v) in map {
                let text = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                out.insert(k.clone(), text);
            }
        }
    }
    out
}

/// The number of GPUs a container asks for (0 when none or unreadable).
pub fn gpus_requested(req: &BTreeMap<String, String>) -> u32 {
    GPU_RESOURCES
        .iter()
        .filter_map(|k| req.get(*k))
        .filter_map(|v| v.trim().parse::<u32>().ok())
        .sum()
}

/// Adds the devices handed to a process to its `env`, unless the container sets
/// `CUDA_VISIBLE_DEVICES` itself (under the device plugin its own choice counts too).
pub fn show_devices(env: &mut Vec<(String, String)>, visible: Option<String>) {
    const VAR: &str = "CUDA_VISIBLE_DEVICES";
    if let Some(visible) = visible
        && !env.iter().any(|(k, _)| k == VAR)
    {
        env.push((VAR.into(), visible));
    }
}

/// The GPUs on this machine as `nvidia-smi -L` lists them; empty when the tool is missing or
/// lists none. Checked once per experiment.
pub fn detect_gpus() -> Vec<String> {
    match std::process::Command::new("nvidia-smi").arg("-L").output() {
        Ok(out) if out.status.success() => parse_nvidia_smi(&String::from_utf8_lossy(&out.stdout)),
        _ => Vec::new(),
    }
}

/// `GPU 0: NVIDIA A100 (UUID: ...)` lines → their indices, in order.
pub fn parse_nvidia_smi(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("GPU "))
        .filter_map(|rest| rest.split(':').next())
        .map(|i| i.trim().to_string())
        .filter(|i| !i.is_empty() && i.chars().all(|c| c.is_ascii_digit()))
        .collect()
}

/// Hands GPUs to replicas in start order: each replica gets as many as it asks for, wrapping
/// round when the job asks for more than the machine has (then replicas share devices).
#[derive(Debug)]
pub struct GpuAssigner {
    gpus: Vec<String>,
    next: usize,
    /// GPUs handed out so far, counting repeats.
    given: usize,
}

/// The devices for one replica and, if they cannot be honoured as asked, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuAssignment {
    /// `CUDA_VISIBLE_DEVICES`, or `None` to leave the variable alone (no GPUs here).
    pub visible: Option<String>,
    pub note: Option<String>,
}

impl GpuAssigner {
    pub fn new(gpus: Vec<String>) -> GpuAssigner {
        GpuAssigner {
            gpus,
            next: 0,
            given: 0,
        }
    }

    pub fn assign(&mut self, replica: &str, wanted: u32) -> GpuAssignment {
        if self.gpus.is_empty() {
            return GpuAssignment {
                visible: None,
                note: (wanted > 0).then(|| {
                    format!(
                        "{replica} requests {wanted} GPU(s) but this machine has none (nvidia-smi -L lists no GPU): the request cannot be honoured and the replica runs without a GPU"
                    )
                }),
            };
        }
        if wanted == 0 {
            // A pod without a GPU limit sees no GPU under the device plugin; the same here.
            return GpuAssignment {
                visible: Some(String::new()),
                note: None,
            };
        }
        let n = self.gpus.len();
        let picked: Vec<String> = (0..wanted as usize)
            .map(|k| self.gpus[(self.next + k) % n].clone())
            .collect();
        self.given += wanted as usize;
        let shared = self.given > n;
        self.next = (self.next + wanted as usize) % n;
        GpuAssignment {
            visible: Some(picked.join(",")),
            note: shared.then(|| {
                format!(
                    "{replica} requests {wanted} GPU(s); the job asks for more than the {n} on this machine, so replicas share devices (CUDA_VISIBLE_DEVICES={})",
                    picked.join(",")
                )
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn limits_override_requests_and_gpus_are_counted() {
        let r = json!({"requests": {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": 1},
                       "limits": {"nvidia.com/gpu": "2"}});
        let req = requested(Some(&r));
        assert_eq!(req["cpu"], "1");
        assert_eq!(req["memory"], "2Gi");
        assert_eq!(req["nvidia.com/gpu"], "2");
        assert_eq!(gpus_requested(&req), 2);
        assert_eq!(gpus_requested(&requested(None)), 0);
    }

    #[test]
    fn a_containers_own_device_list_is_kept() {
        let mut env = vec![("A".to_string(), "1".to_string())];
        show_devices(&mut env, Some("0".into()));
        assert_eq!(
            env[1],
            ("CUDA_VISIBLE_DEVICES".to_string(), "0".to_string())
        );
        show_devices(&mut env, Some("1".into()));
        assert_eq!(env.len(), 2);
        assert_eq!(env[1].1, "0");
    }

    #[test]
    fn nvidia_smi_lines_give_device_indices() {
        let out = "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-1)\nGPU 1: NVIDIA A100-SXM4-40GB (UUID: GPU-2)\n";
        assert_eq!(parse_nvidia_smi(out), ["0", "1"]);
        assert!(parse_nvidia_smi("No devices were found\n").is_empty());
    }

    #[test]
    fn gpus_go_round_robin_and_replicas_without_a_request_see_none() {
        let mut a = GpuAssigner::new(vec!["0".into(), "1".into()]);
        assert_eq!(a.assign("chief-0", 0).visible.as_deref(), Some(""));
        let w0 = a.assign("worker-0", 1);
        assert_eq!((w0.visible.as_deref(), w0.note), (Some("0"), None));
        assert_eq!(a.assign("worker-1", 1).visible.as_deref(), Some("1"));
        let w2 = a.assign("worker-2", 1);
        assert_eq!(w2.visible.as_deref(), Some("0"));
        assert!(w2.note.unwrap().contains("share devices"));
    }

    #[test]
    fn a_gpu_request_on_a_machine_without_gpus_is_reported() {
        let mut a = GpuAssigner::new(Vec::new());
        let w = a.assign("worker-0", 1);
        assert_eq!(w.visible, None);
        assert!(w.note.unwrap().contains("cannot be honoured"));
        assert_eq!(a.assign("ps-0", 0).note, None);
    }
}
