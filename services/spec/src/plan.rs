//! The pure planner: how many trials to request, whether the experiment is done, which trial is
//! best. The local driver and the operator both call it, so both behave like Katib's
//! experiment controller (reference §8.1).

use std::collections::BTreeMap;
use vernier_core::{Objective, TrialState, pareto};

/// The experiment limits the planner needs (already defaulted).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    pub parallel: u32,
    pub max_trials: Option<u32>,
    pub max_failed: Option<u32>,
}

/// One trial as the planner sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct TrialOutcome<'a> {
    pub name: &'a str,
    pub state: TrialState,
    /// The objective value selected by its metric strategy, when observed.
    pub objective: Option<f64>,
    /// Every metric's reduced value (secondary objectives, constraint metrics); may be
    /// empty for a single-objective experiment without constraints.
    pub metrics: &'a BTreeMap<String, f64>,
    /// The objective's selected value is text, not a number (DARTS reports its genotype).
    pub text_objective: bool,
}

/// An empty metric map, for outcomes that carry only the objective.
pub static NO_METRICS: BTreeMap<String, f64> = BTreeMap::new();

impl TrialOutcome<'_> {
    /// A metric's value, the primary objective falling back to `objective`.
    pub fn metric(&self, objective: &Objective, name: &str) -> Option<f64> {
        self.metrics.get(name).copied().or_else(|| {
            (name == objective.metric)
                .then_some(self.objective)
                .flatten()
        })
    }

    /// Succeeded or early-stopped and satisfying every constraint: may be a result (a failed
    /// trial's partial metrics never are).
    pub fn is_result_candidate(&self, objective: &Objective) -> bool {
        matches!(self.state, TrialState::Succeeded | TrialState::EarlyStopped)
            && objective.is_feasible(|n| self.metric(objective, n))
    }

    /// Every objective as a loss, for a result candidate with all of them finite.
    pub fn losses(&self, objective: &Objective) -> Option<Vec<f64>> {
        if !self.is_result_candidate(objective) {
            return None;
        }
        objective.losses(|n| self.metric(objective, n))
    }
}

/// Why an experiment is over, with Katib's condition reason and message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    GoalReached,
    MaxFailedReached,
    MaxTrialsReached,
    /// The algorithm has nothing left to propose (e.g. the grid is done).
    SuggestionEndReached,
}

impl Completion {
    pub fn succeeded(self) -> bool {
        !matches!(self, Completion::MaxFailedReached)
    }

    /// Katib's condition reason.
    pub fn reason(self) -> &'static str {
        match self {
            Completion::GoalReached => "ExperimentGoalReached",
            Completion::MaxFailedReached => "ExperimentFailed",
            Completion::MaxTrialsReached => "ExperimentMaxTrialsReached",
            Completion::SuggestionEndReached => "ExperimentSuggestionEndReached",
        }
    }

    /// Katib's condition message.
    pub fn message(self) -> &'static str {
        match self {
            Completion::GoalReached => {
                "Experiment has succeeded because Objective goal has reached"
            }
            Completion::MaxFailedReached => {
                "Experiment has failed because max failed count has reached"
            }
            Completion::MaxTrialsReached => {
                "Experiment has succeeded because max trial count has reached"
            }
            Completion::SuggestionEndReached => {
                "Experiment has succeeded because suggestion service has reached the end"
            }
        }
    }
}

/// Katib's rule for a finished experiment that may continue (`IsCompletedExperimentRestartable`
/// and the experiment controller's check): it succeeded by reaching `maxTrialCount`, its
/// `resumePolicy` is `LongRunning` or `FromVolume`, and `maxTrialCount` is now above the number
/// of trials it has (or unset). Raising only `parallelTrialCount` does not continue it (Katib's
/// webhook refuses that edit of a completed experiment); raised together with
/// `maxTrialCount`, the new parallelism applies to the continued run.
pub fn continues_after_completion(
    resume_policy: Option<&str>,
    succeeded: bool,
    reason: &str,
    max_trials: Option<u32>,
    trials: u32,
) -> bool {
    matches!(resume_policy, Some("LongRunning" | "FromVolume"))
        && succeeded
        && reason == Completion::MaxTrialsReached.reason()
        && max_trials.is_none_or(|max| max > trials)
}

