//! Leader election on a `coordination.k8s.io/v1` Lease, so that of several operator replicas
//! exactly one reconciles. Hand-written (about a hundred lines) because kube-rs ships none and
//! the crates that do pin older kube releases; it follows client-go's rules: the holder renews
//! every `renew_every`, a candidate takes the lease only once `lease_duration` has passed
//! since the last renewal, every write carries the resourceVersion read (a lost race is a 409),
//! and a holder that cannot renew within `lease_duration` steps down on its own; a round that
//! gets no answer is abandoned after a deadline well inside the lease (client-go's RenewDeadline). A holder that
//! is stopped gracefully releases the lease (client-go's `ReleaseOnCancel`), so another replica
//! takes over at its next round instead of waiting `lease_duration`; a holder that crashes
//! releases nothing and is replaced once the lease expires.

use crate::tenure::Tenure;
use chrono::Utc;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Client;
use kube::api::{Api, PostParams};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

#[derive(Debug, Clone)]
pub struct LeaseConfig {
    pub name: String,
    pub namespace: String,
    pub identity: String,
    pub lease_duration: Duration,
    pub renew_every: Duration,
}

/// Runs until `stop` completes, publishing on `leading` whether this replica holds the lease;
/// then publishes `false` and releases the lease if this replica still holds it.
///
/// `stop` is only looked at between rounds, never in the middle of one, so that no renewal of
/// ours can still be on its way to the API server when the release is written.
pub async fn elect(
    client: Client,
    config: LeaseConfig,
    (leading, tenure): (watch::Sender<bool>, Arc<Tenure>),
    stop: impl Future<Output = ()>,
) {
    let api: Api<Lease> = Api::namespaced(client, &config.namespace);
    let mut stop = std::pin::pin!(stop);
    tenure.ended();
    loop {
        let began = (tokio::time::Instant::now(), std::time::SystemTime::now());
        let held = match tokio::time::timeout(
            renew_deadline(&config),
            try_acquire_or_renew(&api, &config),
        )
        .await
        {
            Ok(Ok(held)) => held,
            Ok(Err(e)) => {
                tracing::warn!("leader lease {}/{}: {e}", config.namespace, config.name);
                false
            }
            // A round that hangs must not keep a holder leading past its lease, or two
            // replicas reconcile at once (client-go's RenewDeadline).
            Err(_) => {
                tracing::warn!(
                    "leader lease {}/{}: no answer within {:?}; stepping down",
                    config.namespace,
                    config.name,
                    renew_deadline(&config)
                );
                false
            }
        };
        if held {
            tenure.renewed(began, config.lease_duration);
        }
        let still_leader = held && tenure.holds();
        if !still_leader {
            tenure.ended();
        }
        if *leading.borrow() != still_leader {
            let _ = leading.send(still_leader);
        }
        tokio::select! {
            _ = &mut stop => break,
            _ = tokio::time::sleep(config.renew_every) => {}
        }
    }
    // Whoever runs the controllers on `leading` has stopped them before completing `stop`;
    // saying so here covers a caller that did not.
    tenure.ended();
    let _ = leading.send(false);
    // A release that hangs is not worth waiting for past the point where the lease would
    // have expired anyway.
    match tokio::time::timeout(config.lease_duration, release(&api, &config)).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(
            "leader lease {}/{}: cannot release it, the other replicas wait for it to expire: {e}",
            config.namespace,
            config.name
        ),
        Err(_) => tracing::warn!(
            "leader lease {}/{}: no answer to the release, the other replicas wait for it to expire",
            config.namespace,
            config.name
        ),
    }
}

/// How long one round may take. A round starts at most `renew_every` after the last renewal,
/// so a holder whose round times out steps down well before `lease_duration` has passed since
/// it last renewed, which is when a candidate may take the lease.
fn renew_deadline(config: &LeaseConfig) -> Duration {
    (config.lease_duration.saturating_sub(config.renew_every) / 2).max(Duration::from_millis(1))
}

