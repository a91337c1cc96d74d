//! ASHA as an early-stopping rule (`earlyStopping.algorithmName: asha`): successive halving
//! over the intermediate values of long trials, as Optuna's `SuccessiveHalvingPruner` does.
//!
//! Rungs sit at steps `min_resource·eta^(s+k)`, k = 0, 1, ... (`s` is
//! `min_early_stopping_rate`); step `n` is a trial's `n`-th intermediate value (an epoch, for
//! a trial that reports once per epoch). A running trial is judged at each rung it reached
//! since the rule last saw it (`TrialProgress::judged`), lowest first, else at the highest
//! rung it has reached: it keeps running if its value at that rung's step ranks among the best
//! `max(1, floor(n/eta))` of the `n` trials (itself included, in any state) that reported a
//! value at that step, and is stopped otherwise — Optuna's rule, where fewer than `eta`
//! competitors means only the best continues. Until at least `bootstrap_count` trials (itself
//! included) have reached a rung, nobody is stopped there. Losses follow the objective's
//! direction; a non-finite value ranks last; ties keep the earlier trial ahead.
//!
//! Stateless, unlike Optuna (which stores each trial's passed rungs): a trial is judged again
//! after every new value until it reaches the next rung, so a trial that other trials overtake
//! at its current rung is stopped then instead of carrying on to the next rung. A rung passed
//! between two asks is judged all the same, so a trainer that prints faster than the driver
//! looks is held to every rung, as Optuna holds it when reporting each value.

use super::{eta_setting, rate_setting};
use crate::error::AlgorithmError;
use crate::settings::Settings;
use vernier_core::{CoreError, EarlyStopper, EarlyStoppingRequest, TrialState};

const ACCEPTED: &[&str] = &[
    "min_resource",
    "eta",
    "min_early_stopping_rate",
    "bootstrap_count",
];

/// ASHA's rung rule applied to the intermediate values of running trials.
#[derive(Debug, Clone, PartialEq)]
pub struct AshaPruner {
    min_resource: u64,
    eta: u64,
    min_early_stopping_rate: u32,
    bootstrap_count: usize,
}

impl AshaPruner {
    /// Builds the rule from Katib-style `earlyStopping.algorithmSettings` name/value pairs:
    /// `min_resource` (steps before the first rung's base, an integer >= 1, default 1), `eta`
    /// (an integer >= 2, default 3), `min_early_stopping_rate` (0 to 64, default 0) and
    /// `bootstrap_count` (an integer >= 0, default 0).
    pub fn from_settings(settings: &[(String, String)]) -> Result<Self, AlgorithmError> {
        let s = Settings::new("asha", settings, ACCEPTED)?;
        let min_resource = s
            .get::<u64>(
                "min_resource",
                |v| v >= 1,
                "min_resource must be an integer >= 1",
            )?
            .unwrap_or(1);
        let eta = eta_setting(&s)?;
        let min_early_stopping_rate = rate_setting(&s)?;
        let bootstrap_count = s
            .get::<usize>("bootstrap_count", |_| true, "an integer >= 0")?
            .unwrap_or(0);
        let pruner = AshaPruner {
            min_resource,
            eta,
            min_early_stopping_rate,
            bootstrap_count,
        };
        if pruner.rung_step(0).is_none() {
            return Err(s.invalid(
                "min_early_stopping_rate",
                &min_early_stopping_rate.to_string(),
                format!(
                    "is out of range: the first rung, min_resource·eta^min_early_stopping_rate \
                     = {min_resource}·{eta}^{min_early_stopping_rate}, overflows\nhint: lower \
                     min_early_stopping_rate"
                ),
            ));
        }
        Ok(pruner)
    }

    /// The step of rung `k`, or `None` past `u64`.
    pub fn rung_step(&self, k: u32) -> Option<u64> {
        self.eta
            .checked_pow(self.min_early_stopping_rate.checked_add(k)?)?
            .checked_mul(self.min_resource)
    }

