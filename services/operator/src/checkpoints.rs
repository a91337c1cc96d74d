//! Checkpoint directories on a cluster, laid out as Katib's PBT expects: one
//! PersistentVolumeClaim per experiment (`<experiment>-<algorithm>`, Katib's suggestion volume
//! name), each trial's primary container mounting its own sub-directory
//! `<experiment>/<trial>` at `suggestion_trial_dir` (as Katib's webhook mounts it). Where
//! Katib's PBT service copies the parent's directory on the volume before the trial exists,
//! the operator has no volume of its own, so a trial with a parent gets a first init container
//! that copies `<experiment>/<parent>` into `<experiment>/<trial>` before training starts.
//! Which trial is the parent is decided by `vernier_algorithms::checkpoint`; this module only
//! renders objects (pure), the reconciler creates them.

use serde_json::{Value, json};

/// Katib's name for the suggestion volume in a trial pod.
pub const VOLUME_NAME: &str = "suggestion-volume";
/// Where the copying init container sees the whole volume.
const COPY_MOUNT: &str = "/vernier-checkpoints";
/// Katib's default suggestion volume size.
pub const STORAGE: &str = "1Gi";

/// Katib's `GetSuggestionPersistentVolumeClaimName`: `<suggestion>-<algorithm>`, where the
/// suggestion is named after the experiment.
pub fn claim_name(experiment: &str, algorithm: &str) -> String {
    format!("{experiment}-{algorithm}")
}

/// The claim, owned by the experiment so it goes with it. ReadWriteMany, since trials (and
/// their copy steps) may run on different nodes at once (Katib's docs ask for the same).
pub fn claim_object(name: &str, namespace: &str, owner: Option<Value>) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "ownerReferences": owner.into_iter().collect::<Vec<_>>(),
        },
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "resources": {"requests": {"storage": STORAGE}},
        },
    })
}

/// What one trial's job needs: the claim, the mount path, its own and its parent's
/// directories on the volume.
#[derive(Debug, Clone, PartialEq)]
pub struct TrialCheckpoint<'a> {
    pub claim: &'a str,
    pub mount_path: &'a str,
    pub experiment: &'a str,
    pub trial: &'a str,
    pub parent: Option<&'a str>,
    pub primary_container: Option<&'a str>,
    /// The image that runs the copy (any image with `sh`, `mkdir` and `cp`).
    pub image: &'a str,
}

/// `run_spec` with the volume in every pod template, the trial's directory mounted in the
/// primary container and, with a parent, the copy step first among the init containers.
pub fn inject(c: &TrialCheckpoint<'_>, mut run_spec: Value) -> Value {
    let mut templates = Vec::new();
    crate::sidecar::find_templates(&mut run_spec, None, &mut templates);
    for (template, _) in templates {
        add_to_template(c, template);
    }
    run_spec
}

fn add_to_template(c: &TrialCheckpoint<'_>, template: &mut Value) {
    let Some(spec) = template.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
    if let Some(list) = volumes.as_array_mut()
        && !list.iter().any(|v| v["name"] == VOLUME_NAME)
    {
        list.push(json!({"name": VOLUME_NAME, "persistentVolumeClaim": {"claimName": c.claim}}));
    }
    if let Some(containers) = spec.get_mut("containers").and_then(Value::as_array_mut)
        && !containers.is_empty()
    {
        let i = crate::sidecar::primary_container(containers, c.primary_container);
        let mounts = containers[i]
            .as_object_mut()
            .map(|o| o.entry("volumeMounts").or_insert_with(|| json!([])));
        if let Some(Value::Array(mounts)) = mounts {
            mounts.push(json!({
                "name": VOLUME_NAME,
                "mountPath": c.mount_path,
                "subPath": format!("{}/{}", c.experiment, c.trial),
            }));
        }
    }
    if let Some(parent) = c.parent {
        let init = spec.entry("initContainers").or_insert_with(|| json!([]));
        if let Some(list) = init.as_array_mut() {
            list.insert(0, copy_container(c, parent));
        }
    }
}

/// Copies the parent's directory into the trial's; names go in as arguments, never into the
/// script, and a parent that saved nothing leaves the trial's directory empty.
fn copy_container(c: &TrialCheckpoint<'_>, parent: &str) -> Value {
    json!({
        "name": "checkpoint-copy",
        "image": c.image,
        "command": [
            "sh", "-c",
            "mkdir -p \"$2\" && if [ -d \"$1\" ]; then cp -a \"$1/.\" \"$2/\"; fi",
            "checkpoint-copy",
            format!("{COPY_MOUNT}/{}/{parent}", c.experiment),
            format!("{COPY_MOUNT}/{}/{}", c.experiment, c.trial),
        ],
        "volumeMounts": [{"name": VOLUME_NAME, "mountPath": COPY_MOUNT}],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> Value {
        json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "spec": {"template": {"spec": {
                "containers": [
                    {"name": "side", "image": "x"},
                    {"name": "training-container", "image": "y"}
                ],
                "initContainers": [{"name": "metrics-collector", "image": "v"}]
            }}}
        })
    }

    fn checkpoint(parent: Option<&'static str>) -> TrialCheckpoint<'static> {
        TrialCheckpoint {
            claim: "e-pbt",
            mount_path: "/var/log/katib/checkpoints/",
            experiment: "e",
            trial: "e-child",
            parent,
            primary_container: Some("training-container"),
            image: "vernier:latest",
        }
    }

    #[test]
    fn the_trial_mounts_its_own_directory_and_copies_its_parents_first() {
        let out = inject(&checkpoint(Some("e-parent")), job());
        let spec = &out["spec"]["template"]["spec"];
        assert_eq!(
            spec["volumes"],
            json!([{"name": "suggestion-volume", "persistentVolumeClaim": {"claimName": "e-pbt"}}])
        );
        assert_eq!(spec["containers"][0].get("volumeMounts"), None);
        assert_eq!(
            spec["containers"][1]["volumeMounts"],
            json!([{"name": "suggestion-volume", "mountPath": "/var/log/katib/checkpoints/",
                    "subPath": "e/e-child"}])
        );
        let init = spec["initContainers"].as_array().unwrap();
        assert_eq!(init.len(), 2);
        assert_eq!(init[0]["name"], "checkpoint-copy");
        assert_eq!(init[0]["command"][4], "/vernier-checkpoints/e/e-parent");
        assert_eq!(init[0]["command"][5], "/vernier-checkpoints/e/e-child");
        assert_eq!(init[1]["name"], "metrics-collector");
    }

    #[test]
    fn a_first_generation_trial_only_mounts() {
        let out = inject(&checkpoint(None), job());
        let init = out["spec"]["template"]["spec"]["initContainers"]
            .as_array()
            .unwrap();
        assert_eq!(init.len(), 1);
        assert_eq!(claim_name("e", "pbt"), "e-pbt");
        let claim = claim_object("e-pbt", "ns", None);
        assert_eq!(claim["spec"]["accessModes"][0], "ReadWriteMany");
        assert_eq!(claim["metadata"]["namespace"], "ns");
    }
}
