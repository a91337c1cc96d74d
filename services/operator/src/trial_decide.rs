//! The Trial reconciler's decisions, pure: the step to take once the trial's job was looked
//! up, the verdict on a job that succeeded, and the Katib reasons and messages of each end.

use crate::jobs::JobOutcome;
use serde_json::Value;
use vernier_core::TrialState;
use vernier_engine::frozen_rules::breaks;
use vernier_engine::reason::TRIAL_FAILED;
use vernier_engine::{Collector, How, Place, metrics_formats, metrics_unavailable};
use vernier_spec::trial::TrialSpec;

/// A trial that ends Failed: Katib's condition reason and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub reason: String,
    pub message: String,
}

impl Failure {
    /// The trial itself cannot run (its spec is unusable).
    pub fn trial(message: impl Into<String>) -> Failure {
        Failure {
            reason: TRIAL_FAILED.into(),
            message: message.into(),
        }
    }

    /// The trial's job failed or went away, with Katib's `Job reason:` / `Job message:` form.
    pub fn job(reason: &str, message: &str) -> Failure {
        let (reason, message) = with_job((TRIAL_FAILED, "Trial has failed"), reason, message);
        Failure { reason, message }
    }
}

/// A trial condition's reason and message with its job's appended, as Katib's
/// `UpdateTrialStatusCondition` writes them: `TrialSucceeded. Job reason: CompletionsReached`
/// and `Trial has succeeded. Job message: ...`, each only when the job gave one.
pub fn with_job(
    (reason, message): (&str, &str),
    job_reason: &str,
    job_message: &str,
) -> (String, String) {
    let append = |base: &str, label: &str, job: &str| match job {
        "" => base.to_string(),
        job => format!("{base}. Job {label}: {job}"),
    };
    (
        append(reason, "reason", job_reason),
        append(message, "message", job_message),
    )
}

/// What to do once the job was looked up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    CreateJob,
    Fail(Failure),
    Running,
    JobFailed(Failure),
    /// The job's own reason and message, which a succeeded condition carries.
    JobSucceeded {
        reason: String,
        message: String,
    },
}

/// The step for a live trial in `state` whose job is `job` (`None`: not found), `deleting`
/// when the job is being deleted (kept by the operator's finalizer until its trial is
/// judged). A job is created only for a trial that never ran: one that vanished later, or is
/// going before it ended, was deleted by someone; one that ended is judged however soon it
/// goes.
pub fn on_job(
    job: Option<JobOutcome>,
    deleting: bool,
    state: TrialState,
    ever_running: bool,
    kind: &str,
    name: &str,
) -> Step {
    let deleted = || {
        Step::Fail(Failure::job(
            "JobDeleted",
            &format!("{kind} {name} was deleted before it finished"),
        ))
    };
    match job {
        None if state == TrialState::Created && !ever_running => Step::CreateJob,
        None => deleted(),
        Some(JobOutcome::Running) if deleting => deleted(),
        Some(JobOutcome::Running) => Step::Running,
        Some(JobOutcome::Failed { reason, message }) => {
            Step::JobFailed(Failure::job(&reason, &message))
        }
        Some(JobOutcome::Succeeded { reason, message }) => Step::JobSucceeded { reason, message },
    }
}

/// A run spec whose kind this operator may not create.
pub fn kind_refused(run_spec: &Value, allowed: &str) -> Failure {
    let field = |f: &str| run_spec.get(f).and_then(Value::as_str).unwrap_or_default();
    Failure::trial(format!(
        "spec.runSpec.kind: value {:?} (apiVersion {:?}) is not a trial resource this operator may create; hint: allowed are {allowed}",
        field("kind"),
        field("apiVersion"),
    ))
}

/// The API server does not serve the job's kind (its operator is not installed).
pub fn kind_not_served(kind: &str, api_message: &str) -> Failure {
    Failure {
        reason: format!("{TRIAL_FAILED}. Job reason: KindNotServed"),
        message: format!(
            "Trial has failed. Job message: the API server does not serve {kind} ({api_message}); hint: install the operator that provides it, with its CRD"
        ),
    }
}

/// The API server refused the trial's job as invalid (422): no retry can create it.
pub fn job_invalid(kind: &str, api_message: &str) -> Failure {
    Failure {
        reason: format!("{TRIAL_FAILED}. Job reason: Invalid"),
        message: format!(
            "Trial has failed. Job message: the API server refused the {kind}: {api_message}; hint: fix spec.trialTemplate (`vernier validate FILE` checks part of what the API server checks)"
        ),
    }
}

/// How a trial whose job succeeded ends.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Succeeded,
    /// Its values broke the rule frozen into its spec.
    EarlyStopped,
    /// The objective metric was never reported: the engine's verdict, whose message says which
    /// metrics were and how to report the objective, with the `unavailable` observation.
    MetricsUnavailable(vernier_engine::Verdict),
}

