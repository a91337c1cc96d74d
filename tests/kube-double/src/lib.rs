//! A Kubernetes API server test double and a simulated training operator, for tests only.
//!
//! No cluster can run where Vernier's tests run, so the Kubernetes operator is tested against
//! [`KubeDouble`]: an in-process HTTP server on `127.0.0.1:<ephemeral port>` that speaks the
//! real REST conventions for any group/version/resource, so the ordinary `kube` client (typed
//! `Api<K>`, `Api<DynamicObject>`, `watcher`, `reflector`, `Controller`) and
//! `kubectl --server` talk to it exactly as to a cluster. Beside it,
//! [`SimulatedTrainingOperator`] plays the Job controller and the Kubeflow training operator:
//! it creates pods for `batch/v1` Jobs and `kubeflow.org/v1` TFJob / PyTorchJob / XGBoostJob /
//! MPIJob, runs the primary container's command as a local process, serves its output as the
//! pod log, and moves pods and job conditions as the real controllers do.
//!
//! ```no_run
//! # async fn demo() -> Result<(), vernier_kube_double::DoubleError> {
//! use vernier_kube_double::{KubeDouble, SimulatedTrainingOperator, SimulationOptions};
//! let double = KubeDouble::start().await?;
//! let client: kube::Client = double.client()?; // default namespace "default"
//! let operator = SimulatedTrainingOperator::spawn(&double, SimulationOptions::default()).await?;
//! // ... create CRDs, Experiments, Jobs through `client`; `kubectl --server double.url()` ...
//! operator.shutdown().await;
//! double.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! # What the API server double does
//!
//! * **Paths**: `/api/v1/...` and `/apis/{group}/{version}/...`, namespaced
//!   (`/namespaces/{ns}/{resource}[/{name}[/status|/log]]`) and cluster-scoped; listing and
//!   watching a namespaced resource without a namespace covers all namespaces.
//! * **Resources**: the built-in kinds in [`Registry::with_builtins`] (pods with `/log`,
//!   jobs, namespaces, configmaps, secrets, services, events in core and `events.k8s.io`,
//!   `coordination.k8s.io` leases, apps, rbac, CRDs, ...); creating a
//!   `CustomResourceDefinition` serves its versions with its scope and status subresource
//!   (and answers with `Established`/`NamesAccepted` conditions); deleting it removes them and
//!   their objects. [`KubeDouble::register`] serves a type without a CRD.
//! * **Discovery**: `/api`, `/apis`, `/apis/{g}`, `/api/v1`, `/apis/{g}/{v}`, `/version`.
//! * **Verbs**: create (`generateName`, 409 `AlreadyExists`, 422 for invalid names and label
//!   values), get,
//!   list and watch with `labelSelector` (`=`, `==`, `!=`, `in`, `notin`, exists, `!`) and
//!   `fieldSelector` (`metadata.name`, `metadata.namespace`, and the per-kind fields the API
//!   server allows, e.g. `status.phase` for pods; others are 400), update (409 `Conflict` on a
//!   stale `resourceVersion`), patch (merge, strategic merge, JSON patch, apply), delete and
//!   deletecollection, `dryRun=All`, `PartialObjectMetadata` responses.
//! * **Watch**: see the [`watch`] module — ADDED/MODIFIED/DELETED/BOOKMARK, resume from a
//!   `resourceVersion`, 410 Expired as an ERROR event after [`KubeDouble::compact`] or when
//!   history (default 100,000 changes) ran out, `sendInitialEvents`, `timeoutSeconds`.
//! * **Metadata**: `uid`, `resourceVersion` (one global counter), `creationTimestamp`,
//!   `generation` (bumped when anything but metadata — and status, for resources with a
//!   status subresource — changes); no-op writes keep the resourceVersion and send no event.
//! * **Defaults**: a batch/v1 Job gets its generated `spec.selector`, the controller-uid and
//!   job-name labels on its pod template, and `parallelism`/`completions`/`backoffLimit`; a
//!   new pod is `Pending`, a new namespace `Active`.
//! * **Status subresource**: PUT/PATCH on `/status` change only `.status`; the main endpoint
//!   ignores `.status` changes and create drops `.status`, for resources that have one.
//! * **Deletion**: finalizers (`deletionTimestamp` set, object kept until they are removed;
//!   new finalizers refused while terminating), Foreground / Background / Orphan propagation
//!   (batch/v1 Jobs orphan by default, as on a cluster), preconditions, owner-reference garbage
//!   collection (an object whose every owner is gone is deleted, immediately rather than by a
//!   separate controller), namespaces delete their contents.
//! * **Logs**: `GET .../pods/{name}/log` with `container`, `follow=true` (streams until the
//!   container exits or the pod is deleted), `tailLines`, `limitBytes`; 400 with the kubelet's
//!   wording while the container has not started or when the container is ambiguous. Logs are
//!   written through [`KubeDouble::pod_logs`] (the simulated operator does this).
//! * **kubectl**: `kubectl --server <url>` (with `KUBECONFIG=/dev/null`) works for get, create
//!   `-f`, apply (client- and server-side), patch, label, wait, logs and delete; a minimal
//!   `/openapi/v3` tells it the server validates fields, so it needs no schemas. kubectl's typed
//!   generators (`kubectl create configmap ...`) send protobuf, which gets 415.
//! * **Errors**: `Status` objects with `reason`, `code`, `message`, `details` as the API server
//!   words them (see [`ApiStatus`]).
//!
//! # Deliberate simplifications
//!
//! * Server-side apply ([`apply`]): ownership is tracked per apply manager in real
//!   `managedFields`; lists are atomic; PUT and merge patches take no ownership.
//! * Strategic merge patch is a JSON merge patch without `$` directives (exact for CRDs; lists
//!   in built-in kinds are replaced, not merged by key).
//! * No OpenAPI schema validation, defaulting, admission, RBAC, authentication, or
//!   conversion between CRD versions (each version shows the stored object with its own
//!   `apiVersion`); namespaces need not exist before objects are created in them; `limit` is
//!   ignored (lists are never paginated); core and `events.k8s.io` events are stored
//!   separately; no `Table` output (kubectl prints from the objects).
//! * Foreground deletion waits for all dependents, not only those with `blockOwnerDeletion`.
//!   Pods have no grace period (deleted at once). Deleting a CRD removes its objects without
//!   waiting for their finalizers. `previous` and `sinceSeconds` of pods/log are ignored.
//!
//! # Simulated training operator
//!
//! See [`training`] for pod naming, labels, conditions and the fail/hang switches.

