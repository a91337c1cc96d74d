//! Trial jobs of any kind: the list of kinds the operator may create (katib-config's
//! `trialResources`, written `Kind.version.group`) and the evaluation of a job's
//! `successCondition` / `failureCondition` GJSON expressions (reference §6).

use crate::error::OperatorError;
use kube::api::{ApiResource, GroupVersionKind};
use serde_json::Value;

/// Katib standalone's `trialResources`.
pub const DEFAULT_TRIAL_RESOURCES: &[&str] = &[
    "Job.v1.batch",
    "TFJob.v1.kubeflow.org",
    "PyTorchJob.v1.kubeflow.org",
    "XGBoostJob.v1.kubeflow.org",
    "MPIJob.v1.kubeflow.org",
    "TrainJob.v1alpha1.trainer.kubeflow.org",
];

/// One kind the operator may create and watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrialKind {
    pub kind: String,
    pub version: String,
    pub group: String,
    /// The resource's plural as the API server serves it ([`with_served_plurals`]); `None`
    /// guesses it from the kind, which is wrong for some (`Analysis` is `analyses`).
    pub plural: Option<String>,
}

impl TrialKind {
    /// Parses `Kind.version.group` (the group may contain dots and may be empty for core).
    pub fn parse(value: &str) -> Result<TrialKind, OperatorError> {
        let bad = |message: &str| OperatorError::TrialResource {
            value: value.to_string(),
            message: message.to_string(),
        };
        if value.is_empty() {
            return Err(bad("it is empty"));
        }
        if value.contains(char::is_whitespace) {
            return Err(bad("it holds a space; separate several kinds with commas"));
        }
        let mut parts = value.splitn(3, '.');
        let kind = parts.next().unwrap_or_default();
        let version = parts.next().ok_or_else(|| bad("has no version"))?;
        let group = parts.next().unwrap_or_default();
        if kind.is_empty() || !kind.starts_with(|c: char| c.is_ascii_uppercase()) {
            return Err(bad("the kind must start with an uppercase letter"));
        }
        if !kind.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(bad("the kind must be letters and digits"));
        }
        let lower = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
        if version.is_empty() || !version.chars().all(lower) {
            return Err(bad(
                "the version must be lowercase letters and digits, e.g. v1",
            ));
        }
        let dns = group.chars().all(|c| lower(c) || c == '-' || c == '.');
        if !dns || group.starts_with(['.', '-']) || group.ends_with(['.', '-']) {
            return Err(bad("the group must be a DNS name, e.g. kubeflow.org"));
        }
        Ok(TrialKind {
            kind: kind.into(),
            version: version.into(),
            group: group.into(),
            plural: None,
        })
    }

    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub fn api_resource(&self) -> ApiResource {
        let gvk = GroupVersionKind::gvk(&self.group, &self.version, &self.kind);
        match &self.plural {
            Some(plural) => ApiResource::from_gvk_with_plural(&gvk, plural),
            None => ApiResource::from_gvk(&gvk),
        }
    }

    /// Whether a rendered job with this `apiVersion` and `kind` is of this kind.
    pub fn matches(&self, api_version: &str, kind: &str) -> bool {
        self.kind == kind && self.api_version() == api_version
    }
}

/// `kinds` with each plural the API server's discovery gives; a kind it does not serve keeps
/// the guess (the operator then notes that its jobs are not watched).
pub async fn with_served_plurals(client: &kube::Client, kinds: Vec<TrialKind>) -> Vec<TrialKind> {
    let mut out = Vec::with_capacity(kinds.len());
    for mut kind in kinds {
        let gvk = GroupVersionKind::gvk(&kind.group, &kind.version, &kind.kind);
        if let Ok((resource, _)) = kube::discovery::pinned_kind(client, &gvk).await {
            kind.plural = Some(resource.plural);
        }
        out.push(kind);
    }
    out
}

/// Parses a list of `Kind.version.group` values.
pub fn parse_trial_kinds<S: AsRef<str>>(values: &[S]) -> Result<Vec<TrialKind>, OperatorError> {
    // "A, B" is how lists are written: the space after a comma is not part of the value.
    values
        .iter()
        .map(|v| TrialKind::parse(v.as_ref().trim()))
        .collect()
}

/// What a job's conditions say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobOutcome {
    Failed {
        reason: String,
        message: String,
    },
    Succeeded {
        reason: String,
        message: String,
    },
    /// Neither expression matches yet.
    Running,
}

