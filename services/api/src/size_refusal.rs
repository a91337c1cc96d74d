//! Katib's servers are grpc-go, which refuses a request larger than its limit with
//! `RESOURCE_EXHAUSTED`; tonic refuses it with `OUT_OF_RANGE`, the code the Suggestion service
//! answers for a finished search. Every response passes through [`katib_code`], which
//! rewrites that one status and nothing else.

use http::{HeaderMap, HeaderValue};
use http_body_util::BodyExt;

/// The start of tonic's message for a request over `max_decoding_message_size`.
const TONIC_TOO_LARGE: &str = "Error, decoded message length too large";

/// `OUT_OF_RANGE` (11).
const OUT_OF_RANGE: &str = "11";

/// `RESOURCE_EXHAUSTED` (8).
const RESOURCE_EXHAUSTED: &str = "8";

/// The response with an oversized request's status given grpc-go's code, in its headers (a
/// trailers-only response) or in its trailers (tonic's unary refusal).
pub fn katib_code(
    response: http::Response<tonic::body::Body>,
) -> http::Response<tonic::body::Body> {
    let (mut parts, body) = response.into_parts();
    rewrite(&mut parts.headers);
    let body = body.map_frame(|frame| match frame.into_trailers() {
        Ok(mut trailers) => {
            rewrite(&mut trailers);
            http_body::Frame::trailers(trailers)
        }
        Err(data) => data,
    });
    http::Response::from_parts(parts, tonic::body::Body::new(body))
}

fn rewrite(headers: &mut HeaderMap) {
    let oversized = headers
        .get("grpc-status")
        .is_some_and(|v| v == OUT_OF_RANGE)
        && headers
            .get("grpc-message")
            .and_then(|m| m.to_str().ok())
            // gRPC percent-encodes the message; the prefix holds no other escaped character.
            .is_some_and(|m| m.replace("%20", " ").starts_with(TONIC_TOO_LARGE));
    if oversized {
        headers.insert("grpc-status", HeaderValue::from_static(RESOURCE_EXHAUSTED));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_size_refusal_changes_its_code() {
        let too_large = "Error, decoded message length too large: found 10485776 bytes, the limit is: 4194304 bytes";
        // (grpc-status, grpc-message, the status sent)
        let table = [
            (Some("11"), Some(too_large), Some("8")),
            (Some("11"), Some(&too_large.replace(' ', "%20")), Some("8")),
            (Some("11"), Some("search is complete"), Some("11")),
            (Some("3"), Some(too_large), Some("3")),
            (Some("0"), None, Some("0")),
            (None, None, None),
        ];
        for (status, message, want) in table {
            let mut h = HeaderMap::new();
            if let Some(s) = status {
                h.insert("grpc-status", HeaderValue::from_static(s));
            }
            if let Some(m) = message {
                h.insert("grpc-message", HeaderValue::from_str(m).unwrap());
            }
            rewrite(&mut h);
            let sent = h.get("grpc-status").map(|v| v.to_str().unwrap());
            assert_eq!(sent, want, "{status:?} {message:?}");
        }
    }
}
