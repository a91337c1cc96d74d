//! Hyperband (`hyperband`): successive halving run over every bracket, with each trial's
//! bracket and rung kept in its labels so the schedule is rebuilt from the history alone and a
//! restarted experiment continues where it stopped.
//!
//! Li, Jamieson, DeSalvo, Rostamizadeh and Talwalkar, "Hyperband: A Novel Bandit-Based
//! Approach to Hyperparameter Optimization", JMLR 18(185), 2018, Algorithm 1.
//!
//! Schedule, with Katib's settings `r_l` (the most resource one configuration gets), `eta`
//! (default 3) and `resource_name` (the parameter that carries the resource):
//! `s_max = floor(log_eta(r_l))`, computed exactly (Katib's `int(ln r_l / ln eta)` turns
//! `log_10(1000)` into 2). Brackets are listed `s = s_max` down to 0 and run side by side (see
//! Asynchrony). Bracket `s`
//! draws `n = ceil((s_max+1)/(s+1) · eta^s)` new configurations at resource `r = r_l·eta^(−s)`;
//! rung `i` (0..=s) runs at `r_i = r·eta^i`, so the last rung of every bracket runs at `r_l`.
//! A rung of `m` trials promotes its best `max(1, floor(m/eta))` (Li et al.'s floor; Katib
//! uses ceil) among those with a usable objective, ranked by loss (maximisation is handled by
//! `Direction::to_loss`, ties by creation order); failed, killed and metric-less trials are
//! never promoted, and a rung with no usable trial ends its bracket early. With no failures
//! the rung sizes are Li et al.'s `n_i = floor(n·eta^(−i))` (e.g. eta 3, r_l 81:
//! 81-27-9-3-1, 34-11-3-1, 15-5-1, 8-2, 5). After bracket 0 the suggester reports
//! `exhausted`.
//!
//! Asynchrony: a rung is complete when all its trials are terminal. A call walks every
//! bracket in order and fills the request from each: while bracket `s` waits for a rung, the
//! next bracket proposes its own first rung or promotions. So a reply holds as many proposals
//! as asked until every bracket's first rung is handed out; only then, while the remaining
//! promotions wait for running rungs, fewer (possibly none) come back with `exhausted: false`
//! and the caller waits. Katib's controller stalls on any reply shorter than asked, and Katib's
//! own Hyperband answers 0 while a rung runs. State lives in the labels
//! `vernier.hyperband/bracket`, `vernier.hyperband/rung` and, for promotions,
//! `vernier.hyperband/parent` (the promoted trial's name); `req.state` is ignored and the
//! returned state is only a human-readable position.
//!
//! Parameters: new configurations draw every parameter except the resource one from its
//! prior (`sample::sample_param`: uniform, log-uniform, normal and log-normal, ints and
//! doubles on their step grid, discrete and categorical uniformly over the list), distinct
//! from every configuration already taken (resource value included), preferring ones whose
//! non-resource part was never tried. Finite spaces are enumerated when random draws stop
//! finding unused points; a bracket whose space runs out gets fewer configurations. The
//! resource parameter must be an int, a double or a discrete list of the budgets: an int takes
//! Katib's `int(r)` (never below 1), a double takes `r` itself (snapped onto its step grid when
//! it has one), a discrete list the element equal to `int(r)` (or `r`).
//!
//! Deviations from Katib (§3.3 of the Katib notes): every bracket runs, side by side (Katib's
//! controller stalls after the first one, issues #1366/#557/#690); rung sizes use floor, not ceil;
//! promotions wait for a rung to finish instead of erroring on unfinished trials; and the
//! rung budgets must lie inside the resource parameter's feasible space, checked when the
//! algorithm is built (Katib overwrites the value whatever the space says, but Vernier checks
//! every proposal against the space). Katib's `parallelTrialCount >= ceil(eta^s_max)` check
//! is not needed here: any parallelism works.

use crate::error::AlgorithmError;
use crate::history;
use crate::resource::{
    BUDGET_TOLERANCE, Resource, Taken, budget_hint, budget_value, describe_domain, kind, s_max,
};
use crate::sample::tidy;
use crate::settings::Settings;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, HashSet};
use vernier_core::{
    Assignment, CoreError, Objective, ParamValue, Parameter, Proposal, SearchSpace, SuggestRequest,
    Suggester, Suggestions, TrialRecord,
};

/// Label holding a trial's bracket `s`.
pub const BRACKET_LABEL: &str = "vernier.hyperband/bracket";
/// Label holding a trial's rung `i` within its bracket.
pub const RUNG_LABEL: &str = "vernier.hyperband/rung";
/// Label holding the name of the trial a promotion continues.
pub const PARENT_LABEL: &str = crate::checkpoint::HYPERBAND_PARENT_LABEL;

const ACCEPTED: &[&str] = &[
    "r_l",
    "resource_name",
    "eta",
    "random_state",
    crate::checkpoint::TRIAL_DIR_SETTING,
];
const DEFAULT_ETA: u64 = 3;

/// Hyperband over the whole bracket schedule.
#[derive(Debug, Clone)]
pub struct Hyperband {
    /// `hyperband`, or the algorithm built on this schedule (`bohb`), for errors and labels.
    algorithm: String,
    resource: Resource,
    eta: u64,
    /// `budgets[e]` is the resource value `r_l·eta^(−e)` of rung `i` in bracket `s` with
    /// `e = s − i`, already rounded and checked against the resource parameter's domain.
    budgets: Vec<ParamValue>,
    /// `brackets[s]` is the number of new configurations bracket `s` starts with.
    brackets: Vec<u64>,
    /// The `eta` setting as written, when it has a fraction this schedule drops.
    fractional_eta: Option<String>,
}

pub(crate) fn build(
    name: &str,
    settings: &[(String, String)],
    space: &SearchSpace,
    objective: &Objective,
) -> Result<Box<dyn Suggester>, AlgorithmError> {
    let _ = objective;
    Ok(Box::new(Hyperband::new(name, settings, space)?))
}

/// `name` is the algorithm: BOHB, which builds its schedule here, also takes `max_resource`.
fn missing(name: &str, s: &Settings<'_>, key: &str) -> AlgorithmError {
    let r_l = match name {
        "bohb" => "r_l (or max_resource)",
        _ => "r_l",
    };
    s.invalid(
        key,
        "",
        format!(
            "is not set: {r_l} and resource_name must be set.\nhint: {r_l} is the most \
             resource one configuration gets, resource_name the parameter that receives it"
        ),
    )
}

/// `eta` as Katib reads it: `int(float(eta))`, a non-positive value meaning the default 3.
fn read_eta(s: &Settings<'_>) -> Result<u64, AlgorithmError> {
    let Some(v) = s.get::<f64>("eta", f64::is_finite, "an integer >= 2")? else {
        return Ok(DEFAULT_ETA);
    };
    let t = v.trunc();
    if t <= 0.0 {
        Ok(DEFAULT_ETA)
    } else if t < 2.0 {
        Err(s.invalid(
            "eta",
            s.nonblank("eta").unwrap_or_default(),
            "is out of range: eta must be an integer >= 2 after truncation \
             (int(float(eta))); a value <= 0 means the default 3",
        ))
    } else {
        Ok(t.min(u32::MAX as f64) as u64)
    }
}

