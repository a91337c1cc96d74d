//! Measures the operator against the Kubernetes API test double, for BENCHMARKS.md: how fast
//! it creates Trial objects and their jobs for E experiments × P parallel trials, how long
//! until all of them run, its reconcile latency, and its resident memory.
//!
//! ```text
//! cargo build --release -p vernier-operator --example bench_double -p vernier-cli
//! target/release/examples/bench_double --experiments 1 --parallel 1000
//! target/release/examples/bench_double --experiments 120 --parallel 30 --operator target/release/vernier
//! target/release/examples/bench_double --experiments 4 --parallel 25 --trials 250 --outcome run
//! ```
//!
//! `--outcome hang` (default): jobs stay Running with an empty log, so the figures are the
//! operator's and the API double's work alone. `--outcome run`: each job's container prints
//! one `loss=` line and exits, so trials go the whole way (job, pod log, observation,
//! Succeeded, the next trial) until every experiment has `--trials` trials and succeeds.
//!
//! `--hold S` then waits S seconds and prints what the operator spent meanwhile (reconciles, CPU)
//! with every trial still running: the steady-state cost of a large experiment.
//!
//! `--collector push` makes the trials' collector `Push`: no pod log is followed, which shows
//! what following the logs costs.
//!
//! Without `--operator` the operator runs in this process, beside the double and the simulated
//! training operator, and the RSS printed is of all three. With `--operator BIN` the operator
//! is `BIN operator` in its own process, and the RSS is that process's alone (from /proc) and
//! the reconcile figures come from its `/metrics`.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use std::sync::Arc;
use std::time::{Duration, Instant};
use vernier_kube_double::KubeDouble;
use vernier_kube_double::training::{Outcome, SimulatedTrainingOperator, SimulationOptions};
use vernier_operator::metrics::Metrics;
use vernier_operator::objects::{experiment_resource, trial_resource};
use vernier_operator::{Context, LeaseConfig, OperatorConfig};

type Error = Box<dyn std::error::Error>;

struct Args {
    experiments: usize,
    parallel: usize,
    trials: usize,
    run: bool,
    push: bool,
    hold: u64,
    operator: Option<String>,
}

fn args() -> Result<Args, Error> {
    let mut a = Args {
        experiments: 1,
        parallel: 1000,
        trials: 0,
        run: false,
        push: false,
        hold: 0,
        operator: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag}: needs a value"));
        match flag.as_str() {
            "--experiments" => a.experiments = value()?.parse()?,
            "--parallel" => a.parallel = value()?.parse()?,
            "--trials" => a.trials = value()?.parse()?,
            "--outcome" => {
                a.run = match value()?.as_str() {
                    "run" => true,
                    "hang" => false,
                    other => {
                        return Err(format!("--outcome: value {other:?}; hint: run or hang").into());
                    }
                }
            }
            "--operator" => a.operator = Some(value()?),
            "--hold" => a.hold = value()?.parse()?,
            "--collector" => {
                a.push = match value()?.as_str() {
                    "push" => true,
                    "stdout" => false,
                    other => {
                        return Err(
                            format!("--collector: value {other:?}; hint: stdout or push").into(),
                        );
                    }
                }
            }
            other => return Err(format!("unknown flag {other:?}").into()),
        }
    }
    if a.trials == 0 {
        a.trials = a.parallel;
    }
    Ok(a)
}

/// The operator under test: in this process, or a child process.
enum Operator {
    InProcess {
        metrics: Arc<Metrics>,
        stop: tokio::sync::oneshot::Sender<()>,
        task: tokio::task::JoinHandle<()>,
        _db: tempfile::TempDir,
    },
    Child {
        child: std::process::Child,
        http: String,
        _db: tempfile::TempDir,
    },
}

