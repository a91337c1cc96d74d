//! `bayesianoptimization` with a tree-based surrogate (`base_estimator: RF`, `ET` or `GBRT`),
//! run as scikit-optimize's `Optimizer` runs one, since Katib's service is that optimizer:
//! after the initial design, each proposal fits the surrogate to the finished trials and takes
//! the best of 10,000 points drawn from the priors (trees are piecewise constant, so
//! scikit-optimize's `acq_optimizer` is `sampling` for them) under EI, PI, LCB or the GP-Hedge
//! portfolio; an enumerable space scores its untried points instead. Running trials and the
//! batch's earlier proposals join the data at the lowest loss observed (scikit-optimize's
//! constant liar, `cl_min`), and the surrogate is fitted again for each proposal. The work of
//! one request is bounded as the GP's is: at most `MODEL_MAX_POINTS` observed trials (the best
//! quarter and a seeded sample of the rest) and the latest `MAX_PENDING_BELIEVERS` running
//! ones.

use super::acquisition::{Acq, AcqParams};
use super::features::Features;
use super::forest::{TreeKind, TreeModel};
use super::{AcqFunc, KAPPA, MAX_MODEL_PROPOSALS, MAX_PENDING_BELIEVERS, XI, cap_history};
use super::{hedge_draw, proposed, rest_from_priors, standardize, unused_points};
use crate::history;
use crate::initial_design::InitialDesign;
use crate::sample::sample_assignment;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashSet;
use vernier_core::{
    Assignment, Cancel, CoreError, Proposal, SuggestRequest, Suggester, Suggestions,
};

/// Points drawn from the priors and scored per proposal (scikit-optimize's `n_points`).
const SAMPLED_POINTS: usize = 10_000;
/// The smallest predictive deviation an acquisition sees: a leaf of equal targets predicts
/// none, where EI and PI are undefined.
const MIN_SD: f64 = 1e-9;

/// Bayesian optimisation over a tree surrogate.
#[derive(Debug, Clone)]
pub(crate) struct TreeOptimizer {
    pub(crate) kind: TreeKind,
    pub(crate) n_initial: usize,
    pub(crate) acq: AcqFunc,
    pub(crate) initial: InitialDesign,
}

/// The data the surrogate is fitted to: encoded points and standardised losses, lies included.
struct Fitted {
    x: Vec<f64>,
    y: Vec<f64>,
    /// The constant liar's value: the lowest standardised loss observed.
    lie: f64,
}

impl Suggester for TreeOptimizer {
    fn name(&self) -> &str {
        super::NAME
    }

    fn suggest(&self, req: &SuggestRequest<'_>) -> Result<Suggestions, CoreError> {
        self.suggest_cancellable(req, &Cancel::new())
    }

    fn suggest_cancellable(
        &self,
        req: &SuggestRequest<'_>,
        cancel: &Cancel,
    ) -> Result<Suggestions, CoreError> {
        let observed = history::observed(req.objective, req.trials);
        if observed.len() < self.n_initial.max(2) {
            return self.initial.suggest(req);
        }
        // The GP's bounds on the work of one request hold for the trees too.
        let (observed, _) = cap_history(observed, Vec::new(), req.seed);
        let features = Features::new(req.space);
        let losses: Vec<f64> = observed.iter().map(|(_, l)| *l).collect();
        let y = standardize(&losses);
        let lie = y.iter().copied().fold(f64::INFINITY, f64::min);
        let mut data = Fitted {
            x: observed
                .iter()
                .flat_map(|(a, _)| features.encode(req.space, a))
                .collect(),
            y,
            lie,
        };
        let pending = history::pending(req.trials);
        for a in &pending[pending.len().saturating_sub(MAX_PENDING_BELIEVERS)..] {
            data.x.extend(features.encode(req.space, a));
            data.y.push(lie);
        }
        let mut rng = ChaCha8Rng::seed_from_u64(req.seed);
        let mut taken = history::taken(req.trials);
        let mut unused = unused_points(req.space, &taken);
        let mut out = Suggestions::default();
        for i in 0..req.count {
            cancel.check(self.name())?;
            if i >= MAX_MODEL_PROPOSALS {
                let mut trials = req.trials.to_vec();
                trials.extend(out.proposals.iter().map(proposed));
                rest_from_priors(req, &trials, rng.random(), &mut out)?;
                return Ok(out);
            }
            let candidates = match unused.as_ref() {
                Some(points) => points.clone(),
                None => sampled(req, &taken, &mut rng),
            };
            let Some(a) = self.pick(req, &features, &data, candidates, &mut rng) else {
                out.exhausted = true;
                break;
            };
            taken.insert(a.key());
            if let Some(points) = unused.as_mut() {
                points.retain(|p| p.key() != a.key());
            }
            data.x.extend(features.encode(req.space, &a));
            data.y.push(data.lie);
            out.proposals.push(Proposal::new(a));
        }
        if unused.as_ref().is_some_and(Vec::is_empty) {
            out.exhausted = true;
        }
        Ok(out)
    }
}

impl TreeOptimizer {
    /// The acquisitions of the portfolio, or the one `acq_func` names.
    fn acqs(&self) -> Vec<Acq> {
        match self.acq {
            AcqFunc::Single(a) => vec![a],
            AcqFunc::Hedge => vec![Acq::Ei, Acq::Pi, Acq::Lcb],
        }
    }

    /// Fits the surrogate and returns the candidate the acquisition (or GP-Hedge's draw among
    /// each acquisition's best) prefers; `None` without candidates.
    fn pick(
        &self,
        req: &SuggestRequest<'_>,
        features: &Features,
        data: &Fitted,
        candidates: Vec<Assignment>,
        rng: &mut ChaCha8Rng,
    ) -> Option<Assignment> {
        if candidates.is_empty() {
            return None;
        }
        let model = TreeModel::fit(self.kind, &data.x, features.dim(), &data.y, rng);
        let params = AcqParams {
            best: data.y.iter().copied().fold(f64::INFINITY, f64::min),
            xi: XI,
            kappa: KAPPA,
        };
        let predicted: Vec<(f64, f64)> = candidates
            .iter()
            .map(|a| {
                let (mu, sd) = model.predict(&features.encode(req.space, a));
                (mu, sd.max(MIN_SD))
            })
            .collect();
        let nominees: Vec<usize> = self
            .acqs()
            .into_iter()
            .map(|acq| {
                argmax(
                    predicted
                        .iter()
                        .map(|(mu, sd)| acq.value(*mu, *sd, &params)),
                )
            })
            .collect();
        // GP-Hedge rewards each acquisition by the negated predicted loss at its nominee.
        let gains: Vec<f64> = nominees.iter().map(|i| -predicted[*i].0).collect();
        let chosen = nominees[hedge_draw(&gains, rng)];
        candidates.into_iter().nth(chosen)
    }
}

/// The index of the largest value, the first of ties; NaN counts as the smallest.
fn argmax(values: impl Iterator<Item = f64>) -> usize {
    let mut best = (0, f64::NEG_INFINITY);
    for (i, v) in values.enumerate() {
        if v > best.1 {
            best = (i, v);
        }
    }
    best.0
}

/// [`SAMPLED_POINTS`] prior draws not tried yet (a draw already tried is left out).
fn sampled(
    req: &SuggestRequest<'_>,
    taken: &HashSet<String>,
    rng: &mut ChaCha8Rng,
) -> Vec<Assignment> {
    (0..SAMPLED_POINTS)
        .map(|_| sample_assignment(req.space, rng))
        .filter(|a| !taken.contains(&a.key()))
        .collect()
}