/// Trial counts by Katib status field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TrialCounts {
    pub total: u32,
    pub pending: u32,
    pub running: u32,
    pub succeeded: u32,
    pub failed: u32,
    pub killed: u32,
    pub early_stopped: u32,
    pub metrics_unavailable: u32,
}

impl TrialCounts {
    pub fn of(trials: &[TrialOutcome<'_>]) -> Self {
        let mut c = TrialCounts::default();
        for t in trials {
            c.total += 1;
            match t.state {
                TrialState::Created => c.pending += 1,
                TrialState::Running => c.running += 1,
                TrialState::Succeeded => c.succeeded += 1,
                TrialState::Failed => c.failed += 1,
                TrialState::Killed => c.killed += 1,
                TrialState::EarlyStopped => c.early_stopped += 1,
                TrialState::MetricsUnavailable => c.metrics_unavailable += 1,
            }
        }
        c
    }

    /// Katib's "completed" trials.
    pub fn completed(&self) -> u32 {
        self.succeeded + self.failed + self.killed + self.early_stopped + self.metrics_unavailable
    }

    /// Katib counts trials without metrics as failures for `maxFailedTrialCount`.
    pub fn failed_for_limit(&self) -> u32 {
        self.failed + self.metrics_unavailable
    }

    pub fn active(&self) -> u32 {
        self.pending + self.running
    }
}

/// What to do now.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Set when the experiment is over; no more trials are to be started.
    pub completion: Option<Completion>,
    /// How many new trials to request from the algorithm now.
    pub request: u32,
    /// Index into the input trials of the best trial so far (for several objectives: the
    /// front member best in the primary objective, Katib's `currentOptimalTrial`).
    pub best: Option<usize>,
    /// Indices of the feasible non-dominated trials, ascending (just `best` for one
    /// objective).
    pub front: Vec<usize>,
    pub counts: TrialCounts,
}