/// Evaluates Katib's way: the failure expression first; a match is an object or a non-empty
/// array, whose (first) element's `reason` and `message` describe the outcome.
pub fn evaluate(job: &Value, success: &str, failure: &str) -> JobOutcome {
    let json = job.to_string();
    if let Some((reason, message)) = matched(&json, failure) {
        return JobOutcome::Failed { reason, message };
    }
    if let Some((reason, message)) = matched(&json, success) {
        return JobOutcome::Succeeded { reason, message };
    }
    JobOutcome::Running
}

fn matched(json: &str, expression: &str) -> Option<(String, String)> {
    if expression.trim().is_empty() {
        return None;
    }
    let result = gjson::get(json, expression);
    let first = match result.kind() {
        gjson::Kind::Object => result.json().to_string(),
        gjson::Kind::Array => {
            let items = result.array();
            items.first()?.json().to_string()
        }
        _ => return None,
    };
    let reason = gjson::get(&first, "reason").str().to_string();
    let message = gjson::get(&first, "message").str().to_string();
    Some((reason, message))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const JOB_SUCCESS: &str = r#"status.conditions.#(type=="Complete")#|#(status=="True")#"#;
    const KF_SUCCESS: &str = r#"status.conditions.#(type=="Succeeded")#|#(status=="True")#"#;
    const FAILURE: &str = r#"status.conditions.#(type=="Failed")#|#(status=="True")#"#;

    #[test]
    fn parses_trial_resources() {
        let k = TrialKind::parse("TFJob.v1.kubeflow.org").unwrap();
        assert_eq!(k.api_version(), "kubeflow.org/v1");
        assert!(k.matches("kubeflow.org/v1", "TFJob"));
        assert_eq!(k.api_resource().plural, "tfjobs");
        assert_eq!(
            TrialKind::parse("Job.v1.batch").unwrap().api_version(),
            "batch/v1"
        );
        let err = TrialKind::parse("tfjob").unwrap_err().to_string();
        assert!(err.contains("\"tfjob\""), "{err}");
        assert!(err.contains("hint:"), "{err}");
        assert!(TrialKind::parse("TFJob").is_err());
        // The values a mistyped list or a shell quote leave: refused before anything runs.
        for (value, says) in [
            (
                "Job.v1.batch Widget.v1.example.com",
                "separate several kinds with commas",
            ),
            ("Job/x.v1.batch", "the kind must be letters and digits"),
            ("Job.V1.batch", "the version must be lowercase"),
            ("Job.v1.Batch_x", "the group must be a DNS name"),
            ("Job.v1.batch.", "the group must be a DNS name"),
            ("", "it is empty"),
            (" TFJob.v1.kubeflow.org", "it holds a space"),
        ] {
            let err = TrialKind::parse(value).unwrap_err().to_string();
            assert!(err.contains(says) && err.contains(value), "{err}");
        }
        let listed = parse_trial_kinds(&["Job.v1.batch", " TFJob.v1.kubeflow.org "]).unwrap();
        assert_eq!(listed[1].kind, "TFJob");
    }

    #[test]
    fn failure_wins_and_carries_reason() {
        let job = json!({"status": {"conditions": [
            {"type": "Running", "status": "False"},
            {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit"}
        ]}});
        assert_eq!(
            evaluate(&job, JOB_SUCCESS, FAILURE),
            JobOutcome::Failed {
                reason: "BackoffLimitExceeded".into(),
                message: "Job has reached the specified backoff limit".into()
            }
        );
    }

    #[test]
    fn success_needs_status_true() {
        let done = json!({"status": {"conditions": [
            {"type": "Created", "status": "True"},
            {"type": "Succeeded", "status": "True", "reason": "TFJobSucceeded", "message": "done"}
        ]}});
        assert!(
            matches!(evaluate(&done, KF_SUCCESS, FAILURE), JobOutcome::Succeeded { reason, .. } if reason == "TFJobSucceeded")
        );
        let not_yet = json!({"status": {"conditions": [
            {"type": "Succeeded", "status": "False"}
        ]}});
        assert_eq!(evaluate(&not_yet, KF_SUCCESS, FAILURE), JobOutcome::Running);
        assert_eq!(
            evaluate(&json!({}), KF_SUCCESS, FAILURE),
            JobOutcome::Running
        );
        assert_eq!(
            evaluate(&json!({"status": "odd"}), KF_SUCCESS, ""),
            JobOutcome::Running
        );
    }

    #[test]
    fn custom_object_expression() {
        let wf = json!({"status": {"phase": "Succeeded", "message": "ok"}});
        let out = evaluate(&wf, "status.phase", "status.failed");
        // `status.phase` is a string, not an object: Katib does not count it as a match.
        assert_eq!(out, JobOutcome::Running);
        let out = evaluate(&wf, "status", "status.failed");
        assert_eq!(
            out,
            JobOutcome::Succeeded {
                reason: String::new(),
                message: "ok".into()
            }
        );
    }
}