/// Gives the lease up if `config.identity` holds it, as client-go does on a graceful stop:
/// no holder, no renew or acquire time and a one-second duration (for candidates that only
/// look at times), written with the resourceVersion read, so that if another replica took the
/// lease in between the write is a 409 and its hold stands. Not holding it is not an error.
async fn release(api: &Api<Lease>, config: &LeaseConfig) -> Result<(), kube::Error> {
    let Some(mut lease) = api.get_opt(&config.name).await? else {
        return Ok(());
    };
    let Some(spec) = lease.spec.as_mut() else {
        return Ok(());
    };
    if spec.holder_identity.as_deref() != Some(config.identity.as_str()) {
        return Ok(());
    }
    spec.holder_identity = None;
    spec.renew_time = None;
    spec.acquire_time = None;
    spec.lease_duration_seconds = Some(1);
    match api
        .replace(&config.name, &PostParams::default(), &lease)
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// One round: create the lease, renew it, or take it over if expired. Returns whether held.
async fn try_acquire_or_renew(api: &Api<Lease>, config: &LeaseConfig) -> Result<bool, kube::Error> {
    let now = MicroTime(jiff_now());
    let duration_s = config.lease_duration.as_secs().max(1) as i32;
    let Some(mut lease) = api.get_opt(&config.name).await? else {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(config.name.clone()),
                namespace: Some(config.namespace.clone()),
                ..Default::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(config.identity.clone()),
                lease_duration_seconds: Some(duration_s),
                acquire_time: Some(now.clone()),
                renew_time: Some(now),
                lease_transitions: Some(0),
                ..Default::default()
            }),
        };
        return match api.create(&PostParams::default(), &lease).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
            Err(e) => Err(e),
        };
    };
    let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
    let holder = spec.holder_identity.clone().unwrap_or_default();
    if holder != config.identity {
        // An empty holder is a released lease: free to take without waiting for it to expire.
        if !holder.is_empty() {
            let renewed = spec.renew_time.as_ref().map(|t| t.0);
            let ttl = spec.lease_duration_seconds.unwrap_or(duration_s).max(1);
            let expired = renewed.is_none_or(|t| {
                let age = jiff_now().duration_since(t);
                age.as_secs() >= i64::from(ttl)
            });
            if !expired {
                return Ok(false);
            }
        }
        // Taking over a released lease is a transition too, as in client-go.
        spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
        spec.acquire_time = Some(now.clone());
    }
    spec.holder_identity = Some(config.identity.clone());
    spec.lease_duration_seconds = Some(duration_s);
    spec.renew_time = Some(now);
    match api
        .replace(&config.name, &PostParams::default(), &lease)
        .await
    {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
        Err(e) => Err(e),
    }
}

fn jiff_now() -> k8s_openapi::jiff::Timestamp {
    k8s_openapi::jiff::Timestamp::from_microsecond(Utc::now().timestamp_micros())
        .unwrap_or(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)
}

#[cfg(test)]
mod tests {
    //! Against the API server double, so that the resourceVersion checks are the server's.

    use super::*;
    use vernier_kube_double::KubeDouble;

    fn config(identity: &str) -> LeaseConfig {
        LeaseConfig {
            name: "leader".into(),
            namespace: "default".into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(60),
            renew_every: Duration::from_millis(50),
        }
    }

    /// The lease's holder, or "" when it has none.
    async fn holder(api: &Api<Lease>) -> String {
        api.get("leader")
            .await
            .expect("lease")
            .spec
            .and_then(|s| s.holder_identity)
            .unwrap_or_default()
    }

    /// Sets the lease's last renewal `ago` in the past.
    async fn renewed_ago(api: &Api<Lease>, ago: Duration) {
        let mut lease = api.get("leader").await.expect("lease");
        let at = jiff_now() - k8s_openapi::jiff::SignedDuration::try_from(ago).expect("duration");
        lease.spec.get_or_insert_default().renew_time = Some(MicroTime(at));
        api.replace("leader", &PostParams::default(), &lease)
            .await
            .expect("lease rewritten");
    }

    #[tokio::test]
    async fn a_candidate_waits_for_an_unexpired_lease_and_takes_an_expired_one() {
        let double = KubeDouble::start().await.expect("double starts");
        let api: Api<Lease> = Api::namespaced(double.client().expect("client"), "default");
        let (a, b) = (config("replica-a"), config("replica-b"));
        assert!(
            try_acquire_or_renew(&api, &a).await.expect("round"),
            "a creates it"
        );
        assert!(
            try_acquire_or_renew(&api, &a).await.expect("round"),
            "a renews it"
        );
        // Renewed 59 s ago with a 60 s duration: still a's.
        renewed_ago(&api, Duration::from_secs(59)).await;
        assert!(!try_acquire_or_renew(&api, &b).await.expect("round"));
        assert_eq!(holder(&api).await, "replica-a");
        // Renewed 61 s ago: expired, b takes it and counts a transition.
        renewed_ago(&api, Duration::from_secs(61)).await;
        assert!(try_acquire_or_renew(&api, &b).await.expect("round"));
        let spec = api.get("leader").await.expect("lease").spec.expect("spec");
        assert_eq!(spec.holder_identity.as_deref(), Some("replica-b"));
        assert_eq!(spec.lease_transitions, Some(1));
        assert!(spec.acquire_time.is_some());
        // And a cannot take it back while b renews.
        assert!(!try_acquire_or_renew(&api, &a).await.expect("round"));
        assert_eq!(holder(&api).await, "replica-b");
        double.shutdown().await;
    }

