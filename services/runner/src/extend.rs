//! `vernier resume NAME --max-trial-count N`: the local twin of raising `maxTrialCount` (and
//! changing `parallelTrialCount` or `maxFailedTrialCount`, the three counts Katib lets an
//! Experiment's edit change) of an experiment on a cluster. The stored spec gets the new limits and
//! a finished experiment loses its terminal condition; trials, observations and the seed stay,
//! so the driver continues exactly where an uninterrupted run with the larger budget would be.

use crate::error::RunnerError;
use crate::status::{conditions_json, parse_conditions};
use serde_json::Value;
use vernier_core::TrialState;
use vernier_engine::reason;
use vernier_engine::resume::{Ended, ResumePolicy};
use vernier_store::SqlStore;

/// The new limits; `None` keeps the stored value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NewLimits {
    pub max_trial_count: Option<u32>,
    pub parallel_trial_count: Option<u32>,
    pub max_failed_trial_count: Option<u32>,
}

impl NewLimits {
    pub fn is_empty(&self) -> bool {
        self.max_trial_count.is_none()
            && self.parallel_trial_count.is_none()
            && self.max_failed_trial_count.is_none()
    }

    /// The flags that asked for these limits, as typed.
    fn flags(&self) -> String {
        let given = [
            ("--max-trial-count", self.max_trial_count),
            ("--parallel-trial-count", self.parallel_trial_count),
            ("--max-failed-trial-count", self.max_failed_trial_count),
        ];
        let shown: Vec<String> = given
            .iter()
            .filter_map(|(flag, n)| n.map(|n| format!("{flag} {n}")))
            .collect();
        shown.join(" ")
    }
}

/// The stored spec JSON with `limits` written in, checked like a new file.
pub fn with_limits(spec_json: &str, limits: NewLimits) -> Result<String, RunnerError> {
    let mut doc: Value = serde_json::from_str(spec_json).map_err(|e| {
        RunnerError::Spec(
            vernier_spec::SpecError::new("document", format!("the stored spec is not JSON: {e}"))
                .into(),
        )
    })?;
    if let Some(spec) = doc.get_mut("spec").and_then(Value::as_object_mut) {
        if let Some(n) = limits.max_trial_count {
            spec.insert("maxTrialCount".into(), n.into());
        }
        if let Some(n) = limits.parallel_trial_count {
            spec.insert("parallelTrialCount".into(), n.into());
        }
        if let Some(n) = limits.max_failed_trial_count {
            spec.insert("maxFailedTrialCount".into(), n.into());
        }
    }
    let text = doc.to_string();
    vernier_spec::parse_stored_experiment(&text).map_err(|errors| RunnerError::LimitsInvalid {
        flags: limits.flags(),
        errors,
    })?;
    Ok(text)
}

/// How to search again after an experiment that cannot continue: from its results when some
/// trial succeeded, else afresh (a warm start from it would begin from nothing).
fn search_again(name: &str, with_results: bool) -> String {
    match with_results {
        true => format!(
            "start a new experiment to search again, with `warmStart: {{experiments: [{name}]}}` \
             in its spec to begin from these results"
        ),
        false => "start a new experiment to search again (no trial of this one succeeded, so \
                  there are no results to begin from)"
            .to_string(),
    }
}

/// What writing new limits did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extension {
    /// A finished experiment was reopened.
    pub reopened: bool,
    /// Each count that changed, in the order of [`Counts::FIELDS`].
    pub changes: Vec<Change>,
}

/// One count a resume changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub field: &'static str,
    pub before: Option<u32>,
    pub after: u32,
}

impl Extension {
    /// The change of `field`, if it changed.
    pub fn change(&self, field: &str) -> Option<&Change> {
        self.changes.iter().find(|c| c.field == field)
    }
}

/// The counts a resume may change, as a spec holds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Counts([Option<u32>; 3]);

