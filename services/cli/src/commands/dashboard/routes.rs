//! The dashboard's HTTP surface: the embedded page and assets, the JSON API the page reads
//! (`/api/experiments`, `/api/experiments/NAME`, `/api/experiments/NAME/trials/TRIAL`) and a
//! server-sent-events stream per experiment that says when to re-read it.

use super::source::DashSource;
use axum::Router;
use axum::extract::{Path, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures_util::stream::{self, Stream};
use serde_json::json;
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use vernier_report::ReportError;
use vernier_report::{ExperimentReport, dashboard};

const INDEX_HTML: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const APP_CSS: &str = include_str!("assets/app.css");

/// How often a live stream looks for changes: a new observation shows within this plus the
/// page's re-read.
const POLL: Duration = Duration::from_secs(1);

/// Experiments kept loaded, at most this many: a large experiment is read once, then its
/// page, its trial pages and its line in the list are served from memory until its
/// fingerprint changes.
const CACHED_REPORTS: usize = 16;

/// An experiment as last read: the fingerprint it was read at, the report (with the curves
/// the experiment page draws), that page once rendered, and when it was stored (the oldest
/// goes first when the cache is full).
#[derive(Clone)]
struct Cached {
    fingerprint: u64,
    report: Arc<ExperimentReport>,
    page: Option<Arc<String>>,
    stored: u64,
}

/// The shared state: the source, the experiments last read, by name, and the list page's
/// line of each experiment at its fingerprint (small, so every experiment's is kept: the list
/// shows no curves and is not read with them).
struct Dash {
    source: DashSource,
    cache: Mutex<HashMap<String, Cached>>,
    summaries: Mutex<HashMap<String, (u64, serde_json::Value)>>,
}

impl std::ops::Deref for Dash {
    type Target = DashSource;
    fn deref(&self) -> &DashSource {
        &self.source
    }
}

type Shared = Arc<Dash>;

pub fn router(source: DashSource, loopback: bool) -> Router {
    let app = Router::new()
        .route("/", get(index))
        .route("/experiments/{name}", get(index))
        .route("/experiments/{name}/", get(index))
        .route("/experiments/{name}/trials/{trial}", get(index))
        .route("/experiments/{name}/trials/{trial}/", get(index))
        .route("/assets/app.js", get(app_js))
        .route("/assets/app.css", get(app_css))
        .route("/api/experiments", get(list))
        .route("/api/experiments/{name}", get(experiment))
        .route("/api/experiments/{name}/trials/{trial}", get(trial))
        .route("/api/experiments/{name}/events", get(events))
        .with_state(Arc::new(Dash {
            source,
            cache: Mutex::new(HashMap::new()),
            summaries: Mutex::new(HashMap::new()),
        }));
    if loopback {
        app.layer(middleware::from_fn(loopback_host_only))
    } else {
        app
    }
}

/// A page served on loopback answers only requests addressed to loopback, so a web page
/// elsewhere cannot read it through a DNS name rebound to 127.0.0.1.
async fn loopback_host_only(req: Request, next: Next) -> Response {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    if host_is_loopback(host) {
        next.run(req).await
    } else {
        (
            StatusCode::FORBIDDEN,
            "the dashboard on loopback answers only localhost, 127.0.0.1 or [::1]\n",
        )
            .into_response()
    }
}

/// Whether a `Host` header names loopback (any port).
fn host_is_loopback(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

async fn index() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        INDEX_HTML,
    )
}

async fn app_js() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        APP_JS,
    )
}

async fn app_css() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], APP_CSS)
}

