//! Validation of Vernier's spec extensions owned by the warm-start work: `spec.warmStart` and
//! `spec.enqueuedTrials` (see docs/spec-extensions.md).

use super::{Errors, is_dns_label};
use crate::enqueue::{enqueued_values, pairs_of};
use crate::types::Experiment;
use std::collections::HashSet;

pub(crate) fn check(exp: &Experiment, errs: &mut Errors) {
    check_warm_start(exp, errs);
    check_enqueued(exp, errs);
}

fn check_warm_start(exp: &Experiment, errs: &mut Errors) {
    let Some(ws) = &exp.spec.warm_start else {
        return;
    };
    if ws.experiments.is_empty() && ws.file.is_none() {
        errs.required(
            "spec.warmStart",
            "name earlier experiments in spec.warmStart.experiments or a file of results in \
             spec.warmStart.file",
        );
    }
    let mut listed: HashSet<&str> = HashSet::with_capacity(ws.experiments.len());
    for (i, name) in ws.experiments.iter().enumerate() {
        let path = format!("spec.warmStart.experiments[{i}]");
        let repeated = !listed.insert(name.as_str());
        if !is_dns_label(name) {
            errs.add(
                &path,
                format!("value {name:?} is not a valid experiment name; hint: use the name `vernier list` shows"),
            );
        } else if Some(name.as_str()) == exp.metadata.name.as_deref() {
            errs.add(
                &path,
                format!("value {name:?} is this experiment; hint: name an earlier experiment"),
            );
        } else if repeated {
            errs.add(
                &path,
                format!("value {name:?} is listed twice; hint: list each experiment once"),
            );
        }
    }
    if let Some(file) = &ws.file
        && file.trim().is_empty()
    {
        errs.add(
            "spec.warmStart.file",
            "value \"\" is empty; hint: give the path of a .csv or .jsonl file of results, relative to the experiment file",
        );
    }
}

fn check_enqueued(exp: &Experiment, errs: &mut Errors) {
    if exp.spec.enqueued_trials.is_empty() {
        return;
    }
    // A broken search space is reported by the parameter rules already.
    let Ok(space) = exp.search_space() else {
        return;
    };
    for (i, entry) in exp.spec.enqueued_trials.iter().enumerate() {
        if let Err(message) = enqueued_values(&space, &pairs_of(entry)) {
            errs.add(
                format!("spec.enqueuedTrials[{i}].parameterAssignments"),
                message,
            );
        }
    }
}