impl Counts {
    const FIELDS: [&'static str; 3] =
        ["maxTrialCount", "parallelTrialCount", "maxFailedTrialCount"];

    fn of(spec_json: &str) -> Result<Counts, RunnerError> {
        let spec = vernier_spec::parse_stored_experiment(spec_json)?.spec;
        let count = |n: Option<i32>| n.map(|n| n.max(0) as u32);
        Ok(Counts([
            count(spec.max_trial_count),
            count(spec.parallel_trial_count),
            count(spec.max_failed_trial_count),
        ]))
    }

    fn max(&self) -> Option<u32> {
        self.0[0]
    }

    /// The counts that differ in `after`.
    fn changes(&self, after: &Counts) -> Vec<Change> {
        Self::FIELDS
            .iter()
            .zip(self.0.iter().zip(after.0.iter()))
            .filter_map(|(field, (before, after))| {
                let after = (*after).filter(|a| Some(*a) != *before)?;
                Some(Change {
                    field,
                    before: *before,
                    after,
                })
            })
            .collect()
    }
}

/// Writes `limits` into the stored experiment `name`. As Katib's webhook, a `maxTrialCount`
/// must be above the trials created so far (an experiment of 4 trials cut to 3 would end at
/// once, lowered from 10 to 5 it runs one more). A finished experiment continues only under
/// Katib's rule (it succeeded by reaching `maxTrialCount`, and the new one is above its trial
/// count), with the engine's local resume policy: local mode keeps every experiment's history,
/// so `resumePolicy` is not asked for.
pub async fn extend(
    store: &SqlStore,
    name: &str,
    limits: NewLimits,
) -> Result<Extension, RunnerError> {
    apply(store, name, check(store, name, limits).await?).await
}

/// Writes what [`check`] accepted.
pub async fn apply(
    store: &SqlStore,
    name: &str,
    checked: Checked,
) -> Result<Extension, RunnerError> {
    let Checked {
        row,
        spec_json,
        before,
        after,
        finished,
    } = checked;
    store.update_experiment_spec(name, &spec_json).await?;
    if finished {
        let mut status = row.status.clone();
        let mut conditions = parse_conditions(&status.conditions_json);
        conditions.retain(|c| c.type_ != "Succeeded" && c.type_ != "Failed");
        status.conditions_json = conditions_json(&conditions);
        status.phase = "Restarting".into();
        status.reason = reason::EXPERIMENT_RESTARTING.into();
        status.message = reason::EXPERIMENT_RESTARTING_MESSAGE.into();
        status.completed_us = None;
        store.update_experiment_status(name, &status).await?;
    }
    Ok(Extension {
        reopened: finished,
        changes: before.changes(&after),
    })
}

/// What [`apply`] writes, once [`check`] found the new limits acceptable.
#[derive(Debug)]
pub struct Checked {
    row: vernier_store::ExperimentRow,
    spec_json: String,
    before: Counts,
    after: Counts,
    finished: bool,
}

/// Whether [`extend`] would accept `limits` for experiment `name`, writing nothing; the
/// refusal is the one `extend` gives, and what it would write goes to [`apply`].
pub async fn check(
    store: &SqlStore,
    name: &str,
    limits: NewLimits,
) -> Result<Checked, RunnerError> {
    let row = store
        .get_experiment(name)
        .await?
        .ok_or_else(|| RunnerError::ExperimentNotFound(name.to_string()))?;
    // A damaged record is named as such, not blamed on the flags about to be written into it.
    vernier_spec::parse_stored_experiment(&row.spec_json).map_err(|e| {
        RunnerError::CorruptExperiment {
            name: name.to_string(),
            reason: e.to_string(),
        }
    })?;
    let spec_json = with_limits(&row.spec_json, limits)?;
    let finished = matches!(row.status.phase.as_str(), "Succeeded" | "Failed");
    let rows = store.list_trials(name).await?;
    let trials = rows.len() as u32;
    let with_results = rows.iter().any(|t| t.state == TrialState::Succeeded);
    let before = Counts::of(&row.spec_json)?;
    let after = Counts::of(&spec_json)?;
    let max = after.max();
    if !finished
        && let Some(m) = limits.max_trial_count
        && m <= trials
    {
        return Err(RunnerError::MaxNotAboveTrials {
            name: name.to_string(),
            max: m,
            trials,
        });
    }
    if finished {
        let succeeded = row.status.phase == "Succeeded";
        let ended = Ended {
            succeeded,
            reason: &row.status.reason,
        };
        if !ResumePolicy::local().continues(ended, max, trials) {
            // The reason allows it and only the count is short: say which count would do.
            if ResumePolicy::local().reopenable(ended, trials) {
                return Err(RunnerError::LimitNotAbove {
                    name: name.to_string(),
                    max: max.unwrap_or(0),
                    trials,
                });
            }
            return Err(RunnerError::NotExtendable {
                name: name.to_string(),
                reason: row.status.reason.clone(),
                trials,
                next: search_again(name, with_results),
            });
        }
    }
    Ok(Checked {
        row,
        spec_json,
        before,
        after,
        finished,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = r#"{"apiVersion":"kubeflow.org/v1beta1","kind":"Experiment","metadata":{"name":"e"},"spec":{"maxTrialCount":3,"parallelTrialCount":1,"objective":{"type":"maximize","objectiveMetricName":"acc"},"algorithm":{"algorithmName":"random"},"parameters":[{"name":"x","parameterType":"double","feasibleSpace":{"min":"0","max":"1"}}],"trialTemplate":{"primaryContainerName":"main","trialParameters":[{"name":"x","reference":"x"}],"trialSpec":{"apiVersion":"batch/v1","kind":"Job","spec":{"template":{"spec":{"containers":[{"name":"main","image":"i","command":["t","${trialParameters.x}"]}]}}}}}}}"#;

    #[test]
    fn new_limits_are_written_and_checked_like_a_file() {
        let out = with_limits(
            SPEC,
            NewLimits {
                max_trial_count: Some(5),
                parallel_trial_count: Some(2),
                max_failed_trial_count: Some(3),
            },
        )
        .unwrap();
        let exp = vernier_spec::parse_experiment(&out).unwrap();
        assert_eq!(exp.spec.max_trial_count, Some(5));
        assert_eq!(exp.spec.parallel_trial_count, Some(2));
        assert_eq!(exp.spec.max_failed_trial_count, Some(3));
        let e = with_limits(
            SPEC,
            NewLimits {
                max_trial_count: Some(2),
                parallel_trial_count: Some(4),
                ..NewLimits::default()
            },
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("spec.parallelTrialCount") && e.contains('4'),
            "{e}"
        );
        assert!(
            e.starts_with(
                "--max-trial-count 2 --parallel-trial-count 4 would make the experiment invalid"
            ),
            "{e}"
        );
        assert!(e.contains("\nhint: pick values"), "{e}");
    }

    /// An unfinished experiment (maxTrialCount 3, one trial) takes a budget above its trials,
    /// lower or higher, and says what changed; one at or below its trials is refused and
    /// leaves the spec as it was.
    #[tokio::test]
    async fn a_running_experiments_budget_must_stay_above_its_trials() {
        let store = SqlStore::connect(":memory:").await.unwrap();
        crate::test_store::with_trial(&store, vernier_core::TrialState::Killed).await;
        store.update_experiment_spec("e", SPEC).await.unwrap();
        let to = |n| NewLimits {
            max_trial_count: Some(n),
            ..NewLimits::default()
        };
        let e = extend(&store, "e", to(1)).await.unwrap_err().to_string();
        assert!(
            e.starts_with(
                "--max-trial-count 1 is not above the 1 trial(s) experiment \"e\" has created"
            ) && e.contains("hint: pass --max-trial-count above 1"),
            "{e}"
        );
        let kept = store.get_experiment("e").await.unwrap().unwrap();
        assert_eq!(kept.spec_json, SPEC);
        let lowered = extend(&store, "e", to(2)).await.unwrap();
        assert_eq!(
            lowered,
            Extension {
                reopened: false,
                changes: vec![Change {
                    field: "maxTrialCount",
                    before: Some(3),
                    after: 2
                }],
            }
        );
        let same = extend(&store, "e", to(2)).await.unwrap();
        assert!(same.changes.is_empty());
        let wider = NewLimits {
            parallel_trial_count: Some(2),
            max_failed_trial_count: Some(0),
            ..NewLimits::default()
        };
        let wider = extend(&store, "e", wider).await.unwrap();
        let changed: Vec<(&str, Option<u32>, u32)> = wider
            .changes
            .iter()
            .map(|c| (c.field, c.before, c.after))
            .collect();
        assert_eq!(
            changed,
            [
                ("parallelTrialCount", Some(1), 2),
                ("maxFailedTrialCount", None, 0)
            ]
        );
    }
}
