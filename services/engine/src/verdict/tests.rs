//! The judge's table: every way a trial ends, locally and on a cluster.

#![allow(clippy::unwrap_used)]
use super::*;
use crate::resolved::tests::experiment;

const LOCAL: Place<'static> = Place::Local {
    push_env: "KATIB_DB_MANAGER",
};
const CLUSTER: Place<'static> = Place::Cluster { container: "main" };

/// (end, metric names seen, early stopped, state, reason, message fragment)
type Case = (
    TrialEnd,
    Vec<String>,
    bool,
    TrialState,
    &'static str,
    &'static str,
);

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn every_end_has_katib_state_and_reason() {
    let exp = experiment("");
    let max = Some(Completion::MaxTrialsReached);
    let cases: Vec<Case> = vec![
        (
            TrialEnd::Completed,
            names(&["loss"]),
            false,
            TrialState::Succeeded,
            "TrialSucceeded",
            "Trial has succeeded",
        ),
        (
            TrialEnd::Completed,
            names(&[]),
            false,
            TrialState::MetricsUnavailable,
            "MetricsUnavailable",
            "never reported the objective metric \"loss\" (it reported no metric)",
        ),
        (
            TrialEnd::Completed,
            names(&["val_loss", "acc"]),
            false,
            TrialState::MetricsUnavailable,
            "MetricsUnavailable",
            "(saw acc, val_loss)",
        ),
        (
            TrialEnd::ExitCode(2),
            names(&["loss"]),
            false,
            TrialState::Failed,
            "TrialFailed",
            "exited with code 2",
        ),
        (
            TrialEnd::Signal("SIGSEGV".into()),
            names(&[]),
            false,
            TrialState::Failed,
            "TrialFailed",
            "killed by signal SIGSEGV",
        ),
        (
            TrialEnd::Failed("no such command".into()),
            names(&[]),
            false,
            TrialState::Failed,
            "TrialFailed",
            "no such command",
        ),
        (
            TrialEnd::Stopped(max),
            names(&[]),
            false,
            TrialState::Killed,
            "TrialKilled",
            "experiment completed (ExperimentMaxTrialsReached)",
        ),
        (
            TrialEnd::Stopped(None),
            names(&[]),
            false,
            TrialState::Killed,
            "TrialKilled",
            "experiment was interrupted",
        ),
        (
            TrialEnd::ExitCode(1),
            names(&[]),
            true,
            TrialState::EarlyStopped,
            "TrialEarlyStopped",
            "Trial is early stopped",
        ),
        (
            TrialEnd::Stopped(None),
            names(&["loss"]),
            true,
            TrialState::EarlyStopped,
            "TrialEarlyStopped",
            "Trial is early stopped",
        ),
    ];
    for (end, seen, early_stopped, state, reason, fragment) in cases {
        let v = judge(
            &exp,
            Finished {
                end: &end,
                // In this table a trial that reported the objective had a value recorded; the
                // test below separates the two.
                objective_latest: seen.iter().any(|s| s == "loss").then_some("0.5"),
                seen: &seen,
                early_stopped,
                stopped_because: None,
                place: LOCAL,
            },
        );
        assert_eq!((v.state, v.reason), (state, reason), "{end:?} {seen:?}");
        assert!(v.message.contains(fragment), "{end:?}: {}", v.message);
        assert_eq!(
            v.unavailable.is_some(),
            state == TrialState::MetricsUnavailable
        );
    }
}

/// A rule that says why it stopped a trial has that reason after Katib's message; one that
/// does not leaves Katib's message as it is.
#[test]
fn an_early_stop_says_why_when_the_rule_did() {
    let exp = experiment("");
    let stopped = |because| {
        judge(
            &exp,
            Finished {
                end: &TrialEnd::ExitCode(143),
                objective_latest: Some("0.5"),
                seen: &[],
                early_stopped: true,
                stopped_because: because,
                place: LOCAL,
            },
        )
    };
    let v = stopped(Some("its loss 0.9 at step 3 ranked 2 of the 2 trials"));
    assert_eq!(v.state, TrialState::EarlyStopped);
    assert_eq!(
        v.message,
        "Trial is early stopped: its loss 0.9 at step 3 ranked 2 of the 2 trials"
    );
    assert_eq!(stopped(None).message, "Trial is early stopped");
}

