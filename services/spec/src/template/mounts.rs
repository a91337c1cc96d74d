//! A container's volume mounts as local mode gives them to its process. A cluster mounts each
//! volume at its `mountPath`; a process here sees this machine's file system, so where the
//! mount path appears in the command, args, env or working directory it is replaced: an
//! `emptyDir` by a directory of the trial's own (each pod has its own empty one), a `hostPath`
//! by that path (the node is this machine). Other volumes (a ConfigMap, a Secret, a claim)
//! have nothing here to stand for them; their paths are read as they are. Pure: the runner
//! chooses the directories.

use serde_json::Value;

/// What a mount of one volume stands for here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MountSource {
    /// An `emptyDir`: a private, empty directory for each pod.
    Private,
    /// A `hostPath`: this machine's path.
    Host(String),
    /// Any other volume, by its type (`configMap`, `persistentVolumeClaim`, ...), or
    /// `missing` when the pod has no volume of the mount's name.
    Other(String),
}

/// One `volumeMounts` entry and the volume it mounts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeMount {
    pub volume: String,
    pub mount_path: String,
    /// `subPath`: the part of the volume mounted, relative to its root.
    pub sub_path: Option<String>,
    pub source: MountSource,
}

/// Mount paths left as they are whatever the volume: `/dev/shm` is this machine's shared
/// memory, which is what the usual `emptyDir: {medium: Memory}` there provides.
const LEFT_AS_IS: [&str; 1] = ["/dev/shm"];

/// The mounts a container lists (its `volumeMounts`) in a pod whose volumes are `volumes`
/// (the pod spec's list), in the container's order.
pub fn volume_mounts(mounts: Option<&Value>, volumes: &Value) -> Vec<VolumeMount> {
    let mounts = mounts.and_then(Value::as_array);
    mounts
        .into_iter()
        .flatten()
        .filter_map(|m| {
            let volume = m.get("name")?.as_str()?.to_string();
            let mount_path = m.get("mountPath")?.as_str()?.to_string();
            let sub_path = m
                .get("subPath")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string);
            let source = source(&volume, volumes);
            Some(VolumeMount {
                volume,
                mount_path,
                sub_path,
                source,
            })
        })
        .collect()
}

fn source(volume: &str, volumes: &Value) -> MountSource {
    let found = volumes
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| v.get("name").and_then(Value::as_str) == Some(volume));
    let Some(found) = found.and_then(Value::as_object) else {
        return MountSource::Other("missing".to_string());
    };
    let kind = found.keys().find(|k| k.as_str() != "name");
    match kind.map(String::as_str) {
        Some("emptyDir") => MountSource::Private,
        Some("hostPath") => {
            let path = found["hostPath"].get("path").and_then(Value::as_str);
            MountSource::Host(path.unwrap_or_default().to_string())
        }
        Some(other) => MountSource::Other(other.to_string()),
        None => MountSource::Other("unknown".to_string()),
    }
}

impl VolumeMount {
    /// Whether local mode replaces this mount's path: an `emptyDir` or `hostPath` mounted
    /// elsewhere than where it is.
    pub fn is_mapped(&self) -> bool {
        let trimmed = self.mount_path.trim_end_matches('/');
        if LEFT_AS_IS.contains(&trimmed) || trimmed.is_empty() {
            return false;
        }
        match &self.source {
            MountSource::Private => true,
            MountSource::Host(path) => self.target_in(path) != trimmed,
            MountSource::Other(_) => false,
        }
    }

    /// Where the mount path leads on this machine when the volume's root is `root`.
    pub fn target_in(&self, root: &str) -> String {
        let root = root.trim_end_matches('/');
        match &self.sub_path {
            Some(sub) => format!("{root}/{}", sub.trim_matches('/')),
            None => root.to_string(),
        }
    }

    /// What local mode does with this mount, for `validate` and the trial's log.
    pub fn local_note(&self) -> String {
        let (path, volume) = (&self.mount_path, &self.volume);
        match &self.source {
            _ if !self.is_mapped() && LEFT_AS_IS.contains(&path.trim_end_matches('/')) => {
                format!("volume {volume:?} at {path} is this machine's {path}")
            }
            MountSource::Private => format!(
                "emptyDir {volume:?} mounted at {path}: each trial (each replica) gets its own \
                 empty directory under the experiment's log directory, given where {path} \
                 appears in command, args, env or workingDir; a trainer that opens {path} by \
                 itself uses this machine's {path}, shared by every trial; hint: pass the path \
                 as an argument or variable"
            ),
            MountSource::Host(host) if self.is_mapped() => format!(
                "hostPath {volume:?} mounted at {path}: {} is given where {path} appears in \
                 command, args, env or workingDir (this machine is the node)",
                self.target_in(host)
            ),
            MountSource::Host(_) => {
                format!("hostPath {volume:?} mounted at {path}: read where it is on this machine")
            }
            MountSource::Other(kind) => format!(
                "{kind} volume {volume:?} mounted at {path} is not mounted locally: the trial \
                 reads this machine's {path} as it is; hint: put the files there, or run on a \
                 cluster"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_mount_is_mapped_by_what_its_volume_is() {
        let volumes = json!([
            {"name": "scratch", "emptyDir": {}},
            {"name": "shm", "emptyDir": {"medium": "Memory"}},
            {"name": "data", "hostPath": {"path": "/srv/data/"}},
            {"name": "same", "hostPath": {"path": "/opt/same"}},
            {"name": "cfg", "configMap": {"name": "c"}},
        ]);
        let mounts = json!([
            {"name": "scratch", "mountPath": "/output"},
            {"name": "shm", "mountPath": "/dev/shm"},
            {"name": "data", "mountPath": "/data", "subPath": "train"},
            {"name": "same", "mountPath": "/opt/same"},
            {"name": "cfg", "mountPath": "/etc/trainer"},
            {"name": "typo", "mountPath": "/x"},
        ]);
        let got: Vec<(String, bool, MountSource)> = volume_mounts(Some(&mounts), &volumes)
            .into_iter()
            .map(|m| (m.mount_path.clone(), m.is_mapped(), m.source))
            .collect();
        let want = [
            ("/output", true, MountSource::Private),
            ("/dev/shm", false, MountSource::Private),
            ("/data", true, MountSource::Host("/srv/data/".into())),
            ("/opt/same", false, MountSource::Host("/opt/same".into())),
            (
                "/etc/trainer",
                false,
                MountSource::Other("configMap".into()),
            ),
            ("/x", false, MountSource::Other("missing".into())),
        ];
        let want: Vec<(String, bool, MountSource)> = want
            .into_iter()
            .map(|(p, m, s)| (p.to_string(), m, s))
            .collect();
        assert_eq!(got, want);
        let data = &volume_mounts(Some(&mounts), &volumes)[2];
        assert_eq!(data.target_in("/srv/data/"), "/srv/data/train");
        assert!(
            data.local_note()
                .contains("/srv/data/train is given where /data appears")
        );
    }
}
