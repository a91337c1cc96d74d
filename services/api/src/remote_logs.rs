//! Reading trials' observation logs from the DBManager gRPC service a `GetEarlyStoppingRules`
//! request names in `db_manager_address` (Katib's katib-db-manager, or another `vernier
//! serve`), as Katib's medianstop service does: one `GetObservationLog` per trial, for one
//! metric. A Katib controller's trials report there, not to this server's store.

use crate::error::ApiError;
use std::time::Duration;
use tonic::transport::{Channel, Endpoint};
use vernier_proto::ProtoError;
use vernier_proto::api::{GetObservationLogRequest, db_manager_client::DbManagerClient};

/// How long reaching the DBManager may take before the request fails as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Per-call deadline: Katib's for its gRPC calls.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// Largest reply read: gRPC's own limit, as this server's replies (`crate::server`), since one
/// long trial's logs of one metric can pass tonic's 4 MiB default.
const MAX_REPLY_BYTES: usize = i32::MAX as usize;

/// A connected DBManager client, named by the address the request gave.
#[derive(Debug)]
pub(crate) struct RemoteLogs {
    address: String,
    client: DbManagerClient<Channel>,
}

/// `address` (`host:port` or a full `http://` URI) as an endpoint, or why it is none.
fn endpoint(address: &str) -> Result<Endpoint, ApiError> {
    let uri = if address.contains("://") {
        address.to_string()
    } else {
        format!("http://{address}")
    };
    let invalid = |reason: String| ProtoError::Invalid {
        field: "db_manager_address".into(),
        value: address.into(),
        reason,
    };
    let endpoint = Endpoint::from_shared(uri).map_err(|e| {
        invalid(format!(
            "is not a valid address ({e})\nhint: write host:port, e.g. katib-db-manager.kubeflow:6789"
        ))
    })?;
    // Without a port, `http://` would dial port 80, where no DBManager listens.
    if endpoint.uri().port_u16().is_none() {
        return Err(invalid(
            "has no port\nhint: write host:port, e.g. katib-db-manager.kubeflow:6789".into(),
        )
        .into());
    }
    Ok(endpoint
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(CALL_TIMEOUT))
}

impl RemoteLogs {
    /// Connects to the DBManager at `address`; unreachable is [`ApiError::DbManagerUnreachable`].
    pub(crate) async fn connect(address: &str) -> Result<RemoteLogs, ApiError> {
        let channel = endpoint(address)?
            .connect()
            .await
            .map_err(|e| unreachable(address, &e))?;
        Ok(RemoteLogs {
            address: address.to_string(),
            client: DbManagerClient::new(channel).max_decoding_message_size(MAX_REPLY_BYTES),
        })
    }

    /// The values of `trial`'s logs of `metric`, in the DBManager's (time) order.
    pub(crate) async fn values(
        &mut self,
        trial: &str,
        metric: &str,
    ) -> Result<Vec<String>, ApiError> {
        let reply = self
            .client
            .get_observation_log(GetObservationLogRequest {
                trial_name: trial.to_string(),
                metric_name: metric.to_string(),
                start_time: String::new(),
                end_time: String::new(),
            })
            .await
            .map_err(|s| ApiError::DbManagerUnreachable {
                address: self.address.clone(),
                reason: format!(
                    "GetObservationLog of trial {trial:?} failed: {:?}: {}",
                    s.code(),
                    s.message()
                ),
            })?
            .into_inner();
        Ok(reply
            .observation_log
            .map(|log| {
                log.metric_logs
                    .into_iter()
                    .filter_map(|ml| ml.metric)
                    // A DBManager that ignores `metric_name` still gives only this metric.
                    .filter(|m| m.name == metric)
                    .map(|m| m.value)
                    .collect()
            })
            .unwrap_or_default())
    }
}

/// The error for a DBManager that cannot be reached, with the transport's own reason (its
/// source chain, where "connection refused" or the DNS failure is).
fn unreachable(address: &str, e: &dyn std::error::Error) -> ApiError {
    let mut reason = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        reason.push_str(&format!(": {s}"));
        source = s.source();
    }
    ApiError::DbManagerUnreachable {
        address: address.to_string(),
        reason,
    }
}
