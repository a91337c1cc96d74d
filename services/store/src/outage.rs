//! Riding out a database server that stops answering for a while (a restart, a failover, a
//! network blip): a driver's store tries a call again, once a second, when its connection was
//! lost, instead of failing it and ending an experiment whose trials are still running. It
//! waits until the server answers again or the driver gives up (Ctrl-C), and then returns the
//! connection error as before.
//!
//! A write whose connection broke after the server committed it but before it answered is sent
//! again: a batch of observations is first looked for (`SqlStore::report_observations` skips
//! one already stored), and a new experiment or trial row finds itself already there, which
//! the store takes as the insert having worked (`SqlStore::insert_trial`). Commands that only read
//! (`report`, `list`) do not ride: they fail at once and can simply be run again.
//!
//! A server that stops answering without closing its connections (paused, overloaded, cut off
//! by the network) leaves a call waiting with no error to ride. Once the driver is stopping,
//! such a call on a server database gets [`STOP_GRACE`] to answer (or one retry interval while
//! an outage is already known) and is then abandoned with [`StoreError::NoAnswer`], so Ctrl-C
//! ends the run. SQLite's calls are not bounded: its busy timeout bounds their lock waits.

use crate::error::StoreError;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// How long a call waits before it is tried again.
const RETRY_EVERY: Duration = Duration::from_secs(1);

/// How long a call to a server database waits for a pooled connection (sqlx's default is
/// 30 s): when the server stops answering, the first call to time out is what tells the user.
pub(crate) const ACQUIRE_WITHIN: Duration = Duration::from_secs(10);

/// How long a server call may still take once the driver is stopping: enough for a healthy
/// write, short enough that Ctrl-C ends a run whose server hangs.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// The riding policy a store's clones share.
#[derive(Debug, Clone)]
pub(crate) struct Outages {
    /// Becomes `true` when the driver is being stopped: waiting ends with the error.
    give_up: watch::Receiver<bool>,
    /// Whether a call is waiting now, so one outage is told once, not once per call.
    waiting: Arc<AtomicBool>,
    /// When the server last answered again after an outage.
    answered_at: Arc<std::sync::Mutex<Option<Instant>>>,
    retry_every: Duration,
    /// The server's url, password redacted; `None` for SQLite, whose calls are not bounded.
    server: Option<String>,
    stop_grace: Duration,
}

impl Outages {
    pub(crate) fn new(give_up: watch::Receiver<bool>, server: Option<String>) -> Outages {
        Outages {
            give_up,
            waiting: Arc::new(AtomicBool::new(false)),
            answered_at: Arc::default(),
            retry_every: RETRY_EVERY,
            server,
            stop_grace: STOP_GRACE,
        }
    }

    /// Runs `call`, and again while it fails with a lost connection and nobody gave up.
    pub(crate) async fn ride<T, F, Fut>(&self, mut call: F) -> Result<T, StoreError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, StoreError>>,
    {
        let started = Instant::now();
        let mut result = self.bounded(call()).await;
        let mut since = None;
        loop {
            let error = match result {
                Err(e) if rides(&e) => e,
                other => {
                    if let Some(since) = since {
                        self.answered(since);
                    }
                    return other;
                }
            };
            let mut give_up = self.give_up.clone();
            if *give_up.borrow_and_update() {
                return Err(error);
            }
            since.get_or_insert_with(Instant::now);
            if new_outage(started, self.last_answer()) {
                self.waits(&error);
            }
            let retry = async {
                tokio::time::sleep(self.retry_every).await;
                self.bounded(call()).await
            };
            tokio::select! {
                r = retry => result = r,
                () = given_up(&mut give_up) => return Err(error),
            }
        }
    }

    /// `call`, abandoned on a server once the driver is stopping and it has had its grace.
    async fn bounded<T>(
        &self,
        call: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        let Some(url) = &self.server else {
            return call.await;
        };
        let mut give_up = self.give_up.clone();
        tokio::pin!(call);
        tokio::select! {
            result = &mut call => return result,
            () = given_up(&mut give_up) => {}
        }
        let grace = if self.waiting.load(Ordering::SeqCst) {
            self.retry_every
        } else {
            self.stop_grace
        };
        tokio::time::timeout(grace, call).await.unwrap_or_else(|_| {
            Err(StoreError::NoAnswer {
                url: url.clone(),
                doing: "while the run was stopping; the call was abandoned (the server may \
                        still apply it when it answers)",
                waited: grace,
            })
        })
    }

