//! Population Based Training (`pbt`): a population of `n_population` members trains in
//! generations; between generations the worst members take a checkpoint and the (explored)
//! hyperparameters of a better one, the others continue from their own checkpoint.
//!
//! Jaderberg, Dalibard, Osindero, Czarnecki, Donahue, Razavi, Vinyals, Green, Dunning,
//! Simonyan, Fernando and Kavukcuoglu, "Population Based Training of Neural Networks",
//! arXiv:1711.09846, 2017 (truncation selection, perturb or resample explore).
//!
//! Settings and their checks are Katib's (`pkg/suggestion/v1beta1/pbt`):
//! `suggestion_trial_dir`, `n_population` and `truncation_threshold` are required,
//! `n_population` must be an integer from 5 to 100000 (Katib sets no upper bound),
//! `truncation_threshold` in [0, 1], `resample_probability` unset (perturb every parameter by 0.8 or 1.2) or in [0, 1]
//! (resample each parameter from its prior with that probability). `suggestion_trial_dir`
//! must be an absolute path: it is where the trial's own checkpoint directory appears.
//!
//! Each trial is one member's step: labels `pbt.suggestion.katib.kubeflow.org/generation`
//! (Katib's), `pbt.suggestion.katib.kubeflow.org/parent` (the trial whose checkpoint
//! directory is copied into this trial's before it starts; absent in generation 0) and
//! `vernier.pbt/member` (the population slot). Generation `g+1` is proposed once every member
//! of generation `g` has a usable result: members are ranked by loss (ties by slot), the
//! bottom `floor(n·truncation_threshold)` (at least 1 for a threshold above 0, at most
//! `n/2`) each pick a random member of the top as many as
//! parent and take its hyperparameters explored; the others continue with their own
//! hyperparameters from their own checkpoint. A failed, killed or metric-less member is
//! retried with the same assignment and parent, as Katib does. Everything is rebuilt from the
//! trials and their labels on each call, and each member's draws come from a generator seeded
//! by `random_state`, the generation and the slot, so a restarted experiment (or a different
//! batching of calls) proposes exactly what an uninterrupted one would have.
//!
//! Where this differs from Katib's service (see docs/katib-differences.md): Katib's exploit
//! names the *weak* trial as parent, so the child resumes the weak checkpoint with the strong
//! hyperparameters; here the parent is the strong member, as in the paper. Katib perturbs every
//! non-truncated member too; here they continue unchanged. Katib keeps its queue in memory and
//! loses the population on a restart; here it is rebuilt from the labels.

mod explore;
/// `n_population`, the members of one generation (required; checked as Katib checks it).
pub(crate) fn population(s: &Settings) -> Result<usize, AlgorithmError> {
    Ok(s.get::<usize>(
        "n_population",
        |v| (5..=MAX_POPULATION).contains(&v),
        "n_population should be >= 5 and at most 100000",
    )?
    .unwrap_or(5))
}

#[cfg(test)]
mod tests;

use crate::error::AlgorithmError;
use crate::settings::Settings;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use vernier_core::{
    Assignment, CoreError, Objective, Proposal, SearchSpace, SuggestRequest, Suggester,
    Suggestions, TrialRecord,
};

/// Katib's label holding a member's generation.
pub const GENERATION_LABEL: &str = "pbt.suggestion.katib.kubeflow.org/generation";
/// Katib's label holding the trial whose checkpoint this trial starts from.
pub const PARENT_LABEL: &str = "pbt.suggestion.katib.kubeflow.org/parent";
/// The population slot a trial fills (Vernier's; Katib keeps slots in memory).
pub const MEMBER_LABEL: &str = "vernier.pbt/member";

const ALGORITHM: &str = "pbt";
/// The largest population: each member is a trial per generation, and a count past any
/// cluster's capacity is a typo that would only fill memory.
const MAX_POPULATION: usize = 100_000;
const REQUIRED: &[&str] = &[
    "suggestion_trial_dir",
    "n_population",
    "truncation_threshold",
];
const ACCEPTED: &[&str] = &[
    "suggestion_trial_dir",
    "n_population",
    "truncation_threshold",
    "resample_probability",
    "random_state",
];

/// Population Based Training with settings checked.
#[derive(Debug, Clone)]
pub struct Pbt {
    population: usize,
    truncation: f64,
    resample: Option<f64>,
    seed: Option<u64>,
}

pub(crate) fn build(
    name: &str,
    settings: &[(String, String)],
    space: &SearchSpace,
    objective: &Objective,
) -> Result<Box<dyn Suggester>, AlgorithmError> {
    let _ = (space, objective);
    Ok(Box::new(Pbt::new(name, settings)?))
}

