//! Seam 1: a suggestion algorithm is a deterministic function of the search space, the
//! objective, the full trial history, a count, a seed and optional opaque state.

use crate::error::CoreError;
use crate::objective::Objective;
use crate::space::SearchSpace;
use crate::trial::TrialRecord;
use crate::value::Assignment;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

/// Everything an algorithm may look at when proposing.
#[derive(Debug, Clone, Copy)]
pub struct SuggestRequest<'a> {
    pub space: &'a SearchSpace,
    pub objective: &'a Objective,
    /// Every trial of the experiment so far, in creation order, in any state.
    pub trials: &'a [TrialRecord],
    /// How many proposals are wanted now.
    pub count: usize,
    /// Seed for this call; callers derive it from the experiment seed and the history length
    /// so that a resumed experiment proposes what an uninterrupted one would have.
    pub seed: u64,
    /// State returned by the previous call (e.g. Hyperband's bracket), if any.
    pub state: Option<&'a str>,
}

/// The seed for a call made when `history` trials exist: the service and the benchmark
/// harness both derive it this way, so a benchmark run proposes what the service would.
pub fn suggest_seed(seed: u64, history: usize) -> u64 {
    seed.wrapping_add((history as u64).wrapping_mul(0xD1B5_4A32_D192_ED03))
}

/// One proposed configuration, with labels to attach to its trial.
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    pub assignment: Assignment,
    pub labels: BTreeMap<String, String>,
}

impl Proposal {
    pub fn new(assignment: Assignment) -> Self {
        Proposal {
            assignment,
            labels: BTreeMap::new(),
        }
    }
}

/// What an algorithm returns.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Suggestions {
    /// At most `count` proposals: fewer when `exhausted`, or while the algorithm waits for
    /// running trials' results (Hyperband's promotions, a generation still running).
    pub proposals: Vec<Proposal>,
    /// Opaque state to hand back on the next call.
    pub state: Option<String>,
    /// True when the algorithm has nothing more to propose (e.g. the grid is done).
    pub exhausted: bool,
}

/// A suggestion algorithm. Settings were validated when it was built.
pub trait Suggester: Send + Sync + std::fmt::Debug {
    /// The Katib algorithm name, e.g. `random`.
    fn name(&self) -> &str;

    /// Proposes up to `request.count` configurations.
    fn suggest(&self, request: &SuggestRequest<'_>) -> Result<Suggestions, CoreError>;

    /// [`Suggester::suggest`], giving up with [`CoreError::Cancelled`] once `cancel` is set.
    /// Algorithms whose work grows with the history or the count poll it between units of
    /// work; the cheap ones only check it before starting.
    fn suggest_cancellable(
        &self,
        request: &SuggestRequest<'_>,
        cancel: &Cancel,
    ) -> Result<Suggestions, CoreError> {
        cancel.check(self.name())?;
        self.suggest(request)
    }

    /// What a user should know about how these settings will search, said once when the
    /// experiment is checked (a Hyperband schedule of a single rung, say); empty for most.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }

    /// Proposals beyond the `given` ones [`Suggester::suggest`] answered `request` with, for a
    /// caller that must get exactly `request.count` while no trial runs: Katib's controller
    /// refuses a shorter answer and asks again for as many, so an algorithm waiting for the
    /// result of what it gave would never be asked for less. Empty for most (the caller then
    /// says why the answer is short); a generational algorithm adds extra members.
    fn fill(&self, request: &SuggestRequest<'_>, given: &[Proposal]) -> Vec<Proposal> {
        let _ = (request, given);
        Vec::new()
    }
}

/// Set by a caller that no longer wants an answer (a gRPC client that went away or whose
/// deadline passed), read by the algorithm doing the work. A flag rather than a clock keeps
/// the algorithms pure: they decide nothing from it but to stop.
#[derive(Debug, Default)]
pub struct Cancel(AtomicBool);

impl Cancel {
    /// A flag nobody has set yet.
    pub fn new() -> Self {
        Cancel::default()
    }

    /// Asks the work to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// `Err(CoreError::Cancelled)` naming `algorithm` once cancelled.
    pub fn check(&self, algorithm: &str) -> Result<(), CoreError> {
        if self.is_cancelled() {
            return Err(CoreError::Cancelled(algorithm.to_string()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggest_seeds_are_fixed_functions_of_their_inputs() {
        let cases: &[(u64, usize, u64)] = &[
            (0, 0, 0),
            (1, 0, 1),
            (0, 1, 0xD1B5_4A32_D192_ED03),
            (u64::MAX, 1, 0xD1B5_4A32_D192_ED02),
        ];
        for &(seed, history, want) in cases {
            assert_eq!(suggest_seed(seed, history), want, "{seed} {history}");
        }
    }
}
