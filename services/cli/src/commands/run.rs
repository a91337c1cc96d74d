//! `vernier run FILE` and `vernier resume NAME`: drive an experiment to completion with a
//! progress display, stopping cleanly on Ctrl-C.

use crate::Exit;
use crate::commands::plugins::Plugins;
use crate::progress::Display;
use anyhow::Context;
use std::path::{Path, PathBuf};
use tokio::sync::watch;
use vernier_runner::driver::{self, Outcome};
use vernier_runner::process::StopLevel;
use vernier_runner::{LocalExperiment, LocalPaths, RunHooks, SourceError, work_dir_of};
use vernier_store::SqlStore;

pub async fn run(
    db: &str,
    file: &Path,
    seed: Option<u64>,
    log_dir: Option<PathBuf>,
    plugins: &Plugins,
) -> anyhow::Result<Exit> {
    let spec = match vernier_spec::parse_experiment_file(file) {
        Ok(spec) => spec,
        Err(errors) => anyhow::bail!(
            "{}: {} problem(s) found\n{errors}",
            file.display(),
            errors.len()
        ),
    };
    let store = SqlStore::connect(db).await?;
    let name = spec.name().to_string();
    if store.get_experiment(&name).await?.is_some() {
        anyhow::bail!(
            "experiment {name:?} already exists in {}\nhint: continue it with `vernier resume {name}`, remove it with `vernier delete {name}`, or change metadata.name",
            vernier_store::redact_url(db)
        );
    }
    let log_dir = match log_dir {
        Some(dir) => dir,
        None => std::env::current_dir()
            .context("cannot read the current directory")?
            .join("vernier-logs")
            .join(&name),
    };
    let paths = LocalPaths {
        work_dir: work_dir_of(file),
        log_dir,
    };
    let exp = LocalExperiment::new(spec, paths)?;
    // Bad algorithm settings are reported before anything is recorded.
    match plugins.source_for(&exp)? {
        None => {
            vernier_algorithms::build(&exp.algorithm, &exp.settings, &exp.space, &exp.objective)
                .map_err(|e| anyhow::anyhow!("spec.algorithm: {e}"))?;
        }
        Some(source) => match source.validate(&exp).await {
            Ok(()) => {}
            Err(SourceError::Rejected(m)) => {
                anyhow::bail!(
                    "spec.algorithm: {} rejected the settings: {m}",
                    source.describe()
                )
            }
            Err(SourceError::Unavailable(m)) => eprintln!(
                "warning: {} is not reachable yet ({m}); its settings are checked when it answers",
                source.describe()
            ),
        },
    }
    vernier_runner::early_stop::EarlyStopMonitor::for_experiment(&exp)?;
    let seed = seed
        .or_else(|| vernier_algorithms::seed_setting(&exp.algorithm, &exp.settings))
        .unwrap_or_else(random_seed);
    driver::create_experiment(&store, &exp, seed).await?;
    println!(
        "experiment {name}: {} with {} parameter(s), seed {seed}, logs in {}",
        exp.algorithm,
        exp.space.len(),
        exp.paths.log_dir.display()
    );
    drive(&store, db, &exp, seed, plugins).await
}

pub async fn resume(db: &str, name: &str, plugins: &Plugins) -> anyhow::Result<Exit> {
    let store = SqlStore::connect(db).await?;
    let row = store.get_experiment(name).await?.ok_or_else(|| {
        anyhow::anyhow!(
            "experiment {name:?} does not exist in {}\nhint: `vernier list` shows the experiments there",
            vernier_store::redact_url(db)
        )
    })?;
    if matches!(row.status.phase.as_str(), "Succeeded" | "Failed") {
        anyhow::bail!(
            "experiment {name:?} has already finished ({}: {})\nhint: `vernier report {name}` shows the result",
            row.status.phase,
            row.status.reason
        );
    }
    let spec = vernier_spec::parse_experiment(&row.spec_json)
        .map_err(|e| anyhow::anyhow!("stored experiment {name:?} is unreadable: {e}"))?;
    let paths = LocalPaths {
        work_dir: PathBuf::from(&row.work_dir),
        log_dir: PathBuf::from(&row.log_dir),
    };
    let exp = LocalExperiment::new(spec, paths)?;
    let recovered = driver::recover_interrupted(&store, name).await?;
    println!(
        "resuming experiment {name} (seed {}){}",
        row.seed,
        if recovered > 0 {
            format!(": {recovered} trial(s) left running by the previous run were marked Killed")
        } else {
            String::new()
        }
    );
    drive(&store, db, &exp, row.seed as u64, plugins).await
}

