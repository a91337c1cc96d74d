//! A point of the search space that renders a trial command without running anything: what
//! `run` and `validate` render the template with before anything is recorded, and the
//! image-path warning too.

use vernier_core::{Domain, SearchSpace};
use vernier_engine::{AlgorithmSource, ResolvedExperiment};
use vernier_runner::LocalExperiment;

/// What rendering a first trial's command says is wrong, if anything: a trial parameter the
/// assignment lacks (a NAS experiment's references are checked only here, as its trial
/// parameters exist only in its algorithm's proposals), a value a command cannot take.
pub(crate) fn first_trial_error(exp: &LocalExperiment, source: AlgorithmSource) -> Option<String> {
    let point = first_proposal(exp, source).unwrap_or_else(|| first_point(&exp.space));
    exp.command_for("first", &point).err().map(|e| {
        let text = e.to_string();
        text.strip_prefix("trial first: ")
            .map_or(text.clone(), str::to_string)
    })
}

/// What the experiment's own algorithm proposes first: the assignment `run` would render its
/// first trial with. A NAS algorithm's trial parameters (DARTS's `algorithm-settings`, ENAS's
/// `architecture`) exist only in its proposals, not in the search space. `None` for an
/// algorithm served by a plugin, or one that proposes nothing before it has results.
fn first_proposal(
    exp: &ResolvedExperiment,
    source: AlgorithmSource,
) -> Option<Vec<(String, String)>> {
    if source != AlgorithmSource::BuiltIn {
        return None;
    }
    let suggester = vernier_engine::build_suggester(exp, 0).ok()?;
    let input = vernier_engine::SuggestInput {
        history: &[],
        own: 0,
        count: 1,
        state: None,
    };
    let suggestions = vernier_engine::suggest(suggester.as_ref(), exp, 0, input).ok()?;
    let first = suggestions.proposals.into_iter().next()?;
    Some(first.assignment.to_strings())
}

/// Each parameter's first value (its minimum, or first list entry): enough to render a trial.
pub(crate) fn first_point(space: &SearchSpace) -> Vec<(String, String)> {
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
