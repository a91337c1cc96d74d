//! Enqueued configurations (`spec.enqueuedTrials`, appended to by `vernier enqueue`): run
//! before the algorithm proposes anything, in the order listed, by the local driver and the
//! operator alike. A trial made from entry `i` carries the label `vernier.enqueue/index = i`,
//! so a resumed experiment, or the next reconcile, runs each entry once; an entry whose trial
//! was killed (an interrupted run) is run again, as the user asked for its result.
//!
//! An entry may leave parameters out, as Optuna's `enqueue_trial` may: they are drawn from
//! their prior (as random search draws them), from a stream of the experiment's seed and the
//! entry's index, so a resumed or re-reconciled experiment draws the same values.

use crate::error::EngineError;
use crate::resolved::ResolvedExperiment;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::HashSet;
use vernier_core::{Assignment, ParamValue, Proposal, Suggestions, TrialRecord, TrialState};
use vernier_spec::enqueue::{ENQUEUED_LABEL, enqueued_values, pairs_of};

/// Keeps the draws for left-out parameters apart from the algorithm's own stream.
const DRAW_SALT: u64 = 0x656e_7175_6575_6564;

/// Up to `count` entries with no trial that ran or runs (any state but Killed), as
/// proposals, in the order listed; `seed` is the experiment's.
pub fn pending(
    exp: &ResolvedExperiment,
    trials: &[TrialRecord],
    count: usize,
    seed: u64,
) -> Result<Vec<Proposal>, EngineError> {
    let done: HashSet<usize> = trials
        .iter()
        .filter(|t| t.state != TrialState::Killed)
        .filter_map(|t| t.labels.get(ENQUEUED_LABEL)?.parse().ok())
        .collect();
    let mut out = Vec::new();
    for (index, entry) in exp.spec.spec.enqueued_trials.iter().enumerate() {
        if out.len() == count {
            break;
        }
        if done.contains(&index) {
            continue;
        }
        let values = enqueued_values(&exp.space, &pairs_of(entry))
            .map_err(|message| EngineError::Enqueued { index, message })?;
        let mut p = Proposal::new(filled(exp, values, seed, index));
        p.labels
            .insert(ENQUEUED_LABEL.to_string(), index.to_string());
        out.push(p);
    }
    Ok(out)
}

/// The entry's values, each parameter it leaves out drawn from its prior.
fn filled(
    exp: &ResolvedExperiment,
    values: Vec<(String, Option<ParamValue>)>,
    seed: u64,
    index: usize,
) -> Assignment {
    let stream = vernier_core::suggest_seed(seed ^ DRAW_SALT, index);
    let mut rng = ChaCha8Rng::seed_from_u64(stream);
    let params = exp.space.parameters();
    Assignment(
        values
            .into_iter()
            .zip(params)
            .map(|((name, v), p)| {
                let v = v.unwrap_or_else(|| vernier_algorithms::sample::sample_param(p, &mut rng));
                (name, v)
            })
            .collect(),
    )
}

/// The suggest step's answer when entries are pending: up to `count` of them, the algorithm's
/// `state` handed back unchanged (it proposed nothing). `None` when none is pending.
pub fn enqueued(
    exp: &ResolvedExperiment,
    trials: &[TrialRecord],
    count: usize,
    state: Option<&str>,
    seed: u64,
) -> Result<Option<Suggestions>, EngineError> {
    let proposals = pending(exp, trials, count, seed)?;
    Ok((!proposals.is_empty()).then(|| Suggestions {
        proposals,
        state: state.map(str::to_string),
        exhausted: false,
    }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::resolved::tests::experiment;

    fn queue(xs: &[&str]) -> ResolvedExperiment {
        let entries: String = xs
            .iter()
            .map(|x| {
                format!("    - parameterAssignments:\n        - {{name: x, value: \"{x}\"}}\n")
            })
            .collect();
        experiment(&format!("  enqueuedTrials:\n{entries}"))
    }

    fn trial(entry: Option<usize>, state: TrialState) -> TrialRecord {
        let exp = queue(&[]);
        let pairs = [("x".to_string(), "0.5".to_string())];
        TrialRecord {
            name: format!("t{entry:?}"),
            assignment: exp.space.parse_assignment(&pairs).unwrap(),
            state,
            objective: None,
            labels: entry
                .map(|i| (ENQUEUED_LABEL.to_string(), i.to_string()))
                .into_iter()
                .collect(),
            metrics: Default::default(),
        }
    }

    /// The entries each proposal came from, by its label.
    fn entries(proposals: &[Proposal]) -> Vec<&str> {
        proposals
            .iter()
            .map(|p| p.labels[ENQUEUED_LABEL].as_str())
            .collect()
    }

    #[test]
    fn entries_run_in_order_once_each_and_again_after_a_kill() {
        use TrialState::*;
        let exp = queue(&["0.25", "0.5", "0.75"]);
        let cases: [(&[TrialRecord], usize, &[&str]); 6] = [
            (&[], 10, &["0", "1", "2"]),
            (&[], 2, &["0", "1"]),
            (
                &[trial(Some(0), Succeeded), trial(None, Running)],
                10,
                &["1", "2"],
            ),
            // Running, failed or stopped by its rule, an entry has had its trial.
            (
                &[
                    trial(Some(0), Running),
                    trial(Some(1), Failed),
                    trial(Some(2), EarlyStopped),
                ],
                10,
                &[],
            ),
            // Killed by an interruption: it has no result, so it runs again.
            (&[trial(Some(1), Killed)], 10, &["0", "1", "2"]),
            (
                &[trial(Some(1), Killed), trial(Some(1), Succeeded)],
                10,
                &["0", "2"],
            ),
        ];
        for (trials, count, want) in cases {
            let got = pending(&exp, trials, count, 7).unwrap();
            assert_eq!(entries(&got), want, "{trials:?}");
        }
        let first = &pending(&exp, &[], 1, 7).unwrap()[0];
        let x = first.assignment.get("x");
        assert_eq!(x, Some(&vernier_core::ParamValue::Double(0.25)));
    }

    /// A parameter an entry leaves out is drawn inside its space, the same for the same seed
    /// and entry (a resume draws what the first run drew), another for another seed or entry.
    #[test]
    fn a_left_out_parameter_is_drawn_the_same_way_each_time() {
        let exp = experiment(
            "  enqueuedTrials:\n    - parameterAssignments: []\n    - parameterAssignments: []\n",
        );
        let x = |seed: u64, entry: usize| {
            let p = &pending(&exp, &[], 2, seed).unwrap()[entry];
            match p.assignment.get("x") {
                Some(vernier_core::ParamValue::Double(v)) => *v,
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(x(7, 0), 0.7235694772383259);
        assert_eq!(x(7, 0), x(7, 0));
        assert_ne!(x(7, 0), x(7, 1));
        assert_ne!(x(7, 0), x(8, 0));
        for seed in 0..50 {
            assert!((0.0..=1.0).contains(&x(seed, 1)), "{seed}");
        }
    }
}
