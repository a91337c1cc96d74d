//! Bayesian optimisation with a Gaussian-process surrogate (`bayesianoptimization`), the
//! Katib algorithm served by scikit-optimize, implemented natively.
//!
//! Each call fits a GP with a Matérn 5/2 ARD kernel to the finished trials (MAP
//! hyperparameters by L-BFGS on the log marginal likelihood, Rasmussen & Williams 2006,
//! "Gaussian Processes for Machine Learning", ch. 2 and 5) and proposes the maximiser of an
//! acquisition function (Jones et al. 1998 "Efficient global optimization of expensive
//! black-box functions"; log-EI of Ament et al. 2023; GP-UCB of Srinivas et al. 2010; the
//! GP-Hedge portfolio of Hoffman, Brochu & de Freitas 2011, "Portfolio allocation for Bayesian
//! optimization"). The design follows Optuna's GPSampler in spirit (priors, log-EI, many
//! candidates plus local search); no state is kept between calls, so the model is rebuilt from
//! the history each time and every result is a function of the request and its seed.
//!
//! Search space: doubles and ints are coordinates in `[0, 1]` (on the log scale for
//! logUniform/logNormal, so the declared distribution is respected, unlike Katib's skopt
//! service which treats every double as log-uniform); ints and steps are optimised in the
//! continuous relaxation and rounded to their grid by `encode::from_unit`; discrete (numeric
//! list) values are one ordered coordinate; categoricals are one-hot, each choice a coordinate,
//! and keep their sampled choice during local search. Normal/logNormal priors matter only for
//! the initial random trials, which are drawn from the priors (or, with
//! `initial_point_generator: sobol`, from the `sobol` algorithm's sequence: [`InitialDesign`]).
//!
//! Outputs: losses (`history::observed`, so maximisation is negated) are log-warped —
//! `ln(1 + (y − min)/q)` with `q` the distance from the minimum to the median — when they are
//! heavy-tailed, then standardised. The warp is monotone, so the incumbent is unchanged, and it
//! keeps a few huge values (Rosenbrock-like objectives) from flattening the model near the
//! optimum.
//!
//! Several objectives use ParEGO (Knowles 2006, "ParEGO: a hybrid algorithm with on-line
//! landscape approximation for expensive multiobjective optimization problems", IEEE TEVC
//! 10(1)): each proposal draws a weight vector uniformly from the simplex, normalises every
//! objective's losses to `[0, 1]` over the observed trials, and models the augmented
//! Chebyshev scalarisation `max_i(λ_i f_i) + 0.05 Σ_i λ_i f_i` with the same GP. A batch
//! draws one weight vector per proposal, earlier proposals of the batch joining as pending.
//! Constraints use constrained expected improvement (see `feasibility`): the acquisition is
//! log-EI plus each constraint's log probability of feasibility, whatever `acq_func` says,
//! with the best feasible trial as the incumbent; infeasible trials still inform the model of
//! the objective.
//!
//! Batches and pending trials use the kriging believer heuristic (Ginsbourger et al. 2010):
//! each created/running trial and each proposal already made in the batch is added to the data
//! with the posterior mean as its value (growing the Cholesky factor by a row, not refactoring),
//! then the acquisition is maximised again. The work of one request is bounded whatever it
//! carries: the model conditions on at most [`MODEL_MAX_POINTS`] observed trials and the latest
//! [`MAX_PENDING_BELIEVERS`] running ones, the first [`MAX_MODEL_PROPOSALS`] proposals of a
//! batch come from the model and any more from the priors, and an enumerated space scores a
//! sample of its points once the model is large.

mod acquisition;
mod feasibility;
mod features;
mod forest;
mod kernel;
mod model;
mod optimize;
mod taken;
#[cfg(test)]
mod tests;
mod tree;
mod tree_search;

use crate::error::AlgorithmError;
use crate::history;
use crate::initial_design::InitialDesign;
use crate::random::{RandomSearch, point_at};
use crate::sample::sample_assignment;
use crate::settings::Settings;
use acquisition::{Acq, AcqParams};
use feasibility::Feasibility;
use features::Features;
use forest::TreeKind;
use model::{FitBudget, Posterior};
use optimize::{Candidate, SearchBudget};
use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashSet;
use taken::Taken;
use tree_search::TreeOptimizer;
use vernier_core::{
    Assignment, Cancel, CoreError, Objective, Proposal, SearchSpace, SuggestRequest, Suggester,
    Suggestions,
};

