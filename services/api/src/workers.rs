//! Where CPU-heavy algorithm work runs: on blocking threads, never on the async workers (so
//! health checks and other calls keep being served), at most a fixed number at once, and
//! cancelled as soon as nobody waits for the answer. A gRPC call's future is dropped when its
//! client disconnects or its deadline (`grpc-timeout`) passes; dropping [`Workers::run`]'s
//! future sets the work's [`Cancel`] flag, which the expensive algorithms poll between units
//! of work, so the thread and its slot are freed promptly instead of computing for minutes.

use crate::error::ApiError;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::Semaphore;
use vernier_core::Cancel;

/// A bounded pool of slots for blocking work. Clones share the slots.
#[derive(Debug, Clone)]
pub struct Workers {
    slots: Arc<Semaphore>,
    running: Arc<AtomicUsize>,
}

impl Default for Workers {
    /// One slot per core: more would only slow every call down.
    fn default() -> Self {
        Workers::new(std::thread::available_parallelism().map_or(2, |n| n.get()))
    }
}

/// Sets the flag when dropped, i.e. when the caller stops waiting (or has its answer).
struct CancelOnDrop(Arc<Cancel>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// Counts one running task for as long as it lives, panics included.
struct Running(Arc<AtomicUsize>);

impl Running {
    fn start(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Running(count.clone())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Workers {
    /// A pool running at most `limit` (at least 1) tasks at once; later calls queue.
    pub fn new(limit: usize) -> Self {
        Workers {
            slots: Arc::new(Semaphore::new(limit.max(1))),
            running: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Tasks on a blocking thread now, including cancelled ones still winding down.
    pub fn running(&self) -> usize {
        self.running.load(Ordering::SeqCst)
    }

    /// Runs `work` on a blocking thread once a slot is free. Dropping the returned future
    /// (while queued or while running) cancels the work; the slot is held until the work
    /// really ends, so cancelled work still winding down counts against the limit.
    pub async fn run<T, F>(&self, work: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&Cancel) -> T + Send + 'static,
    {
        let slot = self
            .slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| ApiError::Task(e.to_string()))?;
        let cancel = Arc::new(Cancel::new());
        let _cancel_on_drop = CancelOnDrop(cancel.clone());
        let running = Running::start(&self.running);
        tokio::task::spawn_blocking(move || {
            let _slot = slot;
            let _running = running;
            work(cancel.as_ref())
        })
        .await
        .map_err(|e| ApiError::Task(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// Work that spins until cancelled: only a dropped caller can end it.
    fn spin_until_cancelled(started: mpsc::Sender<()>) -> impl FnOnce(&Cancel) -> bool {
        move |cancel: &Cancel| {
            started.send(()).unwrap();
            while !cancel.is_cancelled() {
                std::thread::yield_now();
            }
            true
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn dropping_the_caller_cancels_the_work_and_frees_its_slot() {
        let workers = Workers::new(1);
        let (tx, rx) = mpsc::channel();
        let call = tokio::spawn({
            let workers = workers.clone();
            async move { workers.run(spin_until_cancelled(tx)).await }
        });
        tokio::task::spawn_blocking(move || rx.recv().unwrap())
            .await
            .unwrap();
        assert_eq!(workers.running(), 1);
        call.abort();
        // The only slot comes back once the spinning work has seen the flag; before the
        // flag existed this call never returned.
        let next = workers.run(|cancel: &Cancel| cancel.is_cancelled()).await;
        assert!(!next.unwrap(), "a fresh call starts uncancelled");
        assert_eq!(workers.running(), 0);
    }

    #[tokio::test]
    async fn a_finished_call_returns_its_value() {
        let workers = Workers::new(2);
        assert_eq!(workers.run(|_: &Cancel| 6 * 7).await.unwrap(), 42);
        assert_eq!(workers.running(), 0);
    }
}
