//! `vernier run FILE` and `vernier resume NAME [--max-trial-count N]`: drive an experiment to
//! completion with a progress display, stopping cleanly on Ctrl-C.

use crate::Exit;
use crate::commands::plugins::Plugins;
use crate::out::{errln, outln};
use crate::progress::Display;
use anyhow::Context;
use std::path::{Path, PathBuf};
use tokio::sync::watch;
use vernier_runner::driver::{self, BestSoFar, Outcome};
use vernier_runner::extend::NewLimits;
use vernier_runner::lease::ExperimentLease;
use vernier_runner::process::StopLevel;
use vernier_runner::warm_start::WarmStart;
use vernier_runner::{LocalExperiment, LocalPaths, RunHooks, work_dir_of};
use vernier_spec::plan::Completion;
use vernier_store::{SqlStore, StoreError};

pub async fn run(
    db: &str,
    file: &Path,
    seed: Option<u64>,
    log_dir: Option<PathBuf>,
    plugins: &Plugins,
) -> anyhow::Result<Exit> {
    let spec = match vernier_spec::parse_experiment_file_served(file, &plugins.algorithms()) {
        Ok(spec) => spec,
        Err(errors) => anyhow::bail!(
            "{}: {} problem(s) found\n{errors}",
            file.display(),
            errors.len()
        ),
    };
    let store = crate::db::connect(db).await?;
    let name = spec.name().to_string();
    refuse_existing(&store, db, &name).await?;
    let log_dir = LogDir::of(log_dir)?;
    let mut exp = checked_experiment(file, spec, &log_dir, plugins).await?;
    // A warm start that cannot be read (a missing experiment, a bad or oversized file) is
    // refused before the experiment is recorded, so it leaves nothing behind to delete; the
    // driver starts from what was read here.
    let warm = vernier_runner::warm_start::load(&store, &exp)
        .await?
        .complete()?;
    let seed = seed
        .or_else(|| exp.setting_seed())
        .unwrap_or_else(random_seed);
    // The lease before the record: a name the operator drives in this database (it has no
    // row in `experiments`) is refused without leaving an empty experiment behind, and a
    // run of a name being started elsewhere before it claims a log directory.
    let lease = match ExperimentLease::acquire(&store, &name).await {
        Ok(lease) => lease,
        Err(e) => return Err(held_elsewhere(&store, db, &name, e).await),
    };
    let lease = record(&store, &mut exp, log_dir, lease, seed).await?;
    let searched = match &exp.spec.spec.nas_config {
        Some(nas) if exp.space.is_empty() => format!("over {}", nas.describe()),
        _ => format!("with {} parameter(s)", exp.space.len()),
    };
    outln!(
        "experiment {name}: {} {searched}, seed {seed}, logs in {}",
        exp.algorithm,
        exp.paths.log_dir.display()
    );
    if let Some(summary) = warm.summary() {
        outln!("{summary}");
    }
    drive(&store, db, &exp, seed, plugins, lease, Some(warm)).await
}

/// The experiment of `spec` once every check that needs no database has passed: its
/// warnings printed, the local driver's limits, the plugin flags, the algorithm's settings and
/// its first trial.
async fn checked_experiment(
    file: &Path,
    spec: vernier_spec::Experiment,
    log_dir: &LogDir,
    plugins: &Plugins,
) -> anyhow::Result<LocalExperiment> {
    let paths = LocalPaths {
        work_dir: work_dir_of(file),
        log_dir: log_dir.tentative(spec.name()),
    };
    let (unquoted, renamed_keys) = super::validate::unquoted_text_fields(file);
    for w in vernier_spec::validate::warnings(&spec)
        .into_iter()
        .chain(unquoted)
        .chain(renamed_keys)
    {
        errln!("warning: {w}");
    }
    let exp = LocalExperiment::new(with_plugin_annotation(spec, plugins), paths)?;
    check_local(&exp)?;
    plugins.check_flags_for(&exp.algorithm)?;
    // Bad algorithm settings are reported before anything is recorded.
    let algorithm = plugins.algorithm_source(&exp).await?;
    for note in vernier_engine::check_settings(&exp, algorithm)? {
        errln!("warning: {note}");
    }
    if let Some(problem) = crate::first_point::first_trial_error(&exp, algorithm) {
        anyhow::bail!("{}: {problem}", file.display());
    }
    Ok(exp)
}

