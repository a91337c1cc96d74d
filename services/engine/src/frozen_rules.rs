//! Medianstop's rules in the form a trial carries them, Katib's `earlyStoppingRules`: Katib
//! computes the rule when a trial is created (from the trials succeeded then) and the trial's
//! collector stops it once its own values break it. The operator writes them into each Trial's
//! spec and the local driver into the store, and both judge a trial by them with [`breaks`].

use vernier_algorithms::medianstop::{Comparison, MedianRule, MedianStop};
use vernier_core::{Objective, TrialProgress};
use vernier_spec::trial::EarlyStoppingRule;

/// Katib's `earlyStoppingRules` for a trial created now, from the trials so far (only the
/// succeeded ones count); empty while fewer than `min_trials_required` have succeeded.
pub fn frozen_rules(
    median: &MedianStop,
    objective: &Objective,
    trials: &[TrialProgress<'_>],
) -> Vec<EarlyStoppingRule> {
    let rule = median.rule(objective, trials);
    rule.map(|r| katib_form(&objective.metric, &r))
        .into_iter()
        .collect()
}

/// `rule` on `metric` as Katib writes it into a Trial's `spec.earlyStoppingRules`.
pub fn katib_form(metric: &str, rule: &MedianRule) -> EarlyStoppingRule {
    EarlyStoppingRule {
        name: metric.to_string(),
        value: rule.value.to_string(),
        comparison: match rule.comparison {
            Comparison::Less => "less",
            Comparison::Greater => "greater",
        }
        .into(),
        start_step: Some(rule.start_step as i32),
    }
}

/// The trial's rule on `metric`, as written by [`frozen_rules`] (or by hand, in Katib's form).
pub fn rule_of(rules: &[EarlyStoppingRule], metric: &str) -> Option<MedianRule> {
    let r = rules.iter().find(|r| r.name == metric)?;
    Some(MedianRule {
        value: r
            .value
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())?,
        comparison: match r.comparison.to_ascii_lowercase().as_str() {
            "less" => Comparison::Less,
            "greater" => Comparison::Greater,
            _ => return None,
        },
        start_step: r.start_step.unwrap_or(1).max(1) as usize,
    })
}

/// Whether a trial with `rules` that reported `values` on `metric` so far must stop.
pub fn breaks(rules: &[EarlyStoppingRule], metric: &str, values: &[f64]) -> bool {
    rule_of(rules, metric).is_some_and(|r| r.breaks(values))
}

#[cfg(test)]
mod tests {
    use super::*;
    use vernier_core::{Direction, TrialState};

    fn objective(direction: Direction) -> Objective {
        Objective::new("acc", direction)
    }

    fn median(min_trials_required: usize, start_step: usize) -> MedianStop {
        MedianStop {
            min_trials_required,
            start_step,
        }
    }

    #[test]
    fn rules_are_frozen_from_the_succeeded_trials_only() {
        // Averages of the first two values: 0.6 and 0.8 (the running trial does not count).
        let a = [0.5, 0.7, 0.9];
        let b = [0.8, 0.8];
        let c = [0.1, 0.1, 0.1];
        let trials = [
            TrialProgress {
                name: "a",
                state: TrialState::Succeeded,
                values: &a,
                judged: a.len(),
            },
            TrialProgress {
                name: "b",
                state: TrialState::Succeeded,
                values: &b,
                judged: b.len(),
            },
            TrialProgress {
                name: "c",
                state: TrialState::Running,
                values: &c,
                judged: c.len(),
            },
        ];
        let rules = frozen_rules(&median(2, 2), &objective(Direction::Maximize), &trials);
        assert_eq!(
            rules,
            vec![EarlyStoppingRule {
                name: "acc".into(),
                value: "0.7".into(),
                comparison: "less".into(),
                start_step: Some(2),
            }]
        );
        assert!(frozen_rules(&median(3, 2), &objective(Direction::Maximize), &trials).is_empty());
        let min = frozen_rules(&median(2, 2), &objective(Direction::Minimize), &trials);
        assert_eq!(min[0].comparison, "greater");
    }

    #[test]
    fn a_trial_breaks_only_its_own_rule_from_its_start_step() {
        let rules = |value: &str, comparison: &str| {
            vec![EarlyStoppingRule {
                name: "acc".into(),
                value: value.into(),
                comparison: comparison.into(),
                start_step: Some(2),
            }]
        };
        let table: [(&[EarlyStoppingRule], &[f64], bool); 9] = [
            (&[], &[0.1, 0.1, 0.1], false),
            (&rules("0.7", "less"), &[0.1], false),
            (&rules("0.7", "less"), &[0.1, 0.6], true),
            // Decided at the start step, whichever reconcile sees it.
            (&rules("0.7", "less"), &[0.1, 0.6, 0.9], true),
            (&rules("0.7", "less"), &[0.1, 0.8, 0.1], false),
            (&rules("0.7", "less"), &[0.1, 0.7], false),
            (&rules("0.7", "greater"), &[0.9, 0.8], true),
            (&rules("0.7", "equal"), &[0.7, 0.7], false),
            (&rules("not a number", "less"), &[0.1, 0.1], false),
        ];
        for (rules, values, stop) in table {
            assert_eq!(breaks(rules, "acc", values), stop, "{rules:?} {values:?}");
        }
        assert!(!breaks(&rules("0.7", "less"), "loss", &[0.1, 0.1]));
    }
}