pub mod apply;
mod defaults;
mod deletion;
mod discovery;
mod error;
mod http;
mod logs;
mod logs_http;
mod meta;
pub mod patch;
mod query_flag;
mod registry;
mod response;
mod selector;
mod shared;
mod status;
mod store;
pub mod training;
pub mod watch;

pub use deletion::Propagation;
pub use error::DoubleError;
pub use logs::{LogSink, PodLogs};
pub use registry::{GroupResource, Registry, ResourceType};
pub use status::ApiStatus;
pub use training::{JobRef, Outcome, OutcomeRule, SimulatedTrainingOperator, SimulationOptions};

use std::sync::Arc;
use store::{ChangeType, Store};

/// Options for [`KubeDouble::start_with`].
#[derive(Debug, Clone)]
pub struct DoubleOptions {
    /// How many changes the watch history keeps; a watch from before them gets 410 Gone.
    pub history_limit: usize,
}

impl Default for DoubleOptions {
    fn default() -> Self {
        DoubleOptions {
            history_limit: 100_000,
        }
    }
}

/// A running fake Kubernetes API server. Dropping it stops the server.
#[derive(Debug)]
pub struct KubeDouble {
    url: String,
    store: Arc<Store>,
    logs: PodLogs,
    shutdown: tokio::sync::watch::Sender<bool>,
    server: Option<tokio::task::JoinHandle<()>>,
}

