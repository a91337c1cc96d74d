//! `vernier report NAME`: the experiment as a table or as Katib-shaped JSON.

use crate::Exit;
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use vernier_runner::report::{ExperimentReport, load};
use vernier_runner::status::rfc3339;

pub async fn report(db: &str, name: &str, json: bool) -> anyhow::Result<Exit> {
    let store = vernier_store::SqlStore::connect(db).await?;
    let report = load(&store, name).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report.to_katib_json())?);
    } else {
        print_table(&report);
    }
    Ok(match report.row.status.phase.as_str() {
        "Failed" => Exit::Failed,
        _ => Exit::Succeeded,
    })
}

fn print_table(r: &ExperimentReport) {
    let s = &r.row.status;
    println!("experiment {}: {} ({})", r.row.name, s.phase, s.reason);
    println!("  {}", s.message);
    println!(
        "  started {}{}",
        s.started_us.map(rfc3339).unwrap_or_default(),
        s.completed_us
            .map(|c| format!(", completed {}", rfc3339(c)))
            .unwrap_or_default()
    );
    let objective = r.spec.objective().ok();
    let metric_names = objective
        .as_ref()
        .map(|o| o.metric_names())
        .unwrap_or_default();
    let param_names: Vec<String> = r
        .trials
        .first()
        .map(|t| t.row.assignment.iter().map(|(n, _)| n.clone()).collect())
        .unwrap_or_default();
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED);
    let mut header = vec!["".to_string(), "TRIAL".to_string(), "STATUS".to_string()];
    header.extend(param_names.iter().cloned());
    header.extend(metric_names.iter().cloned());
    table.set_header(header);
    for (i, t) in r.trials.iter().enumerate() {
        let mut row = vec![
            if Some(i) == r.best {
                "*".to_string()
            } else {
                String::new()
            },
            t.row.name.clone(),
            t.row.state.as_str().to_string(),
        ];
        for p in &param_names {
            row.push(
                t.row
                    .assignment
                    .iter()
                    .find(|(n, _)| n == p)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default(),
            );
        }
        for m in &metric_names {
            let strategy = objective.as_ref().and_then(|o| o.strategy_for(m));
            row.push(
                t.metrics
                    .iter()
                    .find(|x| &x.name == m)
                    .map(|x| match strategy.and_then(|st| x.value(st)) {
                        Some(v) => v.to_string(),
                        None => x.latest.clone(),
                    })
                    .unwrap_or_default(),
            );
        }
        table.add_row(row);
    }
    println!("{table}");
    match r.best {
        Some(i) => {
            let t = &r.trials[i];
            let assignment: Vec<String> = t
                .row
                .assignment
                .iter()
                .map(|(n, v)| format!("{n}={v}"))
                .collect();
            println!(
                "best trial {}: {}={}  {}",
                t.row.name,
                objective
                    .as_ref()
                    .map(|o| o.metric.as_str())
                    .unwrap_or("objective"),
                t.objective.map(|v| v.to_string()).unwrap_or_default(),
                assignment.join(", ")
            );
        }
        None => println!("no trial has reported the objective metric yet"),
    }
}
