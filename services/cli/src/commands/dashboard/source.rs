//! Where the dashboard reads experiments: the database (everything, including raw learning
//! curves and trial logs) or a cluster's Experiment and Trial objects (reduced metrics only).
//! Reuses `vernier report`'s loaders so both show the same numbers.

use crate::commands::report::{DatabaseMoved, KubeArgs, Source};
use serde_json::{Value, json};
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::{Arc, RwLock};
use vernier_report::ExperimentReport;
use vernier_report::dashboard::{self, PAGE_CURVES};

/// Bytes read from the end of a trial's log for its page.
const LOG_TAIL_BYTES: u64 = 64 * 1024;
/// Lines of that tail shown.
const LOG_TAIL_LINES: usize = 200;

/// The dashboard's view of a report source. A SQLite file replaced under it (a new run after
/// the old file was deleted, a restored backup) is opened again, since a dashboard outlives
/// many runs; until a file is back at the path, reads fail naming it.
pub struct DashSource {
    source: RwLock<Arc<Source>>,
    db: String,
    kube: KubeArgs,
}

impl DashSource {
    /// `e` as the CLI prints it, the commands its hints quote naming this database.
    pub fn explain(&self, e: &anyhow::Error) -> String {
        crate::error_text::render(e, &crate::db::db_flag(&self.db))
    }

    pub async fn open(db: &str, kube: &KubeArgs) -> anyhow::Result<DashSource> {
        Ok(DashSource {
            source: RwLock::new(Arc::new(Source::open(db, kube).await?)),
            db: db.to_string(),
            kube: kube.clone(),
        })
    }

    /// The source to read now: the opened one while its file is in place, else the file at
    /// the path now, else the error that says the file is gone.
    async fn current(&self) -> anyhow::Result<Arc<Source>> {
        let opened = self.source.read().map_err(|_| poisoned())?.clone();
        let reopened = opened.reopened_if_moved(&self.db, &self.kube).await;
        let Some(fresh) = reopened.map_err(|e| match e.downcast_ref::<DatabaseMoved>() {
            Some(moved) => moved.while_served(),
            None => e,
        })?
        else {
            return Ok(opened);
        };
        let fresh = Arc::new(fresh);
        *self.source.write().map_err(|_| poisoned())? = fresh.clone();
        Ok(fresh)
    }

    /// Experiment names, oldest first for the database, by name for a cluster.
    pub async fn names(&self) -> anyhow::Result<Vec<String>> {
        Ok(match &*self.current().await? {
            Source::Db(store, _) => store
                .list_experiments()
                .await?
                .into_iter()
                .map(|e| e.name)
                .collect(),
            Source::Kube { client, namespace } => {
                vernier_operator::report_source::experiment_names(client, namespace).await?
            }
        })
    }

    /// The report without learning curves.
    pub async fn report(&self, name: &str) -> anyhow::Result<ExperimentReport> {
        self.current().await?.load(name, 0).await
    }

    /// The report with the curves the experiment page draws (the one every page reads, cached
    /// by the routes), those of trials that had ended in `earlier` taken from there.
    pub async fn report_with_curves(
        &self,
        name: &str,
        earlier: Option<&ExperimentReport>,
    ) -> anyhow::Result<ExperimentReport> {
        let source = self.current().await?;
        source.load_after(name, PAGE_CURVES, earlier).await
    }

    /// The trial page's JSON from its experiment's report `r`, `None` when the experiment has
    /// no such trial. Reads only this trial's values and log.
    pub async fn trial(&self, r: &ExperimentReport, trial: &str) -> anyhow::Result<Option<Value>> {
        let source = self.current().await?;
        let Some(index) = r.trials.iter().position(|t| t.row.name == trial) else {
            return Ok(None);
        };
        let (curves, log) = match &*source {
            Source::Db(store, _) => {
                let mut curves: Vec<(String, Vec<f64>)> = Vec::new();
                for o in store.observations(trial, None, None, None).await? {
                    let Some(v) = o.value.trim().parse::<f64>().ok().filter(|v| v.is_finite())
                    else {
                        continue;
                    };
                    match curves.iter_mut().find(|(m, _)| *m == o.metric) {
                        Some((_, values)) => values.push(v),
                        None => curves.push((o.metric, vec![v])),
                    }
                }
                let log = log_json(&r.row.log_dir, trial);
                (curves, log)
            }
            Source::Kube { namespace, .. } => (
                Vec::new(),
                json!({"error": format!(
                    "trial logs are in the cluster: kubectl logs -n {namespace} -l {}={trial} --all-containers",
                    vernier_spec::trial::TRIAL_LABEL
                )}),
            ),
        };
        Ok(Some(dashboard::trial_json(r, index, &curves, log)))
    }

    /// A value that changes whenever something a page shows changes: the phase, each trial's
    /// state, and each running trial's reduced metrics. Cheap against the database (no raw
    /// logs read), a full reload against a cluster. The flag says whether the experiment is
    /// finished, so live updates can stop.
    pub async fn fingerprint(&self, name: &str) -> anyhow::Result<(u64, bool)> {
        let mut h = DefaultHasher::new();
        let phase = match &*self.current().await? {
            Source::Db(store, _) => {
                let Some(row) = store.get_experiment(name).await? else {
                    return Err(vernier_report::ReportError::ExperimentNotFound(name.into()).into());
                };
                for t in store.list_trials(name).await? {
                    (t.name.as_str(), t.state.as_str(), t.completed_us).hash(&mut h);
                    if t.state == vernier_core::TrialState::Running {
                        for m in store.trial_summary(&t.name).await?.0 {
                            (m.summary.name, m.summary.latest, m.numeric_count).hash(&mut h);
                        }
                    }
                }
                // A driver found gone shows at once, not at the next trial change.
                crate::db::unattended(store, &row)
                    .await?
                    .is_some()
                    .hash(&mut h);
                row.status.phase
            }
            Source::Kube { .. } => {
                let r = self.report(name).await?;
                dashboard::summary_json(&r).to_string().hash(&mut h);
                for t in &r.trials {
                    (t.row.state.as_str(), t.objective.map(f64::to_bits)).hash(&mut h);
                }
                r.row.status.phase
            }
        };
        phase.hash(&mut h);
        let finished = vernier_report::analysis::phase_is_final(&phase);
        Ok((h.finish(), finished))
    }
}

fn poisoned() -> anyhow::Error {
    anyhow::anyhow!(
        "the dashboard's database handle was left broken by a failed request\nhint: restart `vernier dashboard`"
    )
}

/// The tail of `<log_dir>/<trial>.log`, or why there is none.
fn log_json(log_dir: &str, trial: &str) -> Value {
    if log_dir.is_empty() {
        return json!({"error": "this experiment keeps no local logs"});
    }
    let path = Path::new(log_dir).join(format!("{trial}.log"));
    match read_tail(&path) {
        Ok((bytes, whole)) => {
            let (lines, truncated) = dashboard::log_tail(&bytes, whole, LOG_TAIL_LINES);
            json!({"path": path.display().to_string(), "lines": lines, "truncated": truncated})
        }
        Err(e) => {
            json!({"path": path.display().to_string(), "error": format!("cannot read the log: {e}")})
        }
    }
}

/// The last [`LOG_TAIL_BYTES`] of a file, and whether that is the whole file.
fn read_tail(path: &Path) -> std::io::Result<(Vec<u8>, bool)> {
    let mut f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    let start = len.saturating_sub(LOG_TAIL_BYTES);
    f.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::new();
    f.take(LOG_TAIL_BYTES).read_to_end(&mut bytes)?;
    Ok((bytes, start == 0))
}
