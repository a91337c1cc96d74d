//! `vernier operator`: runs the Kubernetes operator (Experiment and Trial controllers, leader
//! election, `/healthz`, `/readyz`, `/metrics`) against a cluster or the `--kube-url` given.

use crate::Exit;
use crate::commands::plugins::Plugins;
use crate::out::errln;
use anyhow::Context as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use vernier_operator::jobs::{DEFAULT_TRIAL_RESOURCES, parse_trial_kinds};
use vernier_operator::{Context, LeaseConfig, OperatorConfig};

/// Options of `vernier operator`.
#[derive(Debug, clap::Args)]
pub struct OperatorArgs {
    /// Kubernetes API URL without credentials (e.g. `kubectl proxy`'s); default: kubeconfig or in-cluster.
    #[arg(long, env = "VERNIER_KUBE_URL")]
    pub kube_url: Option<String>,
    /// Watch only this namespace (for the namespaced RBAC variant); default: all namespaces.
    #[arg(long, env = "VERNIER_WATCH_NAMESPACE")]
    pub watch_namespace: Option<String>,
    /// Reconciles run at once per controller.
    #[arg(long, default_value_t = 8)]
    pub concurrency: u16,
    /// Job kinds trials may create, as Kind.version.group separated by commas (katib-config's
    /// trialResources)
    /// [default: Job.v1.batch,TFJob.v1.kubeflow.org,PyTorchJob.v1.kubeflow.org,XGBoostJob.v1.kubeflow.org,MPIJob.v1.kubeflow.org,TrainJob.v1alpha1.trainer.kubeflow.org].
    // clap prints a list default with spaces, the very form the flag refuses: hidden, and
    // written out above (a unit test keeps the two equal).
    #[arg(long, value_delimiter = ',', hide_default_value = true, default_values_t = DEFAULT_TRIAL_RESOURCES.iter().map(|s| s.to_string()).collect::<Vec<_>>())]
    pub trial_resources: Vec<String>,
    /// Address of /healthz, /readyz and /metrics.
    #[arg(long, default_value = "0.0.0.0:8080")]
    pub http_addr: SocketAddr,
    /// Address of the Katib-compatible gRPC API (DBManager for pushed metrics, Suggestion,
    /// EarlyStopping); loopback unless asked otherwise, as for `vernier serve`.
    #[arg(long, default_value = crate::commands::serve::DEFAULT_LISTEN, value_name = "ADDR")]
    pub grpc_listen: String,
    /// Image of the metrics-collector sidecar injected for the File and TensorFlowEvent
    /// collectors; it must provide the `vernier` binary on its PATH.
    #[arg(long, env = "VERNIER_COLLECTOR_IMAGE", default_value = vernier_operator::sidecar::DEFAULT_COLLECTOR_IMAGE)]
    pub collector_image: String,
    /// Where those sidecars report metrics (HOST:PORT): this operator's gRPC API as the
    /// trials' pods reach it, usually its Service.
    #[arg(long, env = "VERNIER_DB_MANAGER_ADDRESS", default_value = vernier_operator::sidecar::DEFAULT_DB_MANAGER_ADDRESS)]
    pub db_manager_address: String,
    /// At most how often, in seconds, a running trial's observation is written to its status
    /// (its log follower wakes it when new metrics arrive); pushed metrics are re-read this often.
    #[arg(long, default_value_t = 5)]
    pub observation_interval: u64,
    /// Name of the leader-election Lease.
    #[arg(long, default_value = "vernier-operator")]
    pub lease_name: String,
    /// Namespace of the leader-election Lease.
    #[arg(long, env = "POD_NAMESPACE", default_value = "vernier-system")]
    pub lease_namespace: String,
    /// This replica's identity in the Lease (default: the host name).
    #[arg(long, env = "POD_NAME")]
    pub identity: Option<String>,
}