/// The objective's recorded latest value decides, not whether its name was printed: a trial
/// whose every `loss` value was rejected (`loss=nan`) printed the name and recorded nothing.
#[test]
fn only_a_recorded_objective_makes_a_completed_trial_succeed() {
    let exp = experiment("");
    let cases: Vec<(Option<&str>, Vec<String>, TrialState, &str)> = vec![
        (
            Some("0.5"),
            names(&["loss"]),
            TrialState::Succeeded,
            "Trial has succeeded",
        ),
        (
            Some("0.5"),
            names(&[]),
            TrialState::Succeeded,
            "Trial has succeeded",
        ),
        (
            Some("Genotype(normal=[])"),
            names(&["loss"]),
            TrialState::Succeeded,
            "Trial has succeeded",
        ),
        (
            Some("unavailable"),
            names(&["loss"]),
            TrialState::MetricsUnavailable,
            "never reported a usable value of the objective metric \"loss\"",
        ),
        (
            None,
            names(&["acc", "loss"]),
            TrialState::MetricsUnavailable,
            "the trial exited with code 0 but never reported a usable value of the objective metric \"loss\": every value printed for it was unusable (nan, an infinity, empty, \"unavailable\" or cut off) (saw acc, loss)\nhint: print a line such as `loss=0.5`",
        ),
        (
            None,
            names(&["acc"]),
            TrialState::MetricsUnavailable,
            "never reported the objective metric \"loss\" (saw acc)",
        ),
    ];
    for (latest, seen, state, fragment) in cases {
        let v = judge(
            &exp,
            Finished {
                end: &TrialEnd::Completed,
                objective_latest: latest,
                seen: &seen,
                early_stopped: false,
                stopped_because: None,
                place: LOCAL,
            },
        );
        assert_eq!(v.state, state, "{latest:?} {seen:?}");
        assert!(v.message.contains(fragment), "{}", v.message);
    }
}

/// The verdict on a trial of `exp` that completed having reported `seen`.
fn judge_completed(exp: &ResolvedExperiment, seen: &[String], place: Place<'_>) -> Verdict {
    judge(
        exp,
        Finished {
            end: &TrialEnd::Completed,
            objective_latest: seen.contains(&exp.objective.metric).then_some("0.5"),
            seen,
            early_stopped: false,
            stopped_because: None,
            place,
        },
    )
}

#[test]
fn metrics_unavailable_records_katib_observation_and_says_what_was_seen() {
    let exp = experiment("");
    let many: Vec<String> = (0..10).map(|i| format!("m{i}")).collect();
    let v = judge_completed(&exp, &many, CLUSTER);
    assert_eq!(
        v.unavailable,
        Some(Observation {
            metric: "loss".into(),
            timestamp_us: ZERO_TIME_US,
            value: "unavailable".into(),
        })
    );
    assert_eq!(
        v.message,
        "Metrics are not available: the job succeeded but never reported the objective metric \"loss\" (saw m0, m1, m2, m3, m4, m5, m6, m7 and 2 more); hint: from container \"main\", print a line such as `loss=0.5`"
    );
}

