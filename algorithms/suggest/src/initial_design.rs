//! The initial design of the model-based searches (`tpe`, `bayesianoptimization`): the trials
//! proposed before a model is fitted, drawn from the priors or taken from a scrambled Sobol
//! sequence (scikit-optimize's `initial_point_generator`).

use crate::error::AlgorithmError;
use crate::random::RandomSearch;
use crate::settings::Settings;
use crate::sobol::SobolSearch;
use vernier_core::{Assignment, CoreError, SearchSpace, SuggestRequest, Suggester, Suggestions};

/// The setting that chooses the design, named as in scikit-optimize.
pub(crate) const SETTING: &str = "initial_point_generator";

/// How the start-up trials are chosen.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum InitialDesign {
    /// Independent draws from each parameter's prior.
    Random,
    /// Point `i` of a scrambled Sobol sequence for the `i`-th trial, scrambled by `random_state`.
    Sobol(SobolSearch),
}

impl InitialDesign {
    /// Reads `initial_point_generator` (default `random`).
    pub(crate) fn from_settings(s: &Settings) -> Result<Self, AlgorithmError> {
        let seed = s.random_state()?.unwrap_or(0);
        let sobol = s.one_of(SETTING, &[("random", false), ("sobol", true)], "")?;
        Ok(match sobol {
            Some(true) => InitialDesign::Sobol(SobolSearch::new(seed)),
            None | Some(false) => InitialDesign::Random,
        })
    }

    /// A whole batch from the design.
    pub(crate) fn suggest(&self, req: &SuggestRequest<'_>) -> Result<Suggestions, CoreError> {
        match self {
            InitialDesign::Random => RandomSearch::new().suggest(req),
            InitialDesign::Sobol(s) => s.suggest(req),
        }
    }

    /// The design's point for trial number `index`, when it has one of its own (`None`: draw
    /// from the priors).
    pub(crate) fn point(&self, space: &SearchSpace, index: u64) -> Option<Assignment> {
        match self {
            InitialDesign::Random => None,
            InitialDesign::Sobol(s) => Some(s.assignment_at(space, index)),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_params::{mixed_space, pairs};
    use vernier_core::{
        Direction, Objective, SearchSpace, SuggestRequest, Suggestions, TrialRecord, TrialState,
    };

    const MODEL_BASED: [&str; 3] = ["tpe", "multivariate-tpe", "bayesianoptimization"];

    fn suggest(
        name: &str,
        settings: &[(&str, &str)],
        space: &SearchSpace,
        trials: &[TrialRecord],
        count: usize,
        seed: u64,
    ) -> Vec<String> {
        let o = Objective::new("loss", Direction::Minimize);
        let alg = crate::build(name, &pairs(settings), space, &o).unwrap();
        let s: Suggestions = alg
            .suggest(&SuggestRequest {
                space,
                objective: &o,
                trials,
                count,
                seed,
                state: None,
            })
            .unwrap();
        crate::test_params::texts(&s)
    }

    #[test]
    fn a_sobol_start_takes_the_sobol_sequence_scrambled_by_random_state() {
        let space = mixed_space();
        let sobol = |state: &str, trials: &[TrialRecord], count| {
            suggest(
                "sobol",
                &[("random_state", state)],
                &space,
                trials,
                count,
                1,
            )
        };
        for name in MODEL_BASED {
            let settings = [("initial_point_generator", "sobol"), ("random_state", "3")];
            // The per-call seed does not move the design; random_state does.
            let first = suggest(name, &settings, &space, &[], 4, 11);
            assert_eq!(first, sobol("3", &[], 4), "{name}");
            assert_eq!(
                suggest(name, &settings, &space, &[], 4, 12),
                first,
                "{name}"
            );
            assert_ne!(first, sobol("4", &[], 4), "{name}");

            // The i-th trial of the experiment takes point i, failed trials included.
            let o = Objective::new("loss", Direction::Minimize);
            let earlier = crate::build("sobol", &pairs(&[("random_state", "3")]), &space, &o)
                .unwrap()
                .suggest(&SuggestRequest {
                    space: &space,
                    objective: &o,
                    trials: &[],
                    count: 3,
                    seed: 0,
                    state: None,
                })
                .unwrap();
            let trials: Vec<TrialRecord> = earlier
                .proposals
                .into_iter()
                .enumerate()
                .map(|(i, p)| TrialRecord {
                    name: format!("t{i}"),
                    assignment: p.assignment,
                    state: TrialState::Failed,
                    objective: None,
                    labels: Default::default(),
                    metrics: Default::default(),
                })
                .collect();
            assert_eq!(
                suggest(name, &settings, &space, &trials, 1, 5),
                sobol("3", &trials, 1),
                "{name}"
            );
        }
    }

    #[test]
    fn the_default_start_draws_from_the_priors() {
        let space = mixed_space();
        for name in MODEL_BASED {
            let implicit = suggest(name, &[("random_state", "3")], &space, &[], 3, 8);
            let explicit = [("random_state", "3"), ("initial_point_generator", "random")];
            assert_eq!(
                suggest(name, &explicit, &space, &[], 3, 8),
                implicit,
                "{name}"
            );
            assert_ne!(
                implicit,
                suggest("sobol", &[("random_state", "3")], &space, &[], 3, 8)
            );
        }
    }

    #[test]
    fn an_unknown_generator_is_refused_by_name_and_value() {
        let space = mixed_space();
        let o = Objective::new("loss", Direction::Minimize);
        for name in MODEL_BASED {
            let settings = pairs(&[("initial_point_generator", "lhs")]);
            let e = crate::build(name, &settings, &space, &o)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(
                e.contains("initial_point_generator")
                    && e.contains("\"lhs\"")
                    && e.contains("random, sobol"),
                "{name}: {e}"
            );
        }
    }
}
