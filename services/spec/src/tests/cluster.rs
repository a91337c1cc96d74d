//! What a cluster runs is valid: templates local mode cannot run (the image's entrypoint,
//! `valueFrom`, `envFrom`, volumes, init containers, kinds without a containers list) pass
//! validation; only a primary container that names no container of a known kind is refused.

use super::{TFJOB, assert_error, mutated, parse_err, parse_ok, set};
use serde_json::json;

const CHIEF: &str = "/spec/trialTemplate/trialSpec/spec/tfReplicaSpecs/Chief/template/spec";
const WORKER: &str = "/spec/trialTemplate/trialSpec/spec/tfReplicaSpecs/Worker/template/spec";

#[test]
fn an_entrypoint_only_tfjob_with_value_from_is_valid() {
    let text = mutated(TFJOB, |v| {
        for pod in [CHIEF, WORKER] {
            set(
                v,
                pod,
                json!({
                    "initContainers": [{"name": "fetch", "image": "busybox"}],
                    "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "d"}}],
                    "containers": [{
                        "name": "tensorflow",
                        "image": "example/train:1",
                        "env": [
                            {"name": "BATCH", "value": "${trialParameters.batchSize}"},
                            {"name": "LOGS", "value": "/logs/${trialParameters.trialName}"},
                            {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
                            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
                        ],
                        "envFrom": [{"configMapRef": {"name": "settings"}}],
                        "volumeMounts": [{"name": "data", "mountPath": "/data"}]
                    }]
                }),
            );
        }
    });
    parse_ok(&text);
}

#[test]
fn kinds_without_a_containers_list_are_valid() {
    let text = mutated(TFJOB, |v| {
        set(
            v,
            "/spec/trialTemplate/trialSpec",
            json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "spec": {
                "entrypoint": "t",
                "templates": [{"name": "t", "container": {"name": "tensorflow", "image": "i",
                    "args": ["--b=${trialParameters.batchSize}", "--logs=/logs/${trialParameters.trialName}"]}}]}}),
        );
        set(
            v,
            "/spec/trialTemplate/successCondition",
            json!("status.phase == Succeeded"),
        );
        set(
            v,
            "/spec/trialTemplate/failureCondition",
            json!("status.phase == Failed"),
        );
    });
    parse_ok(&text);
}

#[test]
fn a_primary_container_naming_no_container_of_a_known_kind_is_refused() {
    let e = parse_err(&mutated(TFJOB, |v| {
        set(
            v,
            "/spec/trialTemplate/primaryContainerName",
            json!("trainer"),
        );
    }));
    assert_error(
        &e,
        "spec.trialTemplate.primaryContainerName",
        "no container named \"trainer\" in the trial spec",
    );
}