/// Claims the log directory and records the experiment under `lease`, which comes back for
/// the run; when either fails, the lease is released and the directory this run made removed.
async fn record(
    store: &SqlStore,
    exp: &mut LocalExperiment,
    log_dir: LogDir,
    lease: ExperimentLease,
    seed: u64,
) -> anyhow::Result<ExperimentLease> {
    // Made once every check has passed, so a refused run leaves no empty directory; and
    // before the experiment is recorded, as a record left behind could only be deleted
    // (`resume` keeps the directory it names).
    let claimed = match log_dir {
        LogDir::Given(_) => exp
            .create_log_dir()
            .map(|()| None)
            .map_err(anyhow::Error::from),
        LogDir::Default(logs) => claim_log_dir(&logs, &exp.name).map(Some),
    };
    let claimed = match claimed {
        Ok(claimed) => claimed,
        Err(e) => {
            let _ = lease.release().await;
            return Err(e);
        }
    };
    if let Some(dir) = &claimed {
        exp.paths.log_dir = dir.clone();
    }
    // A server that drops the connection while the experiment is recorded is waited out, as
    // during the run (Ctrl-C still ends the command); a re-sent insert that finds its own row
    // has worked.
    let (_keep, give_up) = tokio::sync::watch::channel(false);
    let riding = store.riding_outages(give_up);
    if let Err(e) = driver::create_experiment(&riding, exp, seed).await {
        let _ = lease.release().await;
        // The directory this run made is still empty; another run's is not touched.
        if let Some(dir) = claimed {
            let _ = std::fs::remove_dir(dir);
        }
        return Err(e.into());
    }
    Ok(lease)
}

/// A name already in the database is refused, naming its driver when one is running it.
async fn refuse_existing(store: &SqlStore, db: &str, name: &str) -> anyhow::Result<()> {
    let Some(row) = store.get_experiment(name).await? else {
        return Ok(());
    };
    let db_flag = crate::db::db_flag(db);
    if let Some(driver) = live_driver(store, name).await? {
        anyhow::bail!(
            "experiment {name:?} is running now in {}, driven by pid {} on host {}\nhint: follow it with `vernier report {name}{db_flag}` or `vernier list{db_flag}`; to run this file as another experiment, change metadata.name",
            vernier_store::redact_url(db),
            driver.pid,
            driver.host
        );
    }
    let go_on = match matches!(row.status.phase.as_str(), "Succeeded" | "Failed") {
        true => finished_hint(name, &row.status.reason, &db_flag),
        false => format!("continue it with `vernier resume {name}{db_flag}`"),
    };
    anyhow::bail!(
        "experiment {name:?} already exists in {} ({})\nhint: {go_on}; remove it with `vernier delete {name}{db_flag}`, or change metadata.name",
        vernier_store::redact_url(db),
        row.status.phase
    )
}

/// Why the name's lease was refused to a new run: another `vernier run` of the same name
/// started meanwhile (refused as [`refuse_existing`] refuses it once its record is there);
/// waiting and running the same command again would not help, as the name is then taken.
async fn held_elsewhere(
    store: &SqlStore,
    db: &str,
    name: &str,
    error: vernier_runner::RunnerError,
) -> anyhow::Error {
    let vernier_runner::RunnerError::Store(StoreError::LeaseHeld { pid, host, .. }) = &error else {
        return error.into();
    };
    if let Err(named) = refuse_existing(store, db, name).await {
        return named;
    }
    let db_flag = crate::db::db_flag(db);
    anyhow::anyhow!(
        "experiment {name:?} is being started in {} by another vernier, pid {pid} on host \
         {host}\nhint: follow it with `vernier report {name}{db_flag}` once it has begun; to run \
         this file as another experiment, change metadata.name",
        vernier_store::redact_url(db)
    )
}

/// What can be done with a finished experiment: one that used its budget goes on with a larger
/// one; any other (goal reached, failed) has only its result to show.
fn finished_hint(name: &str, reason: &str, db_flag: &str) -> String {
    match reason == Completion::MaxTrialsReached.reason() {
        true => format!(
            "`vernier resume {name}{db_flag} --max-trial-count N` continues it with a larger budget"
        ),
        false => format!("`vernier report {name}{db_flag}` shows the result"),
    }
}