    fn waits(&self, error: &StoreError) {
        if !self.waiting.swap(true, Ordering::SeqCst)
            && let StoreError::ConnectionLost { url, error, .. } = error
        {
            tracing::warn!(
                "database {url} does not answer ({error}); the run waits for it and tries again every {:?}, and what trials print meanwhile is recorded once it answers\nhint: Ctrl-C stops the run (`vernier resume NAME --db {url}` continues it)",
                self.retry_every
            );
        }
    }

    fn last_answer(&self) -> Option<Instant> {
        *self.answered_at.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn answered(&self, since: Instant) {
        if self.waiting.swap(false, Ordering::SeqCst) {
            *self.answered_at.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
            tracing::info!(
                "the database answers again ({:.0?} after the first retry); the run goes on",
                since.elapsed()
            );
        }
    }
}

/// Whether a call that began at `started` and failed is a new outage to tell: a call that was
/// already waiting (for a pooled connection, up to [`ACQUIRE_WITHIN`]) when the server last
/// answered again fails late with the outage already told and over.
fn new_outage(started: Instant, last_answer: Option<Instant>) -> bool {
    last_answer.is_none_or(|answered| started > answered)
}

/// A lost connection is worth waiting out; a store closed on purpose is not.
fn rides(error: &StoreError) -> bool {
    matches!(error, StoreError::ConnectionLost { error, .. } if !matches!(error, sqlx::Error::PoolClosed))
}

/// Resolves once `give_up` says `true`; never if its sender is gone (nobody can ask any more).
async fn given_up(give_up: &mut watch::Receiver<bool>) {
    if give_up.wait_for(|g| *g).await.is_err() {
        std::future::pending::<()>().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn lost(error: sqlx::Error) -> StoreError {
        StoreError::ConnectionLost {
            action: "read trial",
            name: "t".into(),
            url: "postgres://h/db".into(),
            error,
        }
    }

    /// Fails the first `failures` calls with `error()`, then answers with the call count.
    fn flaky(
        failures: usize,
        error: fn() -> StoreError,
    ) -> (
        Arc<AtomicUsize>,
        impl FnMut() -> std::future::Ready<Result<usize, StoreError>>,
    ) {
        let calls = Arc::new(AtomicUsize::new(0));
        let counter = calls.clone();
        let call = move || {
            let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
            std::future::ready(if n <= failures { Err(error()) } else { Ok(n) })
        };
        (calls, call)
    }

    fn refused() -> StoreError {
        lost(sqlx::Error::PoolTimedOut)
    }

    const PAUSE: Duration = Duration::from_millis(20);

    #[test]
    fn a_call_begun_before_the_server_answered_again_tells_no_new_outage() {
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_secs(1);
        let cases = [
            (t0, None, true),
            (t1, Some(t0), true),
            (t0, Some(t1), false),
            (t0, Some(t0), false),
        ];
        for (started, answered, want) in cases {
            assert_eq!(
                new_outage(started, answered),
                want,
                "{started:?} {answered:?}"
            );
        }
    }

    /// Riding with a short pause, so the tests run in real time.
    fn outages(give_up: watch::Receiver<bool>) -> Outages {
        Outages {
            retry_every: PAUSE,
            ..Outages::new(give_up, None)
        }
    }

    /// As [`outages`], for a server database whose calls get `PAUSE * 2` once stopping.
    fn server_outages(give_up: watch::Receiver<bool>) -> Outages {
        Outages {
            server: Some("postgres://u@h/db".into()),
            stop_grace: PAUSE * 2,
            ..outages(give_up)
        }
    }

    /// A call that answers `Ok(1)` after `after`, or never.
    async fn answering(after: Option<Duration>) -> Result<usize, StoreError> {
        match after {
            Some(after) => {
                tokio::time::sleep(after).await;
                Ok(1)
            }
            None => std::future::pending().await,
        }
    }

    /// Which calls stopping abandons: (server database, already stopping, the call answers
    /// after, abandoned). The test bounds every case, so a call never abandoned fails it
    /// instead of hanging.
    #[tokio::test]
    async fn once_stopping_only_a_server_call_past_its_grace_is_abandoned() {
        type Case = (bool, bool, Option<Duration>, bool);
        let table: [Case; 6] = [
            (true, true, None, true),
            (true, false, None, true),
            (true, true, Some(PAUSE / 2), false),
            (true, true, Some(PAUSE * 4), true),
            (false, true, Some(PAUSE * 4), false),
            (true, false, Some(PAUSE * 4), false),
        ];
        for (i, (server, stopping, after, abandoned)) in table.into_iter().enumerate() {
            let (tx, rx) = watch::channel(stopping);
            let outages = if server {
                server_outages(rx)
            } else {
                outages(rx)
            };
            if after.is_none() && !stopping {
                tokio::spawn(async move {
                    tokio::time::sleep(PAUSE).await;
                    tx.send(true).unwrap();
                });
            }
            let result = tokio::time::timeout(PAUSE * 20, outages.ride(|| answering(after)))
                .await
                .unwrap_or_else(|_| panic!("case {i}: still waiting"));
            match result {
                Err(StoreError::NoAnswer { url, waited, .. }) => {
                    assert!(abandoned, "case {i}: abandoned");
                    assert_eq!(url, "postgres://u@h/db", "case {i}");
                    assert_eq!(waited, PAUSE * 2, "case {i}");
                }
                Ok(1) => assert!(!abandoned, "case {i}: answered"),
                other => panic!("case {i}: {other:?}"),
            }
        }
    }

    /// While an outage is known, a call made when stopping gets one retry interval, not the
    /// whole grace: a run stopping with several writes to make ends in seconds.
    #[tokio::test]
    async fn once_stopping_during_a_known_outage_a_call_gets_one_retry_interval() {
        let (_tx, rx) = watch::channel(true);
        let outages = server_outages(rx);
        outages.waiting.store(true, Ordering::SeqCst);
        let err = outages.ride(|| answering(None)).await.unwrap_err();
        assert!(
            matches!(err, StoreError::NoAnswer { waited, .. } if waited == PAUSE),
            "{err:?}"
        );
        let text = err.to_string();
        assert!(text.contains("did not answer within 0.02 s"), "{text}");
        assert!(text.contains("the call was abandoned"), "{text}");
        assert!(
            text.contains("hint: check that the database server"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn lost_connections_are_tried_again_until_the_server_answers() {
        let (_tx, rx) = watch::channel(false);
        let outages = outages(rx);
        let (calls, call) = flaky(3, refused);
        let started = Instant::now();
        assert_eq!(outages.ride(call).await.unwrap(), 4);
        assert_eq!(calls.load(Ordering::SeqCst), 4);
        assert!(started.elapsed() >= PAUSE * 3);
        assert!(!outages.waiting.load(Ordering::SeqCst));
    }

    #[tokio::test]
    async fn other_errors_and_a_closed_store_fail_at_once() {
        let (_tx, rx) = watch::channel(false);
        let outages = outages(rx);
        type Case = (fn() -> StoreError, &'static str);
        let table: [Case; 3] = [
            (|| StoreError::not_found("trial", "t"), "not found"),
            (|| lost(sqlx::Error::PoolClosed), "closed"),
            (
                || StoreError::Locked {
                    action: "update trial",
                    name: "t".into(),
                    url: "u".into(),
                    waited: Duration::from_secs(30),
                },
                "locked",
            ),
        ];
        for (error, case) in table {
            let (calls, call) = flaky(1, error);
            assert!(outages.ride(call).await.is_err(), "{case}");
            assert_eq!(calls.load(Ordering::SeqCst), 1, "{case}");
        }
    }

    #[tokio::test]
    async fn giving_up_ends_the_wait_with_the_connection_error() {
        let (tx, rx) = watch::channel(false);
        let outages = outages(rx);
        let (calls, call) = flaky(usize::MAX, refused);
        let stopper = tokio::spawn(async move {
            tokio::time::sleep(PAUSE * 5 / 2).await;
            tx.send(true).unwrap();
        });
        let err = outages.ride(call).await.unwrap_err();
        assert!(matches!(err, StoreError::ConnectionLost { .. }), "{err}");
        assert!(calls.load(Ordering::SeqCst) >= 2);
        stopper.await.unwrap();
        // Already given up: the first failure is returned without waiting.
        let (calls, call) = flaky(usize::MAX, refused);
        assert!(outages.ride(call).await.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn nobody_left_to_give_up_means_waiting_on() {
        let (tx, rx) = watch::channel(false);
        drop(tx);
        let outages = outages(rx);
        let (_, call) = flaky(2, refused);
        assert_eq!(outages.ride(call).await.unwrap(), 3);
    }
}
