//! The driver's side of a call to the external suggestion source: it starts one when the
//! planner wants trials, starts the trials of its answer, backs off from a source that is
//! unavailable, and says when a call is slow (the call itself is [`super::source_call`]'s).

use super::run::Run;
use super::source_call::{Answer, Ask, PendingCall};
use crate::error::RunnerError;
use crate::hooks::{SLOW_CALL, SourceError, next_backoff};
use tokio::time::Instant;
use vernier_core::TrialRecord;

impl<'a> Run<'a> {
    /// Starts a call for `count` proposals, unless one is in flight or the source was
    /// unavailable and its retry is not due.
    pub(super) fn ask_source(&mut self, history: Vec<TrialRecord>, count: usize) {
        if self.pending.is_some() {
            return;
        }
        if let Some((at, _)) = self.source_retry
            && Instant::now() < at
        {
            return;
        }
        let Some(source) = self.shell.hooks.suggestion_source.clone() else {
            unreachable!("a run has a built-in algorithm or a source");
        };
        let ask = Ask {
            history,
            count,
            total: self.trials.len() + count,
            state: self.status.algorithm_state.clone(),
        };
        self.pending = Some(PendingCall::start(source, self.shell.exp, ask, SLOW_CALL));
    }

    /// The call in flight answered: start its trials (as many as the planner still wants), or
    /// wait and retry a source that is unavailable; a refusal ends the run.
    pub(super) async fn source_answered(&mut self, answer: Answer) -> Result<(), RunnerError> {
        let Some(call) = self.pending.take() else {
            return Ok(());
        };
        let source = self.source_name();
        match answer {
            Ok(suggestions) => {
                self.source_retry = None;
                // Trials that ended during the call freed places, and enqueued trials may
                // have taken some: never more than the planner wants now.
                let request = (self.plan().request as usize).min(call.count);
                self.launch_suggestions(suggestions, request).await?;
                Ok(())
            }
            Err(SourceError::Rejected(message)) => Err(RunnerError::SuggestionSource {
                source_name: source,
                message,
            }),
            Err(SourceError::Unavailable(message)) => {
                let wait = next_backoff(self.source_retry.map(|(_, d)| d));
                self.source_retry = Some((Instant::now() + wait, wait));
                self.warn(format!(
                    "{source} is unavailable ({message}); the experiment waits and retries in {:.1} s",
                    wait.as_secs_f64()
                ));
                Ok(())
            }
        }
    }

    /// Tells the user, once per call, that the source is slow to answer.
    pub(super) fn source_slow(&mut self) {
        if let Some(call) = self.pending.as_mut() {
            call.slow_at = None;
        }
        let message = format!(
            "{} has not answered for {} s; the experiment waits for it up to the call's \
             deadline, recording trials as they end (Ctrl-C stops the run)",
            self.source_name(),
            SLOW_CALL.as_secs()
        );
        self.warn(message);
    }

    fn source_name(&self) -> String {
        let source = self.shell.hooks.suggestion_source.as_ref();
        source.map_or_else(String::new, |s| s.describe())
    }
}
