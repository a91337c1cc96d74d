//! One driver per experiment: the lease row a driver holds while it runs an experiment, and the
//! pure decision every backend applies inside its transaction (free, ours, stale or held), so
//! SQLite, PostgreSQL and MySQL grant and refuse leases alike. The clock is the caller's.

use crate::error::StoreError;
use std::time::Duration;

/// How long a lease lives without a heartbeat: longer than any pause a healthy driver makes
/// (a slow database, a busy machine), short enough that a lost machine's experiment can be
/// resumed soon. Clocks of hosts sharing one database must agree to well within it.
pub const LEASE_TTL: Duration = Duration::from_secs(30);
/// How often a holder renews its lease.
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(5);
/// The owner of every lease `vernier operator` holds: one name for all its replicas, since
/// leader election already keeps them to one and a new leader continues the old one's work.
pub const OPERATOR_LEASE_OWNER: &str = "vernier-operator";

/// The lease an experiment's driver holds (one row per experiment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseRow {
    pub experiment: String,
    /// Unique per driver process run: who may renew and release the lease.
    pub owner: String,
    pub host: String,
    pub pid: i64,
    /// When the holder took the lease, µs since the Unix epoch.
    pub acquired_us: i64,
    /// The holder's last renewal, µs since the Unix epoch (the holder's clock).
    pub heartbeat_us: i64,
}

/// Who asks for a lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseClaim {
    pub owner: String,
    pub host: String,
    pub pid: i64,
}

/// What a lease row means to a claimant at a given time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseState {
    /// No row: the experiment has no driver.
    Free,
    /// The claimant already holds it.
    Ours,
    /// Another driver holds it, but its heartbeat lapsed or it is known to be gone.
    Stale,
    /// Another driver holds it and is alive as far as anyone can tell.
    Held,
}

/// Classifies `current` for `owner` at `now_us`. A heartbeat older than `ttl` is stale; so is
/// one whose holder the caller knows to be gone (`holder_gone`, e.g. its pid no longer exists
/// on this host). A heartbeat from the future (another host's clock runs ahead) counts as live.
pub fn lease_state(
    current: Option<&LeaseRow>,
    owner: &str,
    now_us: i64,
    ttl: Duration,
    holder_gone: bool,
) -> LeaseState {
    let Some(row) = current else {
        return LeaseState::Free;
    };
    if row.owner == owner {
        return LeaseState::Ours;
    }
    let ttl_us = i64::try_from(ttl.as_micros()).unwrap_or(i64::MAX);
    if holder_gone || now_us.saturating_sub(row.heartbeat_us) > ttl_us {
        LeaseState::Stale
    } else {
        LeaseState::Held
    }
}

/// Why no live driver runs an experiment whose phase says it is running, as a reader (the
/// dashboard, `vernier list`) sees it: the driver was killed (`kill -9`, a crash, a lost
/// machine) before it could record an ending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unattended {
    /// No lease row, and the experiment is older than a lease's lifetime.
    NoDriver,
    /// The last holder stopped renewing `silent_s` seconds ago.
    Lapsed {
        host: String,
        pid: i64,
        silent_s: i64,
    },
    /// The last holder's process is known to be gone (its pid no longer runs on its host).
    Gone { host: String, pid: i64 },
}

impl std::fmt::Display for Unattended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unattended::NoDriver => write!(f, "no vernier process drives it"),
            Unattended::Lapsed {
                host,
                pid,
                silent_s,
            } => write!(
                f,
                "its driver (pid {pid} on {host}) has not been heard from for {silent_s} s"
            ),
            Unattended::Gone { host, pid } => {
                write!(f, "its driver (pid {pid} on {host}) no longer runs")
            }
        }
    }
}

