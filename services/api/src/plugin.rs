//! A client for external suggestion plugins: any server speaking `api.v1.beta1.Suggestion`
//! (a Katib suggestion image, or one written with Katib's stubs), called as Katib's controller
//! calls it, with a per-call deadline (Katib uses 60 s).

use std::time::Duration;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Status};
use vernier_core::Suggestions;
use vernier_engine::{ExternalRequest, ResolvedExperiment, SourceError};
use vernier_proto::api::{ValidateAlgorithmSettingsRequest, suggestion_client::SuggestionClient};

use crate::error::ApiError;
use crate::plugin_request::{read_reply, request_to_wire, wire_experiment};

/// Katib's per-call deadline for suggestion calls.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(60);

/// A lazily connected plugin; cheap to clone.
#[derive(Debug, Clone)]
pub struct PluginClient {
    address: String,
    client: SuggestionClient<Channel>,
}

/// What a failed call means for the caller: a plugin that cannot be reached or does not answer
/// in time is worth waiting for; an answer that is an error is a refusal.
fn call_failure(address: &str, s: &Status) -> SourceError {
    let text = format!("{:?}: {}", s.code(), s.message());
    match s.code() {
        Code::Unavailable | Code::DeadlineExceeded | Code::Cancelled => {
            SourceError::Unavailable(format!("{address}: {text}"))
        }
        // What a listener that is not a gRPC server (an HTTP/1 server, say) makes of a call.
        Code::Internal | Code::Unknown if s.message().contains("h2 protocol error") => {
            SourceError::Rejected(format!(
                "{address} does not answer as a gRPC server ({text})"
            ))
        }
        _ => SourceError::Rejected(format!("it answered with an error: {text}")),
    }
}

/// Refuses an address a plugin cannot be called at, before anything runs (building a client
/// needs the async runtime; this does not).
pub fn check_address(address: &str) -> Result<(), ApiError> {
    endpoint_of(address).map(|_| ())
}

fn endpoint_of(address: &str) -> Result<Endpoint, ApiError> {
    let uri = if address.contains("://") {
        address.to_string()
    } else {
        format!("http://{address}")
    };
    let invalid = |reason: String| {
        ApiError::Request(vernier_proto::ProtoError::Invalid {
            field: "suggestion plugin address".into(),
            value: address.into(),
            reason,
        })
    };
    let endpoint = Endpoint::from_shared(uri).map_err(|e| {
        invalid(format!(
            "is not a valid address ({e})\nhint: write host:port, e.g. 127.0.0.1:6789"
        ))
    })?;
    // Without a port, `http://` would dial port 80 and every call would wait and retry.
    match endpoint.uri().port_u16() {
        Some(_) => Ok(endpoint),
        None => Err(invalid(
            "has no port\nhint: write host:port, e.g. 127.0.0.1:6789".into(),
        )),
    }
}

impl PluginClient {
    /// `address` is `host:port` (or a full `http://` URI); nothing is dialled until the
    /// first call, so a plugin that starts later is picked up then.
    pub fn new(address: &str, deadline: Duration) -> Result<PluginClient, ApiError> {
        let endpoint = endpoint_of(address)?
            .connect_timeout(deadline.min(Duration::from_secs(5)))
            .timeout(deadline);
        Ok(PluginClient {
            address: address.to_string(),
            client: SuggestionClient::new(endpoint.connect_lazy())
                .max_decoding_message_size(crate::MAX_MESSAGE_BYTES)
                .max_encoding_message_size(crate::MAX_MESSAGE_BYTES),
        })
    }

    pub fn address(&self) -> &str {
        &self.address
    }

    /// `ValidateAlgorithmSettings` for `exp`; `UNIMPLEMENTED` counts as valid, as in Katib.
    pub async fn validate(&self, exp: &ResolvedExperiment) -> Result<(), SourceError> {
        let request = ValidateAlgorithmSettingsRequest {
            experiment: Some(wire_experiment(exp, None)),
        };
        match self
            .client
            .clone()
            .validate_algorithm_settings(request)
            .await
        {
            Ok(_) => Ok(()),
            Err(s) if s.code() == Code::Unimplemented => Ok(()),
            Err(s) => Err(call_failure(&self.address, &s)),
        }
    }

    /// `GetSuggestions` for `request`, its reply read as Katib's controller reads it.
    pub async fn suggest(&self, request: &ExternalRequest<'_>) -> Result<Suggestions, SourceError> {
        let reply = self
            .client
            .clone()
            .get_suggestions(request_to_wire(request))
            .await
            .map_err(|s| call_failure(&self.address, &s))?;
        read_reply(request, reply.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_address_without_a_port_is_refused_before_any_call() {
        // (address, accepted)
        let table = [
            ("127.0.0.1:7000", true),
            ("http://plugin.local:6789", true),
            ("127.0.0.1", false),
            ("notanaddr", false),
        ];
        let made = PluginClient::new("http://[bad", Duration::from_secs(1));
        let text = made.map(|_| ()).unwrap_err().to_string();
        assert!(
            text.starts_with(
                "suggestion plugin address: value \"http://[bad\" is not a valid address"
            ),
            "{text}"
        );
        assert!(text.contains("hint: write host:port"), "{text}");
        for (address, accepted) in table {
            let made = PluginClient::new(address, Duration::from_secs(1));
            assert_eq!(made.is_ok(), accepted, "{address}");
            if let Err(e) = made {
                let text = e.to_string();
                assert!(
                    text.contains(address) && text.contains("has no port"),
                    "{text}"
                );
                assert!(text.contains("hint: write host:port"), "{text}");
            }
        }
    }
}
