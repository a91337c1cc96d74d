//! How fast the double serves an operator-like load, for BENCHMARKS.md: N custom objects
//! created through the kube client (8 requests in flight) while a watcher follows them,
//! then each patched through `/status`, then deleted by garbage collection when their one
//! owner goes. `cargo run --release -p vernier-kube-double --example throughput -- 1000`.

use futures_util::{StreamExt, TryStreamExt};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::watcher;
use serde_json::json;
use std::time::Instant;
use vernier_kube_double::KubeDouble;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let count: usize = std::env::args().nth(1).map_or(Ok(1000), |n| n.parse())?;
    let double = KubeDouble::start().await?;
    let client = double.client()?;
    let crds: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
            "customresourcedefinitions",
        ),
    );
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "trials.kubeflow.org"},
        "spec": {"group": "kubeflow.org", "scope": "Namespaced",
                 "names": {"plural": "trials", "singular": "trial", "kind": "Trial"},
                 "versions": [{"name": "v1beta1", "served": true, "storage": true, "subresources": {"status": {}}}]}});
    crds.create(&PostParams::default(), &serde_json::from_value(crd)?)
        .await?;
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kubeflow.org", "v1beta1", "Trial"),
        "trials",
    );
    let trials: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &resource);
    let owner: DynamicObject =
        serde_json::from_value(json!({"apiVersion": "kubeflow.org/v1beta1",
        "kind": "Trial", "metadata": {"name": "owner"}}))?;
    let owner = trials.create(&PostParams::default(), &owner).await?;
    let owner_ref = json!({"apiVersion": "kubeflow.org/v1beta1", "kind": "Trial", "name": "owner",
        "uid": owner.metadata.uid, "controller": true});

    let watched = tokio::spawn({
        let trials = trials.clone();
        async move {
            let mut events = watcher(trials, watcher::Config::default()).boxed();
            let mut applied = 0usize;
            while let Ok(Some(event)) = events.try_next().await {
                if let watcher::Event::Apply(_) = event {
                    applied += 1;
                    if applied == count {
                        break;
                    }
                }
            }
            Instant::now()
        }
    });

    let started = Instant::now();
    futures_util::stream::iter(0..count)
        .map(|i| {
            let trials = trials.clone();
            let owner_ref = owner_ref.clone();
            async move {
                let trial: DynamicObject = serde_json::from_value(json!({"apiVersion": "kubeflow.org/v1beta1",
                    "kind": "Trial", "metadata": {"name": format!("t-{i}"), "ownerReferences": [owner_ref]},
                    "spec": {"parameterAssignments": [{"name": "lr", "value": "0.1"}]}}))?;
                trials.create(&PostParams::default(), &trial).await?;
                Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
            }
        })
        .buffer_unordered(8)
        .try_collect::<Vec<_>>()
        .await
        .map_err(|e| e.to_string())?;
    let created = started.elapsed();
    let watched = watched.await?.duration_since(started);

    let started = Instant::now();
    futures_util::stream::iter(0..count)
        .map(|i| {
            let trials = trials.clone();
            async move {
                let status =
                    json!({"status": {"conditions": [{"type": "Succeeded", "status": "True"}]}});
                trials
                    .patch_status(
                        &format!("t-{i}"),
                        &PatchParams::default(),
                        &Patch::Merge(status),
                    )
                    .await
            }
        })
        .buffer_unordered(8)
        .try_collect::<Vec<_>>()
        .await?;
    let patched = started.elapsed();

    let started = Instant::now();
    trials.delete("owner", &DeleteParams::background()).await?;
    let collected = started.elapsed();
    let left = trials.list(&Default::default()).await?.items.len();

    let per_second = |d: std::time::Duration| count as f64 / d.as_secs_f64();
    println!("objects: {count}");
    println!(
        "create (8 in flight): {:.0}/s ({:.2?})",
        per_second(created),
        created
    );
    println!("watcher saw all creations after {watched:.2?}");
    println!(
        "patch_status (8 in flight): {:.0}/s ({:.2?})",
        per_second(patched),
        patched
    );
    println!("garbage collection of {count} dependents: {collected:.2?}, {left} left");
    double.shutdown().await;
    Ok(())
}
