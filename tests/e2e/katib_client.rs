//! Katib's Python SDK against `vernier operator`: a notebook's `KatibClient` (kubeflow-katib
//! on PyPI) tunes a function on a Kubernetes API server (the in-repo test double, with its
//! simulated job runner), and every SDK call it makes gets Katib's answer, for a function that
//! prints its metric (StdOut) and one that pushes it with `katib.report_metrics` (Push). Needs
//! the SDK and a `kubernetes` client before 36 (`.ci/run` installs both); without them a
//! `SKIPPED` line.

use crate::harness::{Sandbox, available_or_skip, text};
use crate::katib_interop::{Guard, script};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use vernier_kube_double::KubeDouble;
use vernier_kube_double::training::{SimulatedTrainingOperator, SimulationOptions};

/// Whether python3 has a KatibClient that works: the SDK and a `kubernetes` client before 36,
/// whose models the SDK's `create_experiment` passes.
fn katib_client(test: &str) -> bool {
    let found = Command::new("python3")
        .args([
            "-c",
            "import kubernetes; from kubeflow.katib import KatibClient; \
             assert int(kubernetes.__version__.split('.')[0]) < 36",
        ])
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .is_ok_and(|o| o.status.success());
    available_or_skip(
        found,
        test,
        "python3 has no working KatibClient (the kubeflow-katib package with a kubernetes client before 36)",
        "python3 -m pip install --user 'kubeflow-katib==0.19.0' 'kubernetes<36' grpcio",
    )
}

/// `katib_client_operator.py MODE ARGS...`, which prints one line per check.
fn sdk(args: &[&str]) -> std::process::Output {
    Command::new("python3")
        .arg(script("katib_client_operator.py"))
        .args(args)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run python3")
}

/// Starts `vernier operator` on free ports against `kube_url`, with `extra` flags, and returns
/// it with the address of its gRPC API, read from the line it prints once it serves.
fn operator(sb: &Sandbox, kube_url: &str, extra: &[&str]) -> (Guard, String) {
    let db = sb.db();
    let flags = [
        "operator",
        "--kube-url",
        kube_url,
        "--db",
        &db,
        "--http-addr",
        "127.0.0.1:0",
        "--grpc-listen",
        "127.0.0.1:0",
        "--lease-namespace",
        "default",
        "--observation-interval",
        "1",
    ];
    let mut child = sb
        .cmd(&[&flags[..], extra].concat())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start vernier operator");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let guard = Guard(child);
    let addr = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| {
            l.split_once("the gRPC API on ")
                .map(|(_, a)| a.trim().to_string())
        })
        .expect("the operator says where its gRPC API listens");
    // Keep reading, so the operator never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    (guard, addr)
}

/// The test double as a cluster, with its simulated job runner and Katib's CRDs installed.
struct Cluster {
    rt: tokio::runtime::Runtime,
    double: KubeDouble,
    sim: SimulatedTrainingOperator,
}

impl Cluster {
    fn start() -> Cluster {
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let (double, sim) = rt.block_on(async {
            let double = KubeDouble::start().await.expect("the double starts");
            let sim = SimulatedTrainingOperator::spawn(&double, SimulationOptions::default())
                .await
                .expect("the simulated job runner starts");
            (double, sim)
        });
        let crds = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds");
        let out = sdk(&["crds", double.url(), crds.to_str().unwrap()]);
        assert!(out.status.success(), "{}", text(&out));
        Cluster { rt, double, sim }
    }

    fn url(&self) -> String {
        self.double.url().to_string()
    }

    fn shutdown(self) {
        self.rt.block_on(async {
            self.sim.shutdown().await;
            self.double.shutdown().await;
        });
    }
}

#[test]
fn katib_client_tunes_a_function_through_the_operator() {
    if !katib_client("katib_client_tunes_a_function_through_the_operator") {
        return;
    }
    let cluster = Cluster::start();
    let url = cluster.url();
    let sb = Sandbox::new();
    let (op, grpc) = operator(&sb, &url, &[]);
    let out = sdk(&["tune", &url, &grpc]);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    for check in [
        "ok: delete_experiment removes it",
        "ok: the Push experiment succeeded",
    ] {
        assert!(all.contains(check), "{check:?} not in {all}");
    }
    assert_eq!(all.matches("observed what it pushed").count(), 2, "{all}");

    drop(op);
    cluster.shutdown();
}

/// Katib's suggestion services plug into the operator: `--suggestion-plugin` serves an
/// algorithm Vernier does not have (a Python plugin on Katib's stubs), and an experiment the
/// SDK creates with it runs on its proposals, asked for as Katib's controller asks.
#[test]
fn katib_client_tunes_with_a_suggestion_plugin_through_the_operator() {
    if !katib_client("katib_client_tunes_with_a_suggestion_plugin_through_the_operator") {
        return;
    }
    let cluster = Cluster::start();
    let sb = Sandbox::new();
    let log = sb.path().join("plugin.log");
    let (_plugin, port) = crate::katib_interop::start_plugin(&log, &[]);
    let flag = format!("my-ladder=127.0.0.1:{port}");
    let (op, _grpc) = operator(&sb, &cluster.url(), &["--suggestion-plugin", &flag]);
    let out = sdk(&["plugin", &cluster.url()]);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(
        all.contains("ok: its trials are the plugin's proposals"),
        "{all}"
    );
    let requests = std::fs::read_to_string(&log).unwrap();
    // Katib's semantics: the first request has no trials and asks for the parallel count.
    assert!(
        requests.starts_with("plugged trials=0 current=2 total=2 names=lr\n"),
        "{requests}"
    );
    drop(op);
    cluster.shutdown();
}
