//! Builds a suggester from a Katib algorithm name and its settings, validating the settings
//! as it builds (the gRPC `ValidateAlgorithmSettings` is this build plus the trial-limit and
//! generation-size checks a Katib controller needs).

use crate::error::AlgorithmError;
use crate::random::RandomSearch;
use crate::settings::Settings;
use vernier_core::{Objective, SearchSpace, Suggester};

/// Every algorithm name Vernier accepts in `spec.algorithm.algorithmName`: core's one list,
/// which spec validation reads too.
pub use vernier_core::ALGORITHM_NAMES as KNOWN_ALGORITHMS;

/// Builds the named algorithm for this space and objective.
pub fn build(
    name: &str,
    settings: &[(String, String)],
    space: &SearchSpace,
    objective: &Objective,
) -> Result<Box<dyn Suggester>, AlgorithmError> {
    if space.nas().is_some()
        && !vernier_core::NAS_ALGORITHM_NAMES.contains(&name)
        && KNOWN_ALGORITHMS.contains(&name)
    {
        return Err(crate::nas::nas_error(
            name,
            "spec.nasConfig",
            "is searched only by darts and enas; hint: use one of them, or describe the search with spec.parameters",
        ));
    }
    match name {
        "random" => {
            let s = Settings::new(name, settings, &["random_state"])?;
            s.random_state()?;
            Ok(Box::new(RandomSearch::new()))
        }
        "grid" => crate::grid::build(name, settings, space, objective),
        "sobol" => crate::sobol::build(name, settings, space, objective),
        "tpe" | "multivariate-tpe" => crate::tpe::build(name, settings, space, objective),
        "bayesianoptimization" => crate::gp::build(name, settings, space, objective),
        "cmaes" => crate::cmaes::build(name, settings, space, objective),
        "hyperband" => crate::hyperband::build(name, settings, space, objective),
        "asha" => crate::asha::build(name, settings, space, objective),
        "bohb" => crate::bohb::build(name, settings, space, objective),
        "nsga2" => crate::nsga2::build(name, settings, space, objective),
        "pbt" => crate::pbt::build(name, settings, space, objective),
        "darts" => Ok(Box::new(crate::nas::darts::build(name, settings, space)?)),
        "enas" => Ok(Box::new(crate::nas::enas::build(
            name, settings, space, objective,
        )?)),
        _ => Err(AlgorithmError::UnknownAlgorithm {
            name: name.to_string(),
            known: KNOWN_ALGORITHMS.join(", "),
        }),
    }
}

/// The most trials the named algorithm can ever propose for this space, when it has a bound:
/// grid's number of combinations, Hyperband's nominal schedule (fewer when trials fail).
/// `None` for algorithms that propose without end. The settings must already build.
pub fn trial_limit(
    name: &str,
    settings: &[(String, String)],
    space: &SearchSpace,
) -> Result<Option<u64>, AlgorithmError> {
    Ok(match name {
        "grid" => Some(crate::grid::combinations(space)),
        "hyperband" => {
            Some(crate::hyperband::Hyperband::new(name, settings, space)?.nominal_trials())
        }
        _ => None,
    })
}

/// The most trials algorithm `name` proposes before earlier ones finish, when it works one
/// generation at a time: `nsga2`'s `population_size` and `pbt`'s `n_population`, with the
/// name of that setting. A controller that insists on more at once (Katib's asks for exactly
/// `parallelTrialCount` minus the running trials) would wait forever. Call after [`build`]
/// accepted the settings.
pub fn generation_size(name: &str, settings: &[(String, String)]) -> Option<(usize, &'static str)> {
    type Read = fn(&Settings) -> Result<usize, AlgorithmError>;
    let (setting, read): (&'static str, Read) = match name {
        "nsga2" => ("population_size", crate::nsga2::population),
        "pbt" => ("n_population", crate::pbt::population),
        _ => return None,
    };
    let accepted: Vec<&str> = settings.iter().map(|(n, _)| n.as_str()).collect();
    let s = Settings::new(name, settings, &accepted).ok()?;
    read(&s).ok().map(|size| (size, setting))
}