    /// The steps to judge a trial at that has `steps` values, `judged` of them seen before:
    /// every rung step passed since, lowest first, else the highest rung reached (judged again
    /// as its competitors change).
    fn steps_to_judge(&self, judged: usize, steps: usize) -> Vec<u64> {
        let reached: Vec<u64> = (0..)
            .map_while(|k| self.rung_step(k).filter(|&step| step <= steps as u64))
            .collect();
        let passed: Vec<u64> = reached
            .iter()
            .copied()
            .filter(|&step| step > judged as u64)
            .collect();
        match passed.is_empty() {
            true => reached.last().copied().into_iter().collect(),
            false => passed,
        }
    }
}

/// Where one running trial stands at the highest rung it reached.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Standing {
    step: u64,
    value: f64,
    /// 1 for the best of the `competitors` trials that reported a value at `step`.
    place: usize,
    competitors: usize,
    /// How many of them go on.
    keep: usize,
}

impl AshaPruner {
    /// Trial `i`'s standing at the first rung it is judged at and fails, else at the last one
    /// judged; `None` while the rule cannot judge it yet (not running, below the first rung,
    /// fewer competitors than `bootstrap_count`).
    fn standing(&self, request: &EarlyStoppingRequest<'_>, i: usize) -> Option<Standing> {
        let trial = request.trials.get(i)?;
        if trial.state != TrialState::Running {
            return None;
        }
        let mut last = None;
        for step in self.steps_to_judge(trial.judged, trial.values.len()) {
            let Some(s) = self.standing_at(request, i, step) else {
                continue;
            };
            if s.place > s.keep {
                return Some(s);
            }
            last = Some(s);
        }
        last
    }

    /// Trial `i`'s standing at the rung at `step`, or `None` with fewer competitors there
    /// than `bootstrap_count`.
    fn standing_at(
        &self,
        request: &EarlyStoppingRequest<'_>,
        i: usize,
        step: u64,
    ) -> Option<Standing> {
        let direction = request.objective.direction;
        let loss = |v: f64| {
            if v.is_finite() {
                direction.to_loss(v)
            } else {
                f64::INFINITY
            }
        };
        let trial = request.trials.get(i)?;
        let at = step as usize - 1;
        let value = trial.values[at];
        let mine = loss(value);
        let mut competitors = 0usize;
        let mut ahead = 0usize;
        for (j, other) in request.trials.iter().enumerate() {
            let Some(&v) = other.values.get(at) else {
                continue;
            };
            competitors += 1;
            let theirs = loss(v);
            if theirs < mine || (theirs == mine && j < i) {
                ahead += 1;
            }
        }
        if competitors < self.bootstrap_count.max(1) {
            return None;
        }
        let keep = (competitors / self.eta as usize).max(1);
        Some(Standing {
            step,
            value,
            place: ahead + 1,
            competitors,
            keep,
        })
    }
}

impl EarlyStopper for AshaPruner {
    fn name(&self) -> &str {
        "asha"
    }

    fn trials_to_stop(&self, request: &EarlyStoppingRequest<'_>) -> Result<Vec<String>, CoreError> {
        Ok((0..request.trials.len())
            .filter(|&i| self.standing(request, i).is_some_and(|s| s.place > s.keep))
            .map(|i| request.trials[i].name.to_string())
            .collect())
    }

    fn stop_step(&self, request: &EarlyStoppingRequest<'_>, trial: &str) -> Option<usize> {
        let i = request.trials.iter().position(|t| t.name == trial)?;
        let s = self.standing(request, i).filter(|s| s.place > s.keep)?;
        usize::try_from(s.step).ok()
    }

    fn explain(&self, request: &EarlyStoppingRequest<'_>, trial: &str) -> Option<String> {
        let i = request.trials.iter().position(|t| t.name == trial)?;
        let s = self.standing(request, i).filter(|s| s.place > s.keep)?;
        let metric = &request.objective.metric;
        Some(format!(
            "its {metric} {} at step {} ranked {} of the {} trials that reached that rung, \
             where asha keeps the best {} (eta {})",
            s.value, s.step, s.place, s.competitors, s.keep, self.eta
        ))
    }
}
