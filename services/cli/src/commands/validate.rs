//! `vernier validate FILE`: every problem at once, or a summary with two verdicts: whether the
//! experiment is valid (what a cluster running `vernier operator` accepts) and what local mode
//! (`vernier run`) cannot do with it. Exit codes: 0 valid and runnable locally, 3 valid for a
//! cluster only, 2 invalid. Beyond the spec's shape it also builds what `run` builds (the
//! algorithm with its settings, the early-stopping rule and, for a locally runnable spec, the
//! local experiment and one trial's command, and a plugin's check of the settings when
//! `--suggestion-plugin` serves the algorithm), so `validate` never says valid for a file `run`
//! refuses.

use crate::Exit;
use crate::commands::plugins::Plugins;
use crate::first_point::first_trial_error;
use crate::out::{errln, outln};
use std::path::Path;
use vernier_engine::{AlgorithmSource, EngineError, ResolvedExperiment};
use vernier_operator::jobs::DEFAULT_TRIAL_RESOURCES;
use vernier_runner::{LocalExperiment, LocalPaths, work_dir_of};
use vernier_spec::{Experiment, SpecError};

/// The experiment as `run` would build it (its logs in a scratch directory).
fn local_paths(file: &Path) -> LocalPaths {
    LocalPaths {
        work_dir: work_dir_of(file),
        log_dir: std::env::temp_dir().join("vernier-validate"),
    }
}

fn local_experiment(file: &Path, exp: &Experiment) -> Option<LocalExperiment> {
    LocalExperiment::new(exp.clone(), local_paths(file)).ok()
}

/// What `run` would refuse in a spec that passed the shape checks, with the field it is about;
/// else what the algorithm says of its settings. The algorithm's and early-stopping rule's
/// settings are checked as the operator checks them; an algorithm a plugin serves is checked
/// by the plugin, as `run` has it checked before it records anything.
async fn run_would_refuse(
    file: &Path,
    exp: &Experiment,
    runnable: bool,
    plugins: &Plugins,
) -> Result<Vec<String>, Vec<String>> {
    let one = |e: &dyn std::fmt::Display| vec![e.to_string()];
    let resolved = ResolvedExperiment::new(exp.clone()).map_err(|e| one(&e))?;
    let served = plugins.address_for(&resolved.algorithm).is_some();
    let source = if served {
        AlgorithmSource::External
    } else {
        AlgorithmSource::by_name(&resolved.algorithm)
    };
    let notes = settings_refusals(&resolved, source)?;
    if !runnable {
        // The local verdict already says why `run` cannot take it.
        return Ok(notes);
    }
    let local = LocalExperiment::from_resolved(resolved, local_paths(file)).map_err(|e| one(&e))?;
    // Also for an algorithm no plugin serves: one only an image serves is refused as `run`
    // refuses it.
    plugins
        .algorithm_source(&local)
        .await
        .map_err(|e| one(&e))?;
    if let Some(e) = warm_start_file_error(&local) {
        return Err(vec![e]);
    }
    match first_trial_error(&local, source) {
        Some(e) => Err(vec![e]),
        None => Ok(notes),
    }
}

/// What the algorithm says of its settings, or every setting it refuses (where `run` stops at
/// the first) and the early-stopping rule's refusal.
fn settings_refusals(
    resolved: &ResolvedExperiment,
    source: AlgorithmSource,
) -> Result<Vec<String>, Vec<String>> {
    let first = match vernier_engine::check_settings(resolved, source) {
        Ok(notes) => return Ok(notes),
        Err(first) => first,
    };
    let EngineError::Algorithm { .. } = first else {
        return Err(vec![first.to_string()]);
    };
    let mut problems: Vec<String> = vernier_engine::algorithm_refusals(resolved)
        .iter()
        .map(ToString::to_string)
        .collect();
    if let Err(e) = vernier_engine::build_early_stopping(resolved) {
        problems.push(e.to_string());
    }
    Err(problems)
}