/// The parameter `resource_name` names, which receives each rung's budget.
fn resource_parameter<'a>(
    s: &Settings<'_>,
    space: &'a SearchSpace,
    resource_name: &str,
) -> Result<&'a Parameter, AlgorithmError> {
    space.get(resource_name).ok_or_else(|| {
        let names: Vec<&str> = space.parameters().iter().map(|p| p.name.as_str()).collect();
        s.invalid(
            "resource_name",
            resource_name,
            format!(
                "is not a parameter: value of resource_name setting must be in parameters.\n\
                 hint: the parameters are {}",
                names.join(", ")
            ),
        )
    })
}

/// Each rung's budget `r_l·eta^(−s)`, s = 0..=s_max, as a value of the resource parameter;
/// refused when the parameter's space cannot hold one.
fn rung_budgets(
    s: &Settings<'_>,
    param: &Parameter,
    r_l: f64,
    eta: u64,
    s_max: usize,
) -> Result<Vec<ParamValue>, AlgorithmError> {
    (0..=s_max)
        .map(|e| budget_value(param, r_l / (eta as f64).powi(e as i32)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|bad| {
            let lowest = r_l / (eta as f64).powi(s_max as i32);
            s.invalid(
                "resource_name",
                &param.name,
                format!(
                    "names a parameter that cannot hold every rung budget: {} \
                     parameter {:?} has {}, but with r_l {r_l} and eta {eta} the budgets \
                     r_l·eta^(−s), s = 0..{s_max}, run from {} to {} and {bad}\n{}; Katib \
                     overwrites the value without looking at the space, Vernier keeps every \
                     proposal inside it",
                    kind(param),
                    param.name,
                    describe_domain(&param.domain),
                    tidy(lowest),
                    tidy(r_l),
                    budget_hint(param, lowest, r_l, "r_l or eta"),
                ),
            )
        })
}

impl Hyperband {
    /// Validates the settings against the space and computes the schedule.
    pub fn new(
        name: &str,
        settings: &[(String, String)],
        space: &SearchSpace,
    ) -> Result<Self, AlgorithmError> {
        let s = Settings::new(name, settings, ACCEPTED)?;
        s.random_state()?;
        crate::checkpoint::refuse_relative_trial_dir(&s)?;

        let resource_name = s
            .nonblank("resource_name")
            .ok_or_else(|| missing(name, &s, "resource_name"))?;
        if s.nonblank("r_l").is_none() {
            return Err(missing(name, &s, "r_l"));
        }
        let r_l = s
            .get::<f64>(
                "r_l",
                |v| v.is_finite() && v > 0.0,
                "r_l must be a positive float number.",
            )?
            .ok_or_else(|| missing(name, &s, "r_l"))?;
        let eta = read_eta(&s)?;
        let param = resource_parameter(&s, space, resource_name)?;
        let s_max = s_max(eta, r_l);
        let brackets = bracket_sizes(eta, s_max).ok_or_else(|| {
            s.invalid(
                "r_l",
                s.nonblank("r_l").unwrap_or_default(),
                format!(
                    "is out of range: with eta {eta} the first bracket would need more than \
                     {} configurations",
                    u64::MAX
                ),
            )
        })?;
        let budgets = rung_budgets(&s, param, r_l, eta, s_max)?;
        let written = s
            .nonblank("eta")
            .filter(|v| v.parse::<f64>().is_ok_and(|v| v.fract() != 0.0));
        Ok(Hyperband {
            algorithm: name.to_string(),
            resource: Resource {
                name: resource_name.to_string(),
            },
            eta,
            budgets,
            brackets,
            fractional_eta: written.map(str::to_string),
        })
    }

    /// `s_max`: the index of the first (most aggressive) bracket.
    pub fn s_max(&self) -> usize {
        self.brackets.len() - 1
    }

    /// Trials of the whole schedule when no trial fails: every bracket's rung sizes summed.
    pub(crate) fn nominal_trials(&self) -> u64 {
        (0..self.brackets.len())
            .map(|s| {
                let mut n = self.brackets[s];
                let mut total = 0u64;
                for _ in 0..=s {
                    total = total.saturating_add(n);
                    n = (n / self.eta).max(1);
                }
                total
            })
            .fold(0u64, u64::saturating_add)
    }

    /// Nominal rung sizes and resource values of bracket `s`, as when no trial fails.
    #[cfg(test)]
    fn schedule(&self, s: usize) -> Vec<(u64, ParamValue)> {
        let mut n = self.brackets[s];
        (0..=s)
            .map(|i| {
                let rung = (n, self.budgets[s - i].clone());
                n = (n / self.eta).max(1);
                rung
            })
            .collect()
    }

    /// The (bracket, rung) a trial belongs to, if its labels and resource value fit this
    /// schedule; other trials (another algorithm's, or older settings') only count as taken.
    fn position(&self, t: &TrialRecord) -> Option<(usize, usize)> {
        let s: usize = t.labels.get(BRACKET_LABEL)?.trim().parse().ok()?;
        let i: usize = t.labels.get(RUNG_LABEL)?.trim().parse().ok()?;
        if s >= self.brackets.len() || i > s {
            return None;
        }
        let v = t.assignment.get(&self.resource.name)?.as_f64()?;
        let b = self.budgets[s - i].as_f64()?;
        ((v - b).abs() <= BUDGET_TOLERANCE * b.abs().max(1.0)).then_some((s, i))
    }

    fn describe(&self, s: usize, i: usize) -> String {
        format!(
            "bracket {s} (of {}..0), rung {i} (of 0..{s}), {}={}",
            self.s_max(),
            self.resource.name,
            self.budgets[s - i]
        )
    }
}

/// `n(s) = ceil((s_max+1)·eta^s/(s+1))` for `s = 0..=s_max`, or `None` on overflow.
fn bracket_sizes(eta: u64, s_max: usize) -> Option<Vec<u64>> {
    let mut power = 1u64;
    let mut sizes = Vec::with_capacity(s_max + 1);
    for s in 0..=s_max {
        if s > 0 {
            power = power.checked_mul(eta)?;
        }
        let top = (s_max as u64 + 1).checked_mul(power)?;
        sizes.push(top.div_ceil(s as u64 + 1));
    }
    Some(sizes)
}

fn labelled(a: Assignment, s: usize, i: usize, parent: Option<&str>) -> Proposal {
    let mut p = Proposal::new(a);
    p.labels.insert(BRACKET_LABEL.to_string(), s.to_string());
    p.labels.insert(RUNG_LABEL.to_string(), i.to_string());
    if let Some(parent) = parent {
        p.labels
            .insert(PARENT_LABEL.to_string(), parent.to_string());
    }
    p
}

/// What one call knows while it walks the brackets.
struct Walk<'r, 'a, 'f> {
    req: &'r SuggestRequest<'a>,
    /// Where first-rung configurations come from (prior draws, or BOHB's model).
    fresh: &'f mut Fresh<'f>,
    rng: ChaCha8Rng,
    taken: Taken,
    /// Trial indices by (bracket, rung).
    rungs: BTreeMap<(usize, usize), Vec<usize>>,
    proposals: Vec<Proposal>,
}

impl Walk<'_, '_, '_> {
    fn room(&self) -> usize {
        self.req.count.saturating_sub(self.proposals.len())
    }

    fn loss(&self, t: &TrialRecord) -> Option<f64> {
        history::observed(self.req.objective, std::slice::from_ref(t))
            .first()
            .map(|(_, l)| *l)
    }
}

