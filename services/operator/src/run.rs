//! Composes the operator: the two controllers, started only while this replica holds the
//! leader lease, plus the HTTP endpoints. The binary and the tests both call [`run`].

use crate::context::Context;
use crate::leader::{LeaseConfig, elect};
use crate::objects::{experiment_resource, trial_resource};
use crate::{experiment, trial};
use futures_util::{FutureExt, StreamExt};
use kube::Client;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject};
use kube::runtime::controller::{Config, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use std::future::Future;
use std::sync::Arc;
use tokio::sync::{mpsc, watch};

fn api_for(
    client: &Client,
    ns: &Option<String>,
    resource: &kube::api::ApiResource,
) -> Api<DynamicObject> {
    match ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
        None => Api::all_with(client.clone(), resource),
    }
}

/// Runs both controllers until `shutdown` completes.
pub async fn run_controllers(
    ctx: Arc<Context>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let config = Config::default().concurrency(ctx.config.concurrency);
    let (stop_tx, stop_rx) = watch::channel(false);
    let stopped = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    // A panic unwinding through here, or a controller whose stream ends before it was asked
    // to stop, leaves nothing reconciling: the health endpoints must say so.
    let _panic_guard = StopOnPanic(&ctx.metrics);
    let watched = |name: &'static str| (name, stop_rx.clone(), ctx.metrics.clone());
    let (wake_tx, wake_rx) = mpsc::unbounded_channel();
    let trial_changes = trial_changes(&ctx, wake_tx);
    let experiments = Controller::new_with(
        api_for(&ctx.client, &ctx.config.namespace, &experiment_resource()),
        watcher::Config::default(),
        experiment_resource(),
    );
    let experiment_cache = experiments.store();
    let experiments = experiments
        .reconcile_on(trial_changes)
        .with_config(config.clone())
        .graceful_shutdown_on(stopped(stop_rx.clone()))
        .run(experiment::reconcile, experiment::error_policy, ctx.clone())
        .for_each(|r| async move {
            if let Err(e) = r {
                report_run("experiment", &e);
            }
        });
    let trials = trial_controller(&ctx, wake_rx).await;
    let trial_controller_cache = trials.store();
    let trials = trials
        .with_config(config)
        .graceful_shutdown_on(stopped(stop_rx.clone()))
        .run(trial::reconcile, trial::error_policy, ctx.clone())
        .for_each(|r| async move {
            if let Err(e) = r {
                report_run("trial", &e);
            }
        });
    let stop = async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    };
    // An experiment is only reconciled (and its lease taken) once the cache has it, so a
    // lease whose experiment is missing from the cache belongs to a deleted experiment.
    let exists = |ns: &str, name: &str| {
        let at = ObjectRef::new_with(name, experiment_resource()).within(ns);
        experiment_cache.get(&at).is_some()
    };
    let leases = ctx
        .leases
        .keep(&ctx.store, exists, stopped(stop_rx.clone()));
    tokio::join!(
        until_asked(experiments, experiment_cache.clone(), watched("experiment")),
        until_asked(trials, trial_controller_cache, watched("trial")),
        stop,
        leases
    );
    ctx.shared.stop();
}

/// One watch of all Trials fills the cache the experiment reconciler lists from; each change,
/// once in the cache, yields the owning experiment, so a reconcile never sees a cache older
/// than the change that caused it.
fn trial_changes(
    ctx: &Context,
    wake_tx: mpsc::UnboundedSender<ObjectRef<DynamicObject>>,
) -> impl futures_util::Stream<Item = ObjectRef<DynamicObject>> + Send + 'static {
    let trial_cache = reflector::store::Writer::new(trial_resource());
    ctx.shared.start(trial_cache.as_reader(), wake_tx);
    let api = api_for(&ctx.client, &ctx.config.namespace, &trial_resource());
    watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .reflect(trial_cache)
        .touched_objects()
        .filter_map(|t| async move {
            match t {
                Ok(trial) => owning_experiment(&trial),
                Err(e) => {
                    report("trial cache", &e);
                    None
                }
            }
        })
}

/// The Trial controller: woken by `wakes` (the experiment reconciler's) and by the jobs of
/// every trial kind the API server serves; a kind it does not serve is noted as not watched.
async fn trial_controller(
    ctx: &Context,
    mut wakes: mpsc::UnboundedReceiver<ObjectRef<DynamicObject>>,
) -> Controller<DynamicObject> {
    let (client, ns) = (&ctx.client, &ctx.config.namespace);
    let mut trials = Controller::new_with(
        api_for(client, ns, &trial_resource()),
        watcher::Config::default(),
        trial_resource(),
    )
    .reconcile_on(futures_util::stream::poll_fn(move |cx| wakes.poll_recv(cx)));
    for kind in &ctx.config.trial_kinds {
        if !served(client, ns, kind).await {
            ctx.shared.not_watched(&kind.kind, &kind.group);
            continue;
        }
        trials = trials.owns_with(
            api_for(client, ns, &kind.api_resource()),
            kind.api_resource(),
            watcher::Config::default(),
        );
    }
    trials
}

