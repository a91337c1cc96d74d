//! What Katib accepts and Vernier runs, but is probably not what the author meant: each
//! warning names the field and value and says what Vernier does with it. Validation accepts
//! all of these; conversion (`crate::convert`) applies the behaviour described here.

use crate::error::SpecError;
use crate::number::parse_f64;
use crate::types::{Experiment, FeasibleSpace, ParameterSpec};
use std::collections::{HashMap, HashSet};

/// Every warning for a valid experiment, in spec order.
pub fn warnings(exp: &Experiment) -> Vec<SpecError> {
    let mut out = Vec::new();
    for (i, p) in exp.spec.parameters.iter().enumerate() {
        parameter(exp, p, &format!("spec.parameters[{i}]"), &mut out);
    }
    objective(exp, &mut out);
    out.extend(space_smaller_than_budget(exp));
    out.extend(queue_longer_than_budget(exp));
    out.extend(unmatchable_metric_names(exp));
    let trial_spec = exp
        .spec
        .trial_template
        .as_ref()
        .and_then(|t| t.trial_spec.as_ref());
    out.extend(trial_spec.and_then(super::batch_job::unset_restart_policy));
    if let Some(spec) = trial_spec {
        meta_references_in_place(spec, "spec.trialTemplate.trialSpec", &mut out);
    }
    out
}

