//! The loopback DBManager endpoint a local run offers its trials for pushed metrics
//! (`ReportObservationLog`, e.g. from the Katib SDK's `report_metrics`).

use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use vernier_store::SqlStore;

/// A running endpoint; [`PushEndpoint::stop`] shuts it down.
#[derive(Debug)]
pub struct PushEndpoint {
    /// `127.0.0.1:PORT`, given to trials in `VERNIER_DB_MANAGER_ADDRESS`.
    pub address: String,
    shutdown: oneshot::Sender<()>,
    task: JoinHandle<Result<(), vernier_api::ApiError>>,
}

impl PushEndpoint {
    /// Binds a free loopback port: only processes on this machine can push.
    pub async fn start(store: SqlStore) -> anyhow::Result<PushEndpoint> {
        let listener = vernier_api::bind("127.0.0.1:0", "--listen").await?;
        let address = listener.local_addr()?.to_string();
        let (shutdown, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(vernier_api::serve(
            vernier_api::db_manager_router(store),
            listener,
            async {
                let _ = rx.await;
            },
        ));
        Ok(PushEndpoint {
            address,
            shutdown,
            task,
        })
    }

    /// Stops accepting calls and waits for the ones in flight.
    pub async fn stop(self) {
        let _ = self.shutdown.send(());
        let _ = self.task.await;
    }
}
