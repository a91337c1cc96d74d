//! kube-runtime against the double, the way Vernier's operator uses a cluster: a typed
//! `CustomResource` reconciled by a `Controller` that owns children, uses the `finalizer`
//! helper, server-side apply, `patch_status` and a `Recorder`; plus reflectors, streaming
//! lists, metadata watches, discovery, Leases, and the cleanup paths (deletecollection,
//! namespace and CRD deletion, dry runs).

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns panic on setup failures by design

use futures_util::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::events::v1::Event as K8sEvent;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, ResourceExt};
use kube::core::GroupVersionKind;
use kube::core::PartialObjectMeta;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event as RecorderEvent, EventType, Recorder, Reporter};
use kube::runtime::finalizer::{Event as Finalizer, finalizer};
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{CustomResource, Resource};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use vernier_kube_double::KubeDouble;

/// Guards against a hung test only; no assertion depends on it.
const PATIENCE: Duration = Duration::from_secs(120);

#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, PartialEq)]
#[kube(
    group = "example.com",
    version = "v1",
    kind = "Gadget",
    namespaced,
    status = "GadgetStatus",
    schema = "disabled"
)]
struct GadgetSpec {
    size: i64,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
struct GadgetStatus {
    observed_generation: Option<i64>,
}

fn gadget_crd() -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                 "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    }))
    .unwrap()
}

async fn install_gadgets(client: &kube::Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &gadget_crd())
        .await
        .unwrap();
    let established = await_condition(
        crds,
        "gadgets.example.com",
        conditions::is_crd_established(),
    );
    tokio::time::timeout(PATIENCE, established)
        .await
        .unwrap()
        .unwrap();
}

struct Context {
    client: kube::Client,
    cleaned: Mutex<Vec<String>>,
}

const FINALIZER: &str = "example.com/cleanup";

async fn reconcile(
    gadget: Arc<Gadget>,
    ctx: Arc<Context>,
) -> Result<Action, kube::runtime::finalizer::Error<kube::Error>> {
    let ns = gadget.namespace().unwrap();
    let gadgets: Api<Gadget> = Api::namespaced(ctx.client.clone(), &ns);
    finalizer(&gadgets, FINALIZER, gadget, |event| async {
        match event {
            Finalizer::Apply(gadget) => {
                let cms: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &ns);
                let owner = gadget.controller_owner_ref(&()).unwrap();
                let child = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": format!("{}-config", gadget.name_any()), "ownerReferences": [owner]},
                    "data": {"size": gadget.spec.size.to_string()}});
                cms.patch(&format!("{}-config", gadget.name_any()), &PatchParams::apply("gadget-controller").force(), &Patch::Apply(child))
                    .await?;
                let status = json!({"status": {"observedGeneration": gadget.metadata.generation}});
                gadgets.patch_status(&gadget.name_any(), &PatchParams::default(), &Patch::Merge(status)).await?;
                let recorder = Recorder::new(ctx.client.clone(), Reporter { controller: "gadget-controller".into(), instance: None });
                let event = RecorderEvent {
                    type_: EventType::Normal,
                    reason: "Reconciled".into(),
                    note: Some(format!("size {}", gadget.spec.size)),
                    action: "Reconcile".into(),
                    secondary: None,
                };
                recorder.publish(&event, &gadget.object_ref(&())).await?;
                Ok(Action::await_change())
            }
            Finalizer::Cleanup(gadget) => {
                ctx.cleaned.lock().unwrap().push(gadget.name_any());
                Ok(Action::await_change())
            }
        }
    })
    .await
}

fn error_policy(
    _: Arc<Gadget>,
    _: &kube::runtime::finalizer::Error<kube::Error>,
    _: Arc<Context>,
) -> Action {
    Action::requeue(Duration::from_millis(100))
}