impl Operator {
    async fn start(double: &KubeDouble, binary: Option<&str>) -> Result<Operator, Error> {
        let db = tempfile::tempdir()?;
        let url = format!("sqlite://{}", db.path().join("bench.db").display());
        if let Some(binary) = binary {
            let http = format!("127.0.0.1:{}", free_port()?);
            let grpc = format!("127.0.0.1:{}", free_port()?);
            let child = std::process::Command::new(binary)
                .args(["--db", &url, "operator", "--kube-url", double.url()])
                .args(["--http-addr", &http, "--grpc-listen", &grpc])
                .args(["--lease-namespace", "default", "--identity", "bench"])
                .stdout(std::process::Stdio::null())
                .spawn()?;
            return Ok(Operator::Child {
                child,
                http,
                _db: db,
            });
        }
        let store = vernier_store::SqlStore::connect(&url).await?;
        let metrics = Arc::new(Metrics::new());
        let config = OperatorConfig {
            identity: "bench".into(),
            ..OperatorConfig::default()
        };
        let ctx = Arc::new(Context::new(
            double.client()?,
            store,
            config,
            metrics.clone(),
        ));
        let lease = LeaseConfig {
            name: "bench".into(),
            namespace: "default".into(),
            identity: "bench".into(),
            lease_duration: Duration::from_secs(15),
            renew_every: Duration::from_secs(2),
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(vernier_operator::run::run_with_leader_election(
            ctx,
            lease,
            async move {
                let _ = stopped.await;
            },
        ));
        Ok(Operator::InProcess {
            metrics,
            stop,
            task,
            _db: db,
        })
    }

    async fn metrics_text(&self) -> String {
        match self {
            Operator::InProcess { metrics, .. } => metrics.encode(),
            Operator::Child { http, .. } => http_get(http, "/metrics").await.unwrap_or_default(),
        }
    }

    /// CPU seconds (user + system) the operator's process has used.
    fn cpu_seconds(&self) -> f64 {
        let pid = match self {
            Operator::InProcess { .. } => "self".to_string(),
            Operator::Child { child, .. } => child.id().to_string(),
        };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Fields after the parenthesised command name; utime and stime are the 12th and 13th.
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        // Clock ticks are 100 per second on Linux x86_64.
        (ticks(11) + ticks(12)) / 100.0
    }

    /// VmRSS and VmHWM of the operator's process, in KiB.
    fn memory(&self) -> (u64, u64) {
        let pid = match self {
            Operator::InProcess { .. } => "self".to_string(),
            Operator::Child { child, .. } => child.id().to_string(),
        };
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let kib = |key: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap_or(0)
        };
        (kib("VmRSS:"), kib("VmHWM:"))
    }

    async fn stop(self) {
        match self {
            Operator::InProcess { stop, task, .. } => {
                let _ = stop.send(());
                let _ = task.await;
            }
            Operator::Child { mut child, .. } => {
                let _ = std::process::Command::new("kill")
                    .args(["-TERM", &child.id().to_string()])
                    .status();
                let _ = child.wait();
            }
        }
    }
}

fn free_port() -> Result<u16, Error> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

async fn http_get(addr: &str, path: &str) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.ok()?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").as_bytes())
        .await
        .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).await.ok()?;
    Some(out.split_once("\r\n\r\n")?.1.to_string())
}

fn experiment_yaml(name: &str, parallel: usize, trials: usize, run: bool, push: bool) -> String {
    let collector = if push { "Push" } else { "StdOut" };
    let command = if run {
        r#"["sh", "-c", "echo loss=${trialParameters.x}"]"#
    } else {
        r#"["true", "${trialParameters.x}"]"#
    };
    format!(
        "apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata: {{name: {name}, namespace: default}}
spec:
  parallelTrialCount: {parallel}
  maxTrialCount: {trials}
  objective: {{type: minimize, objectiveMetricName: loss}}
  algorithm: {{algorithmName: random}}
  metricsCollectorSpec: {{collector: {{kind: {collector}}}}}
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
            containers: [{{name: main, image: x, command: {command}}}]
"
    )
}

