//! `vernier dashboard`: a read-only local web app over the database (or, with `--kube`, a
//! cluster's Experiments and Trials): the experiments list, an experiment page with live
//! plots and the trial table, and trial pages with curves and log tails. The page, script
//! and styles are compiled into the binary; nothing is fetched from the network.

mod routes;
mod source;

use crate::Exit;
use crate::commands::report::KubeArgs;
use crate::out::{errln, outln};
use anyhow::Context;
use std::net::{IpAddr, SocketAddr};

/// The arguments of `vernier dashboard`.
#[derive(Debug, Clone, clap::Args)]
pub struct DashboardArgs {
    /// Interface to listen on. The dashboard has no login: keep it on loopback and reach it
    /// from elsewhere through `ssh -L`, or put an authenticating reverse proxy in front.
    #[arg(long, default_value = "127.0.0.1", value_name = "ADDR")]
    pub host: IpAddr,
    /// Port to listen on (0 picks a free one and prints it).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    #[command(flatten)]
    pub kube: KubeArgs,
}

pub async fn dashboard(db: &str, args: DashboardArgs) -> anyhow::Result<Exit> {
    let source = source::DashSource::open(db, &args.kube).await?;
    let addr = SocketAddr::new(args.host, args.port);
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| {
        format!("cannot listen on {addr}\nhint: pass another --port, or 0 for a free one")
    })?;
    let local = listener
        .local_addr()
        .with_context(|| format!("cannot read the address bound for {addr}"))?;
    if !args.host.is_loopback() {
        errln!(
            "warning: the dashboard has no login, and anyone who can reach {local} can read every experiment, its parameters and its trial logs\nhint: keep --host 127.0.0.1 and use `ssh -L {}:127.0.0.1:{}`, or put a reverse proxy with authentication in front",
            local.port(),
            local.port()
        );
    }
    let from = if args.kube.kube {
        format!("namespace {} of the cluster", args.kube.namespace)
    } else {
        format!("database {}", vernier_store::redact_url(db))
    };
    outln!("vernier dashboard: http://{local}/ (read-only, {from}); Ctrl-C stops it");
    let app = routes::router(source, args.host.is_loopback());
    // No graceful shutdown: the server only reads, and open live-update streams would hold
    // a graceful one off forever.
    tokio::select! {
        served = axum::serve(listener, app) => {
            served.with_context(|| format!("the dashboard server on {local} stopped"))?
        }
        _ = crate::commands::serve::shutdown_signal() => {}
    }
    Ok(Exit::Succeeded)
}