/// A `${trialSpec.Name}`-style reference written in the template itself: Katib substitutes
/// only `${trialParameters.x}`, so the job gets the text as written (Vernier renders it so too).
fn meta_references_in_place(value: &serde_json::Value, path: &str, out: &mut Vec<SpecError>) {
    match value {
        serde_json::Value::String(text) if text.contains("${trialSpec.") => {
            out.push(SpecError::new(
                path,
                format!(
                    "value {text:?} holds a ${{trialSpec...}} reference, which is not \
                     substituted in the template (only ${{trialParameters.x}} is), so the job \
                     gets it as written; hint: add a trial parameter {{name: trialName, \
                     reference: ${{trialSpec.Name}}}} and write ${{trialParameters.trialName}}"
                ),
            ));
        }
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                meta_references_in_place(v, &format!("{path}.{k}"), out);
            }
        }
        serde_json::Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                meta_references_in_place(v, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// A `maxTrialCount` above the number of configurations of a finite space: the run ends when
/// the last one has run, where Katib's services would repeat configurations up to the count.
fn space_smaller_than_budget(exp: &Experiment) -> Option<SpecError> {
    let algorithm = exp.spec.algorithm.as_ref()?.algorithm_name.as_deref()?;
    let budget = u128::try_from(exp.spec.max_trial_count?).ok()?;
    // Grid and the point samplers never run a configuration twice.
    if algorithm != "grid" && !vernier_core::POINT_SAMPLERS.contains(&algorithm) {
        return None;
    }
    let size = exp.search_space().ok()?.cardinality()?;
    (budget > size).then(|| {
        SpecError::new(
            "spec.maxTrialCount",
            format!(
                "value {budget} is more than the search space's {size} configuration(s): \
                 {algorithm} runs each at most once, so the experiment ends after {size} \
                 trial(s); hint: lower maxTrialCount to {size}, or widen the search space"
            ),
        )
    })
}

/// More `spec.enqueuedTrials` entries than `maxTrialCount`: the last ones never run (the
/// operator says nothing at the end, as a local run does).
fn queue_longer_than_budget(exp: &Experiment) -> Option<SpecError> {
    let budget = usize::try_from(exp.spec.max_trial_count?).ok()?;
    let entries = exp.spec.enqueued_trials.len();
    (entries > budget).then(|| {
        SpecError::new(
            "spec.enqueuedTrials",
            format!(
                "{entries} entries are more than maxTrialCount {budget}, so the last {} never \
                 run; hint: raise maxTrialCount to {entries}, or remove entries",
                entries - budget
            ),
        )
    })
}

fn parameter(exp: &Experiment, p: &ParameterSpec, path: &str, out: &mut Vec<SpecError>) {
    let Some(fs) = p.feasible_space.as_ref() else {
        return;
    };
    let fs_path = format!("{path}.feasibleSpace");
    match p.parameter_type.as_deref() {
        Some("int" | "double") => range(exp, p, fs, &fs_path, out),
        Some(kind @ ("discrete" | "categorical")) => list(fs, kind, &fs_path, out),
        _ => {}
    }
}

fn range(
    exp: &Experiment,
    p: &ParameterSpec,
    fs: &FeasibleSpace,
    path: &str,
    out: &mut Vec<SpecError>,
) {
    let (Some(lo), Some(hi)) = (
        fs.min.as_deref().and_then(parse_f64),
        fs.max.as_deref().and_then(parse_f64),
    ) else {
        return;
    };
    let text = fs.min.as_deref().unwrap_or("");
    if lo == hi {
        let message = if crate::convert::resource_placeholder(exp, p).is_some() {
            format!(
                "min equals max ({text:?}): a placeholder for the resource parameter, whose \
                 values come from the algorithm's settings, as in Katib"
            )
        } else {
            format!(
                "min equals max ({text:?}): a fixed value, passed to every trial (a double as \
                 written, an int as its integer); \
                 hint: widen the range to tune it"
            )
        };
        out.push(SpecError::new(format!("{path}.max"), message));
    }
    let dist = fs.distribution.as_deref().unwrap_or("");
    if matches!(dist, "logUniform" | "logNormal") && lo <= 0.0 {
        out.push(SpecError::new(
            format!("{path}.min"),
            format!(
                "value {text:?} is not positive, so distribution {dist} has no log scale; the \
                 parameter is sampled uniformly instead; hint: set min to the smallest positive \
                 value worth trying to keep the log scale"
            ),
        ));
    }
}

fn list(fs: &FeasibleSpace, kind: &str, path: &str, out: &mut Vec<SpecError>) {
    let tolerated = vernier_core::tolerated_list(kind == "discrete", &fs.list);
    out.extend(tolerated.oddities.iter().map(|o| {
        SpecError::new(
            format!("{path}.list[{}]", o.index()),
            o.message(&fs.list, "categorical"),
        )
    }));
}

fn objective(exp: &Experiment, out: &mut Vec<SpecError>) {
    let Some(obj) = &exp.spec.objective else {
        return;
    };
    let names = &obj.additional_metric_names;
    let mut seen = HashSet::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        if !name.is_empty() && !seen.insert(name) {
            out.push(SpecError::new(
                format!("spec.objective.additionalMetricNames[{i}]"),
                format!("value {name:?} appears twice; it is collected once"),
            ));
        }
    }
    let objective = obj.objective_metric_name.as_deref().unwrap_or("");
    // First position of each strategy's metric: with `seen` above, every check is one lookup.
    let mut first_strategy: HashMap<&str, usize> = HashMap::new();
    for (i, s) in obj.metric_strategies.iter().enumerate() {
        let path = format!("spec.objective.metricStrategies[{i}].name");
        if s.name.is_empty() {
            continue;
        }
        let first = *first_strategy.entry(s.name.as_str()).or_insert(i);
        if s.name != objective && !seen.contains(&s.name) {
            out.push(SpecError::new(
                path,
                format!(
                    "value {:?} is neither the objective metric nor an additional metric, so \
                     the strategy is not used; hint: add it to objective.additionalMetricNames \
                     to collect it",
                    s.name
                ),
            ));
        } else if first != i {
            let j = first;
            out.push(SpecError::new(
                path,
                format!(
                    "value {:?} has a strategy already (metricStrategies[{j}]), which is the \
                     one used",
                    s.name
                ),
            ));
        }
    }
}

