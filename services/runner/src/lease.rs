//! One driver per experiment, the process side: takes the experiment's lease in the store
//! before a driver writes anything, renews it on a heartbeat while the driver runs, tells the
//! driver if another one took it over, and releases it at the end. The decision itself
//! (free, ours, stale, held) is `vernier_store::lease_state`.

use crate::error::RunnerError;
use crate::process::now_us;
use std::sync::Arc;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use vernier_store::{LeaseClaim, LeaseRow, LeaseState, SqlStore, StoreError, lease_state};

pub use vernier_store::{HEARTBEAT_EVERY, LEASE_TTL};

/// Why a driver may write no more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseLoss {
    /// Another driver took the lease over (this one's heartbeat lapsed).
    TakenOver,
    /// The SQLite file was deleted or replaced: writes would go to a file nobody can open.
    DatabaseGone { path: String, what: &'static str },
}

impl LeaseLoss {
    /// The error the driver ends with.
    pub fn into_error(self, experiment: String) -> StoreError {
        match self {
            LeaseLoss::TakenOver => StoreError::LeaseLost { experiment },
            LeaseLoss::DatabaseGone { path, what } => StoreError::DatabaseFileGone { path, what },
        }
    }
}

/// A held lease. Dropping it stops the heartbeat; [`ExperimentLease::release`] also frees it
/// for the next driver at once (otherwise it lapses after [`LEASE_TTL`]).
#[derive(Debug)]
pub struct ExperimentLease {
    store: SqlStore,
    experiment: String,
    owner: String,
    lost: watch::Receiver<Option<LeaseLoss>>,
    /// Kept so `lost` never reports a closed channel while the lease lives.
    _lost_tx: Arc<watch::Sender<Option<LeaseLoss>>>,
    heartbeat: JoinHandle<()>,
    /// The lease of a dead or silent driver this one took over.
    pub took_over: Option<LeaseRow>,
}

impl ExperimentLease {
    /// Takes the lease or fails with [`StoreError::LeaseHeld`] naming the live holder.
    pub async fn acquire(store: &SqlStore, experiment: &str) -> Result<Self, RunnerError> {
        let claim = this_process();
        let host = claim.host.clone();
        let gone = move |l: &LeaseRow| holder_gone(l, &host);
        let took_over = store
            .acquire_lease(experiment, &claim, now_us(), LEASE_TTL, &gone)
            .await?;
        let (tx, lost) = watch::channel(None);
        let tx = Arc::new(tx);
        let heartbeat = tokio::spawn(beat(
            store.clone(),
            experiment.to_owned(),
            claim.owner.clone(),
            tx.clone(),
        ));
        Ok(ExperimentLease {
            store: store.clone(),
            experiment: experiment.to_owned(),
            owner: claim.owner,
            lost,
            _lost_tx: tx,
            heartbeat,
            took_over,
        })
    }

    /// Becomes `Some` when this driver may write no more: another driver took the lease over,
    /// or the database file was deleted or replaced.
    pub fn watch_lost(&self) -> watch::Receiver<Option<LeaseLoss>> {
        self.lost.clone()
    }

    /// This driver's claim on the lease, as the store keeps it.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    pub fn experiment(&self) -> &str {
        &self.experiment
    }

    /// Stops the heartbeat and frees the lease if this driver still holds it.
    pub async fn release(self) -> Result<(), RunnerError> {
        self.heartbeat.abort();
        self.store
            .release_lease(&self.experiment, &self.owner)
            .await?;
        Ok(())
    }
}

impl Drop for ExperimentLease {
    fn drop(&mut self) {
        self.heartbeat.abort();
    }
}

/// The live driver of `experiment`, if another process drives it now: what commands that
/// change an experiment without driving it (`delete`, `enqueue`) check.
pub async fn live_holder(
    store: &SqlStore,
    experiment: &str,
) -> Result<Option<LeaseRow>, RunnerError> {
    let Some(row) = store.get_lease(experiment).await? else {
        return Ok(None);
    };
    let gone = holder_gone(&row, &host_name());
    Ok(
        match lease_state(Some(&row), "", now_us(), LEASE_TTL, gone) {
            LeaseState::Held => Some(row),
            _ => None,
        },
    )
}