#[tokio::test]
async fn a_controller_with_finalizer_owned_children_status_and_events_works() {
    let double = KubeDouble::start().await.unwrap();
    let client = double.client().unwrap();
    install_gadgets(&client).await;
    let gadgets: Api<Gadget> = Api::namespaced(client.clone(), "default");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let ctx = Arc::new(Context {
        client: client.clone(),
        cleaned: Mutex::new(Vec::new()),
    });
    let controller = Controller::new(gadgets.clone(), watcher::Config::default())
        .owns(cms.clone(), watcher::Config::default())
        .run(reconcile, error_policy, ctx.clone())
        .for_each(|_| async {});
    let controller = tokio::spawn(controller);

    let gadget = Gadget::new("g1", GadgetSpec { size: 3 });
    gadgets
        .create(&PostParams::default(), &gadget)
        .await
        .unwrap();
    let observed = |generation: i64| {
        move |g: Option<&Gadget>| {
            g.and_then(|g| g.status.as_ref())
                .and_then(|s| s.observed_generation)
                == Some(generation)
        }
    };
    tokio::time::timeout(
        PATIENCE,
        await_condition(gadgets.clone(), "g1", observed(1)),
    )
    .await
    .unwrap()
    .unwrap();
    let child = cms.get("g1-config").await.unwrap();
    assert_eq!(child.data.unwrap()["size"], "3");
    assert_eq!(child.metadata.owner_references.unwrap()[0].name, "g1");
    assert_eq!(
        gadgets.get("g1").await.unwrap().finalizers(),
        &[FINALIZER.to_owned()]
    );

    gadgets
        .patch(
            "g1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 4}})),
        )
        .await
        .unwrap();
    tokio::time::timeout(
        PATIENCE,
        await_condition(gadgets.clone(), "g1", observed(2)),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(
        cms.get("g1-config").await.unwrap().data.unwrap()["size"],
        "4"
    );

    let events: Api<K8sEvent> = Api::namespaced(client.clone(), "default");
    let recorded = events
        .list(&ListParams::default().fields("regarding.name=g1"))
        .await
        .unwrap();
    assert!(!recorded.items.is_empty());
    assert!(
        recorded
            .items
            .iter()
            .all(|e| e.reason.as_deref() == Some("Reconciled"))
    );

    let uid = gadgets.get("g1").await.unwrap().uid().unwrap();
    gadgets
        .delete("g1", &DeleteParams::default())
        .await
        .unwrap();
    tokio::time::timeout(
        PATIENCE,
        await_condition(gadgets.clone(), "g1", conditions::is_deleted(&uid)),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(*ctx.cleaned.lock().unwrap(), vec!["g1".to_owned()]);
    assert!(
        cms.get_opt("g1-config").await.unwrap().is_none(),
        "the child is garbage-collected"
    );
    controller.abort();
    double.shutdown().await;
}

#[tokio::test]
async fn reflectors_streaming_lists_and_metadata_watches_see_the_same_objects() {
    let double = KubeDouble::start().await.unwrap();
    let client = double.client().unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for name in ["a", "b"] {
        let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        cms.create(&PostParams::default(), &cm).await.unwrap();
    }
    let (reader, writer) = reflector::store();
    let config = watcher::Config::default().streaming_lists();
    let stream = reflector(writer, watcher(cms.clone(), config))
        .applied_objects()
        .boxed();
    let driver = tokio::spawn(stream.for_each(|_| async {}));
    tokio::time::timeout(PATIENCE, reader.wait_until_ready())
        .await
        .unwrap()
        .unwrap();
    let mut names: Vec<String> = reader.state().iter().map(|c| c.name_any()).collect();
    names.sort();
    assert_eq!(names, vec!["a", "b"]);

    let meta_api: Api<PartialObjectMeta<ConfigMap>> = Api::namespaced(client.clone(), "default");
    let mut meta_events = watcher(meta_api, watcher::Config::default())
        .applied_objects()
        .boxed();
    let mut seen = Vec::new();
    while seen.len() < 2 {
        seen.push(
            tokio::time::timeout(PATIENCE, meta_events.try_next())
                .await
                .unwrap()
                .unwrap()
                .unwrap()
                .name_any(),
        );
    }
    seen.sort();
    assert_eq!(seen, vec!["a", "b"]);
    let meta = cms.get_metadata("a").await.unwrap();
    assert_eq!(meta.types.unwrap().kind, "PartialObjectMetadata");
    cms.delete("a", &DeleteParams::default()).await.unwrap();
    let c: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "c"}})).unwrap();
    cms.create(&PostParams::default(), &c).await.unwrap();
    let next = tokio::time::timeout(PATIENCE, meta_events.try_next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(next.name_any(), "c");
    let gone = async {
        while reader
            .get(&reflector::ObjectRef::new("a").within("default"))
            .is_some()
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(PATIENCE, gone).await.unwrap();
    driver.abort();
    double.shutdown().await;
}

#[tokio::test]
async fn discovery_finds_builtins_and_crds() {
    let double = KubeDouble::start().await.unwrap();
    let client = double.client().unwrap();
    install_gadgets(&client).await;
    let discovery = kube::Discovery::new(client.clone()).run().await.unwrap();
    for (group, version, kind, plural, namespaced) in [
        ("example.com", "v1", "Gadget", "gadgets", true),
        ("", "v1", "Pod", "pods", true),
        ("coordination.k8s.io", "v1", "Lease", "leases", true),
        (
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            false,
        ),
    ] {
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let (resource, caps) = discovery
            .resolve_gvk(&gvk)
            .unwrap_or_else(|| panic!("{kind} not discovered"));
        assert_eq!(resource.plural, plural);
        assert_eq!(
            caps.scope == kube::discovery::Scope::Namespaced,
            namespaced,
            "{kind}"
        );
    }
    let (resource, caps) = kube::discovery::pinned_kind(
        &client,
        &GroupVersionKind::gvk("example.com", "v1", "Gadget"),
    )
    .await
    .unwrap();
    assert_eq!(resource.plural, "gadgets");
    assert!(
        caps.subresources
            .iter()
            .any(|(r, _)| r.plural == "gadgets/status" || r.plural == "status"),
        "{:?}",
        caps.subresources
    );
    double.shutdown().await;
}

#[tokio::test]
async fn leases_reject_a_stale_holder_update() {
    let double = KubeDouble::start().await.unwrap();
    let leases: Api<Lease> = Api::namespaced(double.client().unwrap(), "default");
    let lease: Lease = serde_json::from_value(json!({"metadata": {"name": "vernier-operator"},
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}))
    .unwrap();
    let created = leases.create(&PostParams::default(), &lease).await.unwrap();
    let mut by_a = created.clone();
    by_a.spec.as_mut().unwrap().renew_time = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(chrono_now()),
    );
    let mut by_b = created.clone();
    by_b.spec.as_mut().unwrap().holder_identity = Some("b".into());
    leases
        .replace("vernier-operator", &PostParams::default(), &by_a)
        .await
        .unwrap();
    let err = leases
        .replace("vernier-operator", &PostParams::default(), &by_b)
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(status) => {
            assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"))
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(
        leases
            .get("vernier-operator")
            .await
            .unwrap()
            .spec
            .unwrap()
            .holder_identity
            .as_deref(),
        Some("a")
    );
    double.shutdown().await;
}

fn chrono_now() -> k8s_openapi::jiff::Timestamp {
    k8s_openapi::jiff::Timestamp::now()
}

#[tokio::test]
async fn collections_namespaces_and_crds_clean_up_what_they_hold() {
    let double = KubeDouble::start().await.unwrap();
    let client = double.client().unwrap();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "team"}})).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "team");
    for (name, tier) in [("a", "x"), ("b", "x"), ("c", "y")] {
        let cm: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": name, "labels": {"tier": tier}}}))
                .unwrap();
        cms.create(&PostParams::default(), &cm).await.unwrap();
    }
    let dry: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "dry"}})).unwrap();
    let answered = cms
        .create(
            &PostParams {
                dry_run: true,
                ..PostParams::default()
            },
            &dry,
        )
        .await
        .unwrap();
    assert_eq!(answered.name_any(), "dry");
    assert!(
        cms.get_opt("dry").await.unwrap().is_none(),
        "a dry run stores nothing"
    );

    cms.delete_collection(
        &DeleteParams::default(),
        &ListParams::default().labels("tier=x"),
    )
    .await
    .unwrap();
    let left: Vec<String> = cms
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|c| c.name_any())
        .collect();
    assert_eq!(left, vec!["c"]);
    namespaces
        .delete("team", &DeleteParams::default())
        .await
        .unwrap();
    assert!(
        cms.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );

    install_gadgets(&client).await;
    let gadgets: Api<Gadget> = Api::namespaced(client.clone(), "default");
    gadgets
        .create(
            &PostParams::default(),
            &Gadget::new("g", GadgetSpec { size: 1 }),
        )
        .await
        .unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.delete("gadgets.example.com", &DeleteParams::default())
        .await
        .unwrap();
    match gadgets.list(&ListParams::default()).await.unwrap_err() {
        kube::Error::Api(status) => {
            assert_eq!(status.code, 404);
            assert_eq!(
                status.message,
                "the server could not find the requested resource"
            );
        }
        other => panic!("expected 404, got {other:?}"),
    }
    install_gadgets(&client).await;
    assert!(
        gadgets
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty(),
        "the CRD's objects went with it"
    );
    double.shutdown().await;
}
