//! ASHA (`asha`), asynchronous successive halving: a configuration is promoted to the next
//! rung as soon as it ranks in the top `1/eta` of the results its rung has so far, instead of
//! waiting for a whole rung (or bracket) to finish as Hyperband does, so no worker ever idles.
//!
//! Li, Jamieson, Rostamizadeh, Gonina, Ben-tzur, Hardt, Recht and Talwalkar, "A System for
//! Massively Parallel Hyperparameter Tuning", MLSys 2020 (arXiv:1810.05934, 2018), Algorithm 2.
//!
//! Settings: `resource_name` (required; the int or double parameter that receives each trial's
//! resource, as in `hyperband`), `max_resource` (required; the top rung's resource),
//! `min_resource` (default 1), `eta` (reduction factor, an integer >= 2, default 3) and
//! `min_early_stopping_rate` (`s` in the paper, default 0). Rungs run from the top down:
//! `K = floor(log_eta(max_resource / min_resource)) − s`, and rung `k` (0..=K) runs at
//! `max_resource·eta^(k−K)` (Katib's `int()` for an int parameter), so the top rung is always
//! `max_resource` and rung 0 is at least `min_resource·eta^s`. At least two rungs are required.
//!
//! Each proposal follows the paper's `get_job`: from the highest rung below the top down to
//! rung 0, the first configuration that ranks in the top `floor(n_k/eta)` of the `n_k` trials
//! of rung `k` with a usable objective and has not been promoted yet is promoted; when none
//! can be, a new configuration is drawn for rung 0. Ranking is by loss (maximisation through
//! `Direction::to_loss`), ties by creation order; failed, killed and metric-less trials neither
//! count nor get promoted. Promotions are new trials that run with the next rung's resource
//! (a trial program that keeps checkpoints may resume from its parent's); they carry
//! `vernier.asha/rung` (their rung `k`) and `vernier.asha/parent` (the promoted trial's name);
//! new configurations carry `vernier.asha/rung = 0`. The rung structure is rebuilt from these
//! labels on every call, so a restarted experiment continues where it stopped; `req.state` is
//! ignored and the returned state only shows the rung sizes.
//!
//! ASHA never ends by itself (`maxTrialCount` ends it) except in a finite space: when no
//! configuration is left to draw, nothing can be promoted and nothing runs, it reports
//! `exhausted`. New configurations are drawn from the prior exactly as `hyperband` draws them
//! (shared in `resource.rs`).

mod pruner;
#[cfg(test)]
mod tests;

pub use pruner::AshaPruner;

use crate::error::AlgorithmError;
use crate::history;
use crate::resource::{
    BUDGET_TOLERANCE, Resource, Taken, budget_hint, budget_value, describe_domain, kind, s_max,
    show_budget,
};
use crate::settings::Settings;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::HashSet;
use vernier_core::{
    CoreError, Objective, ParamValue, Parameter, Proposal, SearchSpace, SuggestRequest, Suggester,
    Suggestions, TrialRecord,
};

/// Label holding a trial's rung `k`.
pub const RUNG_LABEL: &str = "vernier.asha/rung";
/// Label holding the name of the trial a promotion continues.
pub const PARENT_LABEL: &str = crate::checkpoint::ASHA_PARENT_LABEL;

const ALGORITHM: &str = "asha";
const ACCEPTED: &[&str] = &[
    "resource_name",
    "max_resource",
    "min_resource",
    "eta",
    "min_early_stopping_rate",
    "random_state",
    crate::checkpoint::TRIAL_DIR_SETTING,
];
pub(crate) const DEFAULT_ETA: u64 = 3;

/// Asynchronous successive halving over one set of rungs.
#[derive(Debug, Clone)]
pub struct Asha {
    resource: Resource,
    eta: u64,
    /// `budgets[k]` is rung `k`'s resource value, checked against the resource's domain.
    budgets: Vec<ParamValue>,
}

pub(crate) fn build(
    name: &str,
    settings: &[(String, String)],
    space: &SearchSpace,
    objective: &Objective,
) -> Result<Box<dyn Suggester>, AlgorithmError> {
    let _ = objective;
    Ok(Box::new(Asha::new(name, settings, space)?))
}

/// `eta`: an integer >= 2 (unlike `hyperband`, no Katib truncation rules to mirror).
pub(crate) fn eta_setting(s: &Settings<'_>) -> Result<u64, AlgorithmError> {
    Ok(
        s.get::<u64>("eta", |v| v >= 2, "eta must be an integer >= 2")?
            .unwrap_or(DEFAULT_ETA),
    )
}