/// Why a warm start of `results` earlier results steers nothing for algorithm `name`, or
/// `None` when the algorithm learns from them. CMA-ES fits its first distribution to them
/// when there are enough; NSGA-II, Hyperband, ASHA and PBT replay only the trials they
/// proposed (their generations or rungs, read from their labels), so earlier results (a warm
/// start, enqueued trials) only count as configurations taken.
pub fn warm_start_shortfall(name: &str, results: usize) -> Option<String> {
    let taken = format!(
        "the {results} earlier result(s) count as configurations already tried and steer nothing"
    );
    match name {
        "cmaes" if results < crate::cmaes::WARM_START_MIN_RESULTS => Some(format!(
            "cmaes starts from the best 10 % of the earlier results, so it needs at least {}; {taken}\nhint: give it more earlier results, or use tpe or bayesianoptimization, which learn from any number",
            crate::cmaes::WARM_START_MIN_RESULTS
        )),
        "asha" | "hyperband" | "pbt" => Some(format!(
            "{name} learns only from the trials it proposes itself; {taken}\nhint: tpe, multivariate-tpe, cmaes, bayesianoptimization and nsga2 learn from them"
        )),
        _ => None,
    }
}

/// The settings with `random_state` set to the experiment's seed, so algorithms that fix their
/// sequence when built (grid order, Sobol scramble, CMA-ES draws) follow `--seed` too.
pub fn with_random_state(settings: &[(String, String)], seed: u64) -> Vec<(String, String)> {
    settings
        .iter()
        .filter(|(n, _)| n != "random_state")
        .cloned()
        .chain(std::iter::once((
            "random_state".to_string(),
            (seed & i64::MAX as u64).to_string(),
        )))
        .collect()
}

/// The experiment seed requested through the `random_state` setting, if any and valid.
pub fn seed_setting(algorithm: &str, settings: &[(String, String)]) -> Option<u64> {
    let accepted: Vec<&str> = settings.iter().map(|(n, _)| n.as_str()).collect();
    let s = Settings::new(algorithm, settings, &accepted).ok()?;
    s.random_state().ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_params::pairs as settings;
    use vernier_core::{Direction, Distribution, Domain, Parameter};

    fn space() -> SearchSpace {
        SearchSpace::new(vec![Parameter {
            name: "x".into(),
            domain: Domain::Double {
                min: 0.0,
                max: 1.0,
                step: None,
            },
            distribution: Distribution::Uniform,
        }])
        .unwrap()
    }

    #[test]
    fn validates_random_settings() {
        let o = Objective::new("loss", Direction::Minimize);
        assert!(build("random", &settings(&[("random_state", "10")]), &space(), &o).is_ok());
        let err = build("random", &settings(&[("unknown_conf", "1")]), &space(), &o).unwrap_err();
        assert!(
            err.to_string()
                .contains("unknown setting \"unknown_conf\" for algorithm random")
        );
        let err = build("random", &settings(&[("random_state", "-1")]), &space(), &o).unwrap_err();
        assert!(err.to_string().contains("random_state"), "{err}");
        assert!(err.to_string().contains("\"-1\""), "{err}");
        let err = build(
            "random",
            &settings(&[("random_state", "abc")]),
            &space(),
            &o,
        )
        .unwrap_err();
        assert!(err.to_string().contains("does not parse"), "{err}");
        let err = build("nope", &[], &space(), &o).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("unknown algorithm name \"nope\"")
        );
    }

    #[test]
    fn every_known_name_is_built_by_the_registry() {
        let o = Objective::new("loss", Direction::Minimize);
        for name in KNOWN_ALGORITHMS {
            // Some need settings (hyperband, asha) or steps (grid); none may be unknown.
            if let Err(e) = build(name, &[], &space(), &o) {
                assert!(
                    !matches!(e, AlgorithmError::UnknownAlgorithm { .. }),
                    "{name}: {e}"
                );
            }
        }
    }

    #[test]
    fn the_experiment_seed_replaces_random_state() {
        let s = with_random_state(&settings(&[("random_state", "1"), ("gamma", "0.2")]), 7);
        assert_eq!(s, settings(&[("gamma", "0.2"), ("random_state", "7")]));
        let big = with_random_state(&[], u64::MAX);
        assert_eq!(big[0].1, i64::MAX.to_string());
    }

    #[test]
    fn reads_the_seed_setting() {
        assert_eq!(
            seed_setting("random", &settings(&[("random_state", "42")])),
            Some(42)
        );
        assert_eq!(
            seed_setting("random", &settings(&[("random_state", "x")])),
            None
        );
        assert_eq!(seed_setting("random", &[]), None);
    }
}