/// Runs one controller; if it ends before the stop signal, records that it stopped.
///
/// A controller asked to stop before its cache's first listing is complete is dropped instead
/// of awaited: kube-runtime holds every reconcile until the cache is ready, and the graceful
/// shutdown ends the watch that would fill it, so such a controller waits forever for a
/// readiness that cannot come. It has reconciled nothing, so there is nothing to wait for.
/// (A standby that gains the lease just as it is stopped comes here.)
async fn until_asked(
    controller: impl Future<Output = ()>,
    cache: Store<DynamicObject>,
    (name, stop, metrics): (
        &'static str,
        watch::Receiver<bool>,
        Arc<crate::metrics::Metrics>,
    ),
) {
    let mut asked = stop.clone();
    let never_filled = async move {
        let _ = asked.wait_for(|s| *s).await;
        // The controller, polled first below, has seen the stop too and no longer watches:
        // a cache not ready now stays so.
        if cache.wait_until_ready().now_or_never().is_some() {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        biased;
        _ = controller => {}
        _ = never_filled => {}
    }
    if !*stop.borrow() {
        metrics.controller_stopped(&format!("the {name} controller ended"));
    }
}

/// Marks the controllers stopped when a panic unwinds through [`run_controllers`]; dropped
/// normally (shutdown, a lost lease) it marks nothing.
struct StopOnPanic<'a>(&'a crate::metrics::Metrics);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0
                .controller_stopped("a controller panicked; see the log for where");
        }
    }
}

/// The Experiment that owns `trial`, by its controller owner reference.
fn owning_experiment(trial: &DynamicObject) -> Option<ObjectRef<DynamicObject>> {
    let owner = trial
        .owner_references()
        .iter()
        .find(|o| o.kind == "Experiment")?;
    let ns = trial.namespace()?;
    Some(ObjectRef::new_with(&owner.name, experiment_resource()).within(&ns))
}

/// Whether the API server serves `kind`; a kind whose CRD is not installed is not watched
/// (its trials fail with a hint when they try to create a job).
async fn served(client: &Client, ns: &Option<String>, kind: &crate::jobs::TrialKind) -> bool {
    let api = api_for(client, ns, &kind.api_resource());
    match api.list(&kube::api::ListParams::default().limit(1)).await {
        Ok(_) => true,
        Err(kube::Error::Api(e)) if e.code == 404 => {
            tracing::info!(
                "note: {}.{}.{} is not served by the API server (CRD not installed?); its jobs are not watched, so its trials are looked at every observation interval (restart vernier operator once it is installed)",
                kind.kind,
                kind.version,
                kind.group
            );
            false
        }
        // Forbidden or unreachable: watch anyway, the watcher reports and retries.
        Err(_) => true,
    }
}

fn report(controller: &str, e: &dyn std::fmt::Display) {
    // Reconcile errors were already reported by error_policy; these are watch failures and
    // objects that vanished, worth a line but not a stop.
    tracing::warn!("{controller} controller: {e}");
}

/// A controller's result: an object deleted while a reconcile of it was queued is expected
/// (every deleted experiment had several, which were most of the log), so it is said at
/// debug; anything else as [`report`].
fn report_run<R, Q>(controller: &str, e: &kube::runtime::controller::Error<R, Q>)
where
    R: std::error::Error + 'static,
    Q: std::error::Error + 'static,
{
    match e {
        kube::runtime::controller::Error::ObjectNotFound(_) => {
            tracing::debug!("{controller} controller: {e}")
        }
        _ => report(controller, e),
    }
}

/// Runs the controllers whenever this replica leads, until `shutdown` completes. Losing the
/// lease stops the controllers at once; regaining it starts them again. On `shutdown` the
/// controllers finish what they are doing, then the lease is released so that another replica
/// takes over without waiting for it to expire. Dropping the returned future instead (an
/// aborted task, a crash) releases nothing: the others take over when the lease expires.
pub async fn run_with_leader_election(
    ctx: Arc<Context>,
    lease: LeaseConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let (leading_tx, mut leading) = watch::channel(false);
    let (release_tx, release_rx) = tokio::sync::oneshot::channel::<()>();
    let mut election = AbortOnDrop(tokio::spawn(elect(
        ctx.client.clone(),
        lease,
        (leading_tx, ctx.tenure.clone()),
        async move {
            // Only an explicit send releases. A dropped sender means that this run was
            // dropped (an abort, a crash): then `AbortOnDrop` ends the election and nothing
            // may be released, so the dropped sender must not pass for a request.
            if release_rx.await.is_err() {
                std::future::pending::<()>().await;
            }
        },
    )));
    let mut shutdown = Box::pin(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            changed = leading.wait_for(|l| *l) => {
                if changed.is_err() { break; }
            }
        }
        let mut lost = leading.clone();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let mut controllers = AbortOnDrop(tokio::spawn(run_controllers(ctx.clone(), async move {
            let _ = stop_rx.await;
        })));
        let done = tokio::select! {
            _ = &mut shutdown => true,
            _ = lost.wait_for(|l| !*l) => false,
        };
        let _ = stop_tx.send(());
        // Losing the lease must stop reconciling now, not after in-flight work drains.
        if !done {
            controllers.0.abort();
        }
        let _ = (&mut controllers.0).await;
        // An aborted run_controllers did not get to clear these. Followers left running
        // would append to the observations the next leader's followers re-record.
        ctx.shared.stop();
        ctx.followers.stop_all();
        if done {
            break;
        }
    }
    // The controllers and followers have stopped; the release comes after them so that two
    // replicas never work at once.
    drop(ctx);
    let _ = release_tx.send(());
    let _ = (&mut election.0).await;
}

/// Aborts the task when dropped, so that a `run_with_leader_election` that is itself dropped
/// or aborted leaves no election renewing the lease (which would keep every other replica
/// from ever taking over) and no controllers reconciling without it.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Metrics;

    #[test]
    fn a_panic_through_the_controllers_marks_them_stopped_and_a_normal_drop_does_not() {
        let metrics = Metrics::new();
        drop(StopOnPanic(&metrics));
        assert_eq!(metrics.stopped_reason(), None);
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _guard = StopOnPanic(&metrics);
            panic!("a reconcile panicked");
        }));
        assert!(caught.is_err());
        assert!(
            metrics
                .stopped_reason()
                .is_some_and(|r| r.contains("panicked"))
        );
    }
}
