//! The double through the ordinary kube client, as an operator uses a cluster: typed and
//! dynamic APIs, errors, optimistic concurrency, patches, the status subresource, finalizers,
//! garbage collection, watches and logs.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns panic on setup failures by design

use futures_util::{AsyncBufReadExt, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, PropagationPolicy,
};
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::watcher::{self, Event};
use serde_json::{Value, json};
use vernier_kube_double::KubeDouble;

fn api_error(err: kube::Error) -> Box<kube::core::Status> {
    match err {
        kube::Error::Api(status) => status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn widget_crd(status_subresource: bool) -> Value {
    let mut version = json!({"name": "v1", "served": true, "storage": true,
        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}});
    if status_subresource {
        version["subresources"] = json!({"status": {}});
    }
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
                 "versions": [version]}
    })
}

async fn install_widgets(client: &kube::Client) -> Api<DynamicObject> {
    let crds: Api<DynamicObject> = Api::all_with(client.clone(), &crd_resource());
    let crd: DynamicObject = serde_json::from_value(widget_crd(true)).unwrap();
    let created = crds.create(&PostParams::default(), &crd).await.unwrap();
    let established = created.data["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["type"] == "Established" && c["status"] == "True");
    assert!(established, "{created:?}");
    Api::namespaced_with(client.clone(), "default", &widget_resource())
}

fn crd_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        "customresourcedefinitions",
    )
}

fn widget_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    )
}

fn widget(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": spec}))
    .unwrap()
}

fn config_map(name: &str, labels: Value) -> ConfigMap {
    serde_json::from_value(
        json!({"metadata": {"name": name, "labels": labels}, "data": {"k": "v"}}),
    )
    .unwrap()
}

