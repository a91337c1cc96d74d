//! The last line of defence between an algorithm and a long-running caller (the operator's
//! controller, the gRPC server, the local driver): a panic inside `suggest` becomes an error
//! naming the algorithm, so one experiment's input cannot end a controller or a process. The
//! causes are fixed where found; this only keeps an unknown one contained.

use std::panic::{AssertUnwindSafe, catch_unwind};
use vernier_core::{Cancel, CoreError, SuggestRequest, Suggester, Suggestions};

/// `suggester.suggest(req)`, with a panic turned into `CoreError::Algorithm`.
pub fn suggest_guarded(
    suggester: &dyn Suggester,
    req: &SuggestRequest<'_>,
) -> Result<Suggestions, CoreError> {
    suggest_guarded_cancellable(suggester, req, &Cancel::new())
}

/// [`suggest_guarded`] that stops with `CoreError::Cancelled` once `cancel` is set.
pub fn suggest_guarded_cancellable(
    suggester: &dyn Suggester,
    req: &SuggestRequest<'_>,
    cancel: &Cancel,
) -> Result<Suggestions, CoreError> {
    catch_unwind(AssertUnwindSafe(|| {
        suggester.suggest_cancellable(req, cancel)
    }))
    .unwrap_or_else(|payload| {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        Err(CoreError::Algorithm {
            algorithm: suggester.name().to_string(),
            message: format!(
                "failed on this experiment's history or space ({what}); this is a bug in \
                 Vernier, please report it with the experiment spec"
            ),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use vernier_core::{Direction, Distribution, Domain, Objective, Parameter, SearchSpace};

    #[derive(Debug)]
    struct Panics;

    impl Suggester for Panics {
        fn name(&self) -> &str {
            "panics"
        }
        fn suggest(&self, _: &SuggestRequest<'_>) -> Result<Suggestions, CoreError> {
            panic!("attempt to subtract with overflow")
        }
    }

    #[test]
    fn a_panic_becomes_an_error_naming_the_algorithm() {
        let space = SearchSpace::new(vec![Parameter {
            name: "x".into(),
            domain: Domain::Double {
                min: 0.0,
                max: 1.0,
                step: None,
            },
            distribution: Distribution::Uniform,
        }])
        .unwrap();
        let objective = Objective::new("loss", Direction::Minimize);
        let req = SuggestRequest {
            space: &space,
            objective: &objective,
            trials: &[],
            count: 1,
            seed: 1,
            state: None,
        };
        let e = suggest_guarded(&Panics, &req).unwrap_err().to_string();
        assert!(
            e.contains("algorithm panics") && e.contains("attempt to subtract with overflow"),
            "{e}"
        );
    }
}