/// Reconcile count, mean and the bucket bounds below which half and 99 % of reconciles
/// finished, from the histogram in the metrics text.
fn latency(text: &str, controller: &str) -> (f64, f64, f64, f64) {
    let label = format!("controller=\"{controller}\"");
    let value = |line: &str| {
        line.rsplit(' ')
            .next()
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    let prefix = "vernier_operator_reconcile_duration_seconds_";
    let mut sum = 0.0;
    let mut count = 0.0;
    let mut buckets: Vec<(f64, f64)> = Vec::new();
    for line in text.lines().filter(|l| l.contains(&label)) {
        let Some(rest) = line.strip_prefix(prefix) else {
            continue;
        };
        if rest.starts_with("sum") {
            sum = value(line);
        } else if rest.starts_with("count") {
            count = value(line);
        } else if rest.starts_with("bucket") {
            let le = rest
                .split("le=\"")
                .nth(1)
                .and_then(|r| r.split('"').next())
                .map(|v| {
                    if v == "+Inf" {
                        f64::INFINITY
                    } else {
                        v.parse().unwrap_or(f64::INFINITY)
                    }
                })
                .unwrap_or(f64::INFINITY);
            buckets.push((le, value(line)));
        }
    }
    let quantile = |q: f64| {
        buckets
            .iter()
            .find(|(_, n)| *n >= q * count)
            .map_or(f64::NAN, |(le, _)| *le)
    };
    let mean = if count > 0.0 { sum / count } else { 0.0 };
    (count, mean, quantile(0.5), quantile(0.99))
}

fn is_true(t: &DynamicObject, type_: &str) -> bool {
    t.data["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == type_ && c["status"] == "True")
    })
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let a = args()?;
    let total = a.experiments * a.trials;
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
            default_outcome: if a.run { Outcome::Run } else { Outcome::Hang },
            min_running: Duration::ZERO,
            ..SimulationOptions::default()
        },
    )
    .await?;
    let operator = Operator::start(&double, a.operator.as_deref()).await?;
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
    for e in 0..a.experiments {
        let yaml = experiment_yaml(&format!("bench-{e}"), a.parallel, a.trials, a.run, a.push);
        let exp: DynamicObject = yaml_serde::from_str(&yaml)?;
        experiments.create(&PostParams::default(), &exp).await?;
    }
    let (mut trials_at, mut jobs_at, mut running_at, mut done_at) = (None, None, None, None);
    let mut peak_running = 0usize;
    let deadline = Duration::from_secs(1800);
    while done_at.is_none() {
        tokio::time::sleep(Duration::from_millis(500)).await;
        if start.elapsed() > deadline {
            return Err(format!("not done after {deadline:?}").into());
        }
        let t = trials.list(&ListParams::default()).await?.items;
        let now = start.elapsed();
        let running = t.iter().filter(|t| is_true(t, "Running")).count();
        peak_running = peak_running.max(running);
        if a.run {
            let exps = experiments.list(&ListParams::default()).await?.items;
            if exps.iter().filter(|e| is_true(e, "Succeeded")).count() == a.experiments {
                done_at = Some(now);
            }
            continue;
        }
        if trials_at.is_none() && t.len() >= total {
            trials_at = Some(now);
        }
        if jobs_at.is_none() && jobs.list(&ListParams::default()).await?.items.len() >= total {
            jobs_at = Some(now);
        }
        if running_at.is_none() && running >= total {
            running_at = Some(now);
        }
        if trials_at.is_some() && jobs_at.is_some() && running_at.is_some() {
            done_at = Some(now);
        }
    }
    // Let the last status writes settle before reading memory and latency.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let held = if a.hold > 0 {
        let reconciles = |t: &str| latency(t, "trial").0 + latency(t, "experiment").0;
        let (cpu0, n0) = (
            operator.cpu_seconds(),
            reconciles(&operator.metrics_text().await),
        );
        tokio::time::sleep(Duration::from_secs(a.hold)).await;
        let (cpu1, n1) = (
            operator.cpu_seconds(),
            reconciles(&operator.metrics_text().await),
        );
        Some((cpu1 - cpu0, n1 - n0))
    } else {
        None
    };
    let text = operator.metrics_text().await;
    let (rss, hwm) = operator.memory();
    let rate = |d: Option<Duration>| {
        d.map_or("-".into(), |d| {
            format!(
                "{:.2} s, {:.0}/s",
                d.as_secs_f64(),
                total as f64 / d.as_secs_f64()
            )
        })
    };
    println!(
        "experiments {} × parallel {} (trials {total}, outcome {})",
        a.experiments,
        a.parallel,
        if a.run { "run" } else { "hang" }
    );
    if a.run {
        println!("all experiments succeeded: {}", rate(done_at));
    } else {
        println!("all trial objects created: {}", rate(trials_at));
        println!("all jobs created: {}", rate(jobs_at));
        println!("all trials Running: {}", rate(running_at));
    }
    println!("peak trials Running at once (sampled every 0.5 s): {peak_running}");
    for c in ["experiment", "trial"] {
        let (count, mean, p50, p99) = latency(&text, c);
        println!(
            "{c} reconciles: {count:.0}, mean {:.2} ms, p50 ≤ {:.0} ms, p99 ≤ {:.0} ms",
            mean * 1e3,
            p50 * 1e3,
            p99 * 1e3
        );
    }
    if let Some((cpu, n)) = held {
        println!(
            "holding for {} s afterwards: {n:.0} reconciles, operator CPU {:.1} % of one core",
            a.hold,
            cpu / a.hold as f64 * 100.0
        );
    }
    let whose = if a.operator.is_some() {
        "operator process"
    } else {
        "operator + API double + simulator in one process"
    };
    println!(
        "RSS ({whose}): {:.1} MiB now, {:.1} MiB peak",
        rss as f64 / 1024.0,
        hwm as f64 / 1024.0
    );
    operator.stop().await;
    sim.shutdown().await;
    double.shutdown().await;
    Ok(())
}