#[tokio::test]
async fn typed_create_get_list_and_the_api_servers_errors() {
    let double = KubeDouble::start().await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(double.client().unwrap(), "default");
    let a = cms
        .create(
            &PostParams::default(),
            &config_map("a", json!({"app": "web", "tier": "front"})),
        )
        .await
        .unwrap();
    let meta = &a.metadata;
    assert!(meta.uid.as_deref().is_some_and(|u| u.len() == 36));
    assert!(meta.creation_timestamp.is_some());
    assert_eq!(meta.generation, Some(1));
    assert_eq!(meta.namespace.as_deref(), Some("default"));
    cms.create(
        &PostParams::default(),
        &config_map("b", json!({"app": "db"})),
    )
    .await
    .unwrap();
    cms.create(&PostParams::default(), &config_map("c", json!({})))
        .await
        .unwrap();

    let err = api_error(
        cms.create(&PostParams::default(), &config_map("a", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(err.message, "configmaps \"a\" already exists");
    let err = api_error(cms.get("nope").await.unwrap_err());
    assert_eq!(
        (err.code, err.reason.as_str(), err.message.as_str()),
        (404, "NotFound", "configmaps \"nope\" not found")
    );

    let names = |list: kube::core::ObjectList<ConfigMap>| -> Vec<String> {
        list.items
            .into_iter()
            .map(|c| c.metadata.name.unwrap())
            .collect()
    };
    let cases = [
        ("app=web", vec!["a"]),
        ("app!=web", vec!["b", "c"]),
        ("app in (web,db)", vec!["a", "b"]),
        ("app notin (web)", vec!["b", "c"]),
        ("app", vec!["a", "b"]),
        ("!app", vec!["c"]),
    ];
    for (selector, expected) in cases {
        let got = names(
            cms.list(&ListParams::default().labels(selector))
                .await
                .unwrap(),
        );
        assert_eq!(got, expected, "{selector}");
    }
    let got = names(
        cms.list(&ListParams::default().fields("metadata.name=b"))
            .await
            .unwrap(),
    );
    assert_eq!(got, vec!["b"]);
    let err = api_error(
        cms.list(&ListParams::default().fields("data.k=v"))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (err.code, err.message.as_str()),
        (400, "field label not supported: data.k")
    );

    let mut generated = config_map("", json!({}));
    generated.metadata.name = None;
    generated.metadata.generate_name = Some("gen-".into());
    let made = cms
        .create(&PostParams::default(), &generated)
        .await
        .unwrap();
    let name = made.metadata.name.unwrap();
    assert!(name.starts_with("gen-") && name.len() == 9, "{name}");
    let mut nameless = config_map("", json!({}));
    nameless.metadata.name = None;
    let err = api_error(
        cms.create(&PostParams::default(), &nameless)
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert!(
        err.message.contains("name or generateName is required"),
        "{}",
        err.message
    );
    for (value, valid) in [
        ("ml team", false),
        ("-x", false),
        (&"a".repeat(64), false),
        ("", true),
        ("a.b_c-1", true),
    ] {
        let mut labelled = config_map(&format!("labelled-{valid}-{}", value.len()), json!({}));
        labelled.metadata.labels = Some([("team".to_string(), value.to_string())].into());
        match cms.create(&PostParams::default(), &labelled).await {
            Ok(_) => assert!(valid, "{value:?} accepted"),
            Err(e) => {
                let err = api_error(e);
                assert!(!valid && err.code == 422, "{value:?}: {}", err.message);
                assert!(
                    err.message.contains("metadata.labels: Invalid value"),
                    "{}",
                    err.message
                );
            }
        }
    }
    double.shutdown().await;
}

#[tokio::test]
async fn crd_resources_are_served_with_status_subresource_and_concurrency_control() {
    let double = KubeDouble::start().await.unwrap();
    let client = double.client().unwrap();
    let widgets = install_widgets(&client).await;
    let mut sent = widget("w1", json!({"size": 1}));
    sent.data["status"] = json!({"phase": "ignored on create"});
    let created = widgets.create(&PostParams::default(), &sent).await.unwrap();
    assert!(
        created.data.get("status").is_none(),
        "create drops status: {:?}",
        created.data
    );

    let patched = widgets
        .patch_status(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Running"}, "spec": {"size": 99}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.data["status"]["phase"], "Running");
    assert_eq!(patched.data["spec"]["size"], 1, "/status ignores spec");
    assert_eq!(
        patched.metadata.generation,
        Some(1),
        "status changes keep the generation"
    );

    let main = widgets
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Hacked"}, "spec": {"size": 2}})),
        )
        .await
        .unwrap();
    assert_eq!(
        main.data["status"]["phase"], "Running",
        "main endpoint ignores status"
    );
    assert_eq!(main.data["spec"]["size"], 2);
    assert_eq!(main.metadata.generation, Some(2));

    let again = widgets
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 2}})),
        )
        .await
        .unwrap();
    assert_eq!(
        again.metadata.resource_version, main.metadata.resource_version,
        "a no-op write keeps the resourceVersion"
    );

    let mut stale = patched.clone();
    stale.data["spec"] = json!({"size": 3});
    let err = api_error(
        widgets
            .replace("w1", &PostParams::default(), &stale)
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        err.message,
        "Operation cannot be fulfilled on widgets.example.com \"w1\": the object has been modified; please apply your changes to the latest version and try again"
    );
    let mut blind = patched.clone();
    blind.metadata.resource_version = None;
    let err = api_error(
        widgets
            .replace("w1", &PostParams::default(), &blind)
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    assert!(
        err.message.ends_with(
            "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"
        ),
        "{}",
        err.message
    );
    let mut fresh = widgets.get("w1").await.unwrap();
    fresh.data["spec"] = json!({"size": 3});
    let replaced = widgets
        .replace("w1", &PostParams::default(), &fresh)
        .await
        .unwrap();
    assert_eq!(replaced.data["spec"]["size"], 3);

    let json_patched = widgets
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::<()>::Json(
                serde_json::from_value(json!([
                    {"op": "add", "path": "/spec/color", "value": "red"},
                    {"op": "replace", "path": "/spec/size", "value": 4}
                ]))
                .unwrap(),
            ),
        )
        .await
        .unwrap();
    assert_eq!(
        json_patched.data["spec"],
        json!({"size": 4, "color": "red"})
    );
    let failed_test = widgets
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::<()>::Json(
                serde_json::from_value(json!([
                    {"op": "test", "path": "/spec/size", "value": 5}
                ]))
                .unwrap(),
            ),
        )
        .await
        .unwrap_err();
    assert_eq!(api_error(failed_test).code, 422);
    let strategic = widgets
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"color": "blue", "$retainKeys": ["color"]}})),
        )
        .await
        .unwrap();
    assert_eq!(strategic.data["spec"], json!({"size": 4, "color": "blue"}));
    double.shutdown().await;
}

