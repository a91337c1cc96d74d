//! `spec.resumePolicy`: whether a finished experiment may continue. Katib's rule is the
//! planner's [`continues_after_completion`]; this module names the policies and says which
//! one each driver applies.

use vernier_spec::plan::continues_after_completion;

/// Katib's resume policies (`Never` is the default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResumePolicy {
    #[default]
    Never,
    /// The suggestion service is kept; raising `maxTrialCount` continues the experiment.
    LongRunning,
    /// The algorithm's state is kept on a volume; it continues like `LongRunning`.
    FromVolume,
}

/// How a finished experiment ended, as its terminal condition says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ended<'a> {
    pub succeeded: bool,
    pub reason: &'a str,
}

impl ResumePolicy {
    /// The policy as written (`None`, empty or unknown: `Never`, Katib's default).
    pub fn of(written: Option<&str>) -> ResumePolicy {
        match written {
            Some("LongRunning") => ResumePolicy::LongRunning,
            Some("FromVolume") => ResumePolicy::FromVolume,
            _ => ResumePolicy::Never,
        }
    }

    /// Katib's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ResumePolicy::Never => "Never",
            ResumePolicy::LongRunning => "LongRunning",
            ResumePolicy::FromVolume => "FromVolume",
        }
    }

    /// The policy a local run applies whatever the spec says: local mode keeps every
    /// experiment's history in its store, as `LongRunning` keeps the suggestion service.
    pub fn local() -> ResumePolicy {
        ResumePolicy::LongRunning
    }

    /// Whether an experiment that `ended` with `trials` trials continues under `max_trials`.
    pub fn continues(self, ended: Ended<'_>, max_trials: Option<u32>, trials: u32) -> bool {
        continues_after_completion(
            Some(self.as_str()),
            ended.succeeded,
            ended.reason,
            max_trials,
            trials,
        )
    }

    /// Whether a larger maxTrialCount would continue an experiment that `ended` with `trials`
    /// trials: what `enqueue` asks before taking a configuration for a finished experiment, and
    /// `resume` before saying only the count is short.
    pub fn reopenable(self, ended: Ended<'_>, trials: u32) -> bool {
        self.continues(ended, Some(u32::MAX), trials)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vernier_spec::plan::Completion;

    #[test]
    fn policies_parse_with_katib_default() {
        let cases = [
            (None, ResumePolicy::Never),
            (Some(""), ResumePolicy::Never),
            (Some("Never"), ResumePolicy::Never),
            (Some("LongRunning"), ResumePolicy::LongRunning),
            (Some("FromVolume"), ResumePolicy::FromVolume),
        ];
        for (written, want) in cases {
            assert_eq!(ResumePolicy::of(written), want, "{written:?}");
            if let Some(w) = written.filter(|w| !w.is_empty()) {
                assert_eq!(want.as_str(), w);
            }
        }
    }

    #[test]
    fn only_a_budget_finished_experiment_with_a_keeping_policy_continues() {
        let max = Completion::MaxTrialsReached.reason();
        let goal = Completion::GoalReached.reason();
        let failed = Completion::MaxFailedReached.reason();
        use ResumePolicy::*;
        let cases = [
            (LongRunning, true, max, Some(5), 4, true),
            (FromVolume, true, max, Some(5), 4, true),
            (FromVolume, true, max, None, 4, true),
            (Never, true, max, Some(5), 4, false),
            (LongRunning, true, max, Some(4), 4, false),
            (LongRunning, true, goal, Some(5), 4, false),
            (LongRunning, false, failed, Some(5), 4, false),
        ];
        for (policy, succeeded, reason, max_trials, trials, want) in cases {
            let ended = Ended { succeeded, reason };
            assert_eq!(
                policy.continues(ended, max_trials, trials),
                want,
                "{policy:?} {reason} {max_trials:?} {trials}"
            );
            // Short only of a count: a larger one reopens it; else nothing does.
            let reopens = policy != Never && succeeded && reason == max;
            assert_eq!(
                policy.reopenable(ended, trials),
                reopens,
                "{policy:?} {reason}"
            );
        }
        assert_eq!(ResumePolicy::local(), LongRunning);
    }
}