fn invalid(setting: &str, value: &str, reason: impl Into<String>) -> AlgorithmError {
    AlgorithmError::InvalidSetting {
        algorithm: ALGORITHM.to_string(),
        setting: setting.to_string(),
        value: value.to_string(),
        reason: reason.into(),
    }
}

impl Pbt {
    /// Validates the settings with Katib's rules.
    pub fn new(name: &str, settings: &[(String, String)]) -> Result<Self, AlgorithmError> {
        let s = Settings::new(name, settings, ACCEPTED)?;
        let seed = s.random_state()?;
        let missing: Vec<&str> = REQUIRED
            .iter()
            .copied()
            .filter(|k| !settings.iter().any(|(n, _)| n == k))
            .collect();
        if !missing.is_empty() {
            return Err(invalid(
                &missing.join(", "),
                "",
                "is not set: pbt requires suggestion_trial_dir, n_population and \
                 truncation_threshold\nhint: e.g. suggestion_trial_dir: \
                 /var/log/katib/checkpoints/, n_population: '40', truncation_threshold: '0.2'",
            ));
        }
        let population = population(&s)?;
        let truncation = s
            .get::<f64>(
                "truncation_threshold",
                |v| (0.0..=1.0).contains(&v),
                "truncation_threshold should be between 0 and 1, inclusive",
            )?
            .unwrap_or(0.0);
        let resample = s.get::<f64>(
            "resample_probability",
            |v| (0.0..=1.0).contains(&v),
            "resample_probability should be unset to perturb at 0.8 or 1.2, or be between 0 \
             and 1, inclusive, to resample",
        )?;
        let dir = settings
            .iter()
            .rev()
            .find(|(n, _)| n == "suggestion_trial_dir")
            .map(|(_, v)| v.trim())
            .unwrap_or_default();
        if !dir.starts_with('/') {
            return Err(invalid(
                "suggestion_trial_dir",
                dir,
                crate::checkpoint::NOT_ABSOLUTE,
            ));
        }
        Ok(Pbt {
            population,
            truncation,
            resample,
            seed,
        })
    }

    /// The draws of one member of one generation: independent of how calls are batched.
    fn rng(&self, fallback: u64, generation: u64, member: usize) -> ChaCha8Rng {
        let base = self.seed.unwrap_or(fallback);
        ChaCha8Rng::seed_from_u64(
            base.wrapping_mul(0x9E37_79B9_7F4A_7C15)
                ^ generation.wrapping_mul(0xD1B5_4A32_D192_ED03)
                ^ (member as u64).wrapping_mul(0xBF58_476D_1CE4_E5B9),
        )
    }
}

/// The last trial of every (generation, slot), by index into the history.
fn slots(trials: &[TrialRecord]) -> BTreeMap<(u64, usize), usize> {
    let mut slots = BTreeMap::new();
    for (i, t) in trials.iter().enumerate() {
        let generation = t.labels.get(GENERATION_LABEL).and_then(|g| g.parse().ok());
        let member = t.labels.get(MEMBER_LABEL).and_then(|m| m.parse().ok());
        if let (Some(g), Some(m)) = (generation, member) {
            slots.insert((g, m), i);
        }
    }
    slots
}

fn labelled(
    assignment: Assignment,
    generation: u64,
    member: usize,
    parent: Option<&str>,
) -> Proposal {
    let mut p = Proposal::new(assignment);
    p.labels
        .insert(GENERATION_LABEL.to_string(), generation.to_string());
    p.labels
        .insert(MEMBER_LABEL.to_string(), member.to_string());
    if let Some(parent) = parent {
        p.labels
            .insert(PARENT_LABEL.to_string(), parent.to_string());
    }
    p
}

impl Pbt {
    /// Slot `member` of generation `generation > 0`, from the previous generation's results
    /// (`previous[k]` is (slot, its last trial, its loss) for each slot that has one).
    fn successor(
        &self,
        space: &SearchSpace,
        trials: &[TrialRecord],
        previous: &[(usize, usize, f64)],
        generation: u64,
        member: usize,
        rng: &mut ChaCha8Rng,
    ) -> Proposal {
        if previous.is_empty() {
            let a = crate::sample::sample_assignment(space, rng);
            return labelled(a, generation, member, None);
        }
        let mut order: Vec<usize> = (0..previous.len()).collect();
        order.sort_by(|&a, &b| previous[a].2.total_cmp(&previous[b].2).then(a.cmp(&b)));
        let cut = truncated(previous.len(), self.truncation);
        let bottom = &order[order.len() - cut..];
        let own = previous.iter().position(|p| p.0 == member);
        if let Some(k) = own
            && !bottom.contains(&k)
        {
            let own = &trials[previous[k].1];
            return labelled(own.assignment.clone(), generation, member, Some(&own.name));
        }
        // A bottom member, or one whose previous trial has no result (a Katib controller leaves
        // trials without metrics out of its requests): it continues a top member, explored.
        let top = cut.max(1);
        let donor = &trials[previous[order[rng.random_range(0..top)]].1];
        let assignment = explore::explore(space, &donor.assignment, self.resample, rng);
        labelled(assignment, generation, member, Some(&donor.name))
    }
}

