//! `vernier validate FILE`: every problem at once, or a short summary. Beyond the spec's
//! shape it also builds what `run` builds (the algorithm with its settings, the early-stopping
//! rule, the local experiment and one trial's command), so `validate` never says valid for a
//! file `run` refuses.

use crate::Exit;
use std::path::Path;
use vernier_core::{Domain, SearchSpace};
use vernier_runner::{LocalExperiment, LocalPaths, work_dir_of};
use vernier_spec::Experiment;

/// What `run` would refuse in a spec that passed the shape checks, with the field it is about.
fn run_would_refuse(file: &Path, exp: &Experiment) -> Option<String> {
    let paths = LocalPaths {
        work_dir: work_dir_of(file),
        log_dir: std::env::temp_dir().join("vernier-validate"),
    };
    let local = match LocalExperiment::new(exp.clone(), paths) {
        Ok(l) => l,
        Err(e) => return Some(e.to_string()),
    };
    // Algorithms served by a plugin are checked by the plugin when `run` starts.
    if vernier_algorithms::KNOWN_ALGORITHMS.contains(&local.algorithm.as_str())
        && let Err(e) = vernier_algorithms::build(
            &local.algorithm,
            &local.settings,
            &local.space,
            &local.objective,
        )
    {
        return Some(format!("spec.algorithm: {e}"));
    }
    if let Err(e) = vernier_runner::early_stop::EarlyStopMonitor::for_experiment(&local) {
        return Some(e.to_string());
    }
    local
        .command_for("validate", &first_point(&local.space))
        .err()
        .map(|e| {
            let text = e.to_string();
            text.strip_prefix("trial validate: ")
                .map_or(text.clone(), str::to_string)
        })
}

/// Each parameter's first value (its minimum, or first list entry): enough to render a trial.
fn first_point(space: &SearchSpace) -> Vec<(String, String)> {
    space
        .parameters()
        .iter()
        .map(|p| {
            let v = match &p.domain {
                Domain::Double { min, .. } => min.to_string(),
                _ => p.value_at(0).map(|v| v.to_string()).unwrap_or_default(),
            };
            (p.name.clone(), v)
        })
        .collect()
}

pub fn validate(file: &Path) -> anyhow::Result<Exit> {
    match vernier_spec::parse_experiment_file(file) {
        Ok(exp) => {
            if let Some(problem) = run_would_refuse(file, &exp) {
                eprintln!("{}: 1 problem(s) found", file.display());
                eprintln!("{problem}");
                std::process::exit(2);
            }
            let space = exp.search_space()?;
            let objective = exp.objective()?;
            let s = &exp.spec;
            let algorithm = s
                .algorithm
                .as_ref()
                .and_then(|a| a.algorithm_name.clone())
                .unwrap_or_default();
            println!("{}: valid experiment {:?}", file.display(), exp.name());
            println!(
                "  objective: {} {}{}",
                match objective.direction {
                    vernier_core::Direction::Minimize => "minimize",
                    vernier_core::Direction::Maximize => "maximize",
                },
                objective.metric,
                objective
                    .goal
                    .map(|g| format!(" (goal {g})"))
                    .unwrap_or_default()
            );
            println!("  algorithm: {algorithm}");
            println!(
                "  parameters: {} ({})",
                space.len(),
                space
                    .parameters()
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            println!(
                "  trials: parallel {}, max {}, max failed {}",
                s.parallel_trial_count.unwrap_or(3),
                s.max_trial_count
                    .map_or("unlimited".into(), |v| v.to_string()),
                s.max_failed_trial_count
                    .map_or("unlimited".into(), |v| v.to_string())
            );
            Ok(Exit::Succeeded)
        }
        Err(errors) => {
            eprintln!("{}: {} problem(s) found", file.display(), errors.len());
            eprintln!("{errors}");
            // Validation errors exit 2 like usage errors.
            std::process::exit(2);
        }
    }
}