/// Metric names that Katib's default TEXT format, `([\w|-]+)\s*=\s*(...)`, can never read
/// whole (`val.loss`, `val/loss`): with that format (a StdOut or TEXT File collector without
/// `metricsFormat`) every trial would end MetricsUnavailable. Katib is silent about it.
fn unmatchable_metric_names(exp: &Experiment) -> Vec<SpecError> {
    let mc = exp.spec.metrics_collector_spec.as_ref();
    let kind = mc
        .and_then(|m| m.collector.as_ref())
        .and_then(|c| c.kind.as_deref());
    let source = mc.and_then(|m| m.source.as_ref());
    let json = source
        .and_then(|s| s.file_system_path.as_ref())
        .is_some_and(|p| p.format.as_deref() == Some("JSON"));
    let custom_format = source
        .and_then(|s| s.filter.as_ref())
        .is_some_and(|f| !f.metrics_format.is_empty());
    let default_text = matches!(kind, None | Some("" | "StdOut" | "File")) && !json;
    let Some(obj) = exp
        .spec
        .objective
        .as_ref()
        .filter(|_| default_text && !custom_format)
    else {
        return Vec::new();
    };
    // Each name where the file writes it: the defaults copy the names of `objectives` into
    // objectiveMetricName and additionalMetricNames, and those of `constraints` into the latter.
    let in_objectives = |n: &String| {
        obj.objectives.iter().any(|t| &t.metric_name == n)
            || obj.constraints.iter().any(|c| &c.metric_name == n)
    };
    let named = obj
        .objectives
        .iter()
        .enumerate()
        .map(|(i, t)| {
            (
                format!("spec.objective.objectives[{i}].metricName"),
                &t.metric_name,
            )
        })
        .chain(obj.constraints.iter().enumerate().map(|(i, c)| {
            (
                format!("spec.objective.constraints[{i}].metricName"),
                &c.metric_name,
            )
        }))
        .chain(
            obj.objective_metric_name
                .iter()
                .map(|n| ("spec.objective.objectiveMetricName".to_string(), n)),
        )
        .chain(
            obj.additional_metric_names
                .iter()
                .enumerate()
                .map(|(i, n)| (format!("spec.objective.additionalMetricNames[{i}]"), n)),
        )
        .filter(|(path, name)| {
            path.contains("objectives[") || path.contains("constraints[") || !in_objectives(name)
        });
    named
        .filter(|(_, name)| !default_format_reads(name))
        .map(|(path, name)| {
            SpecError::new(
                path,
                format!(
                    "value {name:?} cannot be read by Katib's default metrics format, whose \
                     names are letters, digits, '_', '|' and '-', so no printed line reports it; \
                     hint: set spec.metricsCollectorSpec.source.filter.metricsFormat to a \
                     format that matches it, e.g. {}",
                    format_reading(name)
                ),
            )
        })
        .collect()
}

/// Whether Katib's default metrics format can read `name` (letters, digits, `_`, `|`, `-`).
pub fn default_format_reads(name: &str) -> bool {
    name.chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '|' | '-'))
}

/// Katib's default metrics format with the name class widened by the characters of `name`
/// it lacks (ASCII punctuation escaped; `\w` is ASCII, as in Go, so a letter such as `é` must
/// be listed).
pub fn format_reading(name: &str) -> String {
    let mut extra = String::new();
    for c in name.chars() {
        let known = c.is_ascii_alphanumeric() || matches!(c, '_' | '|' | '-');
        if known || extra.contains(c) {
            continue;
        }
        if c.is_ascii_punctuation() {
            extra.push('\\');
        }
        extra.push(c);
    }
    let default_class = r"[\w|-]";
    crate::known::DEFAULT_METRICS_FORMAT.replacen(default_class, &format!("[\\w|{extra}-]"), 1)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    /// The suggested format reads a line that reports the name, with the same Go-to-Rust
    /// reading the collector compiles formats with.
    #[test]
    fn the_suggested_format_reads_the_name_it_was_made_for() {
        for name in [
            "val.loss",
            "précision",
            "acc@1",
            "map:0.5",
            "top[1]",
            "a\\b",
            "x^2&y~",
        ] {
            let format = super::format_reading(name);
            let re = regex::Regex::new(&vernier_core::go_regex(&format)).unwrap();
            let line = format!("epoch 3: {name}=0.25 other=1");
            let caps = re
                .captures(&line)
                .unwrap_or_else(|| panic!("{format}: {line}"));
            assert_eq!((&caps[1], &caps[2]), (name, "0.25"), "{format}");
        }
    }
}