const NAME: &str = "bayesianoptimization";
const SETTINGS: &[&str] = &[
    "base_estimator",
    "n_initial_points",
    "acq_func",
    "acq_optimizer",
    "random_state",
    crate::initial_design::SETTING,
];
const DEFAULT_INITIAL_POINTS: usize = 10;
/// skopt's exploration weight for LCB.
const KAPPA: f64 = 1.96;
/// Improvement margin of EI and PI in standardised units: skopt's 0.01 kept Branin from
/// converging finely (median regret 6e-3 against 9e-5 without it), so none.
const XI: f64 = 0.0;
/// The hyperparameters are fitted on at most this many points; the posterior uses them all.
const FIT_MAX_POINTS: usize = 80;
/// Finite spaces up to this size are scored point by point instead of searched.
const ENUMERATE_LIMIT: u128 = 4096;
/// Redraws of a random fallback before a duplicate is accepted.
const MAX_REDRAWS: usize = 100;

/// The acquisition setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AcqFunc {
    Single(Acq),
    /// GP-Hedge over EI, PI and LCB.
    Hedge,
}

/// Bayesian optimisation with a Gaussian process (`bayesianoptimization`).
#[derive(Debug, Clone)]
pub(crate) struct GpOptimizer {
    n_initial: usize,
    acq: AcqFunc,
    /// False for `acq_optimizer: sampling` (candidates only, no L-BFGS refinement).
    local_search: bool,
    /// How the initial trials are chosen.
    initial: InitialDesign,
}

pub(crate) fn build(
    name: &str,
    settings: &[(String, String)],
    space: &SearchSpace,
    objective: &Objective,
) -> Result<Box<dyn Suggester>, AlgorithmError> {
    let _ = space;
    let s = Settings::new(name, settings, SETTINGS)?;
    const WHERE: &str = " in Bayesian optimization";
    let trees = s
        .one_of(
            "base_estimator",
            &[
                ("GP", None),
                ("RF", Some(TreeKind::RandomForest)),
                ("ET", Some(TreeKind::ExtraTrees)),
                ("GBRT", Some(TreeKind::Boosted)),
            ],
            WHERE,
        )?
        .flatten();
    let acq = s
        .one_of(
            "acq_func",
            &[
                ("gp_hedge", AcqFunc::Hedge),
                ("EI", AcqFunc::Single(Acq::Ei)),
                ("PI", AcqFunc::Single(Acq::Pi)),
                ("LCB", AcqFunc::Single(Acq::Lcb)),
                ("UCB", AcqFunc::Single(Acq::Lcb)),
                ("EIps", AcqFunc::Single(Acq::Ei)),
                ("PIps", AcqFunc::Single(Acq::Pi)),
            ],
            WHERE,
        )?
        .unwrap_or(AcqFunc::Hedge);
    let local_search = s
        .one_of(
            "acq_optimizer",
            &[("auto", true), ("sampling", false), ("lbfgs", true)],
            WHERE,
        )?
        .unwrap_or(true);
    let n_initial = s
        .get::<i64>("n_initial_points", |v| v >= 0, "an integer >= 0")?
        .map_or(DEFAULT_INITIAL_POINTS, |v| v as usize);
    let initial = InitialDesign::from_settings(&s)?;
    if let Some(kind) = trees {
        refuse_with_trees(&s, objective)?;
        return Ok(Box::new(TreeOptimizer {
            kind,
            n_initial,
            acq,
            initial,
        }));
    }
    Ok(Box::new(GpOptimizer {
        n_initial,
        acq,
        local_search,
        initial,
    }))
}

/// What a tree surrogate cannot run: gradient search of its piecewise-constant acquisition
/// (scikit-optimize raises on it), and the GP's extensions for several objectives and
/// constraints.
fn refuse_with_trees(s: &Settings, objective: &Objective) -> Result<(), AlgorithmError> {
    let estimator = s.raw("base_estimator").unwrap_or_default();
    if let Some(v) = s.raw("acq_optimizer")
        && v.eq_ignore_ascii_case("lbfgs")
    {
        return Err(s.invalid(
            "acq_optimizer",
            v,
            format!(
                "cannot search the acquisition of base_estimator {estimator}, which is \
                 piecewise constant\nhint: use acq_optimizer sampling (or auto), or \
                 base_estimator GP"
            ),
        ));
    }
    let unsupported = if objective.is_multi() {
        Some("several objectives")
    } else if !objective.constraints.is_empty() {
        Some("constraints")
    } else {
        None
    };
    match unsupported {
        Some(what) => Err(s.invalid(
            "base_estimator",
            estimator,
            format!(
                "does not search {what}; only the Gaussian process does\nhint: use \
                 base_estimator GP (the default)"
            ),
        )),
        None => Ok(()),
    }
}

