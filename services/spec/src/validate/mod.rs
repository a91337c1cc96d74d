//! Katib's validating-webhook rules (`validator.go`) plus the checks Katib leaves to runtime
//! failures (numbers parse, bounds ordered, lists unique, names known). Every rule reports the
//! field path and the offending value; all problems are collected, none short-circuits.

mod batch_job;
mod collector;
mod extensions;
mod nas;
mod objectives;
mod parameters;
mod pod;
mod pod_failure_policy;
mod pod_fields;
mod pod_names;
mod quantity;
mod template;
mod warnings;
pub use batch_job::unset_restart_policy;
pub use warnings::{default_format_reads, format_reading};

pub use warnings::warnings;

use crate::error::{SpecError, SpecErrors};
use crate::known::{
    ALGORITHM_NAMES, EARLY_STOPPING_NAMES, METRIC_STRATEGIES, OBJECTIVE_TYPES, RESUME_POLICIES,
};
use crate::types::{AlgorithmSpec, Experiment};

/// Katib keeps names short so `<experiment>-<algorithm>` and trial names fit Kubernetes limits.
pub const MAX_NAME_LEN: usize = 40;

/// Checks a (defaulted) experiment; the error lists every problem found.
pub fn validate(exp: &Experiment) -> Result<(), SpecErrors> {
    validate_served(exp, &[])
}

/// [`validate`], accepting also the algorithm names an external suggestion service serves.
pub fn validate_served(exp: &Experiment, served: &[&str]) -> Result<(), SpecErrors> {
    let mut errs = Errors::default();
    check_name(exp, &mut errs);
    check_counts(exp, &mut errs);
    check_objective(exp, &mut errs);
    objectives::check(exp, &mut errs);
    check_algorithm(exp, served, &mut errs);
    check_resume_policy(exp, &mut errs);
    parameters::check(exp, &mut errs);
    nas::check(exp, &mut errs);
    template::check(exp, &mut errs);
    collector::check(exp, &mut errs);
    extensions::check(exp, &mut errs);
    errs.0.into_result(())
}

/// Collects errors; the one place messages are assembled, so wording stays uniform.
#[derive(Default)]
pub(crate) struct Errors(SpecErrors);

impl Errors {
    pub(crate) fn add(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.0.push(SpecError::new(path, message));
    }

    pub(crate) fn required(&mut self, path: impl Into<String>, hint: &str) {
        let message = if hint.is_empty() {
            "is required".to_string()
        } else {
            format!("is required; hint: {hint}")
        };
        self.add(path, message);
    }

    /// Each problem as `path: message`, for tests to compare.
    #[cfg(test)]
    pub(crate) fn lines(&self) -> Vec<String> {
        let errors = self.0.errors().iter();
        errors
            .map(|e| format!("{}: {}", e.path(), e.message()))
            .collect()
    }

    /// `value` is not among `allowed`.
    pub(crate) fn not_one_of(&mut self, path: impl Into<String>, value: &str, allowed: &[&str]) {
        let hint = use_one_of(value, allowed);
        self.add(
            path,
            format!("value {value:?} is not supported; hint: {hint}"),
        );
    }
}

/// The hint for `value`, which is not among `allowed`: the closest one, then all of them.
pub(crate) fn use_one_of(value: &str, allowed: &[&str]) -> String {
    let meant = match crate::closest::closest_value(value, allowed) {
        Some(name) => format!("did you mean {name:?}? "),
        None => String::new(),
    };
    format!("{meant}use one of {}", allowed.join(", "))
}

/// A field's text, unless it is missing or holds a `${...}` placeholder (a value only once
/// rendered, so not checked before).
pub(crate) fn written_text(v: Option<&serde_json::Value>) -> Option<&str> {
    v.and_then(serde_json::Value::as_str)
        .filter(|s| !holds_placeholder(s))
}

/// Whether `text` holds a `${...}` placeholder: a value only once the trial is rendered.
pub(crate) fn holds_placeholder(text: &str) -> bool {
    text.contains("${")
}