#[tokio::test]
async fn server_side_apply_creates_tracks_managers_and_conflicts() {
    let double = KubeDouble::start().await.unwrap();
    let widgets = install_widgets(&double.client().unwrap()).await;
    let applied = widgets
        .patch(
            "w",
            &PatchParams::apply("alice"),
            &Patch::Apply(widget("w", json!({"size": 1}))),
        )
        .await
        .unwrap();
    assert_eq!(applied.data["spec"]["size"], 1);
    let managers = applied.metadata.managed_fields.unwrap();
    assert_eq!(managers[0].manager.as_deref(), Some("alice"));
    assert_eq!(managers[0].operation.as_deref(), Some("Apply"));

    let err = api_error(
        widgets
            .patch(
                "w",
                &PatchParams::apply("bob"),
                &Patch::Apply(widget("w", json!({"size": 2}))),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"alice\": .spec.size"
    );
    let forced = widgets
        .patch(
            "w",
            &PatchParams::apply("bob").force(),
            &Patch::Apply(widget("w", json!({"size": 2}))),
        )
        .await
        .unwrap();
    assert_eq!(forced.data["spec"]["size"], 2);

    let status = widgets
        .patch_status(
            "w",
            &PatchParams::apply("alice"),
            &Patch::Apply(json!({
            "apiVersion": "example.com/v1", "kind": "Widget", "status": {"ready": true}})),
        )
        .await
        .unwrap();
    assert_eq!(status.data["status"]["ready"], true);
    assert_eq!(status.data["spec"]["size"], 2);

    let missing_manager = widgets
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Apply(widget("w", json!({}))),
        )
        .await
        .unwrap_err();
    let err = api_error(missing_manager);
    assert_eq!(err.code, 400);
    assert!(
        err.message.contains("fieldManager: Required value"),
        "{}",
        err.message
    );
    double.shutdown().await;
}

#[tokio::test]
async fn finalizers_hold_deletion_until_removed() {
    let double = KubeDouble::start().await.unwrap();
    let widgets = install_widgets(&double.client().unwrap()).await;
    let mut w = widget("held", json!({}));
    w.metadata.finalizers = Some(vec!["example.com/cleanup".into()]);
    widgets.create(&PostParams::default(), &w).await.unwrap();

    let deleted = widgets
        .delete("held", &DeleteParams::default())
        .await
        .unwrap();
    let pending = deleted
        .left()
        .expect("a held object is returned, not a Status");
    assert!(pending.metadata.deletion_timestamp.is_some());
    let still = widgets.get("held").await.unwrap();
    assert!(still.metadata.deletion_timestamp.is_some());

    let err = api_error(
        widgets
            .patch(
                "held",
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"finalizers": ["example.com/cleanup", "new"]}})),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    assert!(
        err.message.contains("no new finalizers can be added"),
        "{}",
        err.message
    );

    widgets
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    let err = api_error(widgets.get("held").await.unwrap_err());
    assert_eq!(err.code, 404);
    double.shutdown().await;
}

fn owned_by(name: &str, owner: &DynamicObject) -> ConfigMap {
    let mut cm = config_map(name, json!({}));
    cm.metadata.owner_references = Some(vec![
        k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            api_version: "example.com/v1".into(),
            kind: "Widget".into(),
            name: owner.metadata.name.clone().unwrap(),
            uid: owner.metadata.uid.clone().unwrap(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        },
    ]);
    cm
}

