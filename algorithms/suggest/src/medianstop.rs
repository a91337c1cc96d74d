//! Medianstop (`medianstop`), Katib's early-stopping rule, with Katib's setting checks.
//!
//! Katib (`pkg/earlystopping/v1beta1/medianstop/service.py` and the metrics collector that
//! applies its rules): for every succeeded trial, average its first `start_step` objective
//! values; once at least `min_trials_required` trials are averaged, the rule's value is the
//! arithmetic mean of those averages (not a median, despite the name). A running trial is
//! checked from its `start_step`-th value on: its best value so far (max when maximising, min
//! when minimising) is compared with the rule's value, and the trial stops when it is strictly
//! worse (`LESS` for maximise, `GREATER` for minimise). Trials that succeeded with no values
//! are skipped. Settings: `min_trials_required` (integer > 0, default 3) and `start_step`
//! (integer >= 1, default 4).

use crate::error::AlgorithmError;
use crate::settings::Settings;
use vernier_core::{
    CoreError, Direction, EarlyStopper, EarlyStoppingRequest, Objective, TrialProgress, TrialState,
};

pub(crate) const NAME: &str = "medianstop";
const DEFAULT_MIN_TRIALS_REQUIRED: usize = 3;
const DEFAULT_START_STEP: usize = 4;

/// Katib's rule for a running trial: stop when its best value so far compares as
/// `comparison` with `value`, checked from step `start_step` on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MedianRule {
    pub value: f64,
    /// Strictly-worse comparison: `Less` when maximising, `Greater` when minimising.
    pub comparison: Comparison,
    pub start_step: usize,
}

/// How a trial's value is compared with a rule's value (Katib `ComparisonType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    Less,
    Greater,
}

/// The medianstop rule with validated settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MedianStop {
    pub min_trials_required: usize,
    pub start_step: usize,
}

impl MedianStop {
    /// Reads `min_trials_required` and `start_step`, rejecting anything else.
    pub fn from_settings(settings: &[(String, String)]) -> Result<Self, AlgorithmError> {
        let s = Settings::new(NAME, settings, &["min_trials_required", "start_step"])?;
        let min_trials_required = s
            .get::<i64>(
                "min_trials_required",
                |v| v > 0,
                "min_trials_required must be greater than zero (>0)",
            )?
            .map_or(DEFAULT_MIN_TRIALS_REQUIRED, |v| v as usize);
        let start_step = s
            .get::<i64>(
                "start_step",
                // The rule carries it as an int32 (`EarlyStoppingRule.start_step`).
                |v| (1..=i64::from(i32::MAX)).contains(&v),
                "start_step must be greater or equal than one (>=1) and at most 2147483647",
            )?
            .map_or(DEFAULT_START_STEP, |v| v as usize);
        Ok(MedianStop {
            min_trials_required,
            start_step,
        })
    }