/// What a trial whose job succeeded reported.
#[derive(Debug, Clone, Copy)]
pub struct Reported<'a> {
    /// The objective metric's name.
    pub metric: &'a str,
    /// Whether its status observation holds the objective metric.
    pub observed: bool,
    /// The objective's numeric values in order (read only when the spec carries rules).
    pub values: &'a [f64],
    /// Every metric name it reported, for a MetricsUnavailable message.
    pub seen: &'a [String],
}

/// The verdict on a succeeded job: EarlyStopped when its values broke the rule frozen into
/// its spec (Katib's collector applies the rule to each value as it reads it, so a job that
/// ended between two checks is stopped all the same); Succeeded when the objective metric was
/// observed; else the engine's MetricsUnavailable naming the metrics the trial did report.
pub fn verdict(reported: Reported<'_>, spec: &TrialSpec) -> Verdict {
    let Reported {
        metric,
        observed,
        values,
        seen,
    } = reported;
    if breaks(&spec.early_stopping_rules, metric, values) {
        return Verdict::EarlyStopped;
    }
    if observed {
        return Verdict::Succeeded;
    }
    let collector = Collector::of(spec.metrics_collector.as_ref());
    let formats = metrics_formats(spec.metrics_collector.as_ref());
    let container = spec.primary_container_name.as_deref().unwrap_or_default();
    let place = Place::Cluster { container };
    let how = How {
        collector: &collector,
        formats: &formats,
    };
    Verdict::MetricsUnavailable(metrics_unavailable(metric, seen, how, place))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn steps_once_the_job_was_looked_up() {
        use TrialState::{Created, Running};
        let failed = || JobOutcome::Failed {
            reason: "BackoffLimitExceeded".into(),
            message: "Job has reached the specified backoff limit".into(),
        };
        let deleted = Step::Fail(Failure {
            reason: "TrialFailed. Job reason: JobDeleted".into(),
            message: "Trial has failed. Job message: TFJob t-1 was deleted before it finished"
                .into(),
        });
        let succeeded = || JobOutcome::Succeeded {
            reason: "CompletionsReached".into(),
            message: String::new(),
        };
        let table = [
            (None, false, Created, false, Step::CreateJob),
            (None, false, Created, true, deleted.clone()),
            (None, false, Running, true, deleted.clone()),
            (
                Some(JobOutcome::Running),
                false,
                Created,
                false,
                Step::Running,
            ),
            // Deleted while it runs (by hand, or its trial's deletion): it did not finish.
            (
                Some(JobOutcome::Running),
                true,
                Running,
                true,
                deleted.clone(),
            ),
            (Some(JobOutcome::Running), true, Created, false, deleted),
            // Deleted once it ended (its TTL): judged on how it ended.
            (
                Some(succeeded()),
                true,
                Running,
                true,
                Step::JobSucceeded {
                    reason: "CompletionsReached".into(),
                    message: String::new(),
                },
            ),
            (
                Some(failed()),
                false,
                Running,
                true,
                Step::JobFailed(Failure {
                    reason: "TrialFailed. Job reason: BackoffLimitExceeded".into(),
                    message:
                        "Trial has failed. Job message: Job has reached the specified backoff limit"
                            .into(),
                }),
            ),
            (
                Some(succeeded()),
                false,
                Running,
                true,
                Step::JobSucceeded {
                    reason: "CompletionsReached".into(),
                    message: String::new(),
                },
            ),
        ];
        for (job, deleting, state, ever_running, want) in table {
            let got = on_job(job.clone(), deleting, state, ever_running, "TFJob", "t-1");
            assert_eq!(got, want, "{job:?} {deleting} {state:?} {ever_running}");
        }
    }

    #[test]
    fn a_job_the_api_server_finds_invalid_fails_the_trial_with_its_words() {
        let f = job_invalid(
            "Job",
            "Job.batch \"t-1\" is invalid: spec.template.labels: Invalid value: \"ml team\"",
        );
        assert_eq!(f.reason, "TrialFailed. Job reason: Invalid");
        assert!(
            f.message.starts_with(
                "Trial has failed. Job message: the API server refused the Job: Job.batch \"t-1\" is invalid: spec.template.labels"
            ),
            "{}",
            f.message
        );
        assert!(f.message.contains("hint: fix spec.trialTemplate"));
    }

    #[test]
    fn a_condition_carries_the_jobs_reason_and_message_when_it_has_them() {
        let base = ("TrialSucceeded", "Trial has succeeded");
        let table = [
            (
                (
                    "CompletionsReached",
                    "Reached expected number of succeeded pods",
                ),
                (
                    "TrialSucceeded. Job reason: CompletionsReached",
                    "Trial has succeeded. Job message: Reached expected number of succeeded pods",
                ),
            ),
            (
                ("", "done"),
                ("TrialSucceeded", "Trial has succeeded. Job message: done"),
            ),
            (("", ""), ("TrialSucceeded", "Trial has succeeded")),
        ];
        for ((reason, message), want) in table {
            let (r, m) = with_job(base, reason, message);
            assert_eq!((r.as_str(), m.as_str()), want);
        }
    }

    #[test]
    fn refused_and_unserved_kinds_name_the_kind() {
        let f = kind_refused(
            &json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow"}),
            "Job.v1.batch",
        );
        assert_eq!(f.reason, "TrialFailed");
        assert_eq!(
            f.message,
            "spec.runSpec.kind: value \"Workflow\" (apiVersion \"argoproj.io/v1alpha1\") is not a trial resource this operator may create; hint: allowed are Job.v1.batch"
        );
        let f = kind_not_served("TFJob", "404 page not found");
        assert_eq!(f.reason, "TrialFailed. Job reason: KindNotServed");
        assert!(
            f.message
                .contains("does not serve TFJob (404 page not found)")
        );
    }

    #[test]
    fn unavailable_metrics_say_what_was_seen_and_how_to_report_per_collector() {
        let saw_none = "Metrics are not available: the job succeeded but never reported the objective metric \"acc\" (it reported no metric); hint: ";
        let saw_two = "Metrics are not available: the job succeeded but never reported the objective metric \"acc\" (saw val_acc, val_loss); hint: ";
        let table = [
            (
                json!({}),
                Vec::new(),
                saw_none,
                "from container \"trainer\", print a line such as `acc=0.5`",
            ),
            (
                json!({"collector": {"kind": "Push"}}),
                vec!["val_loss".to_string(), "val_acc".to_string()],
                saw_two,
                "report \"acc\" with ReportObservationLog to the operator's DBManager (e.g. the Katib SDK's report_metrics)",
            ),
            (
                json!({"collector": {"kind": "File"}, "source": {"fileSystemPath": {"path": "/m/out.txt", "kind": "File"}}}),
                Vec::new(),
                saw_none,
                "write a line such as `acc=0.5` to \"/m/out.txt\", the File collector's path",
            ),
            (
                json!({"collector": {"kind": "TensorFlowEvent"}, "source": {"fileSystemPath": {"path": "/ev", "kind": "Directory"}}}),
                vec!["val_acc".to_string(), "val_loss".to_string()],
                saw_two,
                "write a scalar summary tagged \"acc\" to an events.out.tfevents.* file under \"/ev\"",
            ),
            (
                json!({"collector": {"kind": "StdOut"}, "source": {"filter": {"metricsFormat": ["(\\w+): (\\S+)"]}}}),
                Vec::new(),
                saw_none,
                "from container \"trainer\", print a line that spec.metricsCollectorSpec.source.filter.metricsFormat `(\\w+): (\\S+)` reads, its first group matching \"acc\" and its second the value",
            ),
        ];
        for (collector, seen, head, hint) in table {
            let Verdict::MetricsUnavailable(v) =
                verdict(reported(false, &[], &seen), &spec(collector.clone()))
            else {
                panic!("{collector}: not unavailable");
            };
            assert_eq!(v.message, format!("{head}{hint}"), "{collector}");
            assert_eq!(v.reason, "MetricsUnavailable");
            assert_eq!(v.state, TrialState::MetricsUnavailable);
            let log = v.unavailable.unwrap();
            assert_eq!(
                (log.metric.as_str(), log.value.as_str()),
                ("acc", "unavailable")
            );
            assert_eq!(log.timestamp_us, vernier_engine::ZERO_TIME_US);
        }
        assert_eq!(
            verdict(reported(true, &[], &[]), &spec(json!({}))),
            Verdict::Succeeded
        );
    }

    fn spec(collector: Value) -> TrialSpec {
        serde_json::from_value(json!({
            "objective": {"type": "maximize", "objectiveMetricName": "acc"},
            "primaryContainerName": "trainer",
            "metricsCollector": collector,
        }))
        .unwrap()
    }

    fn reported<'a>(observed: bool, values: &'a [f64], seen: &'a [String]) -> Reported<'a> {
        let metric = "acc";
        Reported {
            metric,
            observed,
            values,
            seen,
        }
    }

    /// A rule frozen into the spec decides first, on the values alone, whenever they came.
    #[test]
    fn a_trial_that_broke_its_frozen_rule_ends_early_stopped() {
        let ruled = |value: &str| {
            let mut s = spec(json!({}));
            let rule = json!({"name": "acc", "value": value, "comparison": "less", "startStep": 2});
            s.early_stopping_rules = vec![serde_json::from_value(rule).unwrap()];
            s
        };
        let seen = ["acc".to_string()];
        let table: [(TrialSpec, &[f64], Verdict); 5] = [
            (ruled("0.75"), &[0.25, 0.5, 0.9], Verdict::EarlyStopped),
            (ruled("0.75"), &[0.25, 0.8], Verdict::Succeeded),
            // Fewer values than its start step: the rule was never asked.
            (ruled("0.75"), &[0.25], Verdict::Succeeded),
            (ruled("0.1"), &[0.25, 0.5], Verdict::Succeeded),
            (spec(json!({})), &[0.25, 0.5], Verdict::Succeeded),
        ];
        for (spec, values, want) in table {
            assert_eq!(
                verdict(reported(true, values, &seen), &spec),
                want,
                "{values:?}"
            );
        }
    }
}