/// Whether a running experiment created at `created_us` has no live driver at `now_us`, with
/// `holder_gone` as the caller knows it (see [`lease_state`]). A new experiment gets a grace of
/// `ttl` for its driver to take the lease it was created for.
pub fn unattended(
    current: Option<&LeaseRow>,
    created_us: i64,
    now_us: i64,
    ttl: Duration,
    holder_gone: bool,
) -> Option<Unattended> {
    let ttl_us = i64::try_from(ttl.as_micros()).unwrap_or(i64::MAX);
    let Some(row) = current else {
        return (now_us.saturating_sub(created_us) > ttl_us).then_some(Unattended::NoDriver);
    };
    let (host, pid) = (row.host.clone(), row.pid);
    match lease_state(current, "", now_us, ttl, holder_gone) {
        LeaseState::Stale if holder_gone => Some(Unattended::Gone { host, pid }),
        LeaseState::Stale => Some(Unattended::Lapsed {
            host,
            pid,
            silent_s: now_us.saturating_sub(row.heartbeat_us) / 1_000_000,
        }),
        _ => None,
    }
}

/// What a backend writes after deciding, inside the same transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LeaseWrite {
    /// Insert the claimant's row, deleting `replacing` (a stale holder's row) first.
    Take { replacing: Option<LeaseRow> },
    /// The claimant holds it already: refresh its heartbeat.
    Renew,
}

/// The decision turned into a write or the error naming the live holder.
pub(crate) fn settle(
    current: Option<LeaseRow>,
    experiment: &str,
    claim: &LeaseClaim,
    now_us: i64,
    ttl: Duration,
    holder_gone: bool,
) -> Result<LeaseWrite, StoreError> {
    match lease_state(current.as_ref(), &claim.owner, now_us, ttl, holder_gone) {
        LeaseState::Free => Ok(LeaseWrite::Take { replacing: None }),
        LeaseState::Ours => Ok(LeaseWrite::Renew),
        LeaseState::Stale => Ok(LeaseWrite::Take { replacing: current }),
        LeaseState::Held => {
            let holder = current.unwrap_or_else(|| unreachable!("a held lease has a row"));
            if holder.owner == OPERATOR_LEASE_OWNER {
                return Err(StoreError::LeaseHeldByOperator {
                    experiment: experiment.to_owned(),
                    host: holder.host,
                    since: format_time(holder.acquired_us),
                });
            }
            Err(StoreError::LeaseHeld {
                experiment: experiment.to_owned(),
                host: holder.host,
                pid: holder.pid,
                since: format_time(holder.acquired_us),
                heartbeat_age_s: now_us.saturating_sub(holder.heartbeat_us).max(0) / 1_000_000,
                ttl_s: ttl.as_secs(),
            })
        }
    }
}