/// Records the plugin address the algorithm is asked at, so `resume` asks the same plugin,
/// not the built-in algorithm of the same name.
fn with_plugin_annotation(
    mut spec: vernier_spec::Experiment,
    plugins: &Plugins,
) -> vernier_spec::Experiment {
    let algorithm = spec.spec.algorithm.as_ref();
    let algorithm = algorithm.and_then(|a| a.algorithm_name.as_deref());
    if let Some(address) = algorithm.and_then(|a| plugins.address_for(a)) {
        let recorded = (PLUGIN_ANNOTATION.to_string(), address.to_string());
        spec.metadata.annotations.extend([recorded]);
    }
    spec
}

/// The driver holding the experiment's lease, if it is alive: its process still exists on
/// this host, or (elsewhere) its heartbeat is recent.
async fn live_driver(
    store: &SqlStore,
    name: &str,
) -> anyhow::Result<Option<vernier_store::LeaseRow>> {
    let Some(lease) = store.get_lease(name).await? else {
        return Ok(None);
    };
    let age_us = chrono::Utc::now().timestamp_micros() - lease.heartbeat_us;
    let ttl_us = vernier_runner::lease::LEASE_TTL.as_micros() as i64;
    let alive = !vernier_runner::lease::holder_gone_here(&lease) && age_us < ttl_us;
    Ok(alive.then_some(lease))
}

/// Where the trials' logs go, stored absolute: a relative path would be read against
/// whatever directory `resume` runs in, splitting one experiment's logs across two folders.
enum LogDir {
    /// `--log-dir`, used as it is.
    Given(PathBuf),
    /// `./vernier-logs`, in which the run claims a directory of its own ([`claim_log_dir`]).
    Default(PathBuf),
}

impl LogDir {
    fn of(log_dir: Option<PathBuf>) -> anyhow::Result<LogDir> {
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        let Some(dir) = log_dir else {
            return Ok(LogDir::Default(cwd.join("vernier-logs")));
        };
        let dir = cwd.join(dir);
        if let Some(log) = a_trial_log_in(&dir) {
            anyhow::bail!(
                "--log-dir: value {:?} already holds trial logs ({log} among them): this run's \
                 trials would write `<trial>.log` there and overwrite those of the same name (an \
                 experiment of the same name and seed names its trials alike)\nhint: choose a new \
                 or empty folder, or move those logs away first",
                dir.display().to_string()
            );
        }
        Ok(LogDir::Given(dir))
    }

    /// The directory until the run claims its own: the checks before it read no logs.
    fn tentative(&self, name: &str) -> PathBuf {
        match self {
            LogDir::Given(dir) => dir.clone(),
            LogDir::Default(logs) => logs.join(name),
        }
    }
}

/// The name of a `*.log` file in `dir`, if it holds one: the default folder moves aside for an
/// earlier experiment's logs (`claim_log_dir`), a folder the user named cannot.
fn a_trial_log_in(dir: &Path) -> Option<String> {
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|name| name.ends_with(".log"))
}

/// Makes `<logs>/<name>`, or when that directory exists the first `<logs>/<name>.<n>` (n ≥ 2)
/// that does not: an experiment of the same name and seed names its trials alike and would
/// overwrite their logs. Made with `create_dir`, which one process alone can do for a path,
/// so two runs of one name started together in one folder get a directory each.
fn claim_log_dir(logs: &Path, name: &str) -> anyhow::Result<PathBuf> {
    let made = |dir: &Path| {
        std::fs::create_dir_all(logs)
            .and_then(|()| std::fs::create_dir(dir))
            .with_context(|| format!("cannot create the log directory {}", dir.display()))
    };
    // Whatever is at a path (a directory, a file, a dangling link) makes it another's.
    let taken = |dir: &Path| dir.symlink_metadata().is_ok();
    let first = logs.join(name);
    for dir in
        std::iter::once(first.clone()).chain((2u32..).map(|n| logs.join(format!("{name}.{n}"))))
    {
        match made(&dir) {
            Ok(()) => {
                if dir != first {
                    errln!(
                        "note: {} already exists (the logs of an earlier experiment named {name}, \
                         deleted or in another database, or of one started at the same \
                         moment) and is kept as it is; this run's logs go to {}",
                        first.display(),
                        dir.display()
                    );
                }
                return Ok(dir);
            }
            // There before, or made by another run at the same moment: try the next.
            Err(_) if taken(&dir) => continue,
            Err(e) => return Err(e),
        }
    }
    unreachable!("u32 names run out only after 4 billion directories")
}

