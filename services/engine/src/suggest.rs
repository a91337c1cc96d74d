//! The suggest step: build the algorithm with the experiment's seed, ask it for the planner's
//! count of proposals with a seed that depends on the history's length (so a resumed experiment
//! proposes what an uninterrupted one would have), and tell when the search has ended.

use crate::error::EngineError;
use crate::names::suggest_seed;
use crate::resolved::ResolvedExperiment;
use vernier_core::{SuggestRequest, Suggester, Suggestions, TrialRecord};

/// One call of the suggest step.
#[derive(Debug, Clone, Copy)]
pub struct SuggestInput<'a> {
    /// The history the algorithm sees: warm-start results first, then this experiment's trials.
    pub history: &'a [TrialRecord],
    /// How many of `history` are this experiment's own trials (the seed counts only those).
    pub own: usize,
    /// How many proposals the planner asks for.
    pub count: usize,
    /// The state the algorithm returned last time.
    pub state: Option<&'a str>,
}

/// The experiment's algorithm, seeded with `seed` unless its settings fix `random_state`.
pub fn build_suggester(
    exp: &ResolvedExperiment,
    seed: u64,
) -> Result<Box<dyn Suggester>, EngineError> {
    let settings = vernier_algorithms::with_random_state(&exp.settings, seed);
    vernier_algorithms::build(&exp.algorithm, &settings, &exp.space, &exp.objective)
        .map_err(|e| crate::settings::algorithm_error(exp, e))
}

/// Asks `suggester` for proposals; a panicking algorithm comes back as an error.
pub fn suggest(
    suggester: &dyn Suggester,
    exp: &ResolvedExperiment,
    seed: u64,
    input: SuggestInput<'_>,
) -> Result<Suggestions, EngineError> {
    let request = SuggestRequest {
        space: &exp.space,
        objective: &exp.objective,
        trials: input.history,
        count: input.count,
        seed: suggest_seed(seed, input.own),
        state: input.state,
    };
    Ok(vernier_algorithms::suggest_guarded(suggester, &request)?)
}

/// Whether the search is over after `suggestions`, with `active` trials still pending or
/// running. An algorithm may return fewer proposals than asked while it waits for running
/// trials (Hyperband's rungs); with nothing running it would wait forever, so an empty answer
/// then ends the search too.
pub fn search_ended(suggestions: &Suggestions, active: usize) -> bool {
    suggestions.exhausted || (suggestions.proposals.is_empty() && active == 0)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::resolved::tests::experiment;

    #[test]
    fn the_search_ends_when_exhausted_or_empty_with_nothing_running() {
        let proposal = || {
            let exp = experiment("");
            let s = build_suggester(&exp, 1).unwrap();
            let input = SuggestInput {
                history: &[],
                own: 0,
                count: 1,
                state: None,
            };
            suggest(s.as_ref(), &exp, 1, input).unwrap().proposals
        };
        let cases = [
            (false, true, 0, false),
            (false, true, 2, false),
            (false, false, 0, true),
            (false, false, 2, false),
            (true, true, 2, true),
            (true, false, 0, true),
        ];
        for (exhausted, some, active, want) in cases {
            let s = Suggestions {
                proposals: if some { proposal() } else { Vec::new() },
                state: None,
                exhausted,
            };
            assert_eq!(
                search_ended(&s, active),
                want,
                "{exhausted} {some} {active}"
            );
        }
    }

    #[test]
    fn the_same_seed_and_history_propose_the_same_points() {
        let exp = experiment("");
        let run = |seed: u64, own: usize| {
            let s = build_suggester(&exp, seed).unwrap();
            let history: Vec<TrialRecord> = Vec::new();
            let input = SuggestInput {
                history: &history,
                own,
                count: 2,
                state: None,
            };
            let got = suggest(s.as_ref(), &exp, seed, input).unwrap();
            got.proposals
                .iter()
                .map(|p| p.assignment.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(run(7, 0), ["x=0.15779609702061936", "x=0.1679893627721013"]);
        assert_eq!(run(7, 0), run(7, 0));
        assert_ne!(run(7, 0), run(7, 1));
        assert_ne!(run(7, 0), run(8, 0));
    }
}
