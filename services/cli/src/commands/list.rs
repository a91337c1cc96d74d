//! `vernier list`: the experiments in the database, newest last.

use crate::Exit;
use crate::out::outln;
use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};

pub async fn list(db: &str) -> anyhow::Result<Exit> {
    let store = crate::db::open(db, vernier_store::OpenMode::ReadOnly).await?;
    let experiments = store.list_experiments().await?;
    if experiments.is_empty() {
        outln!("no experiments in {}", vernier_store::redact_url(db));
        return Ok(Exit::Succeeded);
    }
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED);
    if let Some(width) = crate::out::terminal_width() {
        table
            .set_content_arrangement(ContentArrangement::Dynamic)
            .set_width(width);
    }
    table.set_header(vec!["NAME", "STATUS", "REASON", "TRIALS", "CREATED"]);
    for e in experiments {
        let trials = store.list_trials(&e.name).await?.len();
        // A driver killed before it could record an end leaves a phase that is not so.
        let phase = match crate::db::unattended(&store, &e).await? {
            Some(_) => unattended_phase(&e.status.phase, &e.name, db),
            None => e.status.phase.clone(),
        };
        table.add_row(vec![
            e.name.clone(),
            phase,
            e.status.reason.clone(),
            trials.to_string(),
            vernier_runner::status::rfc3339(e.created_us),
        ]);
    }
    outln!("{table}");
    Ok(Exit::Succeeded)
}

/// The phase of an experiment whose driver is gone, with the command that takes it over on
/// the same database.
fn unattended_phase(phase: &str, name: &str, db: &str) -> String {
    format!(
        "{phase} (no driver: vernier resume {name}{})",
        crate::db::db_flag(db)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resume_hint_reaches_the_listed_database() {
        assert_eq!(
            unattended_phase("Running", "k9", "vernier.db"),
            "Running (no driver: vernier resume k9)"
        );
        assert_eq!(
            unattended_phase("Running", "k9", "runs/k.db"),
            "Running (no driver: vernier resume k9 --db runs/k.db)"
        );
    }
}