    #[tokio::test]
    async fn only_the_holder_releases_and_a_released_lease_is_taken_at_once() {
        let double = KubeDouble::start().await.expect("double starts");
        let api: Api<Lease> = Api::namespaced(double.client().expect("client"), "default");
        let (a, b) = (config("replica-a"), config("replica-b"));
        assert!(try_acquire_or_renew(&api, &a).await.expect("round"));
        release(&api, &b).await.expect("a no-op");
        assert_eq!(holder(&api).await, "replica-a", "b does not hold it");
        release(&api, &a).await.expect("released");
        let spec = api.get("leader").await.expect("lease").spec.expect("spec");
        assert_eq!(spec.holder_identity, None);
        assert_eq!(spec.renew_time, None);
        // Renewed just now by a's clock and 60 s long, but released: b need not wait.
        assert!(try_acquire_or_renew(&api, &b).await.expect("round"));
        let spec = api.get("leader").await.expect("lease").spec.expect("spec");
        assert_eq!(spec.holder_identity.as_deref(), Some("replica-b"));
        assert_eq!(spec.lease_transitions, Some(1));
        double.shutdown().await;
    }

    #[tokio::test]
    async fn a_stopped_elect_says_so_and_releases_the_lease() {
        let double = KubeDouble::start().await.expect("double starts");
        let client = double.client().expect("client");
        let api: Api<Lease> = Api::namespaced(client.clone(), "default");
        let (leading_tx, mut leading) = watch::channel(false);
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let tenure = Arc::new(Tenure::default());
        let election = tokio::spawn(elect(
            client,
            config("replica-a"),
            (leading_tx, tenure.clone()),
            async {
                let _ = stop_rx.await;
            },
        ));
        leading.wait_for(|l| *l).await.expect("leads");
        assert_eq!(holder(&api).await, "replica-a");
        let _ = stop_tx.send(());
        election.await.expect("elect returns");
        assert!(!*leading.borrow(), "no longer leading");
        assert_eq!(holder(&api).await, "", "released");
        double.shutdown().await;
    }

    /// A TCP proxy to `target` that stops passing bytes (both ways, on every connection, open
    /// or new) once `stalled` is set: an API server that no longer answers.
    async fn stalling_proxy(
        target: std::net::SocketAddr,
        stalled: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) -> std::net::SocketAddr {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("proxy binds");
        let addr = listener.local_addr().expect("proxy address");
        tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let Ok(outbound) = tokio::net::TcpStream::connect(target).await else {
                    continue;
                };
                let (ri, wi) = inbound.into_split();
                let (ro, wo) = outbound.into_split();
                for (mut from, mut to) in [(ri, wo), (ro, wi)].map(|(r, w)| {
                    (
                        Box::new(r) as Box<dyn tokio::io::AsyncRead + Send + Unpin>,
                        Box::new(w) as Box<dyn tokio::io::AsyncWrite + Send + Unpin>,
                    )
                }) {
                    let stalled = stalled.clone();
                    tokio::spawn(async move {
                        let mut buf = vec![0u8; 16 * 1024];
                        loop {
                            let Ok(n) = from.read(&mut buf).await else {
                                return;
                            };
                            if n == 0 {
                                return;
                            }
                            while stalled.load(std::sync::atomic::Ordering::SeqCst) {
                                tokio::time::sleep(Duration::from_millis(20)).await;
                            }
                            if to.write_all(&buf[..n]).await.is_err() {
                                return;
                            }
                        }
                    });
                }
            }
        });
        addr
    }

    #[tokio::test]
    async fn a_holder_whose_api_server_stops_answering_steps_down_before_its_lease_ends() {
        let double = KubeDouble::start().await.expect("double starts");
        let target = double
            .url()
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .parse()
            .expect("double address");
        let stalled = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let proxy = stalling_proxy(target, stalled.clone()).await;
        let client = crate::client::connect(Some(&format!("http://{proxy}")))
            .await
            .expect("client");
        let config = LeaseConfig {
            lease_duration: Duration::from_secs(4),
            renew_every: Duration::from_millis(100),
            ..config("replica-a")
        };
        let (leading_tx, mut leading) = watch::channel(false);
        let tenure = Arc::new(Tenure::default());
        let election = tokio::spawn(elect(
            client,
            config,
            (leading_tx, tenure.clone()),
            std::future::pending(),
        ));
        leading.wait_for(|l| *l).await.expect("leads");
        stalled.store(true, std::sync::atomic::Ordering::SeqCst);
        // Without a bound on a round, the hung renewal would keep it leading for the client's
        // own read timeout (minutes), long after others may take the lease.
        tokio::time::timeout(Duration::from_secs(30), leading.wait_for(|l| !*l))
            .await
            .expect("stepped down while the api server hangs")
            .expect("election running");
        election.abort();
        double.shutdown().await;
    }
}
