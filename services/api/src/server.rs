//! One router hosting every service, used alike by `vernier serve`, the push-metrics endpoint
//! of `vernier run` and the tests, plus binding and serving with graceful shutdown.

use crate::db_manager::DbManagerService;
use crate::early_stopping::{EarlyStoppingService, ManagedTrials};
use crate::error::ApiError;
use crate::health::HealthService;
use crate::suggestion::SuggestionService;
use tokio::net::TcpListener;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::transport::Server;
use tonic::transport::server::Router;
use tower::layer::util::{Identity, Stack};
use tower::util::MapResponseLayer;
use vernier_proto::FILE_DESCRIPTOR_SET;
use vernier_proto::api::db_manager_server::DbManagerServer;
use vernier_proto::api::early_stopping_server::EarlyStoppingServer;
use vernier_proto::api::suggestion_server::SuggestionServer;
use vernier_proto::health::health_server::HealthServer;
use vernier_store::SqlStore;

/// Largest request message accepted, in bytes. Larger requests are refused before they are
/// decoded (`RESOURCE_EXHAUSTED`, as by Katib's servers, with both sizes in the message), so a
/// huge message costs no memory beyond
/// the transport's buffers. A `GetSuggestions` request with 10,000 trials is about 2 MB.
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// Largest reply sent: gRPC's own limit (Katib's Go and Python servers set none below it), so
/// a reply the server has already computed, such as every log of a long trial, is never
/// refused on the way out; the client's receive limit decides.
pub const MAX_REPLY_BYTES: usize = i32::MAX as usize;

/// DBManager's request cap, larger: Katib's collectors send all of a trial's observation logs
/// in one `ReportObservationLog` (a million logs is about 45 MB). 128 MiB holds about 2.8
/// million logs.
pub const DB_MANAGER_MAX_MESSAGE_BYTES: usize = 128 * 1024 * 1024;

fn reflection() -> Result<
    (
        tonic_reflection::server::v1::ServerReflectionServer<
            impl tonic_reflection::server::v1::ServerReflection,
        >,
        tonic_reflection::server::v1alpha::ServerReflectionServer<
            impl tonic_reflection::server::v1alpha::ServerReflection,
        >,
    ),
    ApiError,
> {
    let v1 = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
        .build_v1()
        .map_err(|e| ApiError::Reflection(e.to_string()))?;
    let v1alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
        .build_v1alpha()
        .map_err(|e| ApiError::Reflection(e.to_string()))?;
    Ok((v1, v1alpha))
}

/// Suggestion, EarlyStopping, DBManager, Health and reflection over `store`.
pub fn router(store: SqlStore) -> Result<ApiRouter, ApiError> {
    router_with(store, EarlyStoppingService::new)
}

/// [`router`] with `SetTrialStatus` reaching trials managed elsewhere (the operator's).
pub fn router_with_managed_trials(
    store: SqlStore,
    managed: std::sync::Arc<dyn ManagedTrials>,
) -> Result<ApiRouter, ApiError> {
    router_with(store, |s| {
        EarlyStoppingService::new(s).with_managed_trials(managed)
    })
}

fn router_with(
    store: SqlStore,
    early_stopping: impl FnOnce(SqlStore) -> EarlyStoppingService,
) -> Result<ApiRouter, ApiError> {
    let (v1, v1alpha) = reflection()?;
    Ok(server_builder()
        .add_service(
            SuggestionServer::new(SuggestionService::default())
                .max_decoding_message_size(MAX_MESSAGE_BYTES)
                .max_encoding_message_size(MAX_REPLY_BYTES),
        )
        .add_service(
            EarlyStoppingServer::new(early_stopping(store.clone()))
                .max_decoding_message_size(MAX_MESSAGE_BYTES)
                .max_encoding_message_size(MAX_REPLY_BYTES),
        )
        .add_service(db_manager(store.clone()))
        .add_service(HealthServer::new(HealthService::new(store)))
        .add_service(v1)
        .add_service(v1alpha))
}

/// Only DBManager and Health: what a trial of a local run may push its metrics to.
pub fn db_manager_router(store: SqlStore) -> ApiRouter {
    server_builder()
        .add_service(db_manager(store.clone()))
        .add_service(HealthServer::new(HealthService::new(store)))
}

/// Every router: tonic's services behind the layer that gives their refusals Katib's codes.
pub type ApiRouter = Router<Stack<MapResponseLayer<KatibCodes>, Identity>>;

pub type KatibCodes = fn(http::Response<tonic::body::Body>) -> http::Response<tonic::body::Body>;

/// A server whose responses pass through the layer that gives refusals Katib's codes; every
/// router (and a test's own) starts from it.
pub fn server_builder() -> Server<Stack<MapResponseLayer<KatibCodes>, Identity>> {
    Server::builder().layer(MapResponseLayer::new(
        crate::size_refusal::katib_code as KatibCodes,
    ))
}

/// The DBManager service with its limits, the same in both routers.
fn db_manager(store: SqlStore) -> DbManagerServer<DbManagerService> {
    DbManagerServer::new(DbManagerService::new(store))
        .max_decoding_message_size(DB_MANAGER_MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_REPLY_BYTES)
}

/// Binds `addr` (`host:port`; port 0 picks a free one), given by the command-line `flag` that
/// its hint names (`--listen` of `vernier serve`, `--grpc-listen` of `vernier operator`).
pub async fn bind(addr: &str, flag: &str) -> Result<TcpListener, ApiError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| ApiError::Bind {
            addr: addr.to_string(),
            hint: bind_hint(source.kind(), flag),
            source,
        })
}

/// What to change when an address cannot be bound: its form, its port, or the address.
fn bind_hint(kind: std::io::ErrorKind, flag: &str) -> String {
    match kind {
        std::io::ErrorKind::InvalidInput => {
            format!("write the address as HOST:PORT, e.g. {flag} 127.0.0.1:6789")
        }
        std::io::ErrorKind::AddrInUse => format!("pick a free port with {flag} 127.0.0.1:PORT"),
        _ => format!("pick an address of this machine and a free port with {flag} HOST:PORT"),
    }
}

/// Serves `router` on `listener` until `shutdown` resolves, then finishes in-flight calls.
pub async fn serve(
    router: ApiRouter,
    listener: TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> Result<(), ApiError> {
    // Without TCP_NODELAY a reply written in two segments waits for the client's delayed ACK
    // (about 40 ms per call on Linux); tonic's own nodelay option only covers listeners it binds.
    let addr = listener
        .local_addr()
        .map_or_else(|_| "its address".to_string(), |a| a.to_string());
    let incoming = TcpListenerStream::new(listener).map(|conn| {
        conn.and_then(|stream| {
            stream.set_nodelay(true)?;
            Ok(stream)
        })
    });
    router
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await
        .map_err(|source| ApiError::Transport { addr, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_bad_or_busy_address_names_itself_and_what_to_change() {
        let busy = bind("127.0.0.1:0", "--listen")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let taken = busy
            .local_addr()
            .unwrap_or_else(|e| panic!("{e}"))
            .to_string();
        let cases = [
            (
                taken.as_str(),
                "hint: pick a free port with --grpc-listen 127.0.0.1:PORT",
            ),
            ("nonsense", "hint: write the address as HOST:PORT"),
        ];
        for (addr, hint) in cases {
            let Err(e) = bind(addr, "--grpc-listen").await else {
                panic!("{addr} was bound");
            };
            let text = e.to_string();
            assert!(
                text.starts_with(&format!("cannot listen on {addr}: ")),
                "{text}"
            );
            assert!(text.contains(hint), "{text}");
        }
    }
}