/// A JSON body (axum's `Json` needs a feature the workspace leaves off).
fn json_body(value: impl serde::Serialize) -> Response {
    match serde_json::to_string(&value) {
        Ok(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// An error as JSON, 404 for an unknown experiment or trial; the commands its hints quote
/// name the dashboard's database.
fn failure(src: &DashSource, e: anyhow::Error) -> Response {
    let body = json_body(json!({"error": src.explain(&e)}));
    (status_of(&e), body).into_response()
}

/// 404 for an unknown experiment or trial, 500 for anything else.
fn status_of(e: &anyhow::Error) -> StatusCode {
    let not_found = matches!(
        e.downcast_ref::<ReportError>(),
        Some(ReportError::ExperimentNotFound(_))
    ) || matches!(
        e.downcast_ref::<vernier_operator::OperatorError>(),
        Some(vernier_operator::OperatorError::ExperimentNotFound { .. })
    );
    match not_found {
        true => StatusCode::NOT_FOUND,
        false => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

async fn list(State(src): State<Shared>) -> Response {
    let mut out = Vec::new();
    let names = match src.names().await {
        Ok(n) => n,
        Err(e) => return failure(&src, e),
    };
    for name in names {
        match summary(&src, &name).await {
            Ok(line) => out.push(line),
            // One unreadable experiment must not hide the others.
            Err(e) => out.push(json!({"name": name, "error": src.explain(&e)})),
        }
    }
    json_body(out).into_response()
}

/// The list page's line of an experiment as of now: kept while its fingerprint is unchanged,
/// else from the cached report when that is current, else from a report read without curves.
async fn summary(src: &Dash, name: &str) -> anyhow::Result<serde_json::Value> {
    let (fingerprint, _) = src.fingerprint(name).await?;
    let kept = src.summaries.lock().ok().and_then(|s| s.get(name).cloned());
    if let Some((at, line)) = kept
        && at == fingerprint
    {
        return Ok(line);
    }
    let current = src.cache.lock().ok().and_then(|c| c.get(name).cloned());
    let line = match current.filter(|c| c.fingerprint == fingerprint) {
        Some(c) => dashboard::summary_json(&c.report),
        None => dashboard::summary_json(&src.report(name).await?),
    };
    if let Ok(mut summaries) = src.summaries.lock() {
        summaries.insert(name.to_string(), (fingerprint, line.clone()));
    }
    Ok(line)
}

async fn experiment(State(src): State<Shared>, Path(name): Path<String>) -> Response {
    match experiment_page(&src, &name).await {
        Ok(body) => (
            [(header::CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response(),
        Err(e) => failure(&src, e),
    }
}

/// The experiment as of now: from the cache while its fingerprint (the same one live updates
/// watch) is unchanged, else read again (with the page's curves) and cached.
async fn cached(src: &Dash, name: &str) -> anyhow::Result<Cached> {
    let (fingerprint, _) = src.fingerprint(name).await?;
    let earlier = src.cache.lock().ok().and_then(|c| c.get(name).cloned());
    if let Some(c) = &earlier
        && c.fingerprint == fingerprint
    {
        return Ok(c.clone());
    }
    let earlier = earlier.map(|c| c.report);
    let report = src.report_with_curves(name, earlier.as_deref()).await?;
    let fresh = Cached {
        fingerprint,
        report: Arc::new(report),
        page: None,
        stored: 0,
    };
    store_in_cache(src, name, fresh.clone());
    Ok(fresh)
}

/// Keeps `entry` as `name`'s, the oldest stored entry of another experiment going when the
/// cache is full.
fn store_in_cache(src: &Dash, name: &str, mut entry: Cached) {
    static STORED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    entry.stored = STORED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if let Ok(mut cache) = src.cache.lock() {
        if cache.len() >= CACHED_REPORTS && !cache.contains_key(name) {
            let oldest = cache.iter().min_by_key(|(_, c)| c.stored);
            if let Some(oldest) = oldest.map(|(n, _)| n.clone()) {
                cache.remove(&oldest);
            }
        }
        cache.insert(name.to_string(), entry);
    }
}

/// The experiment page's JSON, rendered once per fingerprint.
async fn experiment_page(src: &Dash, name: &str) -> anyhow::Result<Arc<String>> {
    let mut c = cached(src, name).await?;
    if let Some(page) = &c.page {
        return Ok(page.clone());
    }
    let page = Arc::new(serde_json::to_string(&dashboard::experiment_json(
        &c.report,
    ))?);
    c.page = Some(page.clone());
    store_in_cache(src, name, c);
    Ok(page)
}

async fn trial(State(src): State<Shared>, Path((name, trial)): Path<(String, String)>) -> Response {
    let report = match cached(&src, &name).await {
        Ok(c) => c.report,
        Err(e) => return failure(&src, e),
    };
    match src.trial(&report, &trial).await {
        Ok(Some(v)) => json_body(v).into_response(),
        Ok(None) => (
            StatusCode::NOT_FOUND,
            json_body(json!({"error": format!("experiment {name:?} has no trial {trial:?}")})),
        )
            .into_response(),
        Err(e) => failure(&src, e),
    }
}

/// Where a live stream is.
enum Live {
    /// Polling; the last fingerprint seen (`None` before the first).
    Polling(Option<u64>),
    /// The experiment finished or vanished: the stream ends.
    Done,
}

/// `update` events whenever the experiment's fingerprint changes (one at once, so a page
/// that connects late re-reads what it missed), `end` once it is finished, then the stream
/// closes; `gone` if it cannot be read any more.
async fn events(
    State(src): State<Shared>,
    Path(name): Path<String>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let stream = stream::unfold(Live::Polling(None), move |live| {
        let (src, name) = (src.clone(), name.clone());
        async move {
            let Live::Polling(last) = live else {
                return None;
            };
            loop {
                if last.is_some() {
                    tokio::time::sleep(POLL).await;
                }
                let event = match src.fingerprint(&name).await {
                    Err(e) => (
                        Event::default().event("gone").data(src.explain(&e)),
                        Live::Done,
                    ),
                    Ok((fp, true)) => (
                        Event::default().event("end").data(fp.to_string()),
                        Live::Done,
                    ),
                    Ok((fp, false)) if last != Some(fp) => (
                        Event::default().event("update").data(fp.to_string()),
                        Live::Polling(Some(fp)),
                    ),
                    Ok(_) => continue,
                };
                return Some((Ok(event.0), event.1));
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_experiment_is_404_from_a_database_or_a_cluster() {
        let table = [
            (ReportError::ExperimentNotFound("x".into()).into(), 404),
            (
                vernier_operator::OperatorError::ExperimentNotFound {
                    namespace: "default".into(),
                    name: "x".into(),
                }
                .into(),
                404,
            ),
            (anyhow::anyhow!("the database is gone"), 500),
        ];
        for (error, code) in table {
            let shown = format!("{error:#}");
            assert_eq!(status_of(&error).as_u16(), code, "{shown}");
        }
    }

    #[test]
    fn only_loopback_hosts_pass() {
        for (host, ok) in [
            ("127.0.0.1:8080", true),
            ("localhost:8080", true),
            ("LOCALHOST", true),
            ("[::1]:8080", true),
            ("127.0.0.2", true),
            ("evil.example:8080", false),
            ("192.168.1.5:8080", false),
            ("", false),
        ] {
            assert_eq!(host_is_loopback(host), ok, "{host}");
        }
    }
}