    /// The rule running trials are held to, or `None` while too few trials have succeeded.
    pub fn rule(&self, objective: &Objective, trials: &[TrialProgress<'_>]) -> Option<MedianRule> {
        let averages: Vec<f64> = trials
            .iter()
            .filter(|t| t.state == TrialState::Succeeded && !t.values.is_empty())
            .map(|t| {
                let head = &t.values[..t.values.len().min(self.start_step)];
                head.iter().sum::<f64>() / head.len() as f64
            })
            .collect();
        if averages.len() < self.min_trials_required {
            return None;
        }
        Some(MedianRule {
            value: averages.iter().sum::<f64>() / averages.len() as f64,
            comparison: match objective.direction {
                Direction::Maximize => Comparison::Less,
                Direction::Minimize => Comparison::Greater,
            },
            start_step: self.start_step,
        })
    }
}

impl MedianStop {
    /// Katib's timing: a trial's rule is the one in force when it was created, computed from
    /// the trials succeeded then, and kept for its life (`None`, never stopped, when fewer than
    /// `min_trials_required` had succeeded). Fixes the rule of every created or running trial
    /// of `trials` not in `rules` yet; call it as trials are created.
    pub fn freeze_rules(
        &self,
        objective: &Objective,
        trials: &[TrialProgress<'_>],
        rules: &mut std::collections::BTreeMap<String, Option<MedianRule>>,
    ) {
        let rule = self.rule(objective, trials);
        for t in trials {
            if matches!(t.state, TrialState::Created | TrialState::Running) {
                rules.entry(t.name.to_string()).or_insert(rule);
            }
        }
    }

    /// Running trials that break the rule frozen for them (see [`MedianStop::freeze_rules`]).
    pub fn frozen_stops(
        rules: &std::collections::BTreeMap<String, Option<MedianRule>>,
        trials: &[TrialProgress<'_>],
    ) -> Vec<String> {
        trials
            .iter()
            .filter(|t| t.state == TrialState::Running)
            .filter(|t| {
                rules
                    .get(t.name)
                    .copied()
                    .flatten()
                    .is_some_and(|r| r.breaks(t.values))
            })
            .map(|t| t.name.to_string())
            .collect()
    }
}

impl MedianRule {
    /// Whether a trial that reported `values` so far breaks the rule. Decided once, on the
    /// best of the first `start_step` values, as Katib's collector evaluates a rule only when
    /// its start-step counter reaches zero: the verdict is the same whenever it is asked (a
    /// driver polling each second, a reconcile), never a race with the trial's next value.
    pub fn breaks(&self, values: &[f64]) -> bool {
        let steps = self.start_step.max(1);
        let Some(head) = values.get(..steps) else {
            return false;
        };
        let best = match self.comparison {
            Comparison::Less => head.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            Comparison::Greater => head.iter().copied().fold(f64::INFINITY, f64::min),
        };
        match self.comparison {
            Comparison::Less => best < self.value,
            Comparison::Greater => best > self.value,
        }
    }
}

impl EarlyStopper for MedianStop {
    fn name(&self) -> &str {
        NAME
    }

    fn trials_to_stop(&self, request: &EarlyStoppingRequest<'_>) -> Result<Vec<String>, CoreError> {
        let Some(rule) = self.rule(request.objective, request.trials) else {
            return Ok(Vec::new());
        };
        Ok(request
            .trials
            .iter()
            .filter(|t| t.state == TrialState::Running && rule.breaks(t.values))
            .map(|t| t.name.to_string())
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_params::pairs as settings;

    fn progress<'a>(name: &'a str, state: TrialState, values: &'a [f64]) -> TrialProgress<'a> {
        TrialProgress {
            name,
            state,
            values,
            judged: values.len(),
        }
    }

    #[test]
    fn validates_settings_like_katib() {
        assert_eq!(
            MedianStop::from_settings(&[]).unwrap(),
            MedianStop {
                min_trials_required: 3,
                start_step: 4
            }
        );
        let e = MedianStop::from_settings(&settings(&[("min_trials_required", "0")]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("min_trials_required must be greater than zero (>0)") && e.contains("\"0\""),
            "{e}"
        );
        let e = MedianStop::from_settings(&settings(&[("start_step", "3000000000")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("at most 2147483647"), "{e}");
        let e = MedianStop::from_settings(&settings(&[("start_step", "0")]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("start_step must be greater or equal than one (>=1)"),
            "{e}"
        );
        let e = MedianStop::from_settings(&settings(&[("start_step", "two")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not parse") && e.contains("\"two\""), "{e}");
        let e = MedianStop::from_settings(&settings(&[("window", "2")]))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("unknown setting \"window\" for algorithm medianstop"),
            "{e}"
        );
    }

    #[test]
    fn rule_is_the_mean_of_the_first_steps_of_succeeded_trials() {
        let m = MedianStop {
            min_trials_required: 2,
            start_step: 2,
        };
        let o = Objective::new("acc", Direction::Maximize);
        let a = [0.5, 0.7, 0.9];
        let b = [0.1, 0.3];
        let running = [0.1, 0.35];
        let one = [progress("a", TrialState::Succeeded, &a)];
        assert_eq!(m.rule(&o, &one), None, "one succeeded trial is too few");
        let trials = [
            progress("a", TrialState::Succeeded, &a),
            progress("b", TrialState::Succeeded, &b),
            progress("c", TrialState::Failed, &[0.0]),
            progress("r", TrialState::Running, &running),
        ];
        let rule = m.rule(&o, &trials).unwrap();
        // (0.6 + 0.2) / 2
        assert!((rule.value - 0.4).abs() < 1e-12, "{}", rule.value);
        assert_eq!(rule.comparison, Comparison::Less);
        let req = EarlyStoppingRequest {
            objective: &o,
            trials: &trials,
        };
        assert_eq!(m.trials_to_stop(&req).unwrap(), vec!["r".to_string()]);
    }

    #[test]
    fn decides_at_start_step_on_the_best_value_until_then() {
        let rule = MedianRule {
            value: 1.0,
            comparison: Comparison::Greater,
            start_step: 3,
        };
        assert!(!rule.breaks(&[5.0, 5.0]), "before start_step nothing stops");
        assert!(rule.breaks(&[5.0, 5.0, 5.0]));
        assert!(
            !rule.breaks(&[5.0, 0.5, 5.0]),
            "minimising: best so far 0.5 is better"
        );
        // Decided at start_step whenever asked: later values change nothing.
        assert!(rule.breaks(&[5.0, 5.0, 5.0, 0.5]));
        assert!(!rule.breaks(&[5.0, 0.5, 5.0, 9.0, 9.0]));
        let rule = MedianRule {
            value: 1.0,
            comparison: Comparison::Less,
            start_step: 1,
        };
        assert!(!rule.breaks(&[1.0]), "equal is not worse");
        assert!(rule.breaks(&[0.99]));
    }
    #[test]
    fn rules_are_frozen_when_a_trial_is_created() {
        // Maximise, start_step 2, min_trials_required 2. Hand-computed: once a (head mean
        // (0.5+0.7)/2 = 0.6) and b ((0.7+0.9)/2 = 0.8) succeeded the rule is 0.7, LESS.
        let ms = MedianStop::from_settings(&settings(&[
            ("min_trials_required", "2"),
            ("start_step", "2"),
        ]))
        .unwrap();
        let o = Objective::new("acc", Direction::Maximize);
        let p = |name: &'static str, state, values: &'static [f64]| TrialProgress {
            name,
            state,
            values,
            judged: values.len(),
        };
        let mut rules = std::collections::BTreeMap::new();
        // `early` is created while only `a` has succeeded: no rule, ever.
        ms.freeze_rules(
            &o,
            &[
                p("a", TrialState::Succeeded, &[0.5, 0.7]),
                p("early", TrialState::Created, &[]),
            ],
            &mut rules,
        );
        assert_eq!(rules["early"], None);
        // `b` succeeds, `late` is created: it gets 0.7.
        let now = [
            p("a", TrialState::Succeeded, &[0.5, 0.7]),
            p("early", TrialState::Running, &[0.1, 0.2]),
            p("b", TrialState::Succeeded, &[0.7, 0.9]),
            p("late", TrialState::Running, &[0.6, 0.65]),
            p("good", TrialState::Running, &[0.6, 0.75]),
            p("short", TrialState::Running, &[0.1]),
        ];
        ms.freeze_rules(&o, &now, &mut rules);
        assert_eq!(rules["late"].unwrap().value, 0.7);
        assert_eq!(rules["early"], None, "a frozen rule never changes");
        // `early` is worse than `late` but has no rule; `good` reached 0.75; `short` has one
        // value of the two start_step needs.
        assert_eq!(MedianStop::frozen_stops(&rules, &now), ["late"]);
        // The continuous check (the rule of this moment for everyone) also stops `early`.
        let continuous = ms
            .trials_to_stop(&EarlyStoppingRequest {
                objective: &o,
                trials: &now,
            })
            .unwrap();
        assert_eq!(continuous, ["early", "late"]);
    }
}