/// The sentence both drivers use, from what both know: the objective's name, the names seen,
/// the collector and where the trial ran.
#[test]
fn the_unavailable_sentence_needs_only_what_both_drivers_know() {
    let cases: Vec<(&[&str], Place<'_>, Collector, &str)> = vec![
        (
            &[],
            LOCAL,
            Collector::StdOut,
            "Metrics are not available: the trial exited with code 0 but never reported the objective metric \"loss\" (it reported no metric)\nhint: print a line such as `loss=0.5`, or set spec.metricsCollectorSpec.source.filter.metricsFormat",
        ),
        (
            &["val_loss", "acc", "val_loss"],
            CLUSTER,
            Collector::Push,
            "Metrics are not available: the job succeeded but never reported the objective metric \"loss\" (saw acc, val_loss); hint: report \"loss\" with ReportObservationLog to the operator's DBManager (e.g. the Katib SDK's report_metrics)",
        ),
        (
            &["b", "a"],
            LOCAL,
            Collector::Push,
            "Metrics are not available: the trial exited with code 0 but never reported the objective metric \"loss\" (saw a, b)\nhint: call report_metrics({\"loss\": 0.5}, db_manager_address=os.environ[\"KATIB_DB_MANAGER\"]) from the Katib SDK, or send DBManager.ReportObservationLog to that address",
        ),
        (
            &["acc"],
            CLUSTER,
            Collector::StdOut,
            "Metrics are not available: the job succeeded but never reported the objective metric \"loss\" (saw acc); hint: from container \"main\", print a line such as `loss=0.5`",
        ),
    ];
    for (seen, place, collector, want) in cases {
        let v = metrics_unavailable("loss", &names(seen), default_format(&collector), place);
        assert_eq!(v.message, want);
        assert_eq!(
            (v.state, v.reason),
            (TrialState::MetricsUnavailable, "MetricsUnavailable")
        );
        assert_eq!(v.unavailable.unwrap().metric, "loss");
    }
    // The judge says exactly what the shared function says.
    let exp = experiment("");
    let seen = names(&["val_loss"]);
    let judged = judge_completed(&exp, &seen, CLUSTER);
    let shared = metrics_unavailable(
        &exp.objective.metric,
        &seen,
        default_format(&exp.collector),
        CLUSTER,
    );
    assert_eq!(judged, shared);
}

/// A metric name as long as a line is shown cut, so eight of them stay a short message.
#[test]
fn long_metric_names_are_cut_in_the_message() {
    let long = "é".repeat(9000);
    let v = metrics_unavailable(
        "loss",
        std::slice::from_ref(&long),
        default_format(&Collector::StdOut),
        LOCAL,
    );
    let shown = format!("saw {}…)", "é".repeat(64));
    assert!(v.message.contains(&shown), "{}", v.message);
    assert!(v.message.len() < 1000, "{}", v.message.len());
    let exact = "a".repeat(64);
    let v = metrics_unavailable(
        "loss",
        std::slice::from_ref(&exact),
        default_format(&Collector::StdOut),
        LOCAL,
    );
    assert!(
        v.message.contains(&format!("saw {exact})")),
        "{}",
        v.message
    );
}

fn default_format(collector: &Collector) -> How<'_> {
    How {
        collector,
        formats: &[],
    }
}

#[test]
fn hints_name_the_collector_and_the_place() {
    let file = Collector::File {
        path: "/var/log/m.log".into(),
        json: false,
    };
    let json = Collector::File {
        path: "/m.json".into(),
        json: true,
    };
    let events = Collector::TensorFlowEvent { dir: "/ev/".into() };
    let prom = Collector::Prometheus {
        port: PrometheusPort::Number(9100),
        path: "/m".into(),
    };
    let cases: Vec<(&Collector, Place<'_>, &str)> = vec![
        (
            &Collector::StdOut,
            LOCAL,
            "print a line such as `acc=0.5`, or set spec.metricsCollectorSpec.source.filter.metricsFormat",
        ),
        (
            &Collector::StdOut,
            CLUSTER,
            "from container \"main\", print a line such as `acc=0.5`",
        ),
        (
            &file,
            LOCAL,
            "write a line such as `acc=0.5` to $VERNIER_METRICS_FILE, where \"/var/log/m.log\" is mapped (printing it is not read)",
        ),
        (
            &file,
            CLUSTER,
            "write a line such as `acc=0.5` to \"/var/log/m.log\", the File collector's path",
        ),
        (
            &json,
            LOCAL,
            "write a JSON line such as {\"acc\": \"0.5\"} to $VERNIER_METRICS_FILE, where \"/m.json\" is mapped (printing it is not read)",
        ),
        (
            &json,
            CLUSTER,
            "write a JSON line such as {\"acc\": \"0.5\"} to \"/m.json\"",
        ),
        (&events, LOCAL, "under $VERNIER_METRICS_DIR"),
        (
            &events,
            CLUSTER,
            "tagged \"acc\" to an events.out.tfevents.* file under \"/ev/\"",
        ),
        (&prom, LOCAL, "serve `acc 0.5` at http://127.0.0.1:9100/m"),
        (&Collector::Push, LOCAL, "os.environ[\"KATIB_DB_MANAGER\"]"),
        (
            &Collector::Push,
            CLUSTER,
            "ReportObservationLog to the operator's DBManager",
        ),
    ];
    for (collector, place, fragment) in cases {
        let hint = unavailable_hint(default_format(collector), "acc", place);
        assert!(hint.contains(fragment), "{collector:?} {place:?}: {hint}");
    }
    // A name the default format cannot read gets the format that reads it, not a line to print.
    let hint = unavailable_hint(default_format(&Collector::StdOut), "précision", LOCAL);
    assert!(
        hint.contains("reads \"précision\", e.g. ([\\w|é-]+)") && !hint.contains("print a line"),
        "{hint}"
    );
    // Katib reads a metric name with '/' as the event file's directory, then the tag.
    let hint = unavailable_hint(default_format(&events), "test/accuracy", LOCAL);
    assert!(
        hint.contains(
            "tagged \"accuracy\" to an events.out.tfevents.* file in a directory ending in \
             \"test\" under $VERNIER_METRICS_DIR"
        ),
        "{hint}"
    );
}

