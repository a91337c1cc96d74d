//! Measures the gRPC API through a real loopback connection: `GetSuggestions` round-trip
//! latency per algorithm with 100 and 500 trials in the request, and `ReportObservationLog`
//! throughput (rows/s) with 1 and 8 concurrent clients on the store given by `--db URL`
//! (default: a temporary SQLite file). Figures go to BENCHMARKS.md; nothing here asserts.
//!
//! `cargo run --release -p vernier-api --example grpc_bench -- [--db URL] [--repeats N]`;
//! with `--large`, only the largest Suggestion requests accepted (10,000 trials and proposals).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tonic::transport::Channel;
use vernier_api::proto::api::{
    AlgorithmSetting, AlgorithmSpec, Experiment, ExperimentSpec, FeasibleSpace,
    GetSuggestionsRequest, Metric, MetricLog, ObjectiveSpec, ObjectiveType, ObservationLog,
    ParameterSpec, ParameterType, ReportObservationLogRequest, Trial,
    db_manager_client::DbManagerClient, experiment_spec::ParameterSpecs,
    suggestion_client::SuggestionClient,
};
use vernier_api::proto::convert::{experiment_from_wire, trial_to_wire};
use vernier_core::{Assignment, ParamValue, TrialRecord, TrialState};
use vernier_store::SqlStore;

type Error = Box<dyn std::error::Error + Send + Sync>;

fn experiment(algorithm: &str) -> Experiment {
    let double = |name: &str, step: &str| ParameterSpec {
        name: name.into(),
        parameter_type: ParameterType::Double as i32,
        feasible_space: Some(FeasibleSpace {
            min: "0".into(),
            max: "1".into(),
            step: step.into(),
            ..Default::default()
        }),
    };
    let settings: Vec<(&str, &str)> = match algorithm {
        "hyperband" | "bohb" => vec![("r_l", "9"), ("resource_name", "epochs"), ("eta", "3")],
        "asha" => vec![
            ("resource_name", "epochs"),
            ("max_resource", "9"),
            ("eta", "3"),
        ],
        "pbt" => vec![
            ("suggestion_trial_dir", "/ckpt/"),
            ("n_population", "5"),
            ("truncation_threshold", "0.2"),
        ],
        _ => vec![("random_state", "1")],
    };
    Experiment {
        name: "bench".into(),
        spec: Some(ExperimentSpec {
            parameter_specs: Some(ParameterSpecs {
                parameters: vec![
                    double("x1", "0.02"),
                    double("x2", "0.02"),
                    double("x3", "0.02"),
                    ParameterSpec {
                        name: "epochs".into(),
                        parameter_type: ParameterType::Int as i32,
                        feasible_space: Some(FeasibleSpace {
                            min: "1".into(),
                            max: "9".into(),
                            ..Default::default()
                        }),
                    },
                ],
            }),
            objective: Some(ObjectiveSpec {
                r#type: ObjectiveType::Minimize as i32,
                goal: 0.0,
                objective_metric_name: "loss".into(),
                additional_metric_names: vec![],
            }),
            algorithm: Some(AlgorithmSpec {
                algorithm_name: algorithm.into(),
                algorithm_settings: settings
                    .into_iter()
                    .map(|(n, v)| AlgorithmSetting {
                        name: n.into(),
                        value: v.into(),
                    })
                    .collect(),
            }),
            ..Default::default()
        }),
    }
}

/// `n` succeeded trials on a grid-aligned pseudo-random sequence (Hyperband gets none: its
/// trials need its own labels, so it is measured on an empty history).
fn trials(exp: &Experiment, n: usize) -> Result<Vec<Trial>, Error> {
    let view = experiment_from_wire("experiment", Some(exp))?;
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % 51) as f64 / 50.0
    };
    Ok((0..n)
        .map(|i| {
            let (a, b, c) = (next(), next(), next());
            let record = TrialRecord {
                name: format!("bench-{i}"),
                assignment: Assignment(vec![
                    ("x1".into(), ParamValue::Double(a)),
                    ("x2".into(), ParamValue::Double(b)),
                    ("x3".into(), ParamValue::Double(c)),
                    ("epochs".into(), ParamValue::Int(9)),
                ]),
                state: TrialState::Succeeded,
                objective: Some((a - 0.3).powi(2) + (b - 0.6).powi(2) + c),
                labels: BTreeMap::new(),
                metrics: BTreeMap::new(),
            };
            trial_to_wire(&record, &view.objective, Some(0), Some(1_000_000))
        })
        .collect())
}