async fn beat(
    store: SqlStore,
    experiment: String,
    owner: String,
    lost: Arc<watch::Sender<Option<LeaseLoss>>>,
) {
    let mut tick = tokio::time::interval(HEARTBEAT_EVERY);
    tick.tick().await;
    loop {
        tick.tick().await;
        if let Err(StoreError::DatabaseFileGone { path, what }) = store.check_in_place() {
            let _ = lost.send(Some(LeaseLoss::DatabaseGone { path, what }));
            return;
        }
        match store.renew_lease(&experiment, &owner, now_us()).await {
            Ok(()) => {}
            Err(StoreError::LeaseLost { .. }) => {
                let _ = lost.send(Some(LeaseLoss::TakenOver));
                return;
            }
            // A database that does not answer now may answer at the next beat; if it stays
            // away past the ttl, another driver may take over and the next renewal says so.
            Err(_) => {}
        }
    }
}

fn this_process() -> LeaseClaim {
    let pid = std::process::id();
    LeaseClaim {
        owner: format!("{pid}-{:016x}", unique_token()),
        host: host_name(),
        pid: i64::from(pid),
    }
}

/// A token no other driver run shares (the pid alone repeats across hosts and reboots).
fn unique_token() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_i64(now_us());
    h.write_u32(std::process::id());
    h.finish()
}

fn host_name() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown-host".to_owned())
}

/// Whether the lease's holder ran on this host and its process no longer exists.
pub fn holder_gone_here(lease: &LeaseRow) -> bool {
    holder_gone(lease, &host_name())
}

/// A holder on this host whose process no longer exists (killed with `kill -9`, crashed) is
/// gone now, without waiting for its heartbeat to lapse; so is one that has exited and is
/// only waiting to be reaped (a zombie, which a shell or container init may leave for a
/// while). A reused pid only delays that.
fn holder_gone(lease: &LeaseRow, this_host: &str) -> bool {
    if lease.host != this_host || lease.host == "unknown-host" {
        return false;
    }
    let Ok(pid) = i32::try_from(lease.pid) else {
        return false;
    };
    pid > 0
        && (matches!(
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
            Err(nix::errno::Errno::ESRCH)
        ) || is_zombie(pid))
}

/// Whether process `pid` has exited and awaits its parent's `wait` (state `Z` in
/// `/proc/<pid>/stat`; on a system without `/proc`, never).
fn is_zombie(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The state follows the command name, which is in parentheses and may hold any byte.
    stat.rsplit_once(')')
        .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(host: &str, pid: i64) -> LeaseRow {
        LeaseRow {
            experiment: "exp".into(),
            owner: "someone".into(),
            host: host.into(),
            pid,
            acquired_us: 0,
            heartbeat_us: 0,
        }
    }

    #[test]
    fn only_a_vanished_process_on_this_host_is_gone() {
        let here = host_name();
        // A child that has exited and been reaped has a pid that no longer exists.
        let mut child = std::process::Command::new("true")
            .spawn()
            .expect("spawn true");
        let dead = i64::from(child.id());
        child.wait().expect("reap");
        let me = i64::from(std::process::id());
        // A child that has exited and is not reaped yet: a zombie, gone all the same.
        let mut unreaped = std::process::Command::new("true")
            .spawn()
            .expect("spawn true");
        let zombie = i64::from(unreaped.id());
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !is_zombie(unreaped.id() as i32) {
            assert!(std::time::Instant::now() < until, "the child never exited");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let cases = [
            ("this process", lease(&here, me), false),
            ("exited child", lease(&here, dead), true),
            ("unreaped child", lease(&here, zombie), true),
            ("other host", lease("elsewhere.example", dead), false),
            ("pid out of range", lease(&here, i64::MAX), false),
            ("pid zero", lease(&here, 0), false),
        ];
        for (what, l, want) in cases {
            assert_eq!(holder_gone(&l, &here), want, "{what}");
        }
        unreaped.wait().expect("reap");
    }
}