pub async fn operator(db: &str, args: OperatorArgs, plugins: &Plugins) -> anyhow::Result<Exit> {
    let trial_kinds = parse_trial_kinds(&args.trial_resources)?;
    check_db_manager_address(&args.db_manager_address)?;
    let identity = args.identity.clone().unwrap_or_else(|| {
        std::env::var("HOSTNAME")
            .unwrap_or_else(|_| format!("vernier-operator-{}", std::process::id()))
    });
    let store = crate::db::connect(db)
        .await
        .with_context(|| format!("cannot open the store {}", vernier_store::redact_url(db)))?;
    let client = vernier_operator::client::connect(args.kube_url.as_deref()).await?;
    let trial_kinds = vernier_operator::jobs::with_served_plurals(&client, trial_kinds).await;
    let managed = Arc::new(OperatorTrials {
        client: client.clone(),
        namespace: args.watch_namespace.clone(),
    });
    let config = OperatorConfig {
        concurrency: args.concurrency.max(1),
        trial_kinds,
        namespace: args.watch_namespace.clone(),
        observation_interval: Duration::from_secs(args.observation_interval.max(1)),
        identity: identity.clone(),
        collector_image: args.collector_image.clone(),
        db_manager_address: args.db_manager_address.clone(),
        ..OperatorConfig::default()
    };
    let (grpc_addr, grpc_stop, grpc) = serve_grpc(&args.grpc_listen, &store, managed).await?;
    let metrics = Arc::new(vernier_operator::metrics::Metrics::new());
    let mut ctx = Context::new(client, store.clone(), config, metrics.clone()).with_early_stopping(
        Arc::new(|name, settings| {
            vernier_algorithms::build_early_stopper(name, settings).map_err(|e| e.to_string())
        }),
    );
    if let Some(services) = plugins.for_operator() {
        let served: Vec<String> = services.endpoints().into_keys().collect();
        errln!(
            "vernier operator {identity}: suggestions for {} come from their plugins",
            served.join(", ")
        );
        ctx = ctx.with_suggestion_services(services);
    }
    let ctx = Arc::new(ctx);
    let listener = tokio::net::TcpListener::bind(args.http_addr)
        .await
        .with_context(|| format!("cannot listen on --http-addr {}", args.http_addr))?;
    let http_addr = listener.local_addr().unwrap_or(args.http_addr);
    let app = vernier_operator::http::router(metrics, store);
    let http = tokio::spawn(async move { axum::serve(listener, app).await });
    errln!(
        "vernier operator {identity}: serving /healthz /readyz /metrics on {http_addr} and the gRPC API on {grpc_addr}"
    );
    let lease = LeaseConfig {
        name: args.lease_name,
        namespace: args.lease_namespace,
        identity,
        lease_duration: Duration::from_secs(15),
        renew_every: Duration::from_secs(2),
    };
    // Kubernetes stops pods with SIGTERM; Ctrl-C stops a local run.
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("cannot listen for SIGTERM")?;
    vernier_operator::run::run_with_leader_election(ctx, lease, async move {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    })
    .await;
    http.abort();
    let _ = grpc_stop.send(());
    let _ = grpc.await;
    Ok(Exit::Interrupted)
}

/// The address trial pods push metrics to must be `HOST:PORT` with a port above 0.
fn check_db_manager_address(address: &str) -> anyhow::Result<()> {
    let valid = address
        .rsplit_once(':')
        .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0));
    if !valid {
        anyhow::bail!(
            "--db-manager-address value {address:?} is not HOST:PORT; hint: give the address trial pods reach the operator's gRPC API at, e.g. {}",
            vernier_operator::sidecar::DEFAULT_DB_MANAGER_ADDRESS
        );
    }
    Ok(())
}

/// Serves the gRPC API on `listen` until the returned sender is used: the address bound (port
/// 0 asks for a free one), the stop, and the server's task. Trials push metrics to the same
/// DBManager as `vernier serve` offers; the operator and the gRPC API share only the store and
/// the `SetTrialStatus` hook composed here (neither crate depends on the other).
async fn serve_grpc(
    listen: &str,
    store: &vernier_store::SqlStore,
    managed: Arc<OperatorTrials>,
) -> anyhow::Result<(String, GrpcStop, GrpcTask)> {
    let router = vernier_api::router_with_managed_trials(store.clone(), managed)?;
    let listener = vernier_api::bind(listen, "--grpc-listen").await?;
    let addr = listener
        .local_addr()
        .map_or_else(|_| listen.to_string(), |a| a.to_string());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(vernier_api::serve(router, listener, async move {
        let _ = stopped.await;
    }));
    Ok((addr, stop, task))
}

type GrpcStop = tokio::sync::oneshot::Sender<()>;
type GrpcTask = tokio::task::JoinHandle<Result<(), vernier_api::ApiError>>;

/// `EarlyStopping.SetTrialStatus` for the operator's Trials: the hook the gRPC API calls.
pub struct OperatorTrials {
    pub client: kube::Client,
    pub namespace: Option<String>,
}

impl std::fmt::Debug for OperatorTrials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperatorTrials")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl vernier_api::ManagedTrials for OperatorTrials {
    async fn early_stop(&self, trial: &str) -> Result<vernier_api::ManagedOutcome, String> {
        use vernier_api::ManagedOutcome;
        use vernier_operator::set_status::{EarlyStopOutcome, early_stop_trial};
        let outcome = early_stop_trial(&self.client, self.namespace.as_deref(), trial)
            .await
            .map_err(|e| e.to_string())?;
        Ok(match outcome {
            EarlyStopOutcome::Stopped { .. } => ManagedOutcome::Stopped,
            EarlyStopOutcome::AlreadyEnded { state } => ManagedOutcome::AlreadyEnded {
                state: state.to_string(),
            },
            EarlyStopOutcome::NotFound => ManagedOutcome::NotManaged,
            EarlyStopOutcome::Ambiguous(namespaces) => ManagedOutcome::Refused(format!(
                "trial name {trial:?} exists in namespaces {}\nhint: send trial_name as NAMESPACE/NAME",
                namespaces.join(", ")
            )),
        })
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// The default written into the help is the one the flag has, in the form it takes.
    #[test]
    fn the_help_lists_the_default_trial_resources_as_the_flag_takes_them() {
        let mut cli = crate::Cli::command();
        let operator = cli.find_subcommand_mut("operator").expect("operator");
        let help = operator.render_long_help().to_string();
        let flat: String = help.split_whitespace().collect();
        let default = vernier_operator::jobs::DEFAULT_TRIAL_RESOURCES.join(",");
        assert!(flat.contains(&format!("[default:{default}]")), "{help}");
        // Whole, as one word: a space inside it is what the flag refuses.
        assert!(help.contains(&default), "{help}");
        assert!(!help.contains("[default: Job.v1.batch TFJob"), "{help}");
    }
}