impl Hyperband {
    /// Walks bracket `s` from its first rung, adding what it can propose now to `walk`;
    /// returns the rung the bracket is busy at (proposing, or waiting for its trials), or
    /// `None` when the bracket is done.
    fn advance(&self, s: usize, walk: &mut Walk<'_, '_, '_>) -> Option<usize> {
        let trials = walk.req.trials;
        // Trial indices of the previous rung's usable trials, best first, and its size.
        let mut ranked: Vec<usize> = Vec::new();
        let mut previous_size = 0usize;
        for i in 0..=s {
            let members = walk.rungs.get(&(s, i)).cloned().unwrap_or_default();
            let budget = &self.budgets[s - i];
            let before = walk.proposals.len();
            let mut outstanding = false;
            if i == 0 {
                let missing = self.brackets[s].saturating_sub(members.len() as u64);
                if missing > 0 {
                    let want = missing.min(walk.room() as u64) as usize;
                    outstanding = want == 0;
                    let fresh = (walk.fresh)(budget, want, &mut walk.taken, &mut walk.rng);
                    walk.proposals
                        .extend(fresh.into_iter().map(|a| labelled(a, s, 0, None)));
                }
            } else {
                let keep = (previous_size / self.eta as usize).max(1).min(ranked.len());
                let promoted: HashSet<&str> = members
                    .iter()
                    .filter_map(|&m| trials[m].labels.get(PARENT_LABEL))
                    .map(String::as_str)
                    .collect();
                for &p in &ranked[..keep] {
                    let parent = &trials[p];
                    if promoted.contains(parent.name.as_str()) {
                        continue;
                    }
                    let Some(a) = self.resource.compose(walk.req.space, budget, |q| {
                        parent.assignment.get(&q.name).cloned()
                    }) else {
                        continue;
                    };
                    // Only possible when a later bracket redrew this configuration in a
                    // finite space: the result exists already, so nothing is re-run.
                    if walk.taken.full.contains(&a.key()) {
                        continue;
                    }
                    if walk.room() == 0 {
                        outstanding = true;
                        break;
                    }
                    walk.taken.insert(&self.resource, &a);
                    walk.proposals
                        .push(labelled(a, s, i, Some(parent.name.as_str())));
                }
            }
            if walk.proposals.len() > before || outstanding {
                return Some(i);
            }
            if members.iter().any(|&m| trials[m].state.is_active()) {
                return Some(i);
            }
            let mut scored: Vec<(f64, usize)> = members
                .iter()
                .filter_map(|&m| walk.loss(&trials[m]).map(|l| (l, m)))
                .collect();
            scored.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            ranked = scored.into_iter().map(|(_, m)| m).collect();
            previous_size = members.len();
            if ranked.is_empty() {
                // The whole rung failed: nothing to promote, so the bracket ends here.
                return None;
            }
        }
        None
    }
}

impl Suggester for Hyperband {
    fn name(&self) -> &str {
        &self.algorithm
    }

    /// With `r_l` below `eta` the schedule is one trial at the whole budget: valid, as in
    /// Katib (whose only bracket hands out one request's worth), but it ends the search after
    /// that trial and stops nothing early, which is what Hyperband is chosen for.
    /// A fractional `eta` runs as its integer part, where Katib's schedule computes with
    /// the fraction: the budgets differ, so it is said.
    fn notes(&self) -> Vec<String> {
        let eta = self.eta;
        let mut notes: Vec<String> = self
            .fractional_eta
            .iter()
            .map(|written| {
                format!(
                    "{}: setting eta: value {written:?} runs as {eta}, a whole number (as \
                     Katib's validation reads it; Katib's schedule computes with the fraction, \
                     so its budgets differ); hint: write eta as a whole number",
                    self.algorithm
                )
            })
            .collect();
        if self.budgets.len() == 1 {
            notes.push(format!(
                "{}: with r_l below eta ({eta}) the schedule has a single rung of one trial at \
                 the whole budget, so the experiment ends after that one trial; hint: set r_l \
                 to at least eta ({eta}) for successive halving to stop the worse \
                 configurations early (eta² and above give more rungs)",
                self.algorithm
            ));
        }
        notes
    }

    /// Brackets run side by side: while one waits for its rung, the next ones propose, so a
    /// caller gets as many proposals as it asks for until every bracket's first rung is out
    /// and only promotions of running rungs remain.
    fn suggest(&self, req: &SuggestRequest<'_>) -> Result<Suggestions, CoreError> {
        self.suggest_with(req, &mut |budget, want, taken, rng| {
            self.resource.fresh(req.space, budget, want, taken, rng)
        })
    }
}

/// Draws up to `want` new configurations at a first-rung budget, recording each in `taken`.
pub(crate) type Fresh<'a> =
    dyn FnMut(&ParamValue, usize, &mut Taken, &mut ChaCha8Rng) -> Vec<Assignment> + 'a;

impl Hyperband {
    /// The resource parameter's name.
    pub(crate) fn resource(&self) -> &Resource {
        &self.resource
    }