pub async fn resume(
    db: &str,
    name: &str,
    limits: NewLimits,
    plugins: &Plugins,
) -> anyhow::Result<Exit> {
    let store = crate::db::open(db, vernier_store::OpenMode::Existing).await?;
    if store.get_experiment(name).await?.is_none() {
        return Err(missing_experiment(db, name));
    }
    // Only the lease holder may change the budget or recover trials: another live driver's
    // trials are not stale.
    let lease = ExperimentLease::acquire(&store, name).await?;
    if let Some(old) = &lease.took_over {
        outln!(
            "took over experiment {name} from pid {} on host {} (gone, or silent for more than {} s)",
            old.pid,
            old.host,
            vernier_runner::lease::LEASE_TTL.as_secs()
        );
    }
    let last_heard = lease.took_over.as_ref().map(|old| old.heartbeat_us);
    match prepare_resume(&store, db, name, limits, last_heard).await {
        Ok((exp, seed, warm)) => {
            let plugins = with_recorded_plugin(&exp, plugins);
            drive(&store, db, &exp, seed, &plugins, lease, Some(warm)).await
        }
        Err(e) => {
            // A refused resume leaves the experiment free, not held by a process now gone.
            let _ = lease.release().await;
            Err(e)
        }
    }
}

/// Annotation recording the suggestion plugin an experiment was run with.
const PLUGIN_ANNOTATION: &str = "vernier/suggestion-plugin";

/// The plugins to resume with: those given, and the one the experiment was run with unless
/// another is given for its algorithm.
fn with_recorded_plugin(exp: &LocalExperiment, plugins: &Plugins) -> Plugins {
    let recorded = exp.spec.metadata.annotations.get(PLUGIN_ANNOTATION);
    match recorded {
        Some(address) if plugins.address_for(&exp.algorithm).is_none() => {
            outln!(
                "the experiment was run with the suggestion plugin at {address}, asked again; \
                 `--suggestion-plugin {}=HOST:PORT` names another",
                exp.algorithm
            );
            plugins.or_recorded(&exp.algorithm, address)
        }
        _ => plugins.clone(),
    }
}

fn missing_experiment(db: &str, name: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "experiment {name:?} does not exist in {}\nhint: `vernier list` shows the experiments there",
        vernier_store::redact_url(db)
    )
}

/// Under the lease: applies new limits, refuses a finished experiment, and marks the trials
/// the previous run left running. Returns the experiment to drive, its seed and its warm start.
async fn prepare_resume(
    store: &SqlStore,
    db: &str,
    name: &str,
    limits: NewLimits,
    last_heard_us: Option<i64>,
) -> anyhow::Result<(LocalExperiment, u64, WarmStart)> {
    let mut row = stored_experiment(store, db, name).await?;
    // New limits a finished experiment cannot take are refused before the warm start.
    let checked = match limits.is_empty() {
        true => {
            refuse_finished(&row, name, db)?;
            None
        }
        false => Some(vernier_runner::extend::check(store, name, limits).await?),
    };
    // Read before new limits are written: a warm-start file that is gone now leaves the
    // experiment as it was. An earlier experiment deleted since is only warned about.
    let warm = vernier_runner::warm_start::load(store, &stored_local(&row, name)?).await?;
    if let Some(checked) = checked {
        let done = vernier_runner::extend::apply(store, name, checked).await?;
        for change in &done.changes {
            let before = change.before.map_or("unset".to_string(), |n| n.to_string());
            outln!(
                "experiment {name}: {} {before} → {}",
                change.field,
                change.after
            );
        }
        if done.reopened {
            outln!("experiment {name} continues: maxTrialCount was raised");
        }
        // A finished experiment `check` accepted is reopened: nothing to refuse now.
        row = stored_experiment(store, db, name).await?;
    }
    let exp = stored_local(&row, name)?;
    check_local(&exp)?;
    let recovered = driver::recover_interrupted(store, name, last_heard_us).await?;
    // Stored as the database's signed 64 bits; the seed is the same 64 bits unsigned.
    let seed = row.seed as u64;
    outln!(
        "resuming experiment {name} (seed {seed}){}",
        if recovered > 0 {
            format!(": {recovered} trial(s) left running by the previous run were marked Killed")
        } else {
            String::new()
        }
    );
    Ok((exp, seed, warm))
}

