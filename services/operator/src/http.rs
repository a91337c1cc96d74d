//! The operator's HTTP endpoints: `/healthz` (the process answers), `/readyz` (the store
//! answers) and `/metrics` (Prometheus text).

use crate::metrics::Metrics;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use std::sync::Arc;
use vernier_store::SqlStore;

#[derive(Debug, Clone)]
struct AppState {
    metrics: Arc<Metrics>,
    store: SqlStore,
}

/// The router, used by the binary and the tests alike.
pub fn router(metrics: Arc<Metrics>, store: SqlStore) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(ready))
        .route("/metrics", get(metrics_text))
        .with_state(AppState { metrics, store })
}

async fn ready(State(state): State<AppState>) -> impl IntoResponse {
    match state.store.ping().await {
        Ok(()) => (StatusCode::OK, "ready".to_string()),
        Err(e) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("store not reachable: {e}"),
        ),
    }
}

async fn metrics_text(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.metrics.encode(),
    )
}