/// Runs the driver with Ctrl-C / SIGTERM handling and prints the result.
async fn drive(
    store: &SqlStore,
    db: &str,
    exp: &LocalExperiment,
    seed: u64,
    plugins: &Plugins,
) -> anyhow::Result<Exit> {
    let (stop_tx, stop_rx) = watch::channel(StopLevel::Run);
    let signals = tokio::spawn(watch_signals(stop_tx));
    let push = crate::commands::push::PushEndpoint::start(store.clone()).await?;
    let hooks = RunHooks {
        push_address: Some(push.address.clone()),
        suggestion_source: plugins.source_for(exp)?,
    };
    if let Some(source) = &hooks.suggestion_source {
        println!("suggestions come from {}", source.describe());
    }
    let mut display = Display::new(
        &exp.objective.metric,
        exp.limits.max_trials,
        &exp.paths.log_dir,
    );
    let result = driver::run_with(store, exp, seed, stop_rx, &mut display, &hooks).await;
    display.finish();
    signals.abort();
    push.stop().await;
    let outcome = result?;
    let db_flag = if db == "vernier.db" {
        String::new()
    } else {
        format!(" --db {}", vernier_store::redact_url(db))
    };
    match outcome {
        Outcome::Completed {
            completion,
            progress,
        } => {
            let c = &progress.counts;
            println!(
                "experiment {} {}: {} ({} trials: {} succeeded, {} failed, {} without metrics, {} killed)",
                exp.name,
                if completion.succeeded() {
                    "succeeded"
                } else {
                    "failed"
                },
                completion.message(),
                c.total,
                c.succeeded,
                c.failed,
                c.metrics_unavailable,
                c.killed
            );
            match &progress.best {
                Some(best) => println!(
                    "best trial {}: {}={}\n  {}",
                    best.trial, exp.objective.metric, best.value, best.assignment
                ),
                None => println!(
                    "no trial reported the objective metric {}",
                    exp.objective.metric
                ),
            }
            println!("report: vernier report {}{db_flag}", exp.name);
            Ok(if completion.succeeded() {
                Exit::Succeeded
            } else {
                Exit::Failed
            })
        }
        Outcome::Interrupted { progress } => {
            println!(
                "experiment {} interrupted after {} trial(s); running trials were stopped and marked Killed",
                exp.name, progress.counts.total
            );
            println!("resume with: vernier resume {}{db_flag}", exp.name);
            Ok(Exit::Interrupted)
        }
    }
}

/// First Ctrl-C or SIGTERM: stop gracefully; a second one: kill now.
async fn watch_signals(stop: watch::Sender<StopLevel>) {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    let mut level = StopLevel::Run;
    loop {
        let got = async {
            match term.as_mut() {
                Some(t) => {
                    tokio::select! {
                        _ = tokio::signal::ctrl_c() => {},
                        _ = t.recv() => {},
                    }
                }
                None => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        };
        got.await;
        level = if level == StopLevel::Run {
            eprintln!("stopping: terminating running trials (press Ctrl-C again to kill them now)");
            StopLevel::Terminate
        } else {
            StopLevel::Kill
        };
        let _ = stop.send(level);
    }
}

/// A seed when the user gave none; recorded with the experiment so resume replays it.
fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.write_u32(std::process::id());
    h.finish() >> 1
}
