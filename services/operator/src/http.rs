//! The operator's HTTP endpoints: `/healthz` (the controllers run), `/readyz` (they run and
//! the store answers) and `/metrics` (Prometheus text).

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
        .route("/healthz", get(healthz))
        .route("/readyz", get(ready))
        .route("/metrics", get(metrics_text))
        .with_state(AppState { metrics, store })
}

/// A controller that stopped without being asked to (a panic, a watch stream that ended)
/// reconciles nothing more: the process is not healthy, so Kubernetes restarts it.
fn controllers_down(state: &AppState) -> Option<(StatusCode, String)> {
    state.metrics.stopped_reason().map(|reason| {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("controller stopped: {reason}"),
        )
    })
}

async fn healthz(State(state): State<AppState>) -> (StatusCode, String) {
    controllers_down(&state).unwrap_or((StatusCode::OK, "ok".to_string()))
}

async fn ready(State(state): State<AppState>) -> (StatusCode, String) {
    if let Some(down) = controllers_down(&state) {
        return down;
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_stopped_controller_fails_both_health_checks() {
        let state = AppState {
            metrics: Arc::new(Metrics::new()),
            store: SqlStore::connect(":memory:").await.unwrap(),
        };
        assert_eq!(healthz(State(state.clone())).await.0, StatusCode::OK);
        assert_eq!(ready(State(state.clone())).await.0, StatusCode::OK);
        state
            .metrics
            .controller_stopped("experiment controller panicked");
        state.metrics.controller_stopped("a later reason");
        let (code, text) = healthz(State(state.clone())).await;
        assert_eq!(code, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(text, "controller stopped: experiment controller panicked");
        assert_eq!(ready(State(state)).await.0, StatusCode::SERVICE_UNAVAILABLE);
    }
}