/// RFC 3339 in UTC, to the second.
pub(crate) fn format_time(us: i64) -> String {
    chrono::DateTime::from_timestamp_micros(us)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|| format!("{us} µs after the epoch"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TTL: Duration = Duration::from_secs(30);
    const S: i64 = 1_000_000;

    fn row(owner: &str, heartbeat_us: i64) -> LeaseRow {
        LeaseRow {
            experiment: "exp".into(),
            owner: owner.into(),
            host: "h1".into(),
            pid: 42,
            acquired_us: 0,
            heartbeat_us,
        }
    }

    #[test]
    fn a_running_experiment_is_unattended_once_its_lease_lapses_or_never_came() {
        let lapsed = |silent_s| {
            Some(Unattended::Lapsed {
                host: "h1".into(),
                pid: 42,
                silent_s,
            })
        };
        let gone = Some(Unattended::Gone {
            host: "h1".into(),
            pid: 42,
        });
        // (case, lease, created at, now, holder known gone, expected)
        type Case = (
            &'static str,
            Option<LeaseRow>,
            i64,
            i64,
            bool,
            Option<Unattended>,
        );
        let cases: &[Case] = &[
            (
                "new, lease not taken yet",
                None,
                90 * S,
                100 * S,
                false,
                None,
            ),
            (
                "old, never leased",
                None,
                0,
                100 * S,
                false,
                Some(Unattended::NoDriver),
            ),
            (
                "live heartbeat",
                Some(row("a", 95 * S)),
                0,
                100 * S,
                false,
                None,
            ),
            (
                "heartbeat at the limit",
                Some(row("a", 70 * S)),
                0,
                100 * S,
                false,
                None,
            ),
            (
                "lapsed heartbeat",
                Some(row("a", 60 * S)),
                0,
                100 * S,
                false,
                lapsed(40),
            ),
            (
                "fresh heartbeat, process gone",
                Some(row("a", 99 * S)),
                0,
                100 * S,
                true,
                gone,
            ),
        ];
        for (case, lease, created, now, holder_gone, want) in cases {
            assert_eq!(
                &unattended(lease.as_ref(), *created, *now, TTL, *holder_gone),
                want,
                "{case}"
            );
        }
        assert_eq!(
            lapsed(40).unwrap().to_string(),
            "its driver (pid 42 on h1) has not been heard from for 40 s"
        );
    }

    #[test]
    fn states_by_owner_heartbeat_age_and_liveness() {
        let cases: &[(&str, Option<LeaseRow>, i64, bool, LeaseState)] = &[
            ("no row", None, 100 * S, false, LeaseState::Free),
            (
                "ours, fresh",
                Some(row("me", 99 * S)),
                100 * S,
                false,
                LeaseState::Ours,
            ),
            (
                "ours, lapsed",
                Some(row("me", 0)),
                100 * S,
                false,
                LeaseState::Ours,
            ),
            (
                "ours, gone",
                Some(row("me", 99 * S)),
                100 * S,
                true,
                LeaseState::Ours,
            ),
            (
                "other, fresh",
                Some(row("them", 99 * S)),
                100 * S,
                false,
                LeaseState::Held,
            ),
            (
                "other, exactly ttl",
                Some(row("them", 70 * S)),
                100 * S,
                false,
                LeaseState::Held,
            ),
            (
                "other, past ttl",
                Some(row("them", 70 * S - 1)),
                100 * S,
                false,
                LeaseState::Stale,
            ),
            (
                "other, gone",
                Some(row("them", 99 * S)),
                100 * S,
                true,
                LeaseState::Stale,
            ),
            (
                "other, future",
                Some(row("them", 200 * S)),
                100 * S,
                false,
                LeaseState::Held,
            ),
            (
                "other, clock at min",
                Some(row("them", i64::MAX)),
                i64::MIN,
                false,
                LeaseState::Held,
            ),
        ];
        for (what, current, now, gone, want) in cases {
            assert_eq!(
                lease_state(current.as_ref(), "me", *now, TTL, *gone),
                *want,
                "{what}"
            );
        }
    }

    #[test]
    fn settle_takes_over_stale_and_names_a_live_holder() {
        let claim = LeaseClaim {
            owner: "me".into(),
            host: "h2".into(),
            pid: 7,
        };
        let stale = row("them", 0);
        assert_eq!(
            settle(Some(stale.clone()), "exp", &claim, 100 * S, TTL, false).unwrap(),
            LeaseWrite::Take {
                replacing: Some(stale)
            }
        );
        assert_eq!(
            settle(None, "exp", &claim, 100 * S, TTL, false).unwrap(),
            LeaseWrite::Take { replacing: None }
        );
        assert_eq!(
            settle(Some(row("me", 0)), "exp", &claim, 100 * S, TTL, false).unwrap(),
            LeaseWrite::Renew
        );
        let err = settle(
            Some(row("them", 95 * S)),
            "exp",
            &claim,
            100 * S,
            TTL,
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("pid 42 on host h1"), "{err}");
        assert!(err.contains("since 1970-01-01T00:00:00Z"), "{err}");
        assert!(err.contains("last heartbeat 5 s ago"), "{err}");
        assert!(err.contains("hint:"), "{err}");
    }

    #[test]
    fn a_live_operator_holder_is_named_as_the_operator() {
        let claim = LeaseClaim {
            owner: "me".into(),
            host: "laptop".into(),
            pid: 7,
        };
        let err = settle(
            Some(row(OPERATOR_LEASE_OWNER, 95 * S)),
            "exp",
            &claim,
            100 * S,
            TTL,
            false,
        )
        .unwrap_err();
        assert!(matches!(err, StoreError::LeaseHeldByOperator { .. }));
        let err = err.to_string();
        assert!(err.contains("Kubernetes operator (pod h1"), "{err}");
        assert!(err.contains("hint: give the local experiment"), "{err}");
        // A lapsed operator lease is taken over like any other.
        let lapsed = row(OPERATOR_LEASE_OWNER, 0);
        assert_eq!(
            settle(Some(lapsed.clone()), "exp", &claim, 100 * S, TTL, false).unwrap(),
            LeaseWrite::Take {
                replacing: Some(lapsed)
            }
        );
    }
}