/// With the experiment's own `metricsFormat`, a `name=value` line would not be read: the hint
/// quotes the format instead, and does not send the user to a field already set.
#[test]
fn hints_quote_the_experiments_own_metrics_format() {
    let file = Collector::File {
        path: "/var/log/m.log".into(),
        json: false,
    };
    let one = [r"{metricName: ([\w|-]+), metricValue: ((-?\d+)(\.\d+)?)}".to_string()];
    let two = [r"(\w+)=(\S+)".to_string(), r"(\w+): (\S+)".to_string()];
    let quoted = "a line that spec.metricsCollectorSpec.source.filter.metricsFormat \
                  `{metricName: ([\\w|-]+), metricValue: ((-?\\d+)(\\.\\d+)?)}` reads, its first \
                  group matching \"acc\" and its second the value";
    let cases: Vec<(&Collector, &[String], Place<'_>, String)> = vec![
        (&Collector::StdOut, &one, LOCAL, format!("print {quoted}")),
        (
            &Collector::StdOut,
            &one,
            CLUSTER,
            format!("from container \"main\", print {quoted}"),
        ),
        (
            &file,
            &one,
            LOCAL,
            format!(
                "write {quoted} to $VERNIER_METRICS_FILE, where \"/var/log/m.log\" is mapped \
                 (printing it is not read)"
            ),
        ),
        (
            &Collector::StdOut,
            &two,
            LOCAL,
            "print a line that one of spec.metricsCollectorSpec.source.filter.metricsFormat \
             `(\\w+)=(\\S+)`, `(\\w+): (\\S+)` reads, its first group matching \"acc\" and its \
             second the value"
                .to_string(),
        ),
    ];
    for (collector, formats, place, want) in cases {
        let how = How { collector, formats };
        assert_eq!(unavailable_hint(how, "acc", place), want);
    }
    // A name Katib's default format cannot read is no matter when the format is the user's.
    let how = How {
        collector: &Collector::StdOut,
        formats: &two,
    };
    assert!(unavailable_hint(how, "précision", LOCAL).starts_with("print a line that one of"));
}

/// The rule both drivers apply to a completed trial's objective (Katib's): any latest value but
/// `unavailable`, number or text.
#[test]
fn a_number_or_text_reports_the_objective_and_unavailable_does_not() {
    let cases = [
        (Some("0.5"), true),
        (Some("Genotype(normal=[])"), true),
        (Some("unavailable"), false),
        (None, false),
    ];
    for (latest, want) in cases {
        assert_eq!(objective_reported(latest), want, "{latest:?}");
    }
}
