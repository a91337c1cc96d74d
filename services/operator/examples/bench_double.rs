//! Measures the operator against the Kubernetes API test double, for BENCHMARKS.md: how fast
//! one operator creates Trial objects (and their jobs) for one experiment with N parallel
//! trials, its reconcile latency, and the resident memory of the process at the end.
//!
//! `cargo run --release -p vernier-operator --example bench_double -- 1000`
//!
//! Jobs hang (the simulated training operator runs nothing), so the figures are the operator's
//! and the API double's work alone. The RSS is of the whole process: operator, double and
//! simulator together, an upper bound for the operator.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use std::sync::Arc;
use std::time::{Duration, Instant};
use vernier_kube_double::KubeDouble;
use vernier_kube_double::training::{Outcome, SimulatedTrainingOperator, SimulationOptions};
use vernier_operator::metrics::Metrics;
use vernier_operator::objects::{experiment_resource, trial_resource};
use vernier_operator::{Context, LeaseConfig, OperatorConfig};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    let double = KubeDouble::start().await?;
    let client = double.client()?;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in [
        vernier_operator::crd::experiment_crd(),
        vernier_operator::crd::trial_crd(),
    ] {
        crds.create(&PostParams::default(), &crd).await?;
    }
    let sim = SimulatedTrainingOperator::spawn(
        &double,
        SimulationOptions {
            default_outcome: Outcome::Hang,
            ..SimulationOptions::default()
        },
    )
    .await?;
    let dir = tempfile::tempdir()?;
    let store = vernier_store::SqlStore::connect(&format!(
        "sqlite://{}",
        dir.path().join("b.db").display()
    ))
    .await?;
    let metrics = Arc::new(Metrics::new());
    let config = OperatorConfig {
        concurrency: 8,
        identity: "bench".into(),
        ..OperatorConfig::default()
    };
    let ctx = Arc::new(Context::new(client.clone(), store, config, metrics.clone()));
    let lease = LeaseConfig {
        name: "bench".into(),
        namespace: "default".into(),
        identity: "bench".into(),
        lease_duration: Duration::from_secs(15),
        renew_every: Duration::from_secs(2),
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let op = tokio::spawn(vernier_operator::run::run_with_leader_election(
        ctx,
        lease,
        async move {
            let _ = stopped.await;
        },
    ));
    let yaml = format!(
        "apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata: {{name: bench, namespace: default}}
spec:
  parallelTrialCount: {n}
  maxTrialCount: {n}
  objective: {{type: minimize, objectiveMetricName: loss}}
  algorithm: {{algorithmName: random}}
  parameters:
    - {{name: x, parameterType: double, feasibleSpace: {{min: \"0\", max: \"1\"}}}}
  trialTemplate:
    primaryContainerName: main
    trialParameters: [{{name: x, reference: x}}]
    trialSpec:
      apiVersion: batch/v1
      kind: Job
      spec:
        template:
          spec:
            restartPolicy: Never
            containers: [{{name: main, image: x, command: [\"true\", \"${{trialParameters.x}}\"]}}]
"
    );
    let exp: DynamicObject = yaml_serde::from_str(&yaml)?;
    let experiments: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &experiment_resource());
    let trials: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &trial_resource());
    let jobs: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &kube::api::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk("batch", "v1", "Job")),
    );
    let start = Instant::now();
    experiments.create(&PostParams::default(), &exp).await?;
    let mut trials_done = None;
    loop {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if trials_done.is_none() && trials.list(&ListParams::default()).await?.items.len() >= n {
            trials_done = Some(start.elapsed());
        }
        if trials_done.is_some() && jobs.list(&ListParams::default()).await?.items.len() >= n {
            break;
        }
    }
    let jobs_done = start.elapsed();
    let trials_done = trials_done.unwrap_or(jobs_done);
    let text = metrics.encode();
    let sum_count = |c: &str| -> (f64, f64) {
        let get = |suffix: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("vernier_operator_reconcile_duration_seconds_{suffix}{{controller=\"{c}\"}} ")))
                .and_then(|v| v.trim().parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        (get("sum"), get("count"))
    };
    let rss_kib = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:").map(|v| v.trim().to_string()))
        })
        .unwrap_or_default();
    println!("trials: {n}");
    println!(
        "trial objects created in {:.2} s: {:.0} trials/s",
        trials_done.as_secs_f64(),
        n as f64 / trials_done.as_secs_f64()
    );
    println!(
        "jobs created in {:.2} s: {:.0} jobs/s",
        jobs_done.as_secs_f64(),
        n as f64 / jobs_done.as_secs_f64()
    );
    for c in ["experiment", "trial"] {
        let (sum, count) = sum_count(c);
        println!(
            "{c} reconciles: {count:.0}, mean {:.2} ms",
            if count > 0.0 {
                sum / count * 1000.0
            } else {
                0.0
            }
        );
    }
    println!("process RSS (operator + API double + simulator): {rss_kib}");
    let _ = stop.send(());
    let _ = op.await;
    sim.shutdown().await;
    double.shutdown().await;
    Ok(())
}
