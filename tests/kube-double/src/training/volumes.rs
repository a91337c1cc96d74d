//! `emptyDir` volumes for the simulated kubelet. Every container of a pod runs as a process on
//! this one machine, so a volume two containers share (a metrics file written by the trainer
//! and read by a collector sidecar) must be a real directory that both see, and must not be
//! the literal mount path (`/var/log/katib` is neither writable nor private to the pod here).
//!
//! Each `emptyDir` volume of a pod becomes a fresh directory under the system temp directory,
//! removed when the pod ends. A container's mount path is rewritten to that directory
//! wherever it appears in the container's `command`, `args`, `env` values and `workingDir`
//! (as a whole path or a path prefix, e.g. `--log=/var/log/katib/metrics.log`), so Katib-shaped
//! manifests run unchanged as long as the program is told its paths on the command line or
//! in its environment. A path compiled into a program is not rewritten.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The host directories of one pod's `emptyDir` volumes.
#[derive(Debug)]
pub struct PodVolumes {
    root: PathBuf,
    empty_dirs: BTreeMap<String, PathBuf>,
}

impl PodVolumes {
    /// Create a directory for every `emptyDir` volume of `pod` (under `<tmp>/kube-double-<uid>`).
    pub fn create(pod: &Value) -> std::io::Result<PodVolumes> {
        let uid = pod
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .map_or_else(crate::meta::new_uid, str::to_owned);
        let root = std::env::temp_dir().join(format!("kube-double-{uid}"));
        let mut empty_dirs = BTreeMap::new();
        for volume in pod
            .pointer("/spec/volumes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let (Some(name), Some(_)) = (volume["name"].as_str(), volume.get("emptyDir")) else {
                continue;
            };
            let dir = root.join(name);
            std::fs::create_dir_all(&dir)?;
            empty_dirs.insert(name.to_owned(), dir);
        }
        Ok(PodVolumes { root, empty_dirs })
    }

    /// The host directory of the `emptyDir` volume `name`.
    pub fn host_dir(&self, name: &str) -> Option<&Path> {
        self.empty_dirs.get(name).map(PathBuf::as_path)
    }

    /// `container` with each of its `emptyDir` mount paths replaced by the volume's directory.
    pub fn rewrite(&self, container: &Value) -> Value {
        let mut mounts: Vec<(String, String)> = container
            .get("volumeMounts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|m| {
                let dir = self.empty_dirs.get(m["name"].as_str()?)?;
                let mut host = dir.clone();
                if let Some(sub) = m["subPath"].as_str().filter(|s| !s.is_empty()) {
                    host = host.join(sub);
                    // A subPath is created by the kubelet when missing.
                    let _ = std::fs::create_dir_all(&host);
                }
                let path = m["mountPath"].as_str()?.trim_end_matches('/');
                (!path.is_empty()).then(|| (path.to_owned(), host.display().to_string()))
            })
            .collect();
        // The deepest mount wins where mounts nest.
        mounts.sort_by_key(|(path, _)| std::cmp::Reverse(path.len()));
        let mut out = container.clone();
        let fix = |v: &mut Value| {
            if let Some(s) = v.as_str() {
                *v = Value::String(replace_paths(s, &mounts));
            }
        };
        for field in ["command", "args"] {
            if let Some(words) = out.get_mut(field).and_then(Value::as_array_mut) {
                words.iter_mut().for_each(fix);
            }
        }
        if let Some(env) = out.get_mut("env").and_then(Value::as_array_mut) {
            for entry in env {
                if let Some(v) = entry.get_mut("value") {
                    fix(v);
                }
            }
        }
        if let Some(dir) = out.get_mut("workingDir") {
            fix(dir);
        }
        if let Some(words) = out
            .pointer_mut("/startupProbe/exec/command")
            .and_then(Value::as_array_mut)
        {
            words.iter_mut().for_each(fix);
        }
        out
    }
}

impl Drop for PodVolumes {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Replace every occurrence of a mount path that ends on a path boundary (end of text, `/`,
/// or a character that cannot continue a file name such as a quote or space).
fn replace_paths(text: &str, mounts: &[(String, String)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    'scan: while i < text.len() {
        for (path, host) in mounts {
            if text[i..].starts_with(path.as_str()) {
                let next = text[i + path.len()..].chars().next();
                let boundary =
                    next.is_none_or(|c| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.')));
                // Only at the start of a path, not inside a longer one.
                let starts = text[..i]
                    .chars()
                    .next_back()
                    .is_none_or(|c| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')));
                if boundary && starts {
                    out.push_str(host);
                    i += path.len();
                    continue 'scan;
                }
            }
        }
        let c = text[i..].chars().next().unwrap_or_default();
        out.push(c);
        i += c.len_utf8().max(1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mount_paths_are_replaced_only_as_whole_path_prefixes() {
        let mounts = vec![
            ("/var/log/katib/tfevent".to_owned(), "/h/b".to_owned()),
            ("/var/log/katib".to_owned(), "/h/a".to_owned()),
        ];
        assert_eq!(
            replace_paths("--log=/var/log/katib/metrics.log", &mounts),
            "--log=/h/a/metrics.log"
        );
        assert_eq!(replace_paths("/var/log/katib", &mounts), "/h/a");
        assert_eq!(
            replace_paths("echo x > '/var/log/katib/tfevent/e'", &mounts),
            "echo x > '/h/b/e'"
        );
        assert_eq!(
            replace_paths("/var/log/katibx /x/var/log/katib", &mounts),
            "/var/log/katibx /x/var/log/katib"
        );
    }

    #[test]
    fn each_empty_dir_gets_a_private_directory_removed_with_the_pod() {
        let pod = json!({"metadata": {"uid": format!("t-{}", crate::meta::new_uid())},
            "spec": {"volumes": [
                {"name": "metrics", "emptyDir": {}},
                {"name": "data", "persistentVolumeClaim": {"claimName": "c"}}]}});
        let volumes = PodVolumes::create(&pod).unwrap();
        let dir = volumes.host_dir("metrics").unwrap().to_path_buf();
        assert!(dir.is_dir());
        assert!(volumes.host_dir("data").is_none());
        let container = json!({"command": ["sh", "-c", "echo 1 > /m/x"],
            "env": [{"name": "OUT", "value": "/m/y"}, {"name": "KEEP", "value": "/data/z"}],
            "volumeMounts": [{"name": "metrics", "mountPath": "/m/"},
                             {"name": "data", "mountPath": "/data"}]});
        let out = volumes.rewrite(&container);
        let host = dir.display();
        assert_eq!(out["command"][2], format!("echo 1 > {host}/x"));
        assert_eq!(out["env"][0]["value"], format!("{host}/y"));
        assert_eq!(out["env"][1]["value"], "/data/z");
        drop(volumes);
        assert!(!dir.exists());
    }
}