/// Index of the best trial: the best objective value among succeeded and early-stopped trials
/// that satisfy every constraint (a failed or infeasible trial never is "best"); the earliest
/// wins ties. With several objectives only the Pareto front's members count. When no such
/// trial has a number, the latest one whose objective is text is best (Katib's rule for text
/// values, e.g. DARTS's genotype); text never outranks a number, nor reaches a goal.
pub fn best_trial(objective: &Objective, trials: &[TrialOutcome<'_>]) -> Option<usize> {
    best_numeric(objective, trials).or_else(|| {
        trials
            .iter()
            .rposition(|t| t.text_objective && t.is_result_candidate(objective))
    })
}

fn best_numeric(objective: &Objective, trials: &[TrialOutcome<'_>]) -> Option<usize> {
    // With several objectives a trial tied with a front member on the primary objective may
    // be dominated by it; only the front's members are candidates.
    let candidates: Vec<usize> = match objective.is_multi() {
        true => multi_front(objective, trials),
        false => (0..trials.len()).collect(),
    };
    let mut best: Option<(usize, f64)> = None;
    for i in candidates {
        let t = &trials[i];
        if !t.is_result_candidate(objective) {
            continue;
        }
        let Some(v) = t.objective.filter(|v| v.is_finite()) else {
            continue;
        };
        if best.is_none_or(|(_, b)| objective.direction.is_better(v, b)) {
            best = Some((i, v));
        }
    }
    best.map(|(i, _)| i)
}

/// Indices of the Pareto front: feasible succeeded/early-stopped trials reporting every
/// objective that no other such trial dominates, ascending. For one objective this is the best
/// trial alone, so the earliest of equal values stays the single result.
pub fn pareto_front(objective: &Objective, trials: &[TrialOutcome<'_>]) -> Vec<usize> {
    match objective.is_multi() {
        true => multi_front(objective, trials),
        false => best_trial(objective, trials).into_iter().collect(),
    }
}

/// The front over every objective, for an objective that has several.
fn multi_front(objective: &Objective, trials: &[TrialOutcome<'_>]) -> Vec<usize> {
    let (index, points): (Vec<usize>, Vec<Vec<f64>>) = trials
        .iter()
        .enumerate()
        .filter_map(|(i, t)| t.losses(objective).map(|l| (i, l)))
        .unzip();
    pareto::pareto_front(&points)
        .into_iter()
        .map(|k| index[k])
        .collect()
}

/// Whether the goal is reached: one objective as Katib; several when some front member
/// reaches every goal that is set (and at least one is).
fn goal_reached(objective: &Objective, trials: &[TrialOutcome<'_>], front: &[usize]) -> bool {
    if !objective.is_multi() {
        return match (objective.goal, front.first()) {
            (Some(goal), Some(&i)) => trials[i]
                .objective
                .is_some_and(|v| objective.direction.reaches(v, goal)),
            _ => false,
        };
    }
    if objective.objectives.iter().all(|t| t.goal.is_none()) {
        return false;
    }
    front.iter().any(|&i| {
        objective.objectives.iter().all(|t| match t.goal {
            None => true,
            Some(goal) => trials[i]
                .metric(objective, &t.metric)
                .is_some_and(|v| t.direction.reaches(v, goal)),
        })
    })
}

/// Decides, in Katib's order: goal reached, then max failed, then max trials; otherwise how
/// many trials to request. `exhausted` says the algorithm has nothing left to propose.
pub fn plan(
    objective: &Objective,
    limits: Limits,
    trials: &[TrialOutcome<'_>],
    exhausted: bool,
) -> Plan {
    let counts = TrialCounts::of(trials);
    let best = best_trial(objective, trials);
    let front = pareto_front(objective, trials);
    let done = |completion| Plan {
        completion: Some(completion),
        request: 0,
        best,
        front: front.clone(),
        counts,
    };

    if goal_reached(objective, trials, &front) {
        return done(Completion::GoalReached);
    }
    if let Some(max_failed) = limits.max_failed {
        let failed = counts.failed_for_limit();
        if failed != 0 && failed >= max_failed {
            return done(Completion::MaxFailedReached);
        }
    }
    if let Some(max) = limits.max_trials
        && counts.completed() >= max
    {
        return done(Completion::MaxTrialsReached);
    }
    if exhausted && counts.active() == 0 {
        return done(Completion::SuggestionEndReached);
    }

    // Unlike Katib, every trial ever created counts against maxTrialCount, so a trial without
    // metrics never lets the experiment overshoot its budget.
    let free_slots = limits.parallel.saturating_sub(counts.active());
    let budget = limits
        .max_trials
        .map_or(u32::MAX, |max| max.saturating_sub(counts.total));
    let request = if exhausted { 0 } else { free_slots.min(budget) };
    Plan {
        completion: None,
        request,
        best,
        front,
        counts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vernier_core::{Constraint, ConstraintOp, Direction, ObjectiveTerm};

    fn t(state: TrialState, v: Option<f64>) -> TrialOutcome<'static> {
        TrialOutcome {
            name: "t",
            state,
            objective: v,
            metrics: &NO_METRICS,
            text_objective: false,
        }
    }

    fn limits(parallel: u32, max: Option<u32>, failed: Option<u32>) -> Limits {
        Limits {
            parallel,
            max_trials: max,
            max_failed: failed,
        }
    }

    #[test]
    fn only_a_budget_raise_continues_a_resumable_experiment() {
        let max = Completion::MaxTrialsReached.reason();
        let goal = Completion::GoalReached.reason();
        let cases = [
            (Some("LongRunning"), true, max, Some(5), 4, true),
            (Some("FromVolume"), true, max, Some(5), 4, true),
            (Some("FromVolume"), true, max, None, 4, true),
            (Some("FromVolume"), true, max, Some(4), 4, false),
            (Some("Never"), true, max, Some(5), 4, false),
            (None, true, max, Some(5), 4, false),
            (Some("LongRunning"), true, goal, Some(5), 4, false),
            (Some("LongRunning"), false, max, Some(5), 4, false),
        ];
        for (policy, succeeded, reason, max_trials, trials, want) in cases {
            assert_eq!(
                continues_after_completion(policy, succeeded, reason, max_trials, trials),
                want,
                "{policy:?} {succeeded} {reason} {max_trials:?} {trials}"
            );
        }
    }

    #[test]
    fn requests_up_to_parallel_within_budget() {
        let o = Objective::new("loss", Direction::Minimize);
        let p = plan(&o, limits(3, Some(12), None), &[], false);
        assert_eq!((p.completion, p.request), (None, 3));
        let trials = vec![
            t(TrialState::Running, None),
            t(TrialState::Succeeded, Some(1.0)),
        ];
        assert_eq!(
            plan(&o, limits(3, Some(3), None), &trials, false).request,
            1
        );
        assert_eq!(plan(&o, limits(3, None, None), &trials, false).request, 2);
    }

    #[test]
    fn goal_beats_max_failed_beats_max_trials() {
        let mut o = Objective::new("acc", Direction::Maximize);
        o.goal = Some(0.9);
        let trials = vec![
            t(TrialState::Failed, None),
            t(TrialState::Succeeded, Some(0.95)),
            t(TrialState::MetricsUnavailable, None),
        ];
        let p = plan(&o, limits(1, Some(3), Some(2)), &trials, false);
        assert_eq!(p.completion, Some(Completion::GoalReached));
        assert_eq!(p.best, Some(1));
        o.goal = Some(0.99);
        let p = plan(&o, limits(1, Some(3), Some(2)), &trials, false);
        assert_eq!(p.completion, Some(Completion::MaxFailedReached));
        let p = plan(&o, limits(1, Some(3), Some(3)), &trials, false);
        assert_eq!(p.completion, Some(Completion::MaxTrialsReached));
    }

    #[test]
    fn max_failed_zero_needs_a_failure() {
        let o = Objective::new("loss", Direction::Minimize);
        let ok = vec![t(TrialState::Succeeded, Some(1.0))];
        assert_eq!(
            plan(&o, limits(1, None, Some(0)), &ok, false).completion,
            None
        );
        let bad = vec![t(TrialState::Failed, None)];
        assert_eq!(
            plan(&o, limits(1, None, Some(0)), &bad, false).completion,
            Some(Completion::MaxFailedReached)
        );
    }

    #[test]
    fn exhausted_search_ends_when_trials_finish() {
        let o = Objective::new("loss", Direction::Minimize);
        let running = vec![t(TrialState::Running, None)];
        let p = plan(&o, limits(2, None, None), &running, true);
        assert_eq!((p.completion, p.request), (None, 0));
        let done = vec![t(TrialState::Succeeded, Some(2.0))];
        assert_eq!(
            plan(&o, limits(2, None, None), &done, true).completion,
            Some(Completion::SuggestionEndReached)
        );
    }

    #[test]
    fn text_objectives_follow_katibs_latest_rule_below_numbers() {
        let o = Objective::new("Best-Genotype", Direction::Maximize);
        let text = |state| TrialOutcome {
            text_objective: true,
            ..t(state, None)
        };
        let trials = [
            text(TrialState::Succeeded),
            text(TrialState::Succeeded),
            text(TrialState::Failed),
        ];
        assert_eq!(best_trial(&o, &trials), Some(1));
        let mixed = [
            text(TrialState::Succeeded),
            t(TrialState::Succeeded, Some(0.2)),
        ];
        assert_eq!(best_trial(&o, &mixed), Some(1));
        let goal = Objective {
            goal: Some(0.0),
            ..o.clone()
        };
        let limits = Limits {
            parallel: 1,
            max_trials: None,
            max_failed: None,
        };
        let p = plan(&goal, limits, &trials, false);
        assert_eq!(p.completion, None);
        assert_eq!(p.best, Some(1));
    }

    #[test]
    fn best_ignores_failed_and_prefers_earliest_tie() {
        let o = Objective::new("loss", Direction::Minimize);
        let trials = vec![
            t(TrialState::Failed, Some(0.1)),
            t(TrialState::Succeeded, Some(0.5)),
            t(TrialState::EarlyStopped, Some(0.5)),
            t(TrialState::Succeeded, Some(f64::NAN)),
        ];
        assert_eq!(best_trial(&o, &trials), Some(1));
    }

    fn two_objectives() -> Objective {
        let mut o = Objective::new("loss", Direction::Minimize);
        o.objectives.push(ObjectiveTerm {
            metric: "acc".into(),
            direction: Direction::Maximize,
            goal: None,
        });
        o.constraints.push(Constraint {
            metric: "ms".into(),
            op: ConstraintOp::Le,
            bound: 20.0,
        });
        o
    }

    fn metrics(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn front_holds_feasible_non_dominated_trials() {
        let o = two_objectives();
        let m = [
            metrics(&[("loss", 1.0), ("acc", 0.9), ("ms", 10.0)]),
            metrics(&[("loss", 0.5), ("acc", 0.8), ("ms", 10.0)]),
            // Dominated by trial 0.
            metrics(&[("loss", 1.2), ("acc", 0.85), ("ms", 5.0)]),
            // Would dominate everything, but breaks the constraint.
            metrics(&[("loss", 0.1), ("acc", 0.99), ("ms", 25.0)]),
            // Lacks the constraint metric: infeasible.
            metrics(&[("loss", 0.2), ("acc", 0.95)]),
            // Failed trials never count.
            metrics(&[("loss", 0.0), ("acc", 1.0), ("ms", 1.0)]),
        ];
        let states = [
            TrialState::Succeeded,
            TrialState::EarlyStopped,
            TrialState::Succeeded,
            TrialState::Succeeded,
            TrialState::Succeeded,
            TrialState::Failed,
        ];
        let trials: Vec<TrialOutcome<'_>> = m
            .iter()
            .zip(states)
            .map(|(m, state)| TrialOutcome {
                name: "t",
                state,
                objective: m.get("loss").copied(),
                metrics: m,
                text_objective: false,
            })
            .collect();
        assert_eq!(pareto_front(&o, &trials), vec![0, 1]);
        let p = plan(&o, limits(1, None, None), &trials, false);
        assert_eq!((p.best, p.front.clone()), (Some(1), vec![0, 1]));

        let mut goals = o.clone();
        goals.objectives[1].goal = Some(0.85);
        assert_eq!(
            plan(&goals, limits(1, None, None), &trials, false).completion,
            Some(Completion::GoalReached)
        );
        goals.objectives[1].goal = Some(0.95);
        assert_eq!(
            plan(&goals, limits(1, None, None), &trials, false).completion,
            None
        );
    }

    /// A trial tied with a later one on the primary objective and dominated by it (NSGA-II's
    /// mutation often keeps a coordinate) is not the result: the front member is.
    #[test]
    fn with_several_objectives_the_best_is_on_the_front_when_the_primary_ties() {
        let o = two_objectives();
        let m = [
            metrics(&[("loss", 0.3), ("acc", 0.7), ("ms", 1.0)]),
            metrics(&[("loss", 0.3), ("acc", 0.9), ("ms", 1.0)]),
            metrics(&[("loss", 0.6), ("acc", 0.95), ("ms", 1.0)]),
        ];
        let trials: Vec<TrialOutcome<'_>> = m
            .iter()
            .map(|m| TrialOutcome {
                name: "t",
                state: TrialState::Succeeded,
                objective: m.get("loss").copied(),
                metrics: m,
                text_objective: false,
            })
            .collect();
        let p = plan(&o, limits(1, None, None), &trials, false);
        assert_eq!((p.best, p.front), (Some(1), vec![1, 2]));
    }

    #[test]
    fn infeasible_trial_is_never_best() {
        let mut o = Objective::new("loss", Direction::Minimize);
        o.constraints.push(Constraint {
            metric: "ms".into(),
            op: ConstraintOp::Lt,
            bound: 20.0,
        });
        let slow = metrics(&[("loss", 0.1), ("ms", 20.0)]);
        let fast = metrics(&[("loss", 0.7), ("ms", 3.0)]);
        let trials = vec![
            TrialOutcome {
                name: "a",
                state: TrialState::Succeeded,
                objective: Some(0.1),
                metrics: &slow,
                text_objective: false,
            },
            TrialOutcome {
                name: "b",
                state: TrialState::Succeeded,
                objective: Some(0.7),
                metrics: &fast,
                text_objective: false,
            },
        ];
        assert_eq!(best_trial(&o, &trials), Some(1));
        assert_eq!(pareto_front(&o, &trials), vec![1]);
    }
}