pub(crate) fn is_blank(s: &Option<String>) -> bool {
    s.as_deref().is_none_or(|s| s.trim().is_empty())
}

fn check_name(exp: &Experiment, errs: &mut Errors) {
    let Some(name) = exp.metadata.name.as_deref().filter(|n| !n.is_empty()) else {
        errs.required("metadata.name", "give the experiment a name");
        return;
    };
    if !is_dns_label(name) {
        errs.add(
            "metadata.name",
            format!(
                "value {name:?} is not a valid name; hint: use lowercase letters, digits and '-', \
                 starting with a letter and ending with a letter or digit"
            ),
        );
    }
    if name.len() > MAX_NAME_LEN {
        errs.add(
            "metadata.name",
            format!(
                "value {name:?} is {} characters long; hint: use at most {MAX_NAME_LEN}",
                name.len()
            ),
        );
    }
    if let Some(ns) = exp.metadata.namespace.as_deref().filter(|n| !n.is_empty())
        && !is_rfc1123_label(ns)
    {
        errs.add(
            "metadata.namespace",
            format!(
                "value {ns:?} is not a Kubernetes namespace name; hint: use at most 63 lowercase \
                 letters, digits and '-', starting and ending with a letter or digit"
            ),
        );
    }
}

/// RFC 1123 label, as Kubernetes checks a namespace, a container or a volume name:
/// `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`, at most 63 characters.
pub(crate) fn is_rfc1123_label(ns: &str) -> bool {
    let b = ns.as_bytes();
    let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    b.len() <= 63
        && b.first().is_some_and(edge)
        && b.last().is_some_and(edge)
        && b.iter().all(|c| edge(c) || *c == b'-')
}

/// `^[a-z]([-a-z0-9]*[a-z0-9])?$`. Katib matches only a prefix; the whole name is checked here
/// because trial and job names are derived from it and Kubernetes checks them whole.
pub(crate) fn is_dns_label(name: &str) -> bool {
    let b = name.as_bytes();
    let inner = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-';
    b.first().is_some_and(u8::is_ascii_lowercase)
        && b.iter().all(inner)
        && b.last().is_some_and(|c| *c != b'-')
}

fn check_counts(exp: &Experiment, errs: &mut Errors) {
    let s = &exp.spec;
    if let Some(n) = s.max_trial_count
        && n <= 0
    {
        errs.add(
            "spec.maxTrialCount",
            format!("value {n} must be greater than 0; hint: the number of trials to run, or leave it out to run until the search ends"),
        );
    }
    if let Some(n) = s.parallel_trial_count
        && n <= 0
    {
        errs.add(
            "spec.parallelTrialCount",
            format!("value {n} must be greater than 0; hint: the number of trials run at once, 3 when left out"),
        );
    }
    if let Some(n) = s.max_failed_trial_count
        && n < 0
    {
        errs.add(
            "spec.maxFailedTrialCount",
            format!("value {n} must not be negative; hint: 0 fails the experiment at its first failed trial"),
        );
    }
    // Against a maxTrialCount already refused, "at most -2" would only mislead.
    if let Some(max) = s.max_trial_count.filter(|max| *max > 0) {
        if let Some(n) = s.max_failed_trial_count
            && n > max
        {
            errs.add(
                "spec.maxFailedTrialCount",
                format!("value {n} must not be greater than spec.maxTrialCount ({max}); hint: set it to at most {max}"),
            );
        }
        if let Some(n) = s.parallel_trial_count
            && n > max
        {
            // Validation sees the defaulted spec, so an omitted count reads as the default.
            let hint = if n == crate::defaults::DEFAULT_PARALLEL_TRIAL_COUNT {
                format!(
                    "; hint: {n} is also the default when parallelTrialCount is not set; set it to at most {max}"
                )
            } else {
                format!("; hint: set it to at most {max}")
            };
            errs.add(
                "spec.parallelTrialCount",
                format!("value {n} must not be greater than spec.maxTrialCount ({max}){hint}"),
            );
        }
    }
}