async fn stored_experiment(
    store: &SqlStore,
    db: &str,
    name: &str,
) -> anyhow::Result<vernier_store::ExperimentRow> {
    store
        .get_experiment(name)
        .await?
        .ok_or_else(|| missing_experiment(db, name))
}

fn refuse_finished(row: &vernier_store::ExperimentRow, name: &str, db: &str) -> anyhow::Result<()> {
    if matches!(row.status.phase.as_str(), "Succeeded" | "Failed") {
        let hint = finished_hint(name, &row.status.reason, &crate::db::db_flag(db));
        anyhow::bail!(
            "experiment {name:?} has already finished ({}: {})\nhint: {hint}",
            row.status.phase,
            row.status.reason
        );
    }
    Ok(())
}

/// The stored experiment as local mode runs it.
fn stored_local(row: &vernier_store::ExperimentRow, name: &str) -> anyhow::Result<LocalExperiment> {
    let spec = vernier_spec::parse_stored_experiment(&row.spec_json)
        .map_err(|e| anyhow::anyhow!("stored experiment {name:?} is unreadable: {e}"))?;
    let paths = LocalPaths {
        work_dir: PathBuf::from(&row.work_dir),
        log_dir: PathBuf::from(&row.log_dir),
    };
    Ok(LocalExperiment::new(spec, paths)?)
}

/// Refuses, before anything is recorded or run, an experiment only a cluster can run; notes
/// what local mode runs without and which paths in the command only the image has.
fn check_local(exp: &LocalExperiment) -> anyhow::Result<()> {
    let verdict = vernier_runner::local_verdict(&exp.spec);
    if !verdict.runnable() {
        return Err(
            vernier_runner::RunnerError::NotLocal(vernier_spec::SpecErrors(verdict.refused)).into(),
        );
    }
    for note in verdict.ignored {
        errln!("note: {note}");
    }
    if let Some(w) = crate::image_paths::check(exp) {
        errln!("warning: {w}");
    }
    Ok(())
}

/// Runs the driver with Ctrl-C / SIGTERM handling and prints the result. `warm` is the warm
/// start already read by the caller's checks; `None` has the driver read it.
async fn drive(
    store: &SqlStore,
    db: &str,
    exp: &LocalExperiment,
    seed: u64,
    plugins: &Plugins,
    lease: ExperimentLease,
    warm: Option<WarmStart>,
) -> anyhow::Result<Exit> {
    let result = drive_leased(store, db, exp, seed, plugins, &lease, warm).await;
    // The experiment's end is recorded by now: a lease left behind only makes the next
    // driver wait out its heartbeat (or see its pid gone), so it costs a warning, not the
    // exit code the result earned.
    match lease.release().await {
        Ok(()) => {}
        // A database dropped under the run took the lease with it; the run's error says so.
        Err(vernier_runner::RunnerError::Store(vernier_store::StoreError::Vanished { .. })) => {}
        Err(e) => errln!(
            "warning: could not release the lease of experiment {} ({e}); hint: a later `vernier resume` takes it over once its heartbeat lapses ({} s)",
            exp.name,
            vernier_store::LEASE_TTL.as_secs()
        ),
    }
    result
}

async fn drive_leased(
    store: &SqlStore,
    db: &str,
    exp: &LocalExperiment,
    seed: u64,
    plugins: &Plugins,
    lease: &ExperimentLease,
    warm: Option<WarmStart>,
) -> anyhow::Result<Exit> {
    let (stop_tx, stop_rx) = watch::channel(StopLevel::Run);
    let signals = tokio::spawn(watch_signals(stop_tx));
    let push = crate::commands::push::PushEndpoint::start(store.clone()).await?;
    let hooks = RunHooks {
        push_address: Some(push.address.clone()),
        suggestion_source: plugins.source_for(exp, Some(store))?,
        warm_start: warm,
        resume_flags: crate::db::db_flag_anywhere(db),
    };
    if let Some(source) = &hooks.suggestion_source {
        outln!("suggestions come from {}", source.describe());
    }
    let mut display = Display::new(
        &exp.objective.metric,
        exp.limits.max_trials,
        &exp.paths.log_dir,
    );
    let running = display.bar().map(|bar| {
        tokio::spawn(crate::progress::watch_running(
            store.clone(),
            exp.spec.name().to_string(),
            exp.objective.metric.clone(),
            bar,
        ))
    });
    let result = driver::run_with(store, exp, seed, stop_rx, &mut display, &hooks, lease).await;
    if let Some(task) = running {
        task.abort();
    }
    display.finish();
    signals.abort();
    push.stop().await;
    let db_flag = crate::db::db_flag(db);
    let outcome = result.map_err(|e| match resumable(&e) {
        true => anyhow::anyhow!(
            "{e}\nthen: `vernier resume {}{db_flag}` continues the experiment",
            exp.name
        ),
        false => e.into(),
    })?;
    Ok(report_outcome(exp, outcome, &db_flag))
}

