//! `vernier validate FILE`: every problem at once, or a summary with two verdicts: whether the
//! experiment is valid (what a cluster running `vernier operator` accepts) and what local mode
//! (`vernier run`) cannot do with it. Exit codes: 0 valid and runnable locally, 3 valid for a
//! cluster only, 2 invalid.

use crate::Exit;
use std::path::Path;
use vernier_spec::{Experiment, SpecError};

pub fn validate(file: &Path) -> anyhow::Result<Exit> {
    match vernier_spec::parse_experiment_file(file) {
        Ok(exp) => {
            print_summary(file, &exp)?;
            for w in vernier_spec::validate::warnings(&exp) {
                println!("warning: {w}");
            }
            println!("cluster: valid (`vernier operator` accepts it)");
            let verdict = vernier_runner::local_verdict(&exp);
            print_local(&verdict.refused, &verdict.ignored);
            Ok(if verdict.runnable() {
                Exit::Succeeded
            } else {
                Exit::ClusterOnly
            })
        }
        Err(errors) => {
            eprintln!("{}: {} problem(s) found", file.display(), errors.len());
            eprintln!("{errors}");
            // Validation errors exit 2 like usage errors.
            std::process::exit(2);
        }
    }
}

fn print_local(refused: &[SpecError], ignored: &[SpecError]) {
    if refused.is_empty() {
        println!("local: runnable (`vernier run` runs it)");
    } else {
        println!("local: `vernier run` cannot run it:");
        for e in refused {
            println!("  {e}");
        }
    }
    if !ignored.is_empty() {
        println!("local: runs without:");
        for e in ignored {
            println!("  {e}");
        }
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
    Ok(())
}