impl GpOptimizer {
    #[cfg(test)]
    fn with(n_initial: usize, acq: AcqFunc) -> Self {
        GpOptimizer {
            n_initial,
            acq,
            local_search: true,
            initial: InitialDesign::Random,
        }
    }
}

impl Suggester for GpOptimizer {
    fn name(&self) -> &str {
        NAME
    }

    fn suggest(&self, req: &SuggestRequest<'_>) -> Result<Suggestions, CoreError> {
        self.suggest_cancellable(req, &Cancel::new())
    }

    fn suggest_cancellable(
        &self,
        req: &SuggestRequest<'_>,
        cancel: &Cancel,
    ) -> Result<Suggestions, CoreError> {
        if req.objective.is_multi() {
            return self.suggest_parego(req, cancel);
        }
        let violations = history::observed_violations(req.objective, req.trials);
        self.suggest_scalar(
            req,
            history::observed(req.objective, req.trials),
            violations,
            cancel,
        )
    }
}

/// ParEGO's augmentation weight (Knowles 2006).
const PAREGO_RHO: f64 = 0.05;

impl GpOptimizer {
    /// One proposal per weight vector; earlier proposals of the batch are pending trials.
    fn suggest_parego(
        &self,
        req: &SuggestRequest<'_>,
        cancel: &Cancel,
    ) -> Result<Suggestions, CoreError> {
        let mut rng = ChaCha8Rng::seed_from_u64(req.seed ^ 0x9e37_79b9_7f4a_7c15);
        let mut trials: Vec<vernier_core::TrialRecord> = req.trials.to_vec();
        let mut out = Suggestions::default();
        for i in 0..req.count {
            if i >= MAX_MODEL_PROPOSALS {
                rest_from_priors(req, &trials, rng.random(), &mut out)?;
                break;
            }
            let (observed, violations) = parego_losses(req.objective, &trials, &mut rng);
            let sub = SuggestRequest {
                trials: &trials,
                count: 1,
                seed: rng.random(),
                ..*req
            };
            let mut one = self.suggest_scalar(&sub, observed, violations, cancel)?;
            let Some(p) = one.proposals.pop() else {
                out.exhausted = one.exhausted;
                break;
            };
            trials.push(proposed(&p));
            out.proposals.push(p);
        }
        Ok(out)
    }

    /// One batch for a single loss (the objective, or ParEGO's scalarisation of several).
    fn suggest_scalar(
        &self,
        req: &SuggestRequest<'_>,
        observed: Vec<(&Assignment, f64)>,
        violations: Vec<f64>,
        cancel: &Cancel,
    ) -> Result<Suggestions, CoreError> {
        cancel.check(self.name())?;
        // A GP needs two distinct values to say anything; until then, and during the
        // initial design, sample the priors.
        if observed.len() < self.n_initial.max(2) {
            return self.initial.suggest(req);
        }
        let (observed, violations) = cap_history(observed, violations, req.seed);
        let mut rng = ChaCha8Rng::seed_from_u64(req.seed);
        let Some(mut model) = self.fit(req, &observed, &violations, &mut rng, cancel)? else {
            return RandomSearch::new().suggest(req);
        };
        let pending = history::pending(req.trials);
        for a in &pending[pending.len().saturating_sub(MAX_PENDING_BELIEVERS)..] {
            model.believe(&model.features.encode(req.space, a));
        }
        let mut taken = Taken::of(req.space, &model.features, req.trials);
        let mut unused = unused_points(req.space, taken.keys());
        self.propose(req, &mut model, &mut taken, &mut unused, &mut rng, cancel)
    }

