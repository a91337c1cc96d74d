//! `vernier validate FILE`: every problem at once, or a short summary.

use crate::Exit;
use crate::out::{errln, outln};
use std::path::Path;

pub fn validate(file: &Path) -> anyhow::Result<Exit> {
    match vernier_spec::parse_experiment_file(file) {
        Ok(exp) => {
            let space = exp.search_space()?;
            let objective = exp.objective()?;
            let s = &exp.spec;
            let algorithm = s
                .algorithm
                .as_ref()
                .and_then(|a| a.algorithm_name.clone())
                .unwrap_or_default();
            outln!("{}: valid experiment {:?}", file.display(), exp.name());
            outln!(
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
            outln!("  algorithm: {algorithm}");
            outln!(
                "  parameters: {} ({})",
                space.len(),
                space
                    .parameters()
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            outln!(
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
            errln!("{}: {} problem(s) found", file.display(), errors.len());
            errln!("{errors}");
            // Validation errors exit 2 like usage errors.
            std::process::exit(2);
        }
    }
}
