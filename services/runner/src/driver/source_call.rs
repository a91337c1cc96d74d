//! A call to the external suggestion source that runs while the driver keeps waking: a trial
//! that ends during a slow plugin call is recorded when it ends, and early stopping and stop
//! requests act, instead of all waiting for the answer (up to the plugin's 60 s deadline).

use crate::experiment::LocalExperiment;
use crate::hooks::{SourceError, SourceRequest, SuggestionSource};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use vernier_core::{Suggestions, TrialRecord};

/// What the source said.
pub(super) type Answer = Result<Suggestions, SourceError>;

/// One call in flight. Dropping it cancels the call (a stop, or the experiment completed).
pub(super) struct PendingCall<'a> {
    call: Pin<Box<dyn Future<Output = Answer> + Send + 'a>>,
    /// When to tell the user the call is slow; `None` once told.
    pub slow_at: Option<Instant>,
    /// How many proposals were asked for.
    pub count: usize,
}

/// What one call asks: Katib's controller semantics (see [`SourceRequest`]), owned so the call
/// outlives the driver step that started it.
pub(super) struct Ask {
    pub history: Vec<TrialRecord>,
    pub count: usize,
    pub total: usize,
    pub state: Option<String>,
}

impl<'a> PendingCall<'a> {
    /// Starts asking `source`; the call is said to be slow once `slow_after` passes.
    pub fn start(
        source: Arc<dyn SuggestionSource>,
        experiment: &'a LocalExperiment,
        ask: Ask,
        slow_after: Duration,
    ) -> PendingCall<'a> {
        let count = ask.count;
        let call = async move {
            let request = SourceRequest {
                experiment,
                trials: &ask.history,
                count: ask.count,
                total: ask.total,
                state: ask.state.as_deref(),
            };
            source.suggest(request).await
        };
        PendingCall {
            call: Box::pin(call),
            slow_at: Some(Instant::now() + slow_after),
            count,
        }
    }
}

/// Resolves with the answer of the call in flight; never, when there is none.
pub(super) async fn answer_of(pending: &mut Option<PendingCall<'_>>) -> Answer {
    match pending {
        Some(p) => p.call.as_mut().await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Answers after `delay` with as many proposals as asked for, echoing the history's length
    /// in the state.
    #[derive(Debug)]
    struct Slow {
        delay: Duration,
    }

    #[async_trait::async_trait]
    impl SuggestionSource for Slow {
        fn describe(&self) -> String {
            "plugin".into()
        }
        async fn validate(&self, _: &LocalExperiment) -> Result<(), SourceError> {
            Ok(())
        }
        async fn suggest(&self, request: SourceRequest<'_>) -> Result<Suggestions, SourceError> {
            tokio::time::sleep(self.delay).await;
            let state = format!("{} {}", request.trials.len(), request.total);
            Ok(Suggestions {
                proposals: Vec::new(),
                state: Some(state),
                exhausted: false,
            })
        }
    }

    fn ask(count: usize) -> Ask {
        Ask {
            history: Vec::new(),
            count,
            total: count + 4,
            state: None,
        }
    }

    #[tokio::test]
    async fn a_call_answers_what_it_was_asked_and_says_when_it_is_slow() {
        let exp = crate::experiment::tests::experiment("    collector:\n      kind: StdOut", "a");
        let source = Arc::new(Slow {
            delay: Duration::from_millis(20),
        });
        let slow_after = Duration::from_secs(10);
        let before = Instant::now();
        let mut pending = Some(PendingCall::start(source, &exp, ask(2), slow_after));
        let after = Instant::now();
        let call = pending.as_ref().unwrap();
        assert_eq!(call.count, 2);
        let slow_at = call.slow_at.unwrap();
        assert!(before + slow_after <= slow_at && slow_at <= after + slow_after);
        let answer = answer_of(&mut pending).await.unwrap();
        assert_eq!(answer.state.as_deref(), Some("0 6"));
    }

    #[tokio::test]
    async fn without_a_call_nothing_answers() {
        let mut none: Option<PendingCall<'_>> = None;
        let waited = tokio::time::timeout(Duration::from_millis(50), answer_of(&mut none)).await;
        assert!(waited.is_err());
    }
}
