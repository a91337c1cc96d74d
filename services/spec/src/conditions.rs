//! Katib-style condition lists (`type`, `status`, `reason`, `message`, times) with Katib's
//! mechanics: a change removes the old entry of that type and appends the new one, so the last
//! condition is the most recent. Shared by the local driver and the operator.

use serde::{Deserialize, Serialize};
use vernier_core::TrialState;

/// One Katib condition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub last_update_time: String,
    #[serde(default)]
    pub last_transition_time: String,
}

/// RFC 3339 with second precision, as Katib writes times.
pub fn rfc3339(us: i64) -> String {
    utc_text(us, chrono::SecondsFormat::Secs)
}

/// RFC 3339 UTC time with as many fractional digits (none, 3, 6) as the microseconds need:
/// observation times, several of which fall in one second.
pub fn rfc3339_micros(us: i64) -> String {
    utc_text(us, chrono::SecondsFormat::AutoSi)
}

fn utc_text(us: i64, precision: chrono::SecondsFormat) -> String {
    chrono::DateTime::from_timestamp_micros(us)
        .map(|t| t.to_rfc3339_opts(precision, true))
        .unwrap_or_else(|| "0001-01-01T00:00:00Z".to_string())
}

/// Sets a condition the way Katib's `setCondition` does.
pub fn set_condition(
    conditions: &mut Vec<Condition>,
    type_: &str,
    status: bool,
    reason: &str,
    message: &str,
    now_us: i64,
) {
    let status = if status { "True" } else { "False" };
    let now = rfc3339(now_us);
    let mut transition = now.clone();
    if let Some(pos) = conditions.iter().position(|c| c.type_ == type_) {
        let old = &conditions[pos];
        if old.status == status && old.reason == reason {
            return;
        }
        if old.status == status {
            transition = old.last_transition_time.clone();
        }
        conditions.remove(pos);
    }
    conditions.push(Condition {
        type_: type_.to_string(),
        status: status.to_string(),
        reason: reason.to_string(),
        message: message.to_string(),
        last_update_time: now,
        last_transition_time: transition,
    });
}

/// Marks a terminal condition; like Katib, `Running` first flips to `False`.
pub fn set_terminal(
    conditions: &mut Vec<Condition>,
    type_: &str,
    reason: &str,
    message: &str,
    now_us: i64,
) {
    end_with(conditions, (type_, true), reason, message, now_us);
}

/// The condition a trial in a terminal `state` ends with, as Katib's trial controller writes
/// it: its own type with status `True`. For a MetricsUnavailable trial that is a
/// `MetricsUnavailable` condition (`MarkTrialStatusMetricsUnavailable`, which Katib's
/// `IsMetricsUnavailable` and `IsCompleted` read); older Katib versions wrote `Succeeded` False.
pub fn trial_end_condition(state: TrialState) -> (&'static str, bool) {
    (state.as_str(), true)
}

/// Marks the condition a trial ends with in `state` ([`trial_end_condition`]).
pub fn set_trial_end(
    conditions: &mut Vec<Condition>,
    state: TrialState,
    reason: &str,
    message: &str,
    now_us: i64,
) {
    end_with(
        conditions,
        trial_end_condition(state),
        reason,
        message,
        now_us,
    );
}

fn end_with(
    conditions: &mut Vec<Condition>,
    (type_, status): (&str, bool),
    reason: &str,
    message: &str,
    now_us: i64,
) {
    // Katib's Mark...StatusSucceeded/Failed turn Running False keeping its own reason and
    // message; the terminal condition carries the new ones.
    if let Some(running) = conditions.iter().find(|c| c.type_ == "Running").cloned() {
        let (r, m) = (&running.reason, &running.message);
        set_condition(conditions, "Running", false, r, m, now_us);
    }
    set_condition(conditions, type_, status, reason, message, now_us);
}

pub fn parse_conditions(json: &str) -> Vec<Condition> {
    serde_json::from_str(json).unwrap_or_default()
}

pub fn conditions_json(conditions: &[Condition]) -> String {
    serde_json::to_string(conditions).unwrap_or_else(|_| "[]".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observation_times_keep_the_fraction_they_have() {
        let t = 1_700_000_000_000_000;
        assert_eq!(rfc3339_micros(t), "2023-11-14T22:13:20Z");
        assert_eq!(rfc3339_micros(t + 250_000), "2023-11-14T22:13:20.250Z");
        assert_eq!(rfc3339_micros(t + 7), "2023-11-14T22:13:20.000007Z");
        assert_eq!(rfc3339(t + 7), "2023-11-14T22:13:20Z");
    }

    #[test]
    fn follows_katib_condition_mechanics() {
        let mut c = Vec::new();
        set_condition(
            &mut c,
            "Created",
            true,
            "ExperimentCreated",
            "Experiment is created",
            0,
        );
        set_condition(
            &mut c,
            "Running",
            true,
            "ExperimentRunning",
            "Experiment is running",
            1,
        );
        set_condition(
            &mut c,
            "Running",
            true,
            "ExperimentRunning",
            "again",
            2_000_000,
        );
        assert_eq!(c.len(), 2);
        assert_eq!(c[1].message, "Experiment is running");
        set_terminal(
            &mut c,
            "Succeeded",
            "ExperimentGoalReached",
            "done",
            3_000_000,
        );
        let types: Vec<_> = c
            .iter()
            .map(|x| (x.type_.as_str(), x.status.as_str()))
            .collect();
        assert_eq!(
            types,
            vec![
                ("Created", "True"),
                ("Running", "False"),
                ("Succeeded", "True")
            ]
        );
        assert_eq!(c[2].last_update_time, "1970-01-01T00:00:03Z");
        assert_eq!(
            (c[1].reason.as_str(), c[1].message.as_str()),
            ("ExperimentRunning", "Experiment is running"),
            "Running keeps its reason and message when it turns False"
        );
        assert_eq!(c[2].reason, "ExperimentGoalReached");
    }

    /// Each terminal trial state ends with the condition Katib's trial controller writes for
    /// it, MetricsUnavailable included (`MarkTrialStatusMetricsUnavailable`).
    #[test]
    fn a_trial_ends_with_katibs_condition_for_its_state() {
        let cases = [
            (TrialState::Succeeded, ("Succeeded", "True")),
            (
                TrialState::MetricsUnavailable,
                ("MetricsUnavailable", "True"),
            ),
            (TrialState::Failed, ("Failed", "True")),
            (TrialState::Killed, ("Killed", "True")),
            (TrialState::EarlyStopped, ("EarlyStopped", "True")),
        ];
        for (state, want) in cases {
            let mut c = Vec::new();
            set_condition(
                &mut c,
                "Running",
                true,
                "TrialRunning",
                "Trial is running",
                0,
            );
            set_trial_end(&mut c, state, "Why", "because", 1_000_000);
            let got: Vec<_> = c
                .iter()
                .map(|x| (x.type_.as_str(), x.status.as_str(), x.reason.as_str()))
                .collect();
            assert_eq!(
                got,
                vec![
                    ("Running", "False", "TrialRunning"),
                    (want.0, want.1, "Why")
                ],
                "{state:?}"
            );
        }
    }
}
