//! `vernier enqueue NAME --param k=v ...`: adds a hand-picked configuration to an existing
//! experiment's `spec.enqueuedTrials`; the next `vernier resume` runs it before the algorithm
//! proposes anything. An experiment that ended by reaching maxTrialCount takes one too, since
//! `vernier resume --max-trial-count` reopens it (the engine's resume rule decides).

use crate::Exit;
use crate::out::{errln, outln};
use anyhow::Context;
use vernier_engine::ResumePolicy;
use vernier_engine::resume::Ended;
use vernier_spec::enqueue::{describe_values, enqueued_values, repeated_by, whole};
use vernier_spec::types::{EnqueuedTrial, ParameterAssignmentSpec};

pub async fn enqueue(db: &str, name: &str, params: &[String]) -> anyhow::Result<Exit> {
    let pairs = name_value_pairs(params)?;
    let store = crate::db::open(db, vernier_store::OpenMode::Existing).await?;
    let row = store.get_experiment(name).await?.ok_or_else(|| {
        anyhow::anyhow!(
            "experiment {name:?} does not exist in {}\nhint: `vernier list` shows the experiments there",
            vernier_store::redact_url(db)
        )
    })?;
    let finished = matches!(row.status.phase.as_str(), "Succeeded" | "Failed");
    let rows = store.list_trials(name).await?;
    let trials = rows.len() as u32;
    let ended = Ended {
        succeeded: row.status.phase == "Succeeded",
        reason: &row.status.reason,
    };
    // A larger maxTrialCount reopens it, as `vernier resume --max-trial-count` does.
    let reopenable = finished && ResumePolicy::local().reopenable(ended, trials);
    if finished && !reopenable {
        anyhow::bail!(
            "experiment {name:?} has already finished ({}: {}), so nothing would run the configuration\nhint: start a new experiment with spec.enqueuedTrials (and spec.warmStart.experiments: [{name}] to keep its results)",
            row.status.phase,
            row.status.reason
        );
    }
    let mut spec = vernier_spec::parse_stored_experiment(&row.spec_json)
        .map_err(|e| anyhow::anyhow!("stored experiment {name:?} is unreadable: {e}"))?;
    let space = spec
        .search_space()
        .map_err(|e| anyhow::anyhow!("stored experiment {name:?} is unreadable: {e}"))?;
    let values = enqueued_values(&space, &pairs)
        .map_err(|e| anyhow::anyhow!("--param: {}", e.replacen("; hint:", "\nhint:", 1)))?;
    // Parameters left out are drawn when the trial is made, so only a whole configuration
    // can repeat one.
    let ran: Vec<(String, Vec<(String, String)>)> =
        rows.into_iter().map(|t| (t.name, t.assignment)).collect();
    let repeated =
        whole(&values).and_then(|a| repeated_by(&space, &a, &spec.spec.enqueued_trials, &ran));
    let assignment = describe_values(&values);
    if let Some(first) = repeated {
        errln!(
            "warning: {assignment} is the configuration of {first} already; it is enqueued again and runs again"
        );
    }
    spec.spec.enqueued_trials.push(EnqueuedTrial {
        parameter_assignments: values
            .iter()
            .filter_map(|(name, v)| {
                let value = v.as_ref()?.to_string();
                Some(ParameterAssignmentSpec {
                    name: name.clone(),
                    value,
                })
            })
            .collect(),
    });
    let index = spec.spec.enqueued_trials.len() - 1;
    let json = serde_json::to_string(&spec)
        .with_context(|| format!("cannot serialise the spec of experiment {name}"))?;
    store.update_experiment_spec(name, &json).await?;
    outln!("enqueued {assignment} as spec.enqueuedTrials[{index}] of experiment {name}");
    let max = spec.spec.max_trial_count;
    tell_when_it_runs(&store, db, name, (trials, max), reopenable).await?;
    Ok(Exit::Succeeded)
}

/// The `--param` flags as (name, value) pairs.
fn name_value_pairs(params: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    let mut pairs = Vec::with_capacity(params.len());
    for p in params {
        let Some((k, v)) = p.split_once('=') else {
            anyhow::bail!(
                "--param {p:?} is not NAME=VALUE\nhint: write e.g. --param lr=0.01 --param optimizer=adam"
            );
        };
        pairs.push((k.trim().to_string(), v.trim().to_string()));
    }
    Ok(pairs)
}

/// Says which command runs the enqueued configuration: the experiment has `trials` of
/// maxTrialCount `max`, and `reopenable` when it ended at that budget.
async fn tell_when_it_runs(
    store: &vernier_store::SqlStore,
    db: &str,
    name: &str,
    (trials, max): (u32, Option<i32>),
    reopenable: bool,
) -> anyhow::Result<()> {
    let db_flag = crate::db::db_flag(db);
    if reopenable {
        outln!(
            "`vernier resume {name}{db_flag} --max-trial-count N`, with N above its {trials} trials, reopens it and runs it first"
        );
    } else if let Some(holder) = vernier_runner::lease::live_holder(store, name).await? {
        outln!(
            "note: pid {} on host {} drives {name} now and read its spec when it started; the configuration runs when the experiment is resumed after that run: `vernier resume {name}{db_flag}` if it is interrupted, `vernier resume {name} --max-trial-count N{db_flag}` (N above its trial count) if it ends by reaching maxTrialCount; an experiment that ends by reaching its goal or failing does not continue",
            holder.pid,
            holder.host
        );
    } else if let Some(max) = max.filter(|&m| i64::from(trials) >= i64::from(m)) {
        // Interrupted with its budget spent (killed trials count): a plain resume ends at once.
        outln!(
            "its {trials} trial(s) already reach maxTrialCount {max}: `vernier resume {name}{db_flag} --max-trial-count N`, with N above {trials}, runs it first"
        );
    } else {
        outln!("`vernier resume {name}{db_flag}` runs it first");
    }
    Ok(())
}