fn algorithm_name(exp: &Experiment) -> Option<&str> {
    exp.spec.algorithm.as_ref()?.algorithm_name.as_deref()
}

/// The `vernier operator` flag a cluster needs to run an algorithm Vernier does not have: a
/// suggestion service serving it, as Katib's katib-config lists one (the file given, when an
/// entry of it has the service's image).
fn plugin_flag_needed(exp: &Experiment, plugins: &Plugins) -> Option<(String, &'static str)> {
    let algorithm = algorithm_name(exp)?;
    match AlgorithmSource::by_name(algorithm) {
        AlgorithmSource::BuiltIn => None,
        AlgorithmSource::External if plugins.deploys(algorithm) => Some((
            "--suggestion-config FILE".into(),
            "its entry's image, which the operator deploys per experiment as Katib does",
        )),
        AlgorithmSource::External => Some((
            format!("--suggestion-plugin {algorithm}=HOST:PORT"),
            "a suggestion service serving its algorithm, as Katib's katib-config suggestions \
             list one",
        )),
    }
}

/// The `vernier operator` flags beyond its defaults a cluster needs to run `exp`, each with
/// why: its trial kind, a plugin for its algorithm.
fn operator_flags_needed(exp: &Experiment, plugins: &Plugins) -> Vec<(String, &'static str)> {
    let kind = resource_beyond_defaults(exp).map(|resource| {
        (
            format!(
                "--trial-resources {},{resource}",
                DEFAULT_TRIAL_RESOURCES.join(",")
            ),
            "its trial kind is not among the defaults, as in Katib's katib-config trialResources",
        )
    });
    kind.into_iter()
        .chain(plugin_flag_needed(exp, plugins))
        .collect()
}

/// What `run` would say of `spec.warmStart.file`: missing, unreadable, or rows that do not
/// fit the space. (Warm-start experiments live in a database, which `validate` does not open.)
fn warm_start_file_error(exp: &LocalExperiment) -> Option<String> {
    let file = exp.spec.spec.warm_start.as_ref()?.file.as_ref()?;
    let path = exp.paths.work_dir.join(file);
    vernier_runner::warm_start::read_file(&path, &exp.space, &exp.objective)
        .err()
        .map(|e| e.to_string())
}

pub async fn validate(db: &str, file: &Path, plugins: &Plugins) -> anyhow::Result<Exit> {
    match vernier_spec::parse_experiment_file_served(file, &plugins.algorithms()) {
        Ok(exp) => {
            if let Some(algorithm) = algorithm_name(&exp) {
                plugins.check_flags_for(algorithm)?;
            }
            for w in warm_start_sources_missing(db, &exp).await {
                outln!("warning: {w}");
            }
            let mut verdict = vernier_runner::local_verdict(&exp);
            if let Some(refusal) = algorithm_name(&exp).and_then(|a| plugins.local_refusal(a)) {
                verdict.refused.push(refusal);
            }
            let notes = match run_would_refuse(file, &exp, verdict.runnable(), plugins).await {
                Ok(notes) => notes,
                Err(problems) => {
                    errln!("{}: {} problem(s) found", file.display(), problems.len());
                    for problem in problems {
                        errln!("{problem}");
                    }
                    std::process::exit(2);
                }
            };
            print_summary(file, &exp)?;
            let operator_refusal = vernier_operator::experiment_check::operator_refusal(&exp).err();
            // A warning that is also the cluster's refusal is printed once, as the refusal.
            let warnings = vernier_spec::validate::warnings(&exp).into_iter();
            for w in warnings.filter(|w| operator_refusal.as_ref() != Some(&w.to_string())) {
                outln!("warning: {w}");
            }
            for note in notes {
                outln!("warning: {note}");
            }
            let (unquoted, renamed_keys) = unquoted_text_fields(file);
            for w in unquoted.iter().chain(&renamed_keys) {
                outln!("warning: {w}");
            }
            if verdict.runnable()
                && let Some(w) = local_experiment(file, &exp)
                    .as_ref()
                    .and_then(crate::image_paths::check)
            {
                outln!("warning: {w}");
            }
            match (&operator_refusal, unquoted.is_empty()) {
                (Some(why), _) => outln!("cluster: refused by `vernier operator`: {why}"),
                (None, true) => {
                    let (flags, why): (Vec<_>, Vec<_>) =
                        operator_flags_needed(&exp, plugins).into_iter().unzip();
                    match flags.is_empty() {
                        true => outln!("cluster: valid (`vernier operator` accepts it)"),
                        false => outln!(
                            "cluster: valid for `vernier operator {}` ({})",
                            flags.join(" "),
                            why.join("; ")
                        ),
                    }
                }
                (None, false) => outln!(
                    "cluster: refused: {} field(s) a cluster reads as numbers or booleans, where text is wanted (warnings above)",
                    unquoted.len()
                ),
            }
            print_local(&verdict.refused, &verdict.ignored);
            let cluster_runs = unquoted.is_empty() && operator_refusal.is_none();
            match (verdict.runnable(), cluster_runs) {
                (true, _) => Ok(Exit::Succeeded),
                (false, true) => Ok(Exit::ClusterOnly),
                // Neither a cluster nor local mode can run it.
                (false, false) => std::process::exit(2),
            }
        }
        Err(errors) => {
            errln!("{}: {} problem(s) found", file.display(), errors.len());
            errln!("{errors}");
            // Validation errors exit 2 like usage errors.
            std::process::exit(2);
        }
    }
}