async fn suggestion_latency(channel: Channel, repeats: usize) -> Result<(), Error> {
    let mut client = SuggestionClient::new(channel);
    println!("| algorithm | trials in request | median round trip | min |");
    println!("|---|---:|---:|---:|");
    // darts and enas search a nasConfig, not this space: `cargo run --release -p
    // vernier-algorithms --example enas_learning` times them.
    for algorithm in vernier_algorithms::KNOWN_ALGORITHMS
        .iter()
        .filter(|a| !vernier_core::NAS_ALGORITHM_NAMES.contains(a))
    {
        for n in [100, 500] {
            let exp = experiment(algorithm);
            // Hyperband's, ASHA's, BOHB's and PBT's trials need the labels they hand out, so a
            // synthetic history is not meaningful for them.
            let history = if matches!(*algorithm, "hyperband" | "asha" | "pbt" | "bohb") {
                0
            } else {
                n
            };
            let request = GetSuggestionsRequest {
                experiment: Some(exp.clone()),
                trials: trials(&exp, history)?,
                current_request_number: 1,
                total_request_number: history as i32 + 1,
            };
            let mut times: Vec<Duration> = Vec::with_capacity(repeats);
            for _ in 0..repeats {
                let start = Instant::now();
                client.get_suggestions(request.clone()).await?;
                times.push(start.elapsed());
            }
            times.sort();
            println!(
                "| {algorithm} | {history} | {:.2} ms | {:.2} ms |",
                times[times.len() / 2].as_secs_f64() * 1e3,
                times[0].as_secs_f64() * 1e3
            );
        }
    }
    Ok(())
}

/// The largest requests the Suggestion service accepts: 10,000 proposals asked at once, a
/// 10,000-trial history, and both. One call each; these show the work per request is bounded.
async fn large_requests(channel: Channel) -> Result<(), Error> {
    let mut client = SuggestionClient::new(channel);
    println!("| algorithm | trials in request | asked | round trip |");
    println!("|---|---:|---:|---:|");
    for algorithm in ["tpe", "multivariate-tpe", "bayesianoptimization"] {
        for (history, asked) in [(0, 10_000), (10_000, 1), (10_000, 10_000)] {
            let exp = experiment(algorithm);
            let request = GetSuggestionsRequest {
                experiment: Some(exp.clone()),
                trials: trials(&exp, history)?,
                current_request_number: asked,
                total_request_number: history as i32 + asked,
            };
            let start = Instant::now();
            let outcome = match client.get_suggestions(request).await {
                Ok(r) => format!("{} proposals", r.into_inner().parameter_assignments.len()),
                Err(status) => format!("{:?}", status.code()),
            };
            println!(
                "| {algorithm} | {history} | {asked} | {:.2} s ({outcome}) |",
                start.elapsed().as_secs_f64()
            );
        }
    }
    Ok(())
}

async fn report_throughput(
    channel: Channel,
    clients: usize,
    rows_per_call: usize,
    calls: usize,
) -> Result<f64, Error> {
    let start = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let mut client = DbManagerClient::new(channel.clone());
        tasks.push(tokio::spawn(async move {
            for call in 0..calls {
                let metric_logs = (0..rows_per_call)
                    .map(|r| MetricLog {
                        time_stamp: format!(
                            "2024-01-01T00:{:02}:{:02}.{:06}Z",
                            call % 60,
                            r % 60,
                            r
                        ),
                        metric: Some(Metric {
                            name: "loss".into(),
                            value: format!("{}", r as f64 / 7.0),
                        }),
                    })
                    .collect();
                client
                    .report_observation_log(ReportObservationLogRequest {
                        trial_name: format!("client{c}-trial{}", call % 16),
                        observation_log: Some(ObservationLog { metric_logs }),
                    })
                    .await?;
            }
            Ok::<(), tonic::Status>(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    let rows = (clients * calls * rows_per_call) as f64;
    Ok(rows / start.elapsed().as_secs_f64())
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let tmp = tempfile::tempdir()?;
    let db = flag("--db").unwrap_or_else(|| tmp.path().join("bench.db").display().to_string());
    let repeats: usize = flag("--repeats").map_or(Ok(11), |r| r.parse())?;
    let store = SqlStore::connect(&db).await?;
    let listener = vernier_api::bind("127.0.0.1:0", "--listen").await?;
    let addr = listener.local_addr()?;
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(vernier_api::serve(
        vernier_api::router(store.clone())?,
        listener,
        async {
            let _ = rx.await;
        },
    ));
    let channel = Channel::from_shared(format!("http://{addr}"))?
        .connect()
        .await?;
    println!("database: {db}\n");
    if args.iter().any(|a| a == "--large") {
        large_requests(channel.clone()).await?;
        let _ = tx.send(());
        return Ok(server.await??);
    }
    suggestion_latency(channel.clone(), repeats).await?;
    println!("\n| concurrent clients | rows per call | rows/s |\n|---:|---:|---:|");
    for (clients, rows, calls) in [(1, 1, 400), (8, 1, 100), (1, 100, 40), (8, 100, 10)] {
        let rate = report_throughput(channel.clone(), clients, rows, calls).await?;
        println!("| {clients} | {rows} | {rate:.0} |");
    }
    let _ = tx.send(());
    server.await??;
    Ok(())
}
