//! Leader election on a `coordination.k8s.io/v1` Lease, so that of several operator replicas
//! exactly one reconciles. Hand-written (about a hundred lines) because kube-rs ships none and
//! the crates that do pin older kube releases; it follows client-go's rules: the holder renews
//! every `renew_every`, a candidate takes the lease only once `lease_duration` has passed
//! since the last renewal, every write carries the resourceVersion read (a lost race is a 409),
//! and a holder that cannot renew within `lease_duration` steps down on its own.

use chrono::Utc;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Client;
use kube::api::{Api, PostParams};
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

/// Runs forever, publishing on `leading` whether this replica holds the lease.
pub async fn elect(client: Client, config: LeaseConfig, leading: watch::Sender<bool>) {
    let api: Api<Lease> = Api::namespaced(client, &config.namespace);
    let mut last_renewed: Option<tokio::time::Instant> = None;
    loop {
        let held = match try_acquire_or_renew(&api, &config).await {
            Ok(held) => held,
            Err(e) => {
                eprintln!(
                    "warning: leader lease {}/{}: {e}",
                    config.namespace, config.name
                );
                false
            }
        };
        if held {
            last_renewed = Some(tokio::time::Instant::now());
        }
        let still_leader =
            last_renewed.is_some_and(|t| t.elapsed() < config.lease_duration) && held;
        if *leading.borrow() != still_leader {
            let _ = leading.send(still_leader);
        }
        tokio::time::sleep(config.renew_every).await;
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
    if holder != config.identity && !holder.is_empty() {
        let renewed = spec.renew_time.as_ref().map(|t| t.0);
        let ttl = spec.lease_duration_seconds.unwrap_or(duration_s).max(1);
        let expired = renewed.is_none_or(|t| {
            let age = jiff_now().duration_since(t);
            age.as_secs() >= i64::from(ttl)
        });
        if !expired {
            return Ok(false);
        }
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