impl KubeDouble {
    /// Start a double with default options on an ephemeral port of 127.0.0.1.
    pub async fn start() -> Result<Self, DoubleError> {
        Self::start_with(DoubleOptions::default()).await
    }

    /// Start a double with `options`.
    pub async fn start_with(options: DoubleOptions) -> Result<Self, DoubleError> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(DoubleError::Bind)?;
        let address = listener.local_addr().map_err(DoubleError::Bind)?;
        let store = Arc::new(Store::new(options.history_limit));
        let logs = PodLogs::default();
        let (shutdown, shutdown_rx) = tokio::sync::watch::channel(false);
        let shared = Arc::new(http::Shared {
            store: store.clone(),
            logs: logs.clone(),
            address: address.to_string(),
            shutdown: shutdown_rx.clone(),
        });
        forget_logs_of_deleted_pods(&store, &logs, shutdown_rx.clone());
        let app = http::router(shared);
        let mut stop = shutdown_rx;
        let server = tokio::spawn(async move {
            let graceful = async move {
                let _ = stop.wait_for(|s| *s).await;
            };
            if let Err(e) = axum::serve(listener, app)
                .with_graceful_shutdown(graceful)
                .await
            {
                tracing::warn!("kube double server stopped: {e}");
            }
        });
        Ok(KubeDouble {
            url: format!("http://{address}"),
            store,
            logs,
            shutdown,
            server: Some(server),
        })
    }

    /// Base URL, e.g. `http://127.0.0.1:41234` (for `kubectl --server`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A kube client for this server, default namespace `default`.
    pub fn client(&self) -> Result<kube::Client, DoubleError> {
        let uri = self.url.parse().map_err(|source| DoubleError::Url {
            url: self.url.clone(),
            source,
        })?;
        kube::Client::try_from(kube::Config::new(uri)).map_err(|source| DoubleError::Client {
            url: self.url.clone(),
            source,
        })
    }

    /// Serve `rt` without creating a CustomResourceDefinition.
    pub fn register(&self, rt: ResourceType) -> Result<(), DoubleError> {
        for (field, value) in [
            ("plural", &rt.plural),
            ("kind", &rt.kind),
            ("version", &rt.version),
        ] {
            if value.is_empty() {
                return Err(DoubleError::InvalidResource {
                    field,
                    value: value.clone(),
                    hint: "set it to the name used in URLs and manifests",
                });
            }
        }
        self.store.lock().registry.register(rt);
        Ok(())
    }

    /// Forget the watch history: a watch resuming from any earlier resourceVersion gets 410
    /// Gone and must relist (what etcd compaction does).
    pub fn compact(&self) {
        self.store.lock().compact();
    }

    /// The container logs, for writing them (the simulated operator does) or reading them.
    pub fn pod_logs(&self) -> PodLogs {
        self.logs.clone()
    }

    /// Stop the server and end open watches and log streams.
    pub async fn shutdown(mut self) {
        let _ = self.shutdown.send(true);
        if let Some(server) = self.server.take() {
            let _ = server.await;
        }
    }
}

impl Drop for KubeDouble {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
    }
}

fn forget_logs_of_deleted_pods(
    store: &Arc<Store>,
    logs: &PodLogs,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    let mut changes = store.subscribe();
    let logs = logs.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                change = changes.recv() => match change {
                    Ok(c) if c.change == ChangeType::Deleted && c.resource.group.is_empty() && c.resource.resource == "pods" => {
                        logs.forget_pod(&c.namespace, meta::meta_str(&c.object, "name"));
                    }
                    Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                },
                _ = shutdown.wait_for(|s| *s) => return,
            }
        }
    });
}
