//! The in-process server every gRPC test talks to: a router on a free loopback port, a channel
//! to it, and the sender whose drop stops it.

use tonic::transport::Channel;
use vernier_api::ApiRouter as Router;

/// Serves `router` on 127.0.0.1 and connects to it; the server runs until the sender drops.
#[allow(dead_code)] // each test binary compiles this module; not every one uses each helper
pub async fn serve(router: Router) -> (Channel, tokio::sync::oneshot::Sender<()>) {
    let (channel, _, tx) = serve_at(router).await;
    (channel, tx)
}

/// [`serve`], with the server's address for requests that name it.
#[allow(dead_code)] // each test binary compiles this module; not every one uses each helper
pub async fn serve_at(router: Router) -> (Channel, String, tokio::sync::oneshot::Sender<()>) {
    let listener = vernier_api::bind("127.0.0.1:0", "--listen").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(vernier_api::serve(router, listener, async {
        let _ = rx.await;
    }));
    let channel = Channel::from_shared(format!("http://{address}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    (channel, address, tx)
}

/// Medianstop after two trials, from the second step: the early-stopping spec the tests that
/// play Katib's controller send.
#[allow(dead_code)] // each test binary compiles this module; not every one uses each helper
pub fn medianstop_two_and_two() -> vernier_proto::api::EarlyStoppingSpec {
    use vernier_proto::api::{EarlyStoppingSetting, EarlyStoppingSpec};
    let setting = |name: &str| EarlyStoppingSetting {
        name: name.into(),
        value: "2".into(),
    };
    EarlyStoppingSpec {
        algorithm_name: "medianstop".into(),
        algorithm_settings: vec![setting("min_trials_required"), setting("start_step")],
    }
}

/// `name` with `settings`, as an experiment's algorithm spec.
#[allow(dead_code)] // each test binary compiles this module; not every one uses each helper
pub fn algorithm(name: &str, settings: &[(&str, &str)]) -> vernier_proto::api::AlgorithmSpec {
    use vernier_proto::api::{AlgorithmSetting, AlgorithmSpec};
    AlgorithmSpec {
        algorithm_name: name.into(),
        algorithm_settings: settings
            .iter()
            .map(|(n, v)| AlgorithmSetting {
                name: n.to_string(),
                value: v.to_string(),
            })
            .collect(),
    }
}

/// An objective on `metric` in direction `kind`, with `goal` and no additional metrics.
#[allow(dead_code)] // each test binary compiles this module; not every one uses each helper
pub fn objective(
    kind: vernier_proto::api::ObjectiveType,
    metric: &str,
    goal: f64,
) -> vernier_proto::api::ObjectiveSpec {
    vernier_proto::api::ObjectiveSpec {
        r#type: kind as i32,
        goal,
        objective_metric_name: metric.into(),
        additional_metric_names: vec![],
    }
}

/// What Katib's controller does with a reply's algorithm settings: each replaces the
/// experiment's setting of its name, or is added.
#[allow(dead_code)] // each test binary compiles this module; not every one uses each helper
pub fn merge_settings(
    exp: &mut vernier_proto::api::Experiment,
    settings: &[vernier_proto::api::AlgorithmSetting],
) {
    let own = &mut exp
        .spec
        .as_mut()
        .unwrap()
        .algorithm
        .as_mut()
        .unwrap()
        .algorithm_settings;
    for s in settings {
        match own.iter_mut().find(|o| o.name == s.name) {
            Some(o) => o.value = s.value.clone(),
            None => own.push(s.clone()),
        }
    }
}