#[tokio::test]
async fn garbage_collection_follows_owner_references_and_propagation() {
    let double = KubeDouble::start().await.unwrap();
    let client = double.client().unwrap();
    let widgets = install_widgets(&client).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");

    // Background: the owner goes, then its dependents.
    let owner = widgets
        .create(&PostParams::default(), &widget("bg", json!({})))
        .await
        .unwrap();
    cms.create(&PostParams::default(), &owned_by("bg-child", &owner))
        .await
        .unwrap();
    widgets
        .delete("bg", &DeleteParams::background())
        .await
        .unwrap();
    assert_eq!(api_error(cms.get("bg-child").await.unwrap_err()).code, 404);

    // A dependent with two owners survives while one owner remains.
    let first = widgets
        .create(&PostParams::default(), &widget("first", json!({})))
        .await
        .unwrap();
    let second = widgets
        .create(&PostParams::default(), &widget("second", json!({})))
        .await
        .unwrap();
    let mut shared = owned_by("shared-child", &first);
    let mut second_ref = owned_by("x", &second).metadata.owner_references.unwrap();
    shared
        .metadata
        .owner_references
        .as_mut()
        .unwrap()
        .append(&mut second_ref);
    cms.create(&PostParams::default(), &shared).await.unwrap();
    widgets
        .delete("first", &DeleteParams::default())
        .await
        .unwrap();
    assert!(cms.get("shared-child").await.is_ok());
    widgets
        .delete("second", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(
        api_error(cms.get("shared-child").await.unwrap_err()).code,
        404
    );

    // Foreground: the owner waits (with the foregroundDeletion finalizer) for a dependent
    // held by its own finalizer.
    let fg = widgets
        .create(&PostParams::default(), &widget("fg", json!({})))
        .await
        .unwrap();
    let mut held = owned_by("fg-child", &fg);
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    cms.create(&PostParams::default(), &held).await.unwrap();
    widgets
        .delete("fg", &DeleteParams::foreground())
        .await
        .unwrap();
    let waiting = widgets.get("fg").await.unwrap();
    assert_eq!(
        waiting.metadata.finalizers,
        Some(vec!["foregroundDeletion".to_owned()])
    );
    assert!(
        cms.get("fg-child")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some()
    );
    cms.patch(
        "fg-child",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": []}})),
    )
    .await
    .unwrap();
    assert_eq!(api_error(cms.get("fg-child").await.unwrap_err()).code, 404);
    assert_eq!(api_error(widgets.get("fg").await.unwrap_err()).code, 404);

    // Orphan: the dependent stays and loses its owner reference.
    let orphaner = widgets
        .create(&PostParams::default(), &widget("orph", json!({})))
        .await
        .unwrap();
    cms.create(&PostParams::default(), &owned_by("orph-child", &orphaner))
        .await
        .unwrap();
    let params = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Orphan),
        ..DeleteParams::default()
    };
    widgets.delete("orph", &params).await.unwrap();
    let orphan = cms.get("orph-child").await.unwrap();
    assert!(
        orphan
            .metadata
            .owner_references
            .unwrap_or_default()
            .is_empty()
    );
    double.shutdown().await;
}