fn check_objective(exp: &Experiment, errs: &mut Errors) {
    let Some(obj) = &exp.spec.objective else {
        errs.required(
            "spec.objective",
            "set objective.type and objective.objectiveMetricName",
        );
        return;
    };
    match obj.type_.as_deref().filter(|t| !t.is_empty()) {
        None => errs.required("spec.objective.type", "use minimize or maximize"),
        Some(t) if !OBJECTIVE_TYPES.contains(&t) => {
            errs.not_one_of("spec.objective.type", t, OBJECTIVE_TYPES)
        }
        Some(_) => {}
    }
    if let Some(goal) = obj.goal
        && !goal.is_finite()
    {
        errs.add(
            "spec.objective.goal",
            format!("value {goal} is not a finite number"),
        );
    }
    let objective = obj.objective_metric_name.as_deref().unwrap_or("");
    if objective.trim().is_empty() {
        errs.required(
            "spec.objective.objectiveMetricName",
            "name the metric the trials report",
        );
    }
    check_metric_name_length("spec.objective.objectiveMetricName", objective, errs);
    for (i, name) in obj.additional_metric_names.iter().enumerate() {
        let path = format!("spec.objective.additionalMetricNames[{i}]");
        check_metric_name_length(&path, name, errs);
        if name.trim().is_empty() {
            errs.add(
                path,
                format!("value {name:?} is not a metric name; hint: remove the empty entry"),
            );
        } else if name == objective {
            errs.add(
                path,
                format!("value {name:?} is already the objective metric; hint: remove it"),
            );
        }
    }
    for (i, s) in obj.metric_strategies.iter().enumerate() {
        let path = format!("spec.objective.metricStrategies[{i}]");
        // A strategy for an unlisted metric, or a second one, is ignored (see `warnings`).
        if s.name.is_empty() {
            errs.required(format!("{path}.name"), "");
        }
        if !METRIC_STRATEGIES.contains(&s.value.as_str()) {
            errs.not_one_of(format!("{path}.value"), &s.value, METRIC_STRATEGIES);
        }
    }
}

/// A metric name no store can key is refused before anything runs (Katib's database has the
/// same limit).
fn check_metric_name_length(path: &str, name: &str, errs: &mut Errors) {
    let limit = vernier_core::MAX_METRIC_NAME_BYTES;
    if name.len() > limit {
        errs.add(
            path,
            format!(
                "value {:?}... is {} bytes long, more than the {limit} a metric name may have \
                 (as in Katib's database); hint: shorten it",
                name.chars().take(40).collect::<String>(),
                name.len()
            ),
        );
    }
}

fn check_algorithm(exp: &Experiment, served: &[&str], errs: &mut Errors) {
    // A plugin may serve a built-in name; the hint lists each name once.
    let mut known: Vec<&str> = ALGORITHM_NAMES.to_vec();
    known.extend(served.iter().filter(|s| !ALGORITHM_NAMES.contains(s)));
    match &exp.spec.algorithm {
        None => errs.required(
            "spec.algorithm",
            &format!("set algorithmName to one of {}", known.join(", ")),
        ),
        Some(a) => check_algorithm_name(a, "spec.algorithm.algorithmName", &known, errs),
    }
    if let Some(es) = &exp.spec.early_stopping {
        check_algorithm_name(
            es,
            "spec.earlyStopping.algorithmName",
            EARLY_STOPPING_NAMES,
            errs,
        );
    }
}

fn check_algorithm_name(spec: &AlgorithmSpec, path: &str, known: &[&str], errs: &mut Errors) {
    match spec.algorithm_name.as_deref().filter(|n| !n.is_empty()) {
        None => errs.required(path, &format!("use one of {}", known.join(", "))),
        Some(n) if !known.contains(&n) => errs.not_one_of(path, n, known),
        Some(_) => {}
    }
}

fn check_resume_policy(exp: &Experiment, errs: &mut Errors) {
    if let Some(p) = exp.spec.resume_policy.as_deref()
        && !p.is_empty()
        && !RESUME_POLICIES.contains(&p)
    {
        errs.not_one_of("spec.resumePolicy", p, RESUME_POLICIES);
    }
}