    /// The GP (and the constraints' feasibility model) fitted to the observed losses; `None`
    /// when the kernel matrix cannot be factored.
    fn fit(
        &self,
        req: &SuggestRequest<'_>,
        observed: &[(&Assignment, f64)],
        violations: &[f64],
        rng: &mut ChaCha8Rng,
        cancel: &Cancel,
    ) -> Result<Option<Surrogate>, CoreError> {
        let features = Features::new(req.space);
        let d = features.dim();
        let n = observed.len();
        let mut x: Vec<f64> = Vec::with_capacity(n * d);
        for (a, _) in observed {
            x.extend(features.encode(req.space, a));
        }
        let losses: Vec<f64> = observed.iter().map(|(_, l)| *l).collect();
        let y = transform(&losses);
        let best = y
            .iter()
            .zip(violations)
            .filter(|(_, v)| **v == 0.0)
            .map(|(y, _)| *y)
            .fold(f64::INFINITY, f64::min);
        let feas = feasibility_model(req, &features, best.is_finite(), rng);
        let hyper = fit_hyper(&x, n, d, &y, rng);
        cancel.check(self.name())?;
        let anchors = best_points(&x, d, &losses);
        let Some(post) = Posterior::new(x, d, &y, hyper) else {
            return Ok(None);
        };
        // Without a feasible incumbent EI has no reference; feasibility alone decides then.
        let best = if best.is_finite() { best } else { 0.0 };
        let params = AcqParams {
            best,
            xi: XI,
            kappa: KAPPA,
        };
        Ok(Some(Surrogate {
            features,
            post,
            params,
            feas,
            anchors,
        }))
    }

    /// Up to `req.count` proposals, each believed at its predicted mean before the next.
    fn propose(
        &self,
        req: &SuggestRequest<'_>,
        model: &mut Surrogate,
        taken: &mut Taken,
        unused: &mut Option<Vec<Assignment>>,
        rng: &mut ChaCha8Rng,
        cancel: &Cancel,
    ) -> Result<Suggestions, CoreError> {
        let mut out = Suggestions::default();
        let budget = search_budget(model.post.len(), self.local_search);
        for i in 0..req.count {
            // Each proposal searches the acquisition: the unit of work between polls.
            cancel.check(self.name())?;
            if i >= MAX_MODEL_PROPOSALS {
                let mut trials = req.trials.to_vec();
                trials.extend(out.proposals.iter().map(proposed));
                rest_from_priors(req, &trials, rng.random(), &mut out)?;
                return Ok(out);
            }
            let pick = match unused.as_mut() {
                Some(points) => self.pick_finite(req.space, model, points, rng),
                None => self.pick_continuous(req.space, model, budget, taken, rng),
            };
            let Some(a) = pick.or_else(|| {
                unused
                    .is_none()
                    .then(|| random_unseen(req.space, taken.keys(), rng))
            }) else {
                out.exhausted = true;
                break;
            };
            taken.insert(req.space, &model.features, &a);
            let xa = model.features.encode(req.space, &a);
            out.proposals.push(Proposal::new(a));
            if out.proposals.len() < req.count.min(MAX_MODEL_PROPOSALS) {
                model.believe(&xa);
            }
        }
        if unused.as_ref().is_some_and(Vec::is_empty) {
            out.exhausted = true;
        }
        Ok(out)
    }
}

/// The fitted model one batch of proposals searches, and where its local searches start.
struct Surrogate {
    features: Features,
    post: Posterior,
    params: AcqParams,
    feas: Option<Feasibility>,
    /// The best observed points, in feature space.
    anchors: Vec<Vec<f64>>,
}

impl Surrogate {
    /// Conditions the GP on a point pending or just proposed, at its predicted mean (the
    /// kriging believer), so the next proposal goes elsewhere.
    fn believe(&mut self, x: &[f64]) {
        let (mu, _) = self.post.predict(x);
        self.post.append(x, mu);
    }
}

/// The probability-of-feasibility model of the experiment's constraints, if it has any.
fn feasibility_model(
    req: &SuggestRequest<'_>,
    features: &Features,
    has_feasible: bool,
    rng: &mut ChaCha8Rng,
) -> Option<Feasibility> {
    let constraints = &req.objective.constraints;
    if constraints.is_empty() {
        return None;
    }
    let rows: Vec<(Vec<f64>, Vec<Option<f64>>)> = req
        .trials
        .iter()
        .filter(|t| t.usable_objective().is_some())
        .map(|t| {
            let slack = constraints
                .iter()
                .map(|c| t.metric(req.objective, &c.metric).map(|v| c.slack(v)))
                .collect();
            (features.encode(req.space, &t.assignment), slack)
        })
        .collect();
    let d = features.dim();
    Some(Feasibility::fit(
        &rows,
        d,
        constraints.len(),
        has_feasible,
        rng,
    ))
}

