//! Hand-picked configurations (`spec.enqueuedTrials`, `vernier enqueue`) read against the
//! search space, with errors a user can act on: which parameter, which value, what to do.

use crate::types::EnqueuedTrial;
use std::collections::{HashMap, HashSet};
use vernier_core::{Assignment, Domain, ParamValue, SearchSpace};

/// Text for a configuration whose left-out parameters are drawn when it runs:
/// `lr=0.05, batch=(drawn)`.
pub fn describe_values(values: &[(String, Option<ParamValue>)]) -> String {
    values
        .iter()
        .map(|(n, v)| match v {
            Some(v) => format!("{n}={v}"),
            None => format!("{n}=(drawn)"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Label on a trial created from `spec.enqueuedTrials[i]`, holding `i`; how a resumed
/// experiment knows which entries already ran.
pub const ENQUEUED_LABEL: &str = "vernier.enqueue/index";

/// Reads one configuration: every parameter of the space exactly once, each value inside
/// its feasible space. The error is one line plus a `hint:`, without a field path.
pub fn enqueued_assignment(
    space: &SearchSpace,
    pairs: &[(String, String)],
) -> Result<Assignment, String> {
    let values = enqueued_values(space, pairs)?;
    whole(&values).ok_or_else(|| {
        let missing: Vec<&str> = values
            .iter()
            .filter(|(_, v)| v.is_none())
            .map(|(n, _)| n.as_str())
            .collect();
        format!(
            "parameter(s) {} missing; hint: give every parameter a value",
            missing.join(", ")
        )
    })
}

/// The configuration as an assignment when it gives every parameter, else `None` (the ones
/// left out are drawn when its trial is made).
pub fn whole(values: &[(String, Option<ParamValue>)]) -> Option<Assignment> {
    values
        .iter()
        .map(|(n, v)| Some((n.clone(), v.clone()?)))
        .collect::<Option<Vec<_>>>()
        .map(Assignment)
}

/// Reads one configuration as Optuna's `enqueue_trial` takes it: each parameter at most once,
/// each given value inside its feasible space; a parameter left out is `None` (drawn when the
/// trial is made). In the space's order. The error is one line plus a `hint:`.
pub fn enqueued_values(
    space: &SearchSpace,
    pairs: &[(String, String)],
) -> Result<Vec<(String, Option<ParamValue>)>, String> {
    let names: Vec<&str> = space.parameters().iter().map(|p| p.name.as_str()).collect();
    if names.is_empty() {
        return Err(
            "the experiment has no spec.parameters (a neural architecture search: \
                    darts and enas propose architectures, not parameter values); hint: \
                    configurations cannot be enqueued for it"
                .to_string(),
        );
    }
    let known: HashSet<&str> = names.iter().copied().collect();
    // Value by name, built in one pass, so each check below is one lookup.
    let mut given: HashMap<&str, &str> = HashMap::with_capacity(pairs.len());
    for (name, value) in pairs {
        if !known.contains(name.as_str()) {
            return Err(format!(
                "parameter {name:?} is not in the search space; hint: the parameters are {}",
                names.join(", ")
            ));
        }
        if given.insert(name.as_str(), value.as_str()).is_some() {
            return Err(format!(
                "parameter {name:?} is given more than once; hint: give each parameter once"
            ));
        }
    }
    let mut values = Vec::with_capacity(names.len());
    for p in space.parameters() {
        let Some(text) = given.get(p.name.as_str()).copied() else {
            values.push((p.name.clone(), None));
            continue;
        };
        let v = p.parse_value(text).map_err(|e| {
            format!(
                "{e}; hint: pick a value inside the feasible space of {:?}",
                p.name
            )
        })?;
        values.push((p.name.clone(), Some(onto_bounds(&p.domain, v))));
    }
    Ok(values)
}

/// A double the space's rounding tolerance let in a hair outside its bounds runs at the bound
/// (`-3.0000000001` for `min: -3`): a trainer may check its own range strictly.
fn onto_bounds(domain: &Domain, value: ParamValue) -> ParamValue {
    match (domain, value) {
        (Domain::Double { min, max, .. }, ParamValue::Double(v)) => {
            ParamValue::Double(v.clamp(*min, *max))
        }
        (_, value) => value,
    }
}

/// What `new` repeats, if anything: an entry already queued (`spec.enqueuedTrials[i]`) or a
/// trial's configuration (`trials` as name and values), compared as values, so `0.010` repeats
/// `0.01`. A repeat is allowed (a noisy objective may deserve a second run), but worth a word.
pub fn repeated_by(
    space: &SearchSpace,
    new: &Assignment,
    queued: &[EnqueuedTrial],
    trials: &[(String, Vec<(String, String)>)],
) -> Option<String> {
    let key = new.key();
    let same = |pairs: &[(String, String)]| {
        enqueued_assignment(space, pairs).is_ok_and(|a| a.key() == key)
    };
    if let Some(i) = queued.iter().position(|e| same(&pairs_of(e))) {
        return Some(format!("spec.enqueuedTrials[{i}]"));
    }
    trials
        .iter()
        .find(|(_, pairs)| same(pairs))
        .map(|(name, _)| format!("trial {name}"))
}

/// The `(name, value)` pairs of an entry, as written.
pub fn pairs_of(entry: &EnqueuedTrial) -> Vec<(String, String)> {
    entry
        .parameter_assignments
        .iter()
        .map(|a| (a.name.clone(), a.value.clone()))
        .collect()
}