/// The text fields of `file` written as bare numbers or booleans, or as plain words kubectl
/// reads as booleans or numbers (a cluster refuses them), and the keys kubectl renames.
pub fn unquoted_text_fields(file: &Path) -> (Vec<SpecError>, Vec<SpecError>) {
    let Ok(text) =
        vernier_spec::limits::read_text_capped(file, vernier_spec::limits::MAX_SPEC_BYTES)
    else {
        return (Vec::new(), Vec::new());
    };
    let mut refused = vernier_spec::unquoted_text_fields(&text);
    let kubectl = vernier_spec::kubectl_yaml11(&text);
    refused.extend(kubectl.refused);
    (refused, kubectl.renamed_keys)
}

fn print_local(refused: &[SpecError], ignored: &[SpecError]) {
    if refused.is_empty() {
        outln!("local: runnable (`vernier run` runs it)");
    } else {
        outln!("local: `vernier run` cannot run it:");
        for e in refused {
            outln!("  {e}");
        }
    }
    if !ignored.is_empty() {
        outln!("local: runs without:");
        for e in ignored {
            outln!("  {e}");
        }
    }
}

/// `minimize loss (goal 0.1)`.
fn objective_term(term: &vernier_core::ObjectiveTerm) -> String {
    let direction = term.direction.as_str();
    let goal = term
        .goal
        .map(|g| format!(" (goal {g})"))
        .unwrap_or_default();
    format!("{direction} {}{goal}", term.metric)
}

/// `medianstop (min_trials_required 3, start_step 5)`, or the name alone.
fn with_settings(a: &vernier_spec::types::AlgorithmSpec) -> String {
    let name = a.algorithm_name.as_deref().unwrap_or_default();
    if a.algorithm_settings.is_empty() {
        return name.to_string();
    }
    let settings: Vec<String> = a
        .algorithm_settings
        .iter()
        .map(|s| format!("{} {}", s.name, s.value.trim()))
        .collect();
    format!("{name} ({})", settings.join(", "))
}

/// The collector's kind (Katib's default StdOut when unset), with the line format it reads.
fn collector_kind(s: &vernier_spec::types::ExperimentSpec) -> String {
    let mc = s.metrics_collector_spec.as_ref();
    let kind = mc
        .and_then(|m| m.collector.as_ref())
        .and_then(|c| c.kind.as_deref())
        .unwrap_or("StdOut");
    let formats = mc
        .and_then(|m| m.source.as_ref())
        .and_then(|src| src.filter.as_ref())
        .map(|f| f.metrics_format.join(", "))
        .filter(|f| !f.is_empty());
    match (kind, formats) {
        ("StdOut" | "File", Some(f)) => format!("{kind} (metricsFormat {f})"),
        ("StdOut", None) => format!("{kind} (name=value lines)"),
        _ => kind.to_string(),
    }
}