/// `min_early_stopping_rate`: an integer >= 0.
pub(crate) fn rate_setting(s: &Settings<'_>) -> Result<u32, AlgorithmError> {
    Ok(s.get::<u32>(
        "min_early_stopping_rate",
        |v| v <= 64,
        "min_early_stopping_rate must be an integer from 0 to 64",
    )?
    .unwrap_or(0))
}

/// Each rung's resource for `param`, lowest first: `max_resource / eta^(top - k)` for rung
/// `k`, refused (naming `resource_name`) when the parameter cannot hold one of them.
fn rung_budgets(
    s: &Settings,
    param: &Parameter,
    max_resource: f64,
    eta: u64,
    top: usize,
) -> Result<Vec<ParamValue>, AlgorithmError> {
    (0..=top)
        .map(|k| budget_value(param, max_resource / (eta as f64).powi((top - k) as i32)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|bad| {
            let lowest = max_resource / (eta as f64).powi(top as i32);
            s.invalid(
                "resource_name",
                &param.name,
                format!(
                    "names a parameter that cannot hold every rung's resource: {} \
                     parameter {:?} has {}, but the rungs run from {} to {} and {bad}\n{}",
                    kind(param),
                    param.name,
                    describe_domain(&param.domain),
                    show_budget(param, lowest),
                    show_budget(param, max_resource),
                    budget_hint(
                        param,
                        lowest,
                        max_resource,
                        "max_resource, min_resource or eta"
                    ),
                ),
            )
        })
}

impl Asha {
    /// Validates the settings against the space and computes the rungs.
    pub fn new(
        name: &str,
        settings: &[(String, String)],
        space: &SearchSpace,
    ) -> Result<Self, AlgorithmError> {
        let s = Settings::new(name, settings, ACCEPTED)?;
        s.random_state()?;
        crate::checkpoint::refuse_relative_trial_dir(&s)?;
        let positive = |key: &str| {
            s.get::<f64>(
                key,
                |v| v.is_finite() && v > 0.0,
                &format!("{key} must be a positive number"),
            )
        };
        let hint = "\nhint: resource_name names the int or double parameter that receives each \
                    trial's resource (e.g. epochs), max_resource the most any trial gets";
        let resource_name = s
            .nonblank("resource_name")
            .ok_or_else(|| s.invalid("resource_name", "", format!("is not set{hint}")))?;
        let max_resource = positive("max_resource")?
            .ok_or_else(|| s.invalid("max_resource", "", format!("is not set{hint}")))?;
        let min_resource = positive("min_resource")?.unwrap_or(1.0);
        let eta = eta_setting(&s)?;
        let rate = rate_setting(&s)?;

        let Some(param) = space.get(resource_name) else {
            let names: Vec<&str> = space.parameters().iter().map(|p| p.name.as_str()).collect();
            return Err(s.invalid(
                "resource_name",
                resource_name,
                format!(
                    "is not a parameter\nhint: the parameters are {}",
                    names.join(", ")
                ),
            ));
        };
        let levels = s_max(eta, max_resource / min_resource);
        if levels < rate as usize + 1 {
            return Err(s.invalid(
                "max_resource",
                &tidy_text(max_resource),
                format!(
                    "is out of range: ASHA needs at least two rungs, so max_resource / \
                     min_resource must be at least eta^(min_early_stopping_rate + 1) = \
                     {eta}^{} (min_resource is {})\nhint: raise max_resource or lower \
                     min_resource, eta or min_early_stopping_rate",
                    rate + 1,
                    tidy_text(min_resource)
                ),
            ));
        }
        let top = levels - rate as usize;
        let budgets = rung_budgets(&s, param, max_resource, eta, top)?;
        Ok(Asha {
            resource: Resource {
                name: resource_name.to_string(),
            },
            eta,
            budgets,
        })
    }

    /// Every rung's resource value, lowest first.
    pub fn budgets(&self) -> &[ParamValue] {
        &self.budgets
    }

    /// The rung a trial belongs to, if its label and resource value fit these rungs; other
    /// trials (warm-start records, enqueued ones, older settings') only count as taken.
    fn rung_of(&self, t: &TrialRecord) -> Option<usize> {
        let k: usize = t.labels.get(RUNG_LABEL)?.trim().parse().ok()?;
        let b = self.budgets.get(k)?.as_f64()?;
        let v = t.assignment.get(&self.resource.name)?.as_f64()?;
        ((v - b).abs() <= BUDGET_TOLERANCE * b.abs().max(1.0)).then_some(k)
    }
}

fn tidy_text(x: f64) -> String {
    crate::sample::tidy(x).to_string()
}

fn labelled(a: vernier_core::Assignment, k: usize, parent: Option<&str>) -> Proposal {
    let mut p = Proposal::new(a);
    p.labels.insert(RUNG_LABEL.to_string(), k.to_string());
    if let Some(parent) = parent {
        p.labels
            .insert(PARENT_LABEL.to_string(), parent.to_string());
    }
    p
}

impl Suggester for Asha {
    fn name(&self) -> &str {
        ALGORITHM
    }

    fn suggest(&self, req: &SuggestRequest<'_>) -> Result<Suggestions, CoreError> {
        self.resource.check_in(req.space, ALGORITHM)?;
        let trials = req.trials;
        let top = self.budgets.len() - 1;
        let mut members: Vec<Vec<usize>> = vec![Vec::new(); top + 1];
        // (rung, parent name) of every promotion made so far.
        let mut promoted: HashSet<(usize, String)> = HashSet::new();
        // A trial killed by an interruption ran to no verdict: it holds no place in its rung,
        // so its promotion is made again (its parent is not marked promoted).
        for (idx, t) in trials.iter().enumerate() {
            if !history::is_explored(t) {
                continue;
            }
            if let Some(k) = self.rung_of(t) {
                members[k].push(idx);
                if let Some(parent) = t.labels.get(PARENT_LABEL)
                    && k > 0
                {
                    promoted.insert((k, parent.clone()));
                }
            }
        }
        // Per rung below the top: the indices eligible for promotion, best first.
        let candidates: Vec<Vec<usize>> = members[..top]
            .iter()
            .map(|rung| {
                let mut scored: Vec<(f64, usize)> = rung
                    .iter()
                    .filter_map(|&m| {
                        history::observed(req.objective, std::slice::from_ref(&trials[m]))
                            .first()
                            .map(|(_, l)| (*l, m))
                    })
                    .collect();
                scored.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                let keep = scored.len() / self.eta as usize;
                scored.truncate(keep);
                scored.into_iter().map(|(_, m)| m).collect()
            })
            .collect();

        let mut rng = ChaCha8Rng::seed_from_u64(req.seed);
        let mut taken = Taken::new(&self.resource, trials);
        let mut proposals = Vec::new();
        let mut space_done = false;
        while proposals.len() < req.count {
            if let Some(p) =
                self.promotion(req.space, trials, &candidates, &mut promoted, &mut taken)
            {
                proposals.push(p);
                continue;
            }
            if space_done {
                break;
            }
            let fresh = self
                .resource
                .fresh(req.space, &self.budgets[0], 1, &mut taken, &mut rng);
            match fresh.into_iter().next() {
                Some(a) => proposals.push(labelled(a, 0, None)),
                None => space_done = true,
            }
        }
        let running = trials.iter().any(|t| t.state.is_active());
        let sizes: Vec<String> = members.iter().map(|m| m.len().to_string()).collect();
        Ok(Suggestions {
            exhausted: proposals.is_empty() && space_done && !running,
            state: Some(format!(
                "rung sizes {} at {}={}",
                sizes.join("/"),
                self.resource.name,
                self.budgets
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("/")
            )),
            proposals,
        })
    }
}

impl Asha {
    /// The next promotion, highest rung first, and records it as made.
    fn promotion(
        &self,
        space: &SearchSpace,
        trials: &[TrialRecord],
        candidates: &[Vec<usize>],
        promoted: &mut HashSet<(usize, String)>,
        taken: &mut Taken,
    ) -> Option<Proposal> {
        for k in (0..candidates.len()).rev() {
            for &m in &candidates[k] {
                let parent = &trials[m];
                let key = (k + 1, parent.name.clone());
                if promoted.contains(&key) {
                    continue;
                }
                promoted.insert(key);
                let Some(a) = self.resource.compose(space, &self.budgets[k + 1], |q| {
                    parent.assignment.get(&q.name).cloned()
                }) else {
                    continue;
                };
                // Only when another trial already ran this configuration at this resource
                // (a finite space): its result exists, so nothing is re-run.
                if taken.full.contains(&a.key()) {
                    continue;
                }
                taken.insert(&self.resource, &a);
                return Some(labelled(a, k + 1, Some(&parent.name)));
            }
        }
        None
    }
}
