//! BOHB (`bohb`): Hyperband's brackets with new configurations proposed by a multivariate
//! TPE/KDE model instead of drawn at random.
//!
//! Falkner, Klein and Hutter, "BOHB: Robust and Efficient Hyperparameter Optimization at
//! Scale", ICML 2018, Algorithm 2. The bracket schedule, promotions, labels and the rebuilding
//! of state from those labels are `hyperband`'s own ([`Hyperband::suggest_with`]); only the
//! first rung's new configurations differ. For each one, with probability `random_fraction`
//! (default 1/3, the paper's ρ) it is drawn from the prior as Hyperband draws it; otherwise it
//! comes from the model: `multivariate-tpe` (joint kernels over every parameter except the
//! resource) fitted on the trials of the largest resource value that has at least
//! `min_points_in_model` usable results (default: number of parameters + 1, the paper's
//! `N_min = d + 1`), with the paper's `top_n_percent` 15 as the good fraction and its 64
//! candidates per proposal. While no resource value has enough results, every configuration
//! is random. Trials of that resource value still running join the model's "bad" set (TPE's
//! constant liar), so a batch of model proposals spreads out.
//!
//! Settings: `resource_name`, `r_l` (or its ASHA-style alias `max_resource`), `eta` (as
//! `hyperband`, Katib's truncation rules included), `min_points_in_model`, `random_fraction`,
//! `random_state`. Deviation from the paper: its KDE uses a bandwidth factor of 3 and a
//! minimum bandwidth of 1e-3 on a plain product of Gaussians; here the model is Vernier's
//! multivariate TPE (Optuna's neighbour bandwidths and prior kernel), so one estimator serves
//! both algorithms. Brackets run in Hyperband's order and a rung waits for its trials; the
//! asynchronous variant of the paper's §4.3 is not implemented.

use crate::error::AlgorithmError;
use crate::hyperband::Hyperband;
use crate::resource::{BUDGET_TOLERANCE, Resource, Taken};
use crate::settings::Settings;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use vernier_core::{
    Assignment, CoreError, Objective, ParamValue, SearchSpace, SuggestRequest, Suggester,
    Suggestions, TrialRecord,
};

const ACCEPTED: &[&str] = &[
    "resource_name",
    "r_l",
    "max_resource",
    "eta",
    "min_points_in_model",
    "random_fraction",
    "random_state",
    crate::checkpoint::TRIAL_DIR_SETTING,
];
/// The paper's ρ.
const DEFAULT_RANDOM_FRACTION: f64 = 1.0 / 3.0;
/// The paper's `top_n_percent` 15, as TPE's good fraction.
const MODEL_GAMMA: &str = "0.15";
/// The paper's `num_samples`: candidates scored per model proposal.
const MODEL_CANDIDATES: &str = "64";

/// Hyperband with model-based first rungs.
#[derive(Debug, Clone)]
struct Bohb {
    hyperband: Hyperband,
    /// `None`: one more than the number of non-resource parameters of the request's space.
    min_points: Option<usize>,
    random_fraction: f64,
}

pub(crate) fn build(
    name: &str,
    settings: &[(String, String)],
    space: &SearchSpace,
    objective: &Objective,
) -> Result<Box<dyn Suggester>, AlgorithmError> {
    let _ = objective;
    let s = Settings::new(name, settings, ACCEPTED)?;
    let min_points = s.get::<usize>("min_points_in_model", |v| v >= 1, "an integer >= 1")?;
    let random_fraction = s
        .get::<f64>(
            "random_fraction",
            |v| (0.0..=1.0).contains(&v),
            "a fraction from 0 to 1",
        )?
        .unwrap_or(DEFAULT_RANDOM_FRACTION);
    let hyperband = Hyperband::new(name, &schedule_settings(&s, settings)?, space)?;
    Ok(Box::new(Bohb {
        hyperband,
        min_points,
        random_fraction,
    }))
}

/// The settings Hyperband reads, with `max_resource` as `r_l`; both at once must agree.
fn schedule_settings(
    s: &Settings<'_>,
    settings: &[(String, String)],
) -> Result<Vec<(String, String)>, AlgorithmError> {
    if let (Some(r_l), Some(max)) = (s.nonblank("r_l"), s.nonblank("max_resource"))
        && r_l.parse::<f64>().ok() != max.parse::<f64>().ok()
    {
        return Err(s.invalid(
            "max_resource",
            max,
            format!(
                "disagrees with r_l {r_l:?}: both name the most resource one configuration \
                 gets\nhint: set only one of them"
            ),
        ));
    }
    Ok(settings
        .iter()
        .filter(|(n, _)| !matches!(n.as_str(), "min_points_in_model" | "random_fraction"))
        .map(|(n, v)| {
            let n = if n == "max_resource" { "r_l" } else { n };
            (n.to_string(), v.clone())
        })
        .collect())
}