/// The [`ANCHORS`] observed points of lowest loss: good points seed local candidates.
fn best_points(x: &[f64], d: usize, losses: &[f64]) -> Vec<Vec<f64>> {
    let mut by_loss: Vec<usize> = (0..losses.len()).collect();
    by_loss.sort_by(|a, b| losses[*a].total_cmp(&losses[*b]));
    by_loss
        .iter()
        .take(ANCHORS)
        .map(|i| x[i * d..(i + 1) * d].to_vec())
        .collect()
}

/// Every point of a space small enough to enumerate that has not been tried yet; `None` for
/// a space searched continuously.
fn unused_points(space: &SearchSpace, taken: &HashSet<String>) -> Option<Vec<Assignment>> {
    space
        .cardinality()
        .filter(|c| *c <= ENUMERATE_LIMIT)
        .map(|c| {
            (0..c)
                .filter_map(|i| point_at(space, i))
                .filter(|a| !taken.contains(&a.key()))
                .collect()
        })
}

/// The augmented Chebyshev scalarisation of every finished trial with all objectives, for a
/// weight vector drawn uniformly from the simplex.
#[allow(clippy::type_complexity)]
fn parego_losses<'a, R: Rng + ?Sized>(
    objective: &Objective,
    trials: &'a [vernier_core::TrialRecord],
    rng: &mut R,
) -> (Vec<(&'a Assignment, f64)>, Vec<f64>) {
    // Only trials that the scalar path counts as observed, so the constraint models and the
    // violations stay aligned with these rows.
    let usable: Vec<&vernier_core::TrialRecord> = trials
        .iter()
        .filter(|t| t.usable_objective().is_some() && t.usable_losses(objective).is_some())
        .collect();
    let violations: Vec<f64> = usable.iter().map(|t| t.violation(objective)).collect();
    let rows: Vec<(&Assignment, Vec<f64>)> = usable
        .iter()
        .filter_map(|t| Some((&t.assignment, t.usable_losses(objective)?)))
        .collect();
    let m = objective.objectives.len();
    let exp: Vec<f64> = (0..m).map(|_| -(1.0 - rng.random::<f64>()).ln()).collect();
    let total: f64 = exp.iter().sum();
    let weights: Vec<f64> = exp.iter().map(|e| e / total).collect();
    let lo: Vec<f64> = (0..m)
        .map(|k| rows.iter().map(|r| r.1[k]).fold(f64::INFINITY, f64::min))
        .collect();
    let hi: Vec<f64> = (0..m)
        .map(|k| {
            rows.iter()
                .map(|r| r.1[k])
                .fold(f64::NEG_INFINITY, f64::max)
        })
        .collect();
    let scalar = rows
        .into_iter()
        .map(|(a, l)| {
            let f: Vec<f64> = (0..m)
                .map(|k| {
                    let span = hi[k] - lo[k];
                    if span > 0.0 {
                        (l[k] - lo[k]) / span
                    } else {
                        0.0
                    }
                })
                .collect();
            let worst = f
                .iter()
                .zip(&weights)
                .map(|(v, w)| v * w)
                .fold(f64::NEG_INFINITY, f64::max);
            let sum: f64 = f.iter().zip(&weights).map(|(v, w)| v * w).sum();
            (a, worst + PAREGO_RHO * sum)
        })
        .collect();
    (scalar, violations)
}

/// Running trials the model believes (the latest ones); the rest only count as taken. With
/// [`MODEL_MAX_POINTS`] and [`MAX_MODEL_PROPOSALS`] this bounds the posterior's size, and so
/// the work of one request, whatever it carries.
pub const MAX_PENDING_BELIEVERS: usize = 64;
/// Proposals of one request chosen by the model, each a kriging believer for the next; the
/// rest of a larger batch are drawn from the priors. A believer adds no information about the
/// objective, so by then the batch is exploring anyway, and each model-based proposal costs an
/// acquisition search over the whole posterior (about 0.2 s at 1,000 trials).
pub const MAX_MODEL_PROPOSALS: usize = 64;

/// Observed points used as centres of local candidates.
const ANCHORS: usize = 5;
/// Sharpness of GP-Hedge's choice (skopt's `eta`).
const HEDGE_ETA: f64 = 1.0;

impl GpOptimizer {
    fn acqs(&self, feas: Option<&Feasibility>) -> Vec<Acq> {
        if feas.is_some() {
            return vec![Acq::Ei];
        }
        match self.acq {
            AcqFunc::Single(a) => vec![a],
            AcqFunc::Hedge => vec![Acq::Ei, Acq::Pi, Acq::Lcb],
        }
    }

    /// Chooses among the nominees of the portfolio: GP-Hedge rewards each acquisition by the
    /// (negated) posterior mean at its nominee. Without state across calls the gains cannot be
    /// accumulated, so each call uses this one-step gain and draws with the request's seed.
    fn choose<R: Rng + ?Sized>(
        &self,
        post: &Posterior,
        nominees: Vec<(Acq, Vec<f64>, Assignment)>,
        rng: &mut R,
    ) -> Option<Assignment> {
        if nominees.len() <= 1 {
            return nominees.into_iter().next().map(|n| n.2);
        }
        let gains: Vec<f64> = nominees.iter().map(|n| -post.predict(&n.1).0).collect();
        let chosen = hedge_draw(&gains, rng);
        nominees.into_iter().nth(chosen).map(|n| n.2)
    }

    fn pick_continuous<R: Rng + ?Sized>(
        &self,
        space: &SearchSpace,
        model: &Surrogate,
        budget: SearchBudget,
        taken: &Taken,
        rng: &mut R,
    ) -> Option<Assignment> {
        let Surrogate {
            features,
            post,
            params,
            feas,
            anchors,
        } = model;
        let feas = feas.as_ref();
        let acqs = self.acqs(feas);
        // The portfolio shares the candidates; halving each member's local searches keeps
        // GP-Hedge within the time of a single acquisition's search plus a half.
        let mut budget = budget;
        if acqs.len() > 1 {
            budget.local_starts = budget.local_starts.div_ceil(2);
        }
        let lists = optimize::maximize(post, features, &acqs, params, anchors, budget, feas, rng);
        let mut nominees = Vec::new();
        for (acq, list) in acqs.iter().zip(lists) {
            if let Some((xs, a)) =
                first_unseen(space, features, post, *acq, params, feas, list, taken)
            {
                nominees.push((*acq, xs, a));
            }
        }
        self.choose(post, nominees, rng)
    }

    fn pick_finite<R: Rng + ?Sized>(
        &self,
        space: &SearchSpace,
        model: &Surrogate,
        points: &mut Vec<Assignment>,
        rng: &mut R,
    ) -> Option<Assignment> {
        if points.is_empty() {
            return None;
        }
        let Surrogate {
            features,
            post,
            params,
            feas,
            ..
        } = model;
        let feas = feas.as_ref();
        let d = features.dim();
        let scored = finite_sample(points.len(), post.len(), rng);
        let mut xs = Vec::with_capacity(scored.len() * d);
        for i in &scored {
            xs.extend(features.encode(space, &points[*i]));
        }
        let pred = post.predict_batch(&xs, scored.len());
        let log_pof = feas.map(|f| f.log_pof_batch(&xs, scored.len()));
        let mut nominees = Vec::new();
        for acq in self.acqs(feas) {
            let mut best: Option<(f64, usize)> = None;
            for (i, (mu, s)) in pred.iter().enumerate() {
                let v = acq.value(*mu, *s, params);
                let v = match (feas, &log_pof) {
                    (Some(f), Some(lp)) => f.combine(v, lp[i]),
                    _ => v,
                };
                if best.is_none_or(|(b, _)| v > b) {
                    best = Some((v, i));
                }
            }
            if let Some((_, i)) = best {
                let point = points[scored[i]].clone();
                nominees.push((acq, xs[i * d..(i + 1) * d].to_vec(), point));
            }
        }
        let a = self.choose(post, nominees, rng)?;
        points.retain(|p| p.key() != a.key());
        Some(a)
    }
}

/// GP-Hedge's draw among the nominees of the portfolio, each weighted by `exp(η · gain)`: the
/// index of the one chosen.
fn hedge_draw<R: Rng + ?Sized>(gains: &[f64], rng: &mut R) -> usize {
    let top = gains.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let weights: Vec<f64> = gains
        .iter()
        .map(|g| (HEDGE_ETA * (g - top)).exp())
        .collect();
    let total: f64 = weights.iter().sum();
    let mut r = rng.random::<f64>() * total;
    for (i, w) in weights.iter().enumerate() {
        if r < *w {
            return i;
        }
        r -= w;
    }
    weights.len().saturating_sub(1)
}

/// Scoring `m` points costs `O(m n²)` on a posterior of `n` points; this many kernel-matrix
/// products per proposal (4,096 points at 250 trials) is what an enumerated space may use.
const FINITE_SCORE_WORK: usize = ENUMERATE_LIMIT as usize * 250 * 250;

/// Indices of the remaining points of an enumerated space to score: all of them while the
/// work fits [`FINITE_SCORE_WORK`], else a seeded sample of what fits (at least 256).
fn finite_sample<R: Rng + ?Sized>(len: usize, n: usize, rng: &mut R) -> Vec<usize> {
    let fits = (FINITE_SCORE_WORK / (n * n).max(1)).max(256);
    let mut all: Vec<usize> = (0..len).collect();
    if len <= fits {
        return all;
    }
    for i in 0..fits {
        let j = rng.random_range(i..len);
        all.swap(i, j);
    }
    all.truncate(fits);
    all
}

/// The best candidate whose snapped assignment is new (not taken, nor a hair from a taken
/// point): candidates are re-scored after snapping (ints, steps, list values), since that is
/// the point actually proposed.
#[allow(clippy::too_many_arguments)]
fn first_unseen(
    space: &SearchSpace,
    features: &Features,
    post: &Posterior,
    acq: Acq,
    params: &AcqParams,
    feas: Option<&Feasibility>,
    list: Vec<Candidate>,
    taken: &Taken,
) -> Option<(Vec<f64>, Assignment)> {
    let mut seen = HashSet::new();
    let mut best: Option<(f64, Vec<f64>, Assignment)> = None;
    for c in list {
        let a = features.decode(space, &c.x);
        let key = a.key();
        let xs = features.encode(space, &a);
        if taken.holds(&key, &xs) || !seen.insert(key) {
            continue;
        }
        let (mu, s) = post.predict(&xs);
        let v = acq.value(mu, s, params);
        let v = match feas {
            Some(f) => f.combine(v, f.log_pof(&xs)),
            None => v,
        };
        let v = if v.is_nan() { f64::MIN } else { v };
        if best.as_ref().is_none_or(|b| v > b.0) {
            best = Some((v, xs, a));
        }
        // The list is sorted by the relaxed score, so a handful of distinct points suffices.
        if seen.len() >= 16 {
            break;
        }
    }
    best.map(|b| (b.1, b.2))
}

fn random_unseen<R: Rng + ?Sized>(
    space: &SearchSpace,
    taken: &HashSet<String>,
    rng: &mut R,
) -> Assignment {
    let mut a = sample_assignment(space, rng);
    for _ in 0..MAX_REDRAWS {
        if !taken.contains(&a.key()) {
            break;
        }
        a = sample_assignment(space, rng);
    }
    a
}

/// Fills `out` up to the request's count past its model-based proposals, drawing from the
/// priors as in the initial design; `trials` are the request's trials and `out`'s proposals.
fn rest_from_priors(
    req: &SuggestRequest<'_>,
    trials: &[vernier_core::TrialRecord],
    seed: u64,
    out: &mut Suggestions,
) -> Result<(), CoreError> {
    let rest = SuggestRequest {
        trials,
        count: req.count - out.proposals.len(),
        seed,
        ..*req
    };
    let more = RandomSearch::new().suggest(&rest)?;
    out.exhausted = more.exhausted;
    out.proposals.extend(more.proposals);
    Ok(())
}

/// A proposal of the batch as a trial not yet finished, so later proposals avoid it.
fn proposed(p: &Proposal) -> vernier_core::TrialRecord {
    vernier_core::TrialRecord {
        name: String::new(),
        assignment: p.assignment.clone(),
        state: vernier_core::TrialState::Created,
        objective: None,
        labels: Default::default(),
        metrics: Default::default(),
    }
}

/// Fits the hyperparameters on at most `FIT_MAX_POINTS` points (the best quarter plus a
/// random rest, so the region that matters is always represented), with less effort as the
/// history grows.
fn fit_hyper<R: Rng + ?Sized>(
    x: &[f64],
    n: usize,
    d: usize,
    y: &[f64],
    rng: &mut R,
) -> model::Hyper {
    let budget = FitBudget {
        max_iters: if n <= 50 { 40 } else { 25 },
        random_starts: usize::from(n <= 60),
    };
    let fit_max = FIT_MAX_POINTS;
    if n <= fit_max {
        return model::fit(x, n, d, y, budget, rng);
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|a, b| y[*a].total_cmp(&y[*b]));
    let keep_best = fit_max / 4;
    let mut rest: Vec<usize> = order[keep_best..].to_vec();
    let mut chosen: Vec<usize> = order[..keep_best].to_vec();
    for _ in keep_best..fit_max {
        let i = rng.random_range(0..rest.len());
        chosen.push(rest.swap_remove(i));
    }
    chosen.sort_unstable();
    let xs: Vec<f64> = chosen
        .iter()
        .flat_map(|i| x[i * d..(i + 1) * d].iter().copied())
        .collect();
    let ys: Vec<f64> = chosen.iter().map(|i| y[*i]).collect();
    // Re-standardise the subsample so the priors see unit-scale outputs.
    let ys = standardize(&ys);
    model::fit(&xs, chosen.len(), d, &ys, budget, rng)
}

/// The most observed trials the model conditions on. The posterior costs O(n^3) time and
/// O(n^2) memory: 10,000 trials took 12.5 CPU-minutes and 2.6 GB; beyond this the best
/// quarter and a seeded random sample of the rest are kept.
pub const MODEL_MAX_POINTS: usize = 1000;

/// `observed` (with its `violations`) cut to [`MODEL_MAX_POINTS`], keeping creation order.
fn cap_history(
    observed: Vec<(&Assignment, f64)>,
    violations: Vec<f64>,
    seed: u64,
) -> (Vec<(&Assignment, f64)>, Vec<f64>) {
    let n = observed.len();
    if n <= MODEL_MAX_POINTS {
        return (observed, violations);
    }
    let violation = |i: usize| violations.get(i).copied().unwrap_or(0.0);
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|a, b| {
        violation(*a)
            .total_cmp(&violation(*b))
            .then(observed[*a].1.total_cmp(&observed[*b].1))
    });
    let keep_best = MODEL_MAX_POINTS / 4;
    let mut rest = order.split_off(keep_best);
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5EED_CA90_0000_0001);
    for _ in keep_best..MODEL_MAX_POINTS {
        let i = rng.random_range(0..rest.len());
        order.push(rest.swap_remove(i));
    }
    order.sort_unstable();
    let v = order.iter().map(|i| violation(*i)).collect();
    (order.into_iter().map(|i| observed[i]).collect(), v)
}