fn print_summary(file: &Path, exp: &Experiment) -> anyhow::Result<()> {
    let space = exp.search_space()?;
    let objective = exp.objective()?;
    let s = &exp.spec;
    let algorithm = s
        .algorithm
        .as_ref()
        .and_then(|a| a.algorithm_name.clone())
        .unwrap_or_default();
    outln!("{}: valid experiment {:?}", file.display(), exp.name());
    let terms: Vec<String> = objective.objectives.iter().map(objective_term).collect();
    let label = if terms.len() > 1 {
        "objectives"
    } else {
        "objective"
    };
    outln!("  {label}: {}", terms.join(", "));
    if !objective.constraints.is_empty() {
        let constraints: Vec<String> = objective
            .constraints
            .iter()
            .map(|c| c.to_string())
            .collect();
        outln!("  constraints: {}", constraints.join(", "));
    }
    outln!("  algorithm: {algorithm}");
    if let Some(es) = &s.early_stopping {
        outln!("  early stopping: {}", with_settings(es));
    }
    outln!("  metrics collector: {}", collector_kind(s));
    match &s.nas_config {
        Some(nas) if space.is_empty() => outln!("  search space: {}", nas.describe()),
        _ => outln!(
            "  parameters: {} ({})",
            space.len(),
            space
                .parameters()
                .iter()
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
    outln!(
        "  trials: parallel {}, max {}, max failed {}",
        s.parallel_trial_count.unwrap_or(3),
        s.max_trial_count
            .map_or("unlimited".into(), |v| v.to_string()),
        s.max_failed_trial_count
            .map_or("unlimited".into(), |v| v.to_string())
    );
    Ok(())
}

/// The trial spec's kind as `--trial-resources` names it (`Kind.version.group`), when the
/// operator does not create that kind unless told to.
fn resource_beyond_defaults(exp: &vernier_spec::Experiment) -> Option<String> {
    let spec = exp.spec.trial_template.as_ref()?.trial_spec.as_ref()?;
    let kind = spec.get("kind")?.as_str()?;
    let api_version = spec.get("apiVersion")?.as_str()?;
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let resource = format!("{kind}.{version}.{group}");
    let resource = resource.trim_end_matches('.').to_string();
    (!DEFAULT_TRIAL_RESOURCES.contains(&resource.as_str())).then_some(resource)
}

/// The experiments `spec.warmStart.experiments` names that the database `run` would read
/// (`--db`) does not hold: `run` refuses them. A database that cannot be opened holds none.
async fn warm_start_sources_missing(db: &str, exp: &Experiment) -> Vec<String> {
    let names = exp
        .spec
        .warm_start
        .as_ref()
        .map(|w| w.experiments.as_slice());
    let names = names.unwrap_or_default();
    if names.is_empty() {
        return Vec::new();
    }
    // A server that does not answer soon is taken as holding none: validate must not hang.
    let open = vernier_store::SqlStore::open(db, vernier_store::OpenMode::ReadOnly);
    let store = tokio::time::timeout(std::time::Duration::from_secs(5), open)
        .await
        .map_err(|_| ())
        .and_then(|r| r.map_err(|_| ()));
    let shown = vernier_store::redact_url(db);
    let mut missing = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let found = match &store {
            Ok(store) => store.get_experiment(name).await.ok().flatten().is_some(),
            Err(_) => false,
        };
        if !found {
            missing.push(format!(
                "spec.warmStart.experiments[{i}]: experiment {name:?} is not in the database \
                 {shown}, so `vernier run` refuses the warm start; hint: run it with the --db \
                 that holds it (`vernier list` shows a database's experiments)"
            ));
        }
    }
    if let Ok(store) = store {
        store.close().await;
    }
    missing
}