/// Whether the run stopped on a database that may answer again (a lock, a lost server), so the
/// interrupted experiment can be resumed: a new `run` of it is refused as a duplicate.
fn resumable(e: &vernier_runner::RunnerError) -> bool {
    use vernier_store::StoreError as S;
    matches!(
        e,
        vernier_runner::RunnerError::Store(
            S::Locked { .. }
                | S::ConnectionLost { .. }
                | S::NoAnswer { .. }
                | S::Unreachable { .. }
        )
    )
}

/// The best trial and its parameters; with several objectives, the front it leads.
fn best_lines(metric: &str, best: &BestSoFar) -> String {
    let (trial, value) = (&best.trial, &best.value);
    let assignment = crate::progress::started_values(&best.assignment);
    match &best.front {
        None => format!("best trial {trial}: {metric}={value}\n  {assignment}"),
        Some((others, size)) => format!(
            "best trial {trial} (best {metric} of the {size} trial(s) on the Pareto front): {metric}={value}, {others}\n  {assignment}"
        ),
    }
}

/// Prints how the run ended, the best trial and what to do next; the exit code follows.
fn report_outcome(exp: &LocalExperiment, outcome: Outcome, db_flag: &str) -> Exit {
    match outcome {
        Outcome::Completed {
            completion,
            progress,
        } => {
            let c = &progress.counts;
            outln!(
                "experiment {} {}: {} ({} trials: {})",
                exp.name,
                if completion.succeeded() {
                    "succeeded"
                } else {
                    "failed"
                },
                completion.message(),
                c.total,
                crate::progress::final_counts(c)
            );
            match &progress.best {
                Some(best) => outln!("{}", best_lines(&exp.objective.metric, best)),
                None => outln!(
                    "{}; objective metric: {}",
                    vernier_report::analysis::no_best_note(&exp.objective),
                    exp.objective.metric
                ),
            }
            if completion == Completion::MaxTrialsReached
                && let Some(hint) = killed_budget_hint(&exp.name, &progress, db_flag)
            {
                outln!("{hint}");
            }
            if completion == Completion::MaxTrialsReached
                && let Some(note) = enqueued_left_note(&exp.name, &progress, db_flag)
            {
                outln!("{note}");
            }
            outln!("report: vernier report {}{db_flag}", exp.name);
            if completion.succeeded() {
                Exit::Succeeded
            } else {
                Exit::Failed
            }
        }
        Outcome::Interrupted { progress, stopped } => {
            let running = match stopped {
                0 => "none was left running to stop".to_string(),
                n => format!("{n} running trial(s) were stopped and marked Killed"),
            };
            outln!(
                "experiment {} interrupted after {} trial(s); {running}",
                exp.name,
                progress.counts.total
            );
            match killed_budget_hint(&exp.name, &progress, db_flag) {
                Some(hint) => outln!("{hint}"),
                None => outln!("resume with: vernier resume {}{db_flag}", exp.name),
            }
            Exit::Interrupted
        }
    }
}

/// When Killed trials (an interruption's, counted as Katib counts them) have used up
/// `maxTrialCount`, how to run that many again: a plain `resume` would end at once.
fn killed_budget_hint(name: &str, progress: &driver::Progress, db_flag: &str) -> Option<String> {
    let max = progress.max_trials?;
    let killed = progress.counts.killed;
    (killed > 0 && progress.counts.total >= max).then(|| {
        format!(
            "note: the {killed} Killed trial(s) count towards maxTrialCount {max}, as in Katib, \
             so the budget is used up\nhint: `vernier resume {name} --max-trial-count {}{db_flag}` \
             runs {killed} more",
            max.saturating_add(killed)
        )
    })
}