#[tokio::test]
async fn watcher_sees_changes_and_relists_after_compaction() {
    let double = KubeDouble::start().await.unwrap();
    let client = double.client().unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    cms.create(
        &PostParams::default(),
        &config_map("before", json!({"app": "x"})),
    )
    .await
    .unwrap();
    let mut events =
        watcher::watcher(cms.clone(), watcher::Config::default().labels("app=x")).boxed();
    let mut initial = Vec::new();
    loop {
        match events.try_next().await.unwrap().unwrap() {
            Event::InitApply(cm) => initial.push(cm.metadata.name.unwrap()),
            Event::InitDone => break,
            Event::Init => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(initial, vec!["before"]);
    cms.create(
        &PostParams::default(),
        &config_map("unselected", json!({"app": "y"})),
    )
    .await
    .unwrap();
    cms.create(
        &PostParams::default(),
        &config_map("after", json!({"app": "x"})),
    )
    .await
    .unwrap();
    match events.try_next().await.unwrap().unwrap() {
        Event::Apply(cm) => assert_eq!(cm.metadata.name.as_deref(), Some("after")),
        other => panic!("unexpected {other:?}"),
    }
    // Relabelling out of the selector is a deletion for this watch.
    cms.patch(
        "after",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "z"}}})),
    )
    .await
    .unwrap();
    match events.try_next().await.unwrap().unwrap() {
        Event::Delete(cm) => assert_eq!(cm.metadata.name.as_deref(), Some("after")),
        other => panic!("unexpected {other:?}"),
    }
    cms.delete("before", &DeleteParams::default())
        .await
        .unwrap();
    match events.try_next().await.unwrap().unwrap() {
        Event::Delete(cm) => assert_eq!(cm.metadata.name.as_deref(), Some("before")),
        other => panic!("unexpected {other:?}"),
    }
    drop(events);

    // A raw watch from a compacted resourceVersion gets a 410 ERROR event.
    let list = cms.list(&ListParams::default()).await.unwrap();
    let old_rv = list.metadata.resource_version.unwrap();
    cms.create(&PostParams::default(), &config_map("later", json!({})))
        .await
        .unwrap();
    double.compact();
    let mut stream = cms
        .watch(&kube::api::WatchParams::default(), &old_rv)
        .await
        .unwrap()
        .boxed();
    match stream.next().await.unwrap().unwrap() {
        kube::api::WatchEvent::Error(status) => {
            assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
        }
        other => panic!("expected a 410 ERROR event, got {other:?}"),
    }
    double.shutdown().await;
}

#[tokio::test]
async fn pod_logs_are_served_and_followed() {
    let double = KubeDouble::start().await.unwrap();
    let pods: Api<Pod> = Api::namespaced(double.client().unwrap(), "default");
    let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "p"},
        "spec": {"containers": [{"name": "main", "image": "x"}, {"name": "side", "image": "y"}]}}))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let params = kube::api::LogParams {
        container: Some("main".into()),
        ..Default::default()
    };
    let err = api_error(pods.logs("p", &params).await.unwrap_err());
    assert_eq!(err.code, 400);
    assert_eq!(
        err.message,
        "container \"main\" in pod \"p\" is waiting to start: ContainerCreating"
    );
    let err = api_error(pods.logs("p", &Default::default()).await.unwrap_err());
    assert_eq!(
        err.message,
        "a container name must be specified for pod p, choose one of: [main side]"
    );

    let created = pods.get("p").await.unwrap();
    assert_eq!(
        created.status.unwrap().phase.as_deref(),
        Some("Pending"),
        "the API server's create default"
    );
    let sink = double.pod_logs().start("default", "p", "main");
    sink.write(b"epoch=1 loss=0.5\n");
    assert_eq!(pods.logs("p", &params).await.unwrap(), "epoch=1 loss=0.5\n");
    let follow = kube::api::LogParams {
        follow: true,
        ..params.clone()
    };
    let mut lines = pods.log_stream("p", &follow).await.unwrap().lines();
    assert_eq!(
        lines.try_next().await.unwrap().as_deref(),
        Some("epoch=1 loss=0.5")
    );
    sink.write(b"epoch=2 loss=0.25\n");
    assert_eq!(
        lines.try_next().await.unwrap().as_deref(),
        Some("epoch=2 loss=0.25")
    );
    sink.finish();
    assert_eq!(
        lines.try_next().await.unwrap(),
        None,
        "the stream ends with the container"
    );
    let tail = kube::api::LogParams {
        tail_lines: Some(1),
        ..params
    };
    assert_eq!(pods.logs("p", &tail).await.unwrap(), "epoch=2 loss=0.25\n");
    double.shutdown().await;
}