fn search_budget(n: usize, local_search: bool) -> SearchBudget {
    let (random, per_anchor) = if n <= 100 {
        (1024, 64)
    } else if n <= 250 {
        (512, 32)
    } else {
        (256, 32)
    };
    SearchBudget {
        random: if local_search { random } else { 2 * random },
        per_anchor,
        local_starts: if local_search { 4 } else { 0 },
        local_iters: if n <= 250 { 25 } else { 15 },
    }
}

/// Losses as the GP sees them: log-warped when heavy-tailed, then standardised.
fn transform(losses: &[f64]) -> Vec<f64> {
    standardize(&warp(losses))
}

/// `ln(1 + (y − min)/q)` with `q` the median's distance from the minimum, applied only when the
/// largest value lies much further from the median than the median from the minimum.
fn warp(losses: &[f64]) -> Vec<f64> {
    let min = losses.iter().copied().fold(f64::INFINITY, f64::min);
    let max = losses.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut sorted = losses.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let q = median - min;
    if q.is_nan() || q <= 0.0 || max - median < WARP_SKEW * q {
        return losses.to_vec();
    }
    losses.iter().map(|y| ((y - min) / q).ln_1p()).collect()
}

/// How lopsided the losses must be before they are warped.
const WARP_SKEW: f64 = 3.0;