/// The largest resource value with at least `min_points` usable results, if any.
fn model_budget(resource: &Resource, trials: &[TrialRecord], min_points: usize) -> Option<f64> {
    let mut counts: Vec<(f64, usize)> = Vec::new();
    for t in trials.iter().filter(|t| t.usable_objective().is_some()) {
        let Some(v) = t
            .assignment
            .get(&resource.name)
            .and_then(ParamValue::as_f64)
        else {
            continue;
        };
        match counts.iter_mut().find(|(b, _)| same_budget(*b, v)) {
            Some((_, n)) => *n += 1,
            None => counts.push((v, 1)),
        }
    }
    counts
        .into_iter()
        .filter(|(_, n)| *n >= min_points)
        .map(|(b, _)| b)
        .max_by(f64::total_cmp)
}

fn same_budget(a: f64, b: f64) -> bool {
    (a - b).abs() <= BUDGET_TOLERANCE * a.abs().max(1.0)
}

/// `t` without its resource value, when it ran at `budget`.
fn at_budget(resource: &Resource, t: &TrialRecord, budget: f64) -> Option<TrialRecord> {
    let v = t.assignment.get(&resource.name)?.as_f64()?;
    same_budget(v, budget).then(|| TrialRecord {
        assignment: Assignment(
            t.assignment
                .iter()
                .filter(|(n, _)| *n != resource.name)
                .cloned()
                .collect(),
        ),
        ..t.clone()
    })
}

impl Bohb {
    /// Up to `want` configurations from the model fitted at the largest qualifying budget,
    /// each at `budget` and not yet taken; fewer (none) without enough data.
    fn modelled(
        &self,
        req: &SuggestRequest<'_>,
        budget: &ParamValue,
        want: usize,
        taken: &mut Taken,
        rng: &mut ChaCha8Rng,
    ) -> Vec<Assignment> {
        let resource = self.hyperband.resource();
        let others: Vec<_> = req
            .space
            .parameters()
            .iter()
            .filter(|p| p.name != resource.name)
            .cloned()
            .collect();
        let min_points = self.min_points.unwrap_or(others.len() + 1);
        let (Some(fit_at), Ok(sub_space)) = (
            model_budget(resource, req.trials, min_points),
            SearchSpace::new(others),
        ) else {
            return Vec::new();
        };
        let sub_trials: Vec<TrialRecord> = req
            .trials
            .iter()
            .filter_map(|t| at_budget(resource, t, fit_at))
            .collect();
        let settings: Vec<(String, String)> = [
            ("n_startup_trials", "0"),
            ("gamma", MODEL_GAMMA),
            ("n_ei_candidates", MODEL_CANDIDATES),
        ]
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
        let Ok(tpe) = crate::tpe::build("multivariate-tpe", &settings, &sub_space, req.objective)
        else {
            return Vec::new();
        };
        let sub_req = SuggestRequest {
            space: &sub_space,
            objective: req.objective,
            trials: &sub_trials,
            count: want,
            seed: rng.random(),
            state: None,
        };
        let Ok(s) = tpe.suggest(&sub_req) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for p in s.proposals {
            let Some(a) =
                resource.compose(req.space, budget, |q| p.assignment.get(&q.name).cloned())
            else {
                continue;
            };
            if taken.sub.contains(&resource.sub_key(&a)) {
                continue;
            }
            taken.insert(resource, &a);
            out.push(a);
        }
        out
    }
}

impl Suggester for Bohb {
    fn name(&self) -> &str {
        self.hyperband.name()
    }

    fn notes(&self) -> Vec<String> {
        self.hyperband.notes()
    }

    fn suggest(&self, req: &SuggestRequest<'_>) -> Result<Suggestions, CoreError> {
        self.hyperband
            .suggest_with(req, &mut |budget, want, taken, rng| {
                let modelled = (0..want)
                    .filter(|_| rng.random::<f64>() >= self.random_fraction)
                    .count();
                let mut out = if modelled > 0 {
                    self.modelled(req, budget, modelled, taken, rng)
                } else {
                    Vec::new()
                };
                let resource = self.hyperband.resource();
                out.extend(resource.fresh(req.space, budget, want - out.len(), taken, rng));
                out
            })
    }
}

#[cfg(test)]
mod tests;