/// Entries of `spec.enqueuedTrials` the budget left without a trial, and how to run them.
fn enqueued_left_note(name: &str, progress: &driver::Progress, db_flag: &str) -> Option<String> {
    let left = u32::try_from(progress.enqueued_left)
        .ok()
        .filter(|n| *n > 0)?;
    Some(format!(
        "note: {left} configuration(s) of spec.enqueuedTrials did not run before maxTrialCount \
         was reached\nhint: `vernier resume {name} --max-trial-count {}{db_flag}` runs them",
        progress.counts.total.saturating_add(left)
    ))
}

/// How long stopping may take before the user is told what it waits for.
const STOPPING_NOTE_AFTER: std::time::Duration = std::time::Duration::from_secs(10);

/// First Ctrl-C, SIGTERM or SIGHUP (the terminal closed, an ssh session dropped): stop
/// gracefully; a second one: kill now. Without SIGHUP a closed terminal would end `run` at
/// once and leave its trials running and the experiment marked Running. Stopping that takes
/// long waits for the store (a lock another session holds), and says so; a signal once the
/// trials were killed leaves at once, as a killed run would, for `resume` to take over.
async fn watch_signals(stop: watch::Sender<StopLevel>) {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).ok();
    let mut hup = signal(SignalKind::hangup()).ok();
    let mut level = StopLevel::Run;
    let mut noted = false;
    loop {
        let slow = tokio::time::sleep(STOPPING_NOTE_AFTER);
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {},
            Some(()) = next_signal(&mut term) => {},
            Some(()) = next_signal(&mut hup) => {},
            () = slow, if level != StopLevel::Run && !noted => {
                noted = true;
                errln!(
                    "still stopping: waiting for the database to record how the trials ended \
                     (another session holding a lock on it delays this; nothing is lost by \
                     waiting)\nhint: press Ctrl-C {} to leave now; `vernier resume` then \
                     continues the experiment",
                    if level == StopLevel::Kill { "again" } else { "twice" }
                );
                continue;
            }
        }
        level = match level {
            StopLevel::Run => {
                errln!(
                    "stopping: terminating running trials (press Ctrl-C again to kill them now)"
                );
                StopLevel::Terminate
            }
            StopLevel::Terminate => StopLevel::Kill,
            _ => {
                errln!(
                    "left without recording the end of the run; what the trials printed is in \
                     their logs\nhint: `vernier resume` continues the experiment (it marks the \
                     trials this run left Running as Killed)"
                );
                std::process::exit(130);
            }
        };
        let _ = stop.send(level);
    }
}

/// The next delivery of a signal whose handler could be installed; never, otherwise.
async fn next_signal(s: &mut Option<tokio::signal::unix::Signal>) -> Option<()> {
    match s {
        Some(s) => s.recv().await,
        None => std::future::pending().await,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_run_claims_a_log_dir_no_other_has() {
        // (directories there before, with a log in each of those marked true; claimed)
        let table: [(&[(&str, bool)], &str); 5] = [
            (&[], "exp"),
            (&[("other", true)], "exp"),
            (&[("exp", true)], "exp.2"),
            // An empty one is another experiment's too (one interrupted before its first log).
            (&[("exp", false)], "exp.2"),
            (&[("exp", true), ("exp.2", false)], "exp.3"),
        ];
        for (before, want) in table {
            let root = tempfile::tempdir().unwrap();
            let logs = root.path().join("vernier-logs");
            for (dir, with_log) in before {
                std::fs::create_dir_all(logs.join(dir)).unwrap();
                if *with_log {
                    std::fs::write(logs.join(dir).join("t.log"), "x").unwrap();
                }
            }
            let got = claim_log_dir(&logs, "exp").unwrap();
            assert_eq!(got, logs.join(want), "{before:?}");
            assert!(got.is_dir());
        }
    }

    #[test]
    fn runs_started_together_claim_a_log_dir_each() {
        let root = tempfile::tempdir().unwrap();
        let logs = root.path().join("vernier-logs");
        let claimed: Vec<PathBuf> = std::thread::scope(|s| {
            let runs: Vec<_> = (0..8)
                .map(|_| s.spawn(|| claim_log_dir(&logs, "exp").unwrap()))
                .collect();
            runs.into_iter().map(|r| r.join().unwrap()).collect()
        });
        let distinct: std::collections::BTreeSet<&PathBuf> = claimed.iter().collect();
        assert_eq!(distinct.len(), 8, "{claimed:?}");
    }
}