/// How many of `members` ranked members are replaced: `floor(members·truncation)`, at least
/// one when `truncation` is above 0 (5 members at 0.1 would otherwise never explore, where
/// Katib perturbs every member above the truncation), at most half.
fn truncated(members: usize, truncation: f64) -> usize {
    let cut = (members as f64 * truncation) as usize;
    let cut = if truncation > 0.0 { cut.max(1) } else { cut };
    cut.min(members / 2)
}

impl Suggester for Pbt {
    fn name(&self) -> &str {
        ALGORITHM
    }

    fn fill(&self, req: &SuggestRequest<'_>, given: &[Proposal]) -> Vec<Proposal> {
        self.extra_members(req, given)
    }

    fn suggest(&self, req: &SuggestRequest<'_>) -> Result<Suggestions, CoreError> {
        let trials = req.trials;
        let slots = slots(trials);
        let current = slots.keys().map(|(g, _)| *g).max().unwrap_or(0);
        let loss = |idx: usize| {
            trials[idx]
                .usable_objective()
                .map(|v| req.objective.direction.to_loss(v))
        };
        let mut proposals = Vec::new();
        let mut finished = 0;
        for member in 0..self.population {
            match slots.get(&(current, member)) {
                None => proposals.extend(self.fresh_or_successor(req, &slots, current, member)),
                Some(&idx) if loss(idx).is_some() => finished += 1,
                Some(&idx) if trials[idx].state.is_terminal() => {
                    let t = &trials[idx];
                    let parent = t.labels.get(PARENT_LABEL).map(String::as_str);
                    proposals.push(labelled(t.assignment.clone(), current, member, parent));
                }
                Some(_) => {}
            }
        }
        let mut generation = current;
        if finished == self.population {
            generation += 1;
            proposals = (0..self.population)
                .filter_map(|m| self.fresh_or_successor(req, &slots, generation, m))
                .collect();
        }
        proposals.truncate(req.count);
        Ok(Suggestions {
            proposals,
            state: Some(format!(
                "generation {generation}: {finished}/{} members of generation {current} finished",
                self.population
            )),
            exhausted: false,
        })
    }
}

impl Pbt {
    /// Extra members of the generation `given` belongs to, in slots after every slot it has,
    /// as Katib's service seeds extra members when its queue runs short: random in generation
    /// 0, explored from a top member of the previous generation later. They train and are
    /// ranked as any trial of the experiment, but the population's next generation is still
    /// bred from its `n_population` slots.
    fn extra_members(&self, req: &SuggestRequest<'_>, given: &[Proposal]) -> Vec<Proposal> {
        let generation_of = |labels: &BTreeMap<String, String>| -> Option<u64> {
            labels.get(GENERATION_LABEL)?.parse().ok()
        };
        let Some(generation) = given.iter().find_map(|p| generation_of(&p.labels)) else {
            return Vec::new();
        };
        let slots = slots(req.trials);
        let taken_by_given = given
            .iter()
            .filter_map(|p| p.labels.get(MEMBER_LABEL)?.parse::<usize>().ok());
        let first_free = slots
            .keys()
            .filter(|(g, _)| *g == generation)
            .map(|(_, m)| *m)
            .chain(taken_by_given)
            .max()
            .map_or(0, |m| m + 1)
            .max(self.population);
        let missing = req.count.saturating_sub(given.len());
        (first_free..first_free + missing)
            .filter_map(|member| self.fresh_or_successor(req, &slots, generation, member))
            .collect()
    }

    /// A new member of generation 0, or the successor of slot `member` from the previous
    /// generation's usable results.
    fn fresh_or_successor(
        &self,
        req: &SuggestRequest<'_>,
        slots: &BTreeMap<(u64, usize), usize>,
        generation: u64,
        member: usize,
    ) -> Option<Proposal> {
        let mut rng = self.rng(req.seed, generation, member);
        if generation == 0 {
            let a = crate::sample::sample_assignment(req.space, &mut rng);
            return Some(labelled(a, 0, member, None));
        }
        let previous: Vec<(usize, usize, f64)> = (0..self.population)
            .filter_map(|m| {
                let idx = *slots.get(&(generation - 1, m))?;
                let v = req.trials[idx].usable_objective()?;
                Some((m, idx, req.objective.direction.to_loss(v)))
            })
            .collect();
        Some(self.successor(
            req.space, req.trials, &previous, generation, member, &mut rng,
        ))
    }
}
