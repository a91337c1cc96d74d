//! `vernier serve`: the Katib-compatible gRPC server (Suggestion, EarlyStopping, DBManager,
//! health, reflection) over one database, until SIGTERM or Ctrl-C.

use crate::Exit;
use crate::out::outln;
use anyhow::Context;
use vernier_store::OpenMode;

/// The default listen address: loopback only, Katib's port. Other interfaces need `--listen`.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:6789";

pub async fn serve(db: &str, listen: &str, create_db: bool) -> anyhow::Result<Exit> {
    let mode = if create_db {
        OpenMode::Create
    } else {
        OpenMode::Existing
    };
    let store = crate::db::open(db, mode).await?;
    let router = vernier_api::router(store.clone())?;
    let listener = vernier_api::bind(listen, "--listen").await?;
    let local = listener
        .local_addr()
        .with_context(|| format!("cannot read the address bound for --listen {listen}"))?;
    outln!(
        "vernier serve: api.v1.beta1 Suggestion, EarlyStopping, DBManager, health and reflection on {local} (database {})",
        vernier_store::redact_url(db)
    );
    vernier_api::serve(router, listener, shutdown_signal()).await?;
    store.close().await;
    outln!("vernier serve: stopped");
    Ok(Exit::Succeeded)
}

/// Resolves on the first SIGTERM or Ctrl-C; in-flight calls then finish before exit.
pub(crate) async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}
