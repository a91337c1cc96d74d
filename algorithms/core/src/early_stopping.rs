//! Seam 1b: an early-stopping rule is a deterministic function of the objective and every
//! trial's intermediate objective values; it names the running trials to stop now.
//!
//! Medianstop (Katib's rule) and ASHA used as a pruner both implement [`EarlyStopper`]; the
//! local driver and the operator call it after each new observation, the gRPC
//! `EarlyStopping` service translates medianstop's decision into Katib's wire rules.

use crate::error::CoreError;
use crate::objective::Objective;
use crate::trial::TrialState;

/// One trial's progress as an early-stopping rule sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrialProgress<'a> {
    pub name: &'a str,
    pub state: TrialState,
    /// The objective metric's intermediate values in the order they were reported; value `i`
    /// is step `i + 1` (an epoch, for a trial that reports once per epoch).
    pub values: &'a [f64],
    /// How many of `values` an earlier ask of the rule already saw (`values.len()` when the
    /// caller does not know). A rule that judges at fixed steps (ASHA's rungs) also judges the
    /// steps passed since, so how often a driver asks does not change what it decides.
    pub judged: usize,
}

/// Everything an early-stopping rule may look at.
#[derive(Debug, Clone, Copy)]
pub struct EarlyStoppingRequest<'a> {
    pub objective: &'a Objective,
    /// Every trial of the experiment, in creation order, in any state.
    pub trials: &'a [TrialProgress<'a>],
}

/// An early-stopping rule. Settings were validated when it was built.
pub trait EarlyStopper: Send + Sync + std::fmt::Debug {
    /// The Katib algorithm name, e.g. `medianstop`.
    fn name(&self) -> &str;

    /// Names of trials in state `Running` that should be stopped now. Trials in any other
    /// state are never named.
    fn trials_to_stop(&self, request: &EarlyStoppingRequest<'_>) -> Result<Vec<String>, CoreError>;

    /// Why the rule stops `trial` on this request, in words for its message (one clause,
    /// lowercase), or `None` when it does not stop it or the rule has nothing to add (a
    /// medianstop trial's frozen rule already says it).
    fn explain(&self, _request: &EarlyStoppingRequest<'_>, _trial: &str) -> Option<String> {
        None
    }

    /// The step at which the rule stops `trial` on this request, when it ranks trials against
    /// each other by step (ASHA's rungs): a driver then shows the rule only that many of the
    /// stopped trial's values from now on, since values it printed past its stop (a trainer
    /// faster than the driver's look) would otherwise compete at later rungs, and how fast a
    /// trainer prints would change the verdicts.
    fn stop_step(&self, _request: &EarlyStoppingRequest<'_>, _trial: &str) -> Option<usize> {
        None
    }
}