/// Zero mean, unit variance. Where the variance overflows (objectives past about 1e154), it is
/// computed on the values divided by their largest deviation instead, and where even the
/// deviations overflow (values of opposite sign near f64's limits), on their ranks: left at
/// that size the model fit never converged and the call never returned.
fn standardize(v: &[f64]) -> Vec<f64> {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / n;
    if var == 0.0 {
        return vec![0.0; v.len()];
    }
    if var.is_finite() {
        let sd = var.sqrt();
        return v.iter().map(|y| (y - mean) / sd).collect();
    }
    let mean = v.iter().map(|y| y / n).sum::<f64>();
    let scale = v.iter().map(|y| (y - mean).abs()).fold(0.0, f64::max);
    if scale == 0.0 {
        return vec![0.0; v.len()];
    }
    if !scale.is_finite() {
        return standardize(&ranks(v));
    }
    let var = v.iter().map(|y| ((y - mean) / scale).powi(2)).sum::<f64>() / n;
    let sd = var.sqrt();
    v.iter().map(|y| (y - mean) / scale / sd).collect()
}

/// Each value's rank (0 for the smallest), ties in input order.
fn ranks(v: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    let mut out = vec![0.0; v.len()];
    for (rank, i) in order.into_iter().enumerate() {
        out[i] = rank as f64;
    }
    out
}
