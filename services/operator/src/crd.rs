//! The Experiment and Trial CustomResourceDefinitions as Katib ships them: namespaced,
//! `kubeflow.org/v1beta1`, status subresource, Katib's printer columns and categories, and a
//! schema that preserves unknown fields (all checking is done by validation, which reports
//! field paths; a structural schema would reject Katib YAMLs with less helpful messages).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceValidation, JSONSchemaProps,
};
use kube::core::crd::v1::CustomResourceExt;
use vernier_spec::{ExperimentResource, TrialResource};

/// `experiments.kubeflow.org`.
pub fn experiment_crd() -> CustomResourceDefinition {
    schema_less(ExperimentResource::crd())
}

/// `trials.kubeflow.org`.
pub fn trial_crd() -> CustomResourceDefinition {
    schema_less(TrialResource::crd())
}

fn schema_less(mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
    for version in &mut crd.spec.versions {
        version.schema = Some(CustomResourceValidation {
            open_api_v3_schema: Some(JSONSchemaProps {
                type_: Some("object".into()),
                x_kubernetes_preserve_unknown_fields: Some(true),
                ..Default::default()
            }),
        });
    }
    crd
}

/// The CRD as YAML, as written to `deploy/crds/`.
pub fn to_yaml(crd: &CustomResourceDefinition) -> Result<String, yaml_serde::Error> {
    yaml_serde::to_string(crd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn experiment_crd_matches_katib() {
        let crd = experiment_crd();
        assert_eq!(
            crd.metadata.name.as_deref(),
            Some("experiments.kubeflow.org")
        );
        assert_eq!(crd.spec.scope, "Namespaced");
        assert_eq!(crd.spec.names.plural, "experiments");
        let v = &crd.spec.versions[0];
        assert_eq!(v.name, "v1beta1");
        assert!(
            v.subresources
                .as_ref()
                .and_then(|s| s.status.as_ref())
                .is_some()
        );
        let columns: Vec<(&str, &str)> = v
            .additional_printer_columns
            .iter()
            .flatten()
            .map(|c| (c.name.as_str(), c.json_path.as_str()))
            .collect();
        assert_eq!(
            columns,
            vec![
                ("Type", ".status.conditions[-1:].type"),
                ("Status", ".status.conditions[-1:].status"),
                ("Age", ".metadata.creationTimestamp"),
            ]
        );
        let schema = v
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref());
        assert_eq!(
            schema.and_then(|s| s.x_kubernetes_preserve_unknown_fields),
            Some(true)
        );
        assert_eq!(
            crd.spec.names.categories,
            Some(vec!["all".into(), "kubeflow".into(), "katib".into()])
        );
    }

    #[test]
    fn trial_crd_is_namespaced_with_status() {
        let crd = trial_crd();
        assert_eq!(crd.metadata.name.as_deref(), Some("trials.kubeflow.org"));
        assert_eq!(crd.spec.names.kind, "Trial");
        assert!(crd.spec.versions[0].subresources.is_some());
    }
}