/// `timestamps=true` puts before each line the time its first byte was written, in the
/// kubelet's RFC 3339 form, the same in a read and in a followed stream.
#[tokio::test]
async fn pod_log_lines_carry_the_time_they_were_written() {
    let double = KubeDouble::start().await.unwrap();
    let pods: Api<Pod> = Api::namespaced(double.client().unwrap(), "default");
    let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "p"},
        "spec": {"containers": [{"name": "main", "image": "x"}]}}))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let sink = double.pod_logs().start("default", "p", "main");
    sink.write(b"loss=0.5\nloss=");
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    sink.write(b"0.25\nloss=0.125\n");
    let stamped = kube::api::LogParams {
        timestamps: true,
        ..Default::default()
    };
    let text = pods.logs("p", &stamped).await.unwrap();
    let lines: Vec<(&str, &str)> = text
        .lines()
        .map(|l| l.split_once(' ').expect("a time before each line"))
        .collect();
    let texts: Vec<&str> = lines.iter().map(|(_, l)| *l).collect();
    assert_eq!(texts, ["loss=0.5", "loss=0.25", "loss=0.125"], "{text}");
    let times: Vec<chrono::DateTime<chrono::FixedOffset>> = lines
        .iter()
        .map(|(t, _)| chrono::DateTime::parse_from_rfc3339(t).expect("RFC 3339"))
        .collect();
    assert_eq!(
        times[0], times[1],
        "a line is stamped when it begins: {text}"
    );
    assert!(times[2] > times[1], "{text}");
    assert_eq!(
        pods.logs("p", &Default::default()).await.unwrap(),
        "loss=0.5\nloss=0.25\nloss=0.125\n"
    );
    sink.finish();
    let follow = kube::api::LogParams {
        follow: true,
        ..stamped
    };
    let mut streamed = pods.log_stream("p", &follow).await.unwrap().lines();
    let mut followed = Vec::new();
    while let Some(line) = streamed.try_next().await.unwrap() {
        followed.push(line);
    }
    assert_eq!(followed, text.lines().collect::<Vec<_>>());
    double.shutdown().await;
}

#[tokio::test]
async fn raw_watches_resume_from_a_resource_version_send_bookmarks_and_time_out() {
    use kube::api::WatchEvent;
    let double = KubeDouble::start().await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(double.client().unwrap(), "default");
    cms.create(&PostParams::default(), &config_map("one", json!({})))
        .await
        .unwrap();
    let rv = cms
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    cms.create(&PostParams::default(), &config_map("two", json!({})))
        .await
        .unwrap();
    cms.patch(
        "one",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "changed"}})),
    )
    .await
    .unwrap();
    let params = kube::api::WatchParams {
        bookmarks: true,
        ..kube::api::WatchParams::default().timeout(2)
    };
    let mut stream = cms.watch(&params, &rv).await.unwrap().boxed();
    let mut seen = Vec::new();
    let mut bookmarks = 0;
    while let Some(event) = stream.try_next().await.unwrap() {
        match event {
            WatchEvent::Added(cm) => seen.push(format!("ADDED {}", cm.metadata.name.unwrap())),
            WatchEvent::Modified(cm) => {
                seen.push(format!("MODIFIED {}", cm.metadata.name.unwrap()))
            }
            WatchEvent::Deleted(cm) => seen.push(format!("DELETED {}", cm.metadata.name.unwrap())),
            WatchEvent::Bookmark(mark) => {
                let current = cms
                    .list(&ListParams::default())
                    .await
                    .unwrap()
                    .metadata
                    .resource_version
                    .unwrap();
                assert_eq!(mark.metadata.resource_version, current);
                bookmarks += 1;
            }
            WatchEvent::Error(e) => panic!("{e:?}"),
        }
    }
    assert_eq!(
        seen,
        vec!["ADDED two", "MODIFIED one"],
        "only changes after the resourceVersion, then the timeout ends it"
    );
    assert!(
        bookmarks >= 1,
        "an idle watch with bookmarks allowed gets them"
    );
    double.shutdown().await;
}