    /// The schedule's next proposals, with the first rung of each bracket filled by `fresh`
    /// (prior draws for `hyperband`, the model's for `bohb`).
    pub(crate) fn suggest_with(
        &self,
        req: &SuggestRequest<'_>,
        fresh: &mut Fresh<'_>,
    ) -> Result<Suggestions, CoreError> {
        self.resource.check_in(req.space, &self.algorithm)?;
        let mut rungs: BTreeMap<(usize, usize), Vec<usize>> = BTreeMap::new();
        // A trial killed by an interruption ran to no verdict: its place in the rung (a
        // configuration, or a promotion) is handed out again, as PBT re-queues its member.
        for (idx, t) in req.trials.iter().enumerate() {
            if !history::is_explored(t) {
                continue;
            }
            if let Some(pos) = self.position(t) {
                rungs.entry(pos).or_default().push(idx);
            }
        }
        let mut walk = Walk {
            req,
            rng: ChaCha8Rng::seed_from_u64(req.seed),
            taken: Taken::new(&self.resource, req.trials),
            rungs,
            fresh,
            proposals: Vec::new(),
        };
        let busy: Vec<String> = (0..=self.s_max())
            .rev()
            .filter_map(|s| self.advance(s, &mut walk).map(|i| self.describe(s, i)))
            .collect();
        let exhausted = busy.is_empty() && walk.proposals.is_empty();
        Ok(Suggestions {
            proposals: walk.proposals,
            state: Some(if busy.is_empty() {
                format!("all {} brackets done", self.brackets.len())
            } else {
                busy.join("; ")
            }),
            exhausted,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_params::pairs as settings;
    use proptest::prelude::*;
    use vernier_core::{Direction, Distribution, Domain, Parameter, TrialState};

    fn param(name: &str, domain: Domain, distribution: Distribution) -> Parameter {
        Parameter {
            name: name.into(),
            domain,
            distribution,
        }
    }

    fn epochs(min: i64, max: i64, step: Option<i64>) -> Domain {
        Domain::Int { min, max, step }
    }

    /// Every kind of parameter and distribution, plus the resource `epochs`.
    fn space_with(resource: Domain) -> SearchSpace {
        SearchSpace::new(vec![
            param(
                "lr",
                Domain::Double {
                    min: 1e-4,
                    max: 0.1,
                    step: None,
                },
                Distribution::LogUniform,
            ),
            param(
                "layers",
                Domain::Int {
                    min: 1,
                    max: 9,
                    step: Some(2),
                },
                Distribution::Normal,
            ),
            param("epochs", resource, Distribution::Uniform),
            param(
                "momentum",
                Domain::Double {
                    min: 0.5,
                    max: 0.95,
                    step: Some(0.05),
                },
                Distribution::LogNormal,
            ),
            param(
                "opt",
                Domain::Categorical {
                    values: vec!["sgd".into(), "adam".into()],
                },
                Distribution::Uniform,
            ),
            param(
                "batch",
                Domain::Discrete {
                    values: vec!["16".into(), "32".into(), "64".into()],
                },
                Distribution::Uniform,
            ),
        ])
        .unwrap()
    }

    fn hb(eta: &str, r_l: &str, space: &SearchSpace) -> Hyperband {
        Hyperband::new(
            "hyperband",
            &settings(&[("r_l", r_l), ("resource_name", "epochs"), ("eta", eta)]),
            space,
        )
        .unwrap()
    }

    fn build_err(pairs: &[(&str, &str)], space: &SearchSpace) -> String {
        let o = Objective::new("loss", Direction::Minimize);
        build("hyperband", &settings(pairs), space, &o)
            .unwrap_err()
            .to_string()
    }

    fn request<'a>(
        space: &'a SearchSpace,
        objective: &'a Objective,
        trials: &'a [TrialRecord],
        count: usize,
        seed: u64,
    ) -> SuggestRequest<'a> {
        SuggestRequest {
            space,
            objective,
            trials,
            count,
            seed,
            state: None,
        }
    }

    /// Hand-computed from `n = ceil((s_max+1)/(s+1)·eta^s)`, `n_{i+1} = max(1, floor(n_i/eta))`,
    /// `r_i = r_l·eta^(i−s)`; `table[s]` lists `(n_i, r_i)`.
    fn assert_schedule(h: &Hyperband, table: &[&[(u64, i64)]]) {
        assert_eq!(h.s_max() + 1, table.len());
        for (s, rungs) in table.iter().enumerate() {
            let want: Vec<(u64, ParamValue)> = rungs
                .iter()
                .map(|(n, r)| (*n, ParamValue::Int(*r)))
                .collect();
            assert_eq!(h.schedule(s), want, "bracket {s}");
        }
    }

    #[test]
    fn schedule_eta_3_r_l_81_is_li_et_al_table_1() {
        let h = hb("3", "81", &space_with(epochs(1, 81, None)));
        assert_schedule(
            &h,
            &[
                &[(5, 81)],
                &[(8, 27), (2, 81)],
                &[(15, 9), (5, 27), (1, 81)],
                &[(34, 3), (11, 9), (3, 27), (1, 81)],
                &[(81, 1), (27, 3), (9, 9), (3, 27), (1, 81)],
            ],
        );
    }

    #[test]
    fn nominal_trials_sum_every_rung() {
        // Li et al.'s table 1: 81+27+9+3+1, 34+11+3+1, 15+5+1, 8+2, 5.
        let h = hb("3", "81", &space_with(epochs(1, 81, None)));
        assert_eq!(h.nominal_trials(), 121 + 49 + 21 + 10 + 5);
        // eta 3, r_l 9: 9+3+1, 5+1, 3.
        let h = hb("3", "9", &space_with(epochs(1, 9, None)));
        assert_eq!(h.nominal_trials(), 22);
    }

    #[test]
    fn schedule_eta_2_r_l_8() {
        // s_max 3; n = ceil(4/(s+1)·2^s): 4, 4, 6 (5.33), 8.
        let h = hb("2", "8", &space_with(epochs(1, 8, None)));
        assert_schedule(
            &h,
            &[
                &[(4, 8)],
                &[(4, 4), (2, 8)],
                &[(6, 2), (3, 4), (1, 8)],
                &[(8, 1), (4, 2), (2, 4), (1, 8)],
            ],
        );
    }

    #[test]
    fn schedule_eta_3_r_l_9() {
        // s_max 2; n = ceil(3/(s+1)·3^s): 3, 5 (4.5), 9.
        let h = hb("3", "9", &space_with(epochs(1, 9, None)));
        assert_schedule(
            &h,
            &[&[(3, 9)], &[(5, 3), (1, 9)], &[(9, 1), (3, 3), (1, 9)]],
        );
    }

    #[test]
    fn budgets_round_like_katib_for_ints_and_stay_exact_for_doubles() {
        // r_l 10, eta 3: budgets 10/9, 10/3, 10; Katib's int() gives 1, 3, 10.
        let h = hb("3", "10", &space_with(epochs(1, 10, None)));
        let ints: Vec<ParamValue> = h.schedule(2).into_iter().map(|(_, r)| r).collect();
        assert_eq!(
            ints,
            vec![ParamValue::Int(1), ParamValue::Int(3), ParamValue::Int(10)]
        );
        let doubles = space_with(Domain::Double {
            min: 1.0,
            max: 10.0,
            step: None,
        });
        let h = hb("3", "10", &doubles);
        let got: Vec<ParamValue> = h.schedule(2).into_iter().map(|(_, r)| r).collect();
        assert_eq!(
            got,
            vec![
                ParamValue::Double(1.11111111111),
                ParamValue::Double(3.33333333333),
                ParamValue::Double(10.0)
            ]
        );
        // log_10(1000) is exactly 3 here (Katib's float division gives 2).
        let h = hb("10", "1000", &space_with(epochs(1, 1000, None)));
        assert_eq!(h.s_max(), 3);
        // r_l below eta: a single bracket of one rung at r_l.
        let h = hb("3", "2", &space_with(epochs(1, 2, None)));
        assert_eq!(h.schedule(0), vec![(1, ParamValue::Int(2))]);
    }

    /// A schedule of one rung stops nothing early: said, with the r_l that would.
    #[test]
    fn a_single_rung_schedule_is_noted() {
        let space = space_with(epochs(1, 81, None));
        // (eta, r_l, noted)
        for (eta, r_l, noted) in [("3", "2", true), ("3", "1", true), ("3", "3", false)] {
            let notes = hb(eta, r_l, &space).notes();
            assert_eq!(
                notes.len(),
                usize::from(noted),
                "eta {eta} r_l {r_l}: {notes:?}"
            );
        }
        let note = &hb("4", "3", &space).notes()[0];
        assert!(
            note.starts_with("hyperband: with r_l below eta (4) the schedule has a single rung")
                && note.contains("the experiment ends after that one trial")
                && note.contains("set r_l to at least eta (4)"),
            "{note}"
        );
    }

    /// A fractional eta runs truncated, where Katib's schedule keeps the fraction: said.
    #[test]
    fn a_fractional_eta_is_noted() {
        let space = space_with(epochs(1, 81, None));
        for (eta, noted) in [("3.7", true), ("3", false), ("3.0", false), ("0", false)] {
            let notes = hb(eta, "9", &space).notes();
            assert_eq!(notes.len(), usize::from(noted), "eta {eta}: {notes:?}");
        }
        let note = &hb("3.7", "9", &space).notes()[0];
        assert!(
            note.starts_with("hyperband: setting eta: value \"3.7\" runs as 3")
                && note.contains("hint: write eta as a whole number"),
            "{note}"
        );
    }

    #[test]
    fn eta_is_truncated_and_non_positive_means_three() {
        let space = space_with(epochs(1, 81, None));
        assert_eq!(hb("2.7", "81", &space).eta, 2);
        assert_eq!(hb("0", "81", &space).eta, 3);
        assert_eq!(hb("-2", "81", &space).eta, 3);
        let default = Hyperband::new(
            "hyperband",
            &settings(&[("r_l", "81"), ("resource_name", "epochs")]),
            &space,
        )
        .unwrap();
        assert_eq!((default.eta, default.s_max()), (3, 4));
    }

    #[test]
    fn settings_errors_name_the_setting_and_value() {
        let space = space_with(epochs(1, 81, None));
        let e = build_err(&[("resource_name", "epochs")], &space);
        assert!(e.contains("r_l and resource_name must be set."), "{e}");
        assert!(e.contains("setting r_l"), "{e}");
        let e = build_err(&[("r_l", "81")], &space);
        assert!(e.contains("r_l and resource_name must be set."), "{e}");
        assert!(e.contains("setting resource_name"), "{e}");
        for bad in ["abc", "-1", "0", "inf"] {
            let e = build_err(&[("r_l", bad), ("resource_name", "epochs")], &space);
            assert!(e.contains("setting r_l"), "{e}");
            assert!(e.contains(&format!("{bad:?}")), "{e}");
            assert!(e.contains("r_l must be a positive float number."), "{e}");
        }
        for bad in ["1", "1.9", "x"] {
            let e = build_err(
                &[("r_l", "81"), ("resource_name", "epochs"), ("eta", bad)],
                &space,
            );
            assert!(e.contains("setting eta"), "{e}");
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
        let e = build_err(&[("r_l", "81"), ("resource_name", "nope")], &space);
        assert!(
            e.contains("value of resource_name setting must be in parameters."),
            "{e}"
        );
        assert!(e.contains("\"nope\""), "{e}");
        let e = build_err(&[("r_l", "81"), ("resource_name", "opt")], &space);
        assert!(
            e.contains("must be an int, a double or a discrete list"),
            "{e}"
        );
        assert!(
            e.contains("hint: make \"opt\" a discrete list of the budgets, an int or a double"),
            "{e}"
        );
        // A discrete list holding every budget is a resource; one missing a budget is not.
        let budgets = |list: &[&str]| {
            SearchSpace::new(vec![Parameter {
                name: "ep".into(),
                domain: Domain::Discrete {
                    values: list.iter().map(|v| v.to_string()).collect(),
                },
                distribution: Distribution::Uniform,
            }])
            .unwrap()
        };
        let o = Objective::new("loss", Direction::Minimize);
        let pairs = settings(&[("r_l", "9"), ("resource_name", "ep")]);
        assert!(build("hyperband", &pairs, &budgets(&["1", "3", "9"]), &o).is_ok());
        let e = build_err(
            &[("r_l", "9"), ("resource_name", "ep")],
            &budgets(&["1", "9"]),
        );
        assert!(e.contains("3 is not in its list"), "{e}");
        let e = build_err(
            &[("r_l", "81"), ("resource_name", "epochs"), ("s_max", "4")],
            &space,
        );
        assert!(
            e.contains("unknown setting \"s_max\" for algorithm hyperband"),
            "{e}"
        );
        // Katib's Hyperband never reads random_state: any value runs.
        let o = Objective::new("loss", Direction::Minimize);
        for odd in ["-1", "abc"] {
            let given = [
                ("r_l", "81"),
                ("resource_name", "epochs"),
                ("random_state", odd),
            ];
            assert!(
                build("hyperband", &settings(&given), &space, &o).is_ok(),
                "{odd}"
            );
        }
        let e = build_err(
            &[("r_l", "1e30"), ("resource_name", "epochs"), ("eta", "2")],
            &space_with(epochs(1, i64::MAX, None)),
        );
        assert!(
            e.contains("setting r_l") && e.contains("first bracket"),
            "{e}"
        );
    }

    #[test]
    fn budgets_must_fit_the_resource_domain() {
        // Katib's example sets num-epochs to [1, 1] and lets Hyperband overwrite it; here the
        // space must hold every budget (1, 2, 4 for eta 2, r_l 4).
        let e = build_err(
            &[("r_l", "4"), ("resource_name", "epochs"), ("eta", "2")],
            &space_with(epochs(1, 2, None)),
        );
        assert!(e.contains("setting resource_name"), "{e}");
        assert!(e.contains("\"epochs\""), "{e}");
        assert!(e.contains("int parameter"), "{e}");
        assert!(e.contains("min 1, max 2"), "{e}");
        assert!(e.contains("[1, 4]"), "{e}");
        assert!(e.contains("hint:"), "{e}");
        // A minimum above the smallest budget.
        let e = build_err(
            &[("r_l", "81"), ("resource_name", "epochs")],
            &space_with(epochs(3, 81, None)),
        );
        assert!(e.contains("min 3, max 81") && e.contains("[1, 81]"), "{e}");
        // Budgets 1, 3, 9, 27, 81 are on the grid 1 + 2k but not on 1 + 4k.
        assert!(
            Hyperband::new(
                "hyperband",
                &settings(&[("r_l", "81"), ("resource_name", "epochs")]),
                &space_with(epochs(1, 81, Some(2))),
            )
            .is_ok()
        );
        let e = build_err(
            &[("r_l", "81"), ("resource_name", "epochs")],
            &space_with(epochs(1, 81, Some(4))),
        );
        assert!(e.contains("step 4") && e.contains("grid"), "{e}");
        // The range covers every budget: the hint names the step, not the range.
        assert!(
            e.contains("hint: remove the step of \"epochs\"") && !e.contains("widen"),
            "{e}"
        );
        // A double resource with a step takes budgets on its grid.
        let h = hb(
            "2",
            "4",
            &space_with(Domain::Double {
                min: 0.5,
                max: 4.0,
                step: Some(0.5),
            }),
        );
        assert_eq!(h.schedule(2)[0].1, ParamValue::Double(1.0));
    }

    fn from_proposal(name: String, p: Proposal) -> TrialRecord {
        TrialRecord {
            name,
            assignment: p.assignment,
            state: TrialState::Running,
            objective: None,
            labels: p.labels,
            metrics: BTreeMap::new(),
        }
    }

    fn num(a: &Assignment, name: &str) -> f64 {
        a.get(name).and_then(ParamValue::as_f64).unwrap()
    }

    #[test]
    fn seeded_proposals_are_exact() {
        let space = space_with(epochs(1, 9, None));
        let o = Objective::new("loss", Direction::Minimize);
        let h = hb("3", "9", &space);
        let s = h.suggest(&request(&space, &o, &[], 3, 42)).unwrap();
        let got = crate::test_params::texts(&s);
        assert_eq!(
            got,
            vec![
                "lr=0.011109348145191565, layers=7, epochs=1, momentum=0.65, opt=sgd, batch=32",
                "lr=0.0007341446485788689, layers=3, epochs=1, momentum=0.6, opt=sgd, batch=64",
                "lr=0.0205942671629762, layers=5, epochs=1, momentum=0.7, opt=sgd, batch=64",
            ]
        );
        for p in &s.proposals {
            assert_eq!(p.labels[BRACKET_LABEL], "2");
            assert_eq!(p.labels[RUNG_LABEL], "0");
            assert!(!p.labels.contains_key(PARENT_LABEL));
        }
        assert!(!s.exhausted);
        assert_eq!(
            s.state.as_deref(),
            Some(
                "bracket 2 (of 2..0), rung 0 (of 0..2), epochs=1; bracket 1 (of 2..0), rung 0 \
                 (of 0..1), epochs=3; bracket 0 (of 2..0), rung 0 (of 0..0), epochs=9"
            )
        );
    }

    /// Nine finished first-rung trials of bracket 2 (eta 3, r_l 9) whose objective is `lr`.
    fn first_rung(h: &Hyperband, space: &SearchSpace, o: &Objective) -> Vec<TrialRecord> {
        let s = h.suggest(&request(space, o, &[], 9, 1)).unwrap();
        assert_eq!(s.proposals.len(), 9);
        s.proposals
            .into_iter()
            .enumerate()
            .map(|(k, p)| {
                let mut t = from_proposal(format!("t{k}"), p);
                t.state = TrialState::Succeeded;
                t.objective = Some(num(&t.assignment, "lr"));
                t
            })
            .collect()
    }

    fn promotions(s: &Suggestions) -> Vec<&Proposal> {
        s.proposals
            .iter()
            .filter(|p| p.labels.contains_key(PARENT_LABEL))
            .collect()
    }

    fn promoted_lrs(s: &Suggestions, trials: &[TrialRecord]) -> Vec<f64> {
        promotions(s)
            .into_iter()
            .map(|p| {
                let parent = &p.labels[PARENT_LABEL];
                let t = trials.iter().find(|t| &t.name == parent).unwrap();
                assert_eq!(num(&p.assignment, "lr"), num(&t.assignment, "lr"));
                assert_eq!(p.assignment.get("epochs"), Some(&ParamValue::Int(3)));
                assert_eq!(p.labels[RUNG_LABEL], "1");
                num(&t.assignment, "lr")
            })
            .collect()
    }

    #[test]
    fn promotes_the_best_third_whichever_the_direction() {
        let space = space_with(epochs(1, 9, None));
        let h = hb("3", "9", &space);
        let mut lrs: Vec<f64> = Vec::new();
        for direction in [Direction::Minimize, Direction::Maximize] {
            let o = Objective::new("acc", direction);
            let trials = first_rung(&h, &space, &o);
            lrs = trials.iter().map(|t| num(&t.assignment, "lr")).collect();
            lrs.sort_by(f64::total_cmp);
            // Asked for 5: the 3 promotions, then bracket 1's first configurations.
            let s = h.suggest(&request(&space, &o, &trials, 5, 2)).unwrap();
            assert!(!s.exhausted);
            assert_eq!(s.proposals.len(), 5);
            assert!(
                s.proposals[3..]
                    .iter()
                    .all(|p| p.labels[BRACKET_LABEL] == "1")
            );
            let mut got = promoted_lrs(&s, &trials);
            got.sort_by(f64::total_cmp);
            let want = match direction {
                Direction::Minimize => lrs[..3].to_vec(),
                Direction::Maximize => lrs[6..].to_vec(),
            };
            assert_eq!(got, want, "{direction:?}");
        }
        assert!(lrs.len() == 9);
    }

    /// A promotion killed by an interruption is made again after the resume; a killed
    /// first-rung trial's place goes to a new configuration.
    #[test]
    fn a_killed_trials_place_in_its_rung_is_handed_out_again() {
        let space = space_with(epochs(1, 9, None));
        let o = Objective::new("loss", Direction::Minimize);
        let h = hb("3", "9", &space);
        let mut trials = first_rung(&h, &space, &o);
        let first = h.suggest(&request(&space, &o, &trials, 3, 3)).unwrap();
        let promoted = promotions(&first);
        assert_eq!(promoted.len(), 3);
        let parent = promoted[0].labels[PARENT_LABEL].clone();
        let mut killed = from_proposal("killed".into(), promoted[0].clone());
        killed.state = TrialState::Killed;
        trials.push(killed);
        let again = h.suggest(&request(&space, &o, &trials, 9, 3)).unwrap();
        let parents: Vec<&str> = promotions(&again)
            .into_iter()
            .map(|p| p.labels[PARENT_LABEL].as_str())
            .collect();
        assert!(
            parents.contains(&parent.as_str()),
            "{parents:?} lacks {parent}"
        );
        // The worst of the first rung, killed too: its place is refilled before any promotion.
        let worst = (0..9)
            .max_by(|a, b| {
                num(&trials[*a].assignment, "lr").total_cmp(&num(&trials[*b].assignment, "lr"))
            })
            .unwrap();
        trials[worst].state = TrialState::Killed;
        let again = h.suggest(&request(&space, &o, &trials, 9, 3)).unwrap();
        assert!(promotions(&again).is_empty());
        let refill = again
            .proposals
            .iter()
            .filter(|p| p.labels[BRACKET_LABEL] == "2" && p.labels[RUNG_LABEL] == "0")
            .count();
        assert_eq!(refill, 1);
    }

    #[test]
    fn failed_trials_are_never_promoted_and_a_failed_rung_ends_its_bracket() {
        let space = space_with(epochs(1, 9, None));
        let o = Objective::new("loss", Direction::Minimize);
        let h = hb("3", "9", &space);
        let mut trials = first_rung(&h, &space, &o);
        let mut order: Vec<usize> = (0..9).collect();
        order.sort_by(|a, b| {
            num(&trials[*a].assignment, "lr").total_cmp(&num(&trials[*b].assignment, "lr"))
        });
        // The two best fail outright, the third has no metric: promotion takes ranks 4-6.
        trials[order[0]].state = TrialState::Failed;
        trials[order[1]].state = TrialState::Failed;
        trials[order[2]].state = TrialState::MetricsUnavailable;
        let s = h.suggest(&request(&space, &o, &trials, 9, 3)).unwrap();
        let parents: Vec<&str> = promotions(&s)
            .into_iter()
            .map(|p| p.labels[PARENT_LABEL].as_str())
            .collect();
        let want: Vec<&str> = order[3..6]
            .iter()
            .map(|&k| trials[k].name.as_str())
            .collect();
        assert_eq!(parents, want);

        // The rest of the reply started bracket 1 (5 configurations at epochs 3) and
        // bracket 0 (1 of 3 at epochs 9), side by side.
        let started: Vec<(&str, &str)> = s.proposals[3..]
            .iter()
            .map(|p| {
                (
                    p.labels[BRACKET_LABEL].as_str(),
                    p.labels[RUNG_LABEL].as_str(),
                )
            })
            .collect();
        assert_eq!(
            started,
            [("1", "0"); 5]
                .into_iter()
                .chain([("0", "0")])
                .collect::<Vec<_>>()
        );

        // Every promotion fails, the others still run: bracket 2 ends; bracket 1 waits for
        // its rung; bracket 0 hands out its 2 remaining configurations at epochs 9.
        let n = trials.len();
        for (k, p) in s.proposals.into_iter().enumerate() {
            let mut t = from_proposal(format!("t{}", n + k), p);
            if t.labels.contains_key(PARENT_LABEL) {
                t.state = TrialState::Failed;
            }
            trials.push(t);
        }
        let s = h.suggest(&request(&space, &o, &trials, 9, 4)).unwrap();
        assert_eq!(s.proposals.len(), 2);
        for p in &s.proposals {
            assert_eq!(p.labels[BRACKET_LABEL], "0");
            assert_eq!(p.labels[RUNG_LABEL], "0");
            assert_eq!(p.assignment.get("epochs"), Some(&ParamValue::Int(9)));
        }
    }

    #[test]
    fn waits_for_running_trials_and_never_reproposes() {
        let space = space_with(epochs(1, 9, None));
        let o = Objective::new("loss", Direction::Minimize);
        let h = hb("3", "9", &space);
        let mut trials = first_rung(&h, &space, &o);
        trials[4].state = TrialState::Running;
        trials[4].objective = None;
        // Bracket 2's rung is fully proposed but one trial runs: it waits, and bracket 1
        // fills the request meanwhile.
        let s = h.suggest(&request(&space, &o, &trials, 4, 5)).unwrap();
        assert_eq!((s.proposals.len(), s.exhausted), (4, false));
        assert!(s.proposals.iter().all(|p| p.labels[BRACKET_LABEL] == "1"));
        trials[4].state = TrialState::Succeeded;
        trials[4].objective = Some(num(&trials[4].assignment, "lr"));
        // Two of the three promotions now, the third on the next call.
        let s = h.suggest(&request(&space, &o, &trials, 2, 6)).unwrap();
        assert_eq!(promotions(&s).len(), 2);
        let n = trials.len();
        trials.extend(
            s.proposals
                .into_iter()
                .enumerate()
                .map(|(k, p)| from_proposal(format!("t{}", n + k), p)),
        );
        let s = h.suggest(&request(&space, &o, &trials, 2, 7)).unwrap();
        assert_eq!(s.proposals.len(), 2);
        assert_eq!(s.proposals[1].labels[BRACKET_LABEL], "1");
        let keys = history::taken(&trials);
        assert!(!keys.contains(&s.proposals[0].assignment.key()));
        let parents: HashSet<&String> = trials
            .iter()
            .filter_map(|t| t.labels.get(PARENT_LABEL))
            .collect();
        assert!(!parents.contains(&s.proposals[0].labels[PARENT_LABEL]));
    }

    /// The toy objective: best near lr 0.01, layers 5, adam; more epochs always help.
    fn toy_loss(a: &Assignment) -> f64 {
        let or =
            |name: &str, default: f64| a.get(name).and_then(ParamValue::as_f64).unwrap_or(default);
        let opt = |c: &str| matches!(a.get("opt"), Some(ParamValue::Choice(v)) if v == c);
        (or("lr", 0.01).log10() + 2.0).powi(2)
            + 0.05 * (or("layers", 5.0) - 5.0).abs()
            + if opt("adam") {
                0.0
            } else if opt("sgd") {
                0.1
            } else {
                0.2
            }
            + 0.01 * or("momentum", 0.5)
            + 1.0 / num(a, "epochs")
    }

    struct Run {
        trials: Vec<TrialRecord>,
        /// Each call's history and reply, to replay after a "restart".
        calls: Vec<(Vec<TrialRecord>, usize, u64, Suggestions)>,
    }

    /// Drives the suggester as the local driver does: ask for the free slots, launch what
    /// comes back, let one running trial finish, repeat until `exhausted`.
    fn simulate(
        h: &Hyperband,
        space: &SearchSpace,
        o: &Objective,
        parallel: usize,
        seed: u64,
        mut trials: Vec<TrialRecord>,
        fails: impl Fn(usize) -> bool,
    ) -> Run {
        let mut calls = Vec::new();
        for step in 0..100_000usize {
            let active: Vec<usize> = (0..trials.len())
                .filter(|&k| trials[k].state.is_active())
                .collect();
            let count = parallel - active.len();
            if count > 0 {
                let call_seed = seed.wrapping_add(trials.len() as u64);
                let s = h
                    .suggest(&request(space, o, &trials, count, call_seed))
                    .unwrap();
                calls.push((trials.clone(), count, call_seed, s.clone()));
                assert!(s.proposals.len() <= count);
                if s.exhausted {
                    assert!(active.is_empty(), "exhausted while trials run");
                    assert!(s.proposals.is_empty());
                    return Run { trials, calls };
                }
                assert!(
                    !s.proposals.is_empty() || !active.is_empty(),
                    "zero proposals with nothing running would end the experiment"
                );
                let mut keys = history::taken(&trials);
                for p in s.proposals {
                    space.check(&p.assignment).unwrap();
                    assert!(keys.insert(p.assignment.key()), "{}", p.assignment);
                    let name = format!("t{}", trials.len());
                    trials.push(from_proposal(name, p));
                }
            }
            let active: Vec<usize> = (0..trials.len())
                .filter(|&k| trials[k].state.is_active())
                .collect();
            let k = active[(step * 7 + 3) % active.len()];
            let t = &mut trials[k];
            if fails(k) {
                t.state = TrialState::Failed;
            } else {
                t.state = TrialState::Succeeded;
                let loss = toy_loss(&t.assignment);
                t.objective = Some(match o.direction {
                    Direction::Minimize => loss,
                    Direction::Maximize => -loss,
                });
            }
        }
        panic!("the run did not end");
    }

    /// One line per rung: (bracket, rung, trials, failed, resource value).
    type Table = Vec<(usize, usize, usize, usize, String)>;

    /// Checks a finished run against the rules and returns the schedule it produced.
    fn check_run(h: &Hyperband, o: &Objective, trials: &[TrialRecord]) -> Table {
        let mut table = Table::new();
        for s in (0..=h.s_max()).rev() {
            // Brackets run side by side; within one, each rung follows the previous one.
            let mut last_index = 0;
            let mut previous: Vec<usize> = Vec::new();
            for i in 0..=s {
                // A killed trial's place was handed out again.
                let members: Vec<usize> = (0..trials.len())
                    .filter(|&k| trials[k].state != TrialState::Killed)
                    .filter(|&k| h.position(&trials[k]) == Some((s, i)))
                    .collect();
                if i == 0 {
                    assert_eq!(members.len() as u64, h.brackets[s], "bracket {s} rung 0");
                } else {
                    let mut usable: Vec<(f64, usize)> = previous
                        .iter()
                        .filter_map(|&k| {
                            trials[k]
                                .usable_objective()
                                .map(|v| (o.direction.to_loss(v), k))
                        })
                        .collect();
                    usable.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                    let keep = (previous.len() / h.eta as usize).max(1).min(usable.len());
                    let want: Vec<&str> = usable[..keep]
                        .iter()
                        .map(|(_, k)| trials[*k].name.as_str())
                        .collect();
                    let got: Vec<&str> = members
                        .iter()
                        .map(|&k| trials[k].labels[PARENT_LABEL].as_str())
                        .collect();
                    let mut sorted = got.clone();
                    sorted.sort();
                    let mut want_sorted = want.clone();
                    want_sorted.sort();
                    assert_eq!(
                        sorted, want_sorted,
                        "bracket {s} rung {i} promotes the best"
                    );
                    for &k in &members {
                        let parent = trials
                            .iter()
                            .find(|t| t.name == trials[k].labels[PARENT_LABEL])
                            .unwrap();
                        assert_eq!(
                            h.resource.sub_key(&parent.assignment),
                            h.resource.sub_key(&trials[k].assignment)
                        );
                    }
                }
                for &k in &members {
                    assert!(k >= last_index, "bracket {s}: rungs run in order");
                    assert_eq!(trials[k].assignment.get("epochs"), Some(&h.budgets[s - i]));
                }
                last_index = members.iter().copied().max().unwrap_or(last_index);
                let failed = members
                    .iter()
                    .filter(|&&k| trials[k].usable_objective().is_none())
                    .count();
                if !members.is_empty() {
                    table.push((s, i, members.len(), failed, h.budgets[s - i].to_string()));
                }
                if members.len() == failed {
                    break;
                }
                previous = members;
            }
        }
        assert!(trials.iter().all(|t| t.state.is_terminal()));
        assert!(trials.iter().all(|t| h.position(t).is_some()));
        table
    }

    #[test]
    fn simulation_runs_every_bracket_and_promotes_the_best() {
        let space = space_with(epochs(1, 81, None));
        let h = hb("3", "81", &space);
        let mut tables = Vec::new();
        for direction in [Direction::Minimize, Direction::Maximize] {
            let o = Objective::new("loss", direction);
            let run = simulate(&h, &space, &o, 5, 11, Vec::new(), |k| k % 7 == 3);
            let table = check_run(&h, &o, &run.trials);
            let brackets: HashSet<usize> = table.iter().map(|r| r.0).collect();
            assert_eq!(brackets.len(), 5, "every bracket runs");
            // A Katib controller refuses short replies: every call is answered in full while
            // some bracket's first rung is not handed out.
            for (trials, count, _, reply) in &run.calls {
                let first_rungs_left: u64 = (0..=h.s_max())
                    .map(|s| {
                        let n = trials
                            .iter()
                            .filter(|t| h.position(t) == Some((s, 0)))
                            .count();
                        h.brackets[s] - n as u64
                    })
                    .sum();
                if first_rungs_left >= *count as u64 {
                    assert_eq!(reply.proposals.len(), *count, "{:?}", reply.state);
                }
            }
            eprintln!(
                "{direction:?}: {} trials in {} calls",
                run.trials.len(),
                run.calls.len()
            );
            for (s, i, n, failed, r) in &table {
                eprintln!("bracket {s} rung {i}: {n} trials ({failed} failed) at epochs={r}");
            }
            tables.push((table, run.trials));
        }
        // Maximising -loss makes the same decisions as minimising loss.
        let (a, b) = (&tables[0], &tables[1]);
        assert_eq!(a.0, b.0);
        let assignments = |t: &[TrialRecord]| -> Vec<Assignment> {
            t.iter().map(|t| t.assignment.clone()).collect()
        };
        assert_eq!(assignments(&a.1), assignments(&b.1));
    }

    #[test]
    fn restart_mid_bracket_continues_the_schedule() {
        let space = space_with(epochs(1, 27, None));
        let o = Objective::new("loss", Direction::Minimize);
        let h = hb("3", "27", &space);
        let fails = |k: usize| k % 5 == 3;
        let full = simulate(&h, &space, &o, 4, 7, Vec::new(), fails);
        check_run(&h, &o, &full.trials);

        // A restart with the same history and seed continues exactly as the uninterrupted run
        // (which also shows every call is deterministic).
        for (trials, count, seed, reply) in &full.calls {
            let again = h
                .suggest(&request(&space, &o, trials, *count, *seed))
                .unwrap();
            assert_eq!(&again, reply);
        }

        // A crash kills whatever ran: first while bracket 3's first rung is being filled,
        // then while its second rung (the promotions) is.
        for rung in [0usize, 1] {
            let (snapshot, ..) = full
                .calls
                .iter()
                .find(|(trials, ..)| {
                    let members = trials
                        .iter()
                        .filter(|t| h.position(t) == Some((3, rung)))
                        .count();
                    members >= 4 && trials.iter().filter(|t| t.state.is_active()).count() >= 2
                })
                .unwrap();
            let mut trials = snapshot.clone();
            let mut killed = Vec::new();
            for t in trials.iter_mut().filter(|t| t.state.is_active()) {
                t.state = TrialState::Killed;
                killed.push(t.name.clone());
            }
            let members = trials
                .iter()
                .filter(|t| h.position(t) == Some((3, rung)))
                .count();
            // The first call after the restart goes on filling the same rung.
            let s = h.suggest(&request(&space, &o, &trials, 4, 99)).unwrap();
            assert!(!s.proposals.is_empty());
            for p in &s.proposals {
                assert_eq!(p.labels[BRACKET_LABEL], "3");
                assert_eq!(p.labels[RUNG_LABEL], rung.to_string());
            }
            if rung == 0 {
                assert_eq!(s.proposals.len(), 4.min(27 - members));
            }
            let resumed = simulate(&h, &space, &o, 4, 99, trials, fails);
            let table = check_run(&h, &o, &resumed.trials);
            assert_eq!(table.iter().map(|r| r.0).collect::<HashSet<_>>().len(), 4);
            for t in &resumed.trials {
                if let Some(parent) = t.labels.get(PARENT_LABEL) {
                    assert!(!killed.contains(parent), "killed {parent} was promoted");
                }
            }
        }
    }

    #[test]
    fn a_small_finite_space_runs_out_gracefully() {
        let space = SearchSpace::new(vec![
            param(
                "opt",
                Domain::Categorical {
                    values: vec!["a".into(), "b".into(), "c".into()],
                },
                Distribution::Uniform,
            ),
            param("epochs", epochs(1, 9, None), Distribution::Uniform),
        ])
        .unwrap();
        let o = Objective::new("loss", Direction::Minimize);
        let h = hb("3", "9", &space);
        let run = simulate(&h, &space, &o, 3, 5, Vec::new(), |_| false);
        let per_bracket = |s: &str| {
            run.trials
                .iter()
                .filter(|t| t.labels[BRACKET_LABEL] == s && t.labels[RUNG_LABEL] == "0")
                .count()
        };
        // Bracket 2 wanted 9 configurations but the space has 3; later brackets reuse them at
        // their own budgets; 3 choices times 3 budgets bound the whole run.
        assert_eq!(per_bracket("2"), 3);
        assert!(per_bracket("1") <= 3 && per_bracket("0") <= 3);
        assert!(run.trials.len() <= 9, "{}", run.trials.len());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn runs_stay_in_space_distinct_and_deterministic(
            seed in any::<u64>(),
            parallel in 1usize..7,
            fail_mod in 2usize..9,
            maximize in any::<bool>(),
        ) {
            let space = space_with(epochs(1, 9, None));
            let direction = if maximize { Direction::Maximize } else { Direction::Minimize };
            let o = Objective::new("loss", direction);
            let h = hb("3", "9", &space);
            // `simulate` asserts space, distinctness and no premature end.
            let run = simulate(&h, &space, &o, parallel, seed, Vec::new(), |k| k % fail_mod == 1);
            check_run(&h, &o, &run.trials);
            for (trials, count, call_seed, reply) in &run.calls {
                let again = h.suggest(&request(&space, &o, trials, *count, *call_seed)).unwrap();
                prop_assert_eq!(&again, reply);
            }
            prop_assert!(run.calls.last().is_some_and(|c| c.3.exhausted));
        }
    }
}
