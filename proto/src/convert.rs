//! Conversions between Katib's wire messages and Vernier's core types. Wire values are strings
//! (feasible spaces, assignments, metrics); every one that does not parse is reported with the
//! path of its field in the request, so a client can find it.

use crate::api::{
    self, AlgorithmSetting, AlgorithmSpec, EarlyStoppingSetting, EarlyStoppingSpec, Experiment,
    ExperimentSpec, FeasibleSpace, Metric, ObjectiveSpec, ObjectiveType, ParameterAssignment,
    ParameterSpec, ParameterType, Trial, TrialSpec, TrialStatus, get_suggestions_reply, trial_spec,
    trial_status::TrialConditionType,
};
use crate::error::ProtoError;
use std::collections::BTreeMap;
use vernier_core::MAX_LIST_VALUES;
use vernier_core::{
    Assignment, Direction, Distribution, Domain, EqualBounds, Objective, Parameter, Proposal,
    SearchSpace, TrialRecord, TrialState, equal_bounds, too_many_values,
};

/// An experiment as a suggestion or early-stopping service needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExperimentView {
    pub name: String,
    pub space: SearchSpace,
    pub objective: Objective,
    pub algorithm: String,
    pub settings: Vec<(String, String)>,
    /// Early-stopping algorithm name and settings, if the experiment has them.
    pub early_stopping: Option<(String, Vec<(String, String)>)>,
    pub parallel_trial_count: i32,
    pub max_trial_count: i32,
}

/// Reads the request's `experiment` field (`field` is its path, e.g. `experiment`); what
/// [`experiment_from_wire_warned`] would warn about is converted the same way, silently.
pub fn experiment_from_wire(
    field: &str,
    experiment: Option<&Experiment>,
) -> Result<ExperimentView, ProtoError> {
    experiment_from_wire_warned(field, experiment).map(|(view, _)| view)
}

/// [`experiment_from_wire`], with a warning for each field Katib accepts that Vernier runs
/// differently from what it says (see [`tolerated`]), for the caller to log.
pub fn experiment_from_wire_warned(
    field: &str,
    experiment: Option<&Experiment>,
) -> Result<(ExperimentView, Vec<ConversionWarning>), ProtoError> {
    let e = experiment.ok_or_else(|| {
        ProtoError::missing(
            field,
            "send the experiment with its spec in every request, as Katib's controller does",
        )
    })?;
    let spec_field = format!("{field}.spec");
    let spec = e
        .spec
        .as_ref()
        .ok_or_else(|| ProtoError::missing(&spec_field, "set the experiment spec"))?;
    let mut warnings = Vec::new();
    let space = space_from_wire(&spec_field, spec, &mut warnings)?;
    let objective =
        objective_from_wire(&format!("{spec_field}.objective"), spec.objective.as_ref())?;
    let algorithm = spec.algorithm.as_ref().ok_or_else(|| {
        ProtoError::missing(
            format!("{spec_field}.algorithm"),
            "set algorithm_name, e.g. random",
        )
    })?;
    let view = ExperimentView {
        name: e.name.clone(),
        space,
        objective,
        algorithm: algorithm.algorithm_name.clone(),
        settings: settings_from_wire(&algorithm.algorithm_settings),
        early_stopping: spec.early_stopping.as_ref().map(|es| {
            (
                es.algorithm_name.clone(),
                es.algorithm_settings
                    .iter()
                    .map(|s| (s.name.clone(), s.value.clone()))
                    .collect(),
            )
        }),
        parallel_trial_count: spec.parallel_trial_count,
        max_trial_count: spec.max_trial_count,
    };
    Ok((view, warnings))
}

/// Algorithm settings as name/value pairs, in wire order.
pub fn settings_from_wire(settings: &[AlgorithmSetting]) -> Vec<(String, String)> {
    settings
        .iter()
        .map(|s| (s.name.clone(), s.value.clone()))
        .collect()
}

/// The search space of `spec.parameter_specs`; `warnings` gets what is run differently from
/// what it says.
pub fn space_from_wire(
    spec_field: &str,
    spec: &ExperimentSpec,
    warnings: &mut Vec<ConversionWarning>,
) -> Result<SearchSpace, ProtoError> {
    let field = format!("{spec_field}.parameter_specs.parameters");
    let params = spec
        .parameter_specs
        .as_ref()
        .map(|p| p.parameters.as_slice())
        .unwrap_or_default();
    if params.is_empty()
        && let Some(nas) = &spec.nas_config
    {
        return nas_from_wire(&format!("{spec_field}.nas_config"), nas).map(SearchSpace::for_nas);
    }
    if params.is_empty() {
        return Err(ProtoError::missing(
            &field,
            "an experiment needs at least one parameter (or a nas_config for darts and enas)",
        ));
    }
    let (algorithm, settings) = spec
        .algorithm
        .as_ref()
        .map(|a| {
            (
                a.algorithm_name.as_str(),
                settings_from_wire(&a.algorithm_settings),
            )
        })
        .unwrap_or_default();
    let parameters = params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            parameter_from_wire(
                &format!("{field}[{i}]"),
                p,
                (algorithm, settings.as_slice()),
                warnings,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    SearchSpace::new(parameters).map_err(|e| ProtoError::Core {
        field,
        reason: e.to_string(),
    })
}

fn parse_number<T: std::str::FromStr>(
    field: &str,
    text: &str,
    what: &str,
) -> Result<T, ProtoError> {
    text.trim()
        .parse()
        .map_err(|_| ProtoError::invalid(field, text, format!("is not {what}")))
}

/// An int bound or step, read as the YAML path reads it (`"3.0"` is 3, as Katib's `int(float(x))`).
fn parse_integer(field: &str, text: &str) -> Result<i64, ProtoError> {
    vernier_core::integer_text(text)
        .ok_or_else(|| ProtoError::invalid(field, text, "is not an integer".to_string()))
}

/// A double bound or step: a number, and a finite one ("inf" and "nan" parse, but bound no
/// range), as the YAML path reads numbers.
fn parse_finite(field: &str, text: &str) -> Result<f64, ProtoError> {
    let x: f64 = parse_number(field, text, "a number")?;
    if !x.is_finite() {
        return Err(ProtoError::invalid(
            field,
            text,
            "is not a finite number\nhint: write a finite number, e.g. 1e6 instead of inf",
        ));
    }
    Ok(x)
}

/// An optional field: none when `text` is blank, else what `parse` makes of it.
fn optional<T>(
    text: &str,
    parse: impl FnOnce() -> Result<T, ProtoError>,
) -> Result<Option<T>, ProtoError> {
    match text.trim().is_empty() {
        true => Ok(None),
        false => parse().map(Some),
    }
}

/// One parameter spec. `algorithm` (name and settings) decides what `min == max` means, as
/// for a YAML spec (see [`vernier_core::equal_bounds`]).
fn parameter_from_wire(
    field: &str,
    p: &ParameterSpec,
    (algorithm, settings): (&str, &[(String, String)]),
    warnings: &mut Vec<ConversionWarning>,
) -> Result<Parameter, ProtoError> {
    check_name(&format!("{field}.name"), &p.name)?;
    let default_space = FeasibleSpace::default();
    let fs = p.feasible_space.as_ref().unwrap_or(&default_space);
    let fs_field = format!("{field}.feasible_space");
    let distribution = distribution_from_wire(&fs_field, fs.distribution)?;
    let domain = domain_from_wire(field, p, fs, warnings)?;
    let (domain, distribution) = match equal_bounds(algorithm, settings, &p.name, &domain, &fs.min)
    {
        Some(EqualBounds::Placeholder(widened)) => (widened, Distribution::Uniform),
        Some(EqualBounds::Fixed(fixed)) => (fixed, distribution),
        None => (domain, distribution),
    };
    let min_field = format!("{fs_field}.min");
    let distribution = range_distribution(&min_field, &fs.min, &domain, distribution, warnings);
    let parameter = Parameter {
        name: p.name.clone(),
        domain,
        distribution,
    };
    parameter.validate().map_err(|e| ProtoError::Core {
        field: field.to_string(),
        reason: e.to_string(),
    })?;
    Ok(parameter)
}

/// The values of parameter `p` (at `field`) as its type and feasible space `fs` give them.
fn domain_from_wire(
    field: &str,
    p: &ParameterSpec,
    fs: &FeasibleSpace,
    warnings: &mut Vec<ConversionWarning>,
) -> Result<Domain, ProtoError> {
    let type_field = format!("{field}.parameter_type");
    let kind = ParameterType::try_from(p.parameter_type).map_err(|_| {
        ProtoError::invalid(&type_field, p.parameter_type.to_string(), "is not a ParameterType\nhint: use DOUBLE (1), INT (2), DISCRETE (3) or CATEGORICAL (4)")
    })?;
    let fs_field = format!("{field}.feasible_space");
    Ok(match kind {
        ParameterType::UnknownType => {
            return Err(ProtoError::invalid(
                type_field,
                "UNKNOWN_TYPE",
                format!(
                    "is not a usable type for parameter {:?}\nhint: use DOUBLE, INT, DISCRETE or CATEGORICAL",
                    p.name
                ),
            ));
        }
        ParameterType::Double | ParameterType::Int => {
            range_from_wire(&fs_field, &p.name, kind == ParameterType::Int, fs)?
        }
        ParameterType::Discrete | ParameterType::Categorical => list_from_wire(
            &fs_field,
            &p.name,
            kind == ParameterType::Discrete,
            fs,
            warnings,
        )?,
    })
}

/// A parameter name every `name=value` line (trial arguments, logs, assignment keys) can hold
/// unambiguously: non-empty, without '=' or a control character, as the YAML path requires.
fn check_name(field: &str, name: &str) -> Result<(), ProtoError> {
    if name.is_empty() {
        return Err(ProtoError::missing(field, "name every parameter"));
    }
    if name.contains('=') || name.chars().any(char::is_control) {
        return Err(ProtoError::invalid(
            field,
            name,
            "contains '=' or a control character, which makes every `name=value` line \
             ambiguous\nhint: use letters, digits, '-', '_' or '.'",
        ));
    }
    Ok(())
}

/// A feasible space's distribution; unspecified is uniform, as in Katib.
fn distribution_from_wire(fs_field: &str, wire: i32) -> Result<Distribution, ProtoError> {
    match api::Distribution::try_from(wire) {
        Ok(api::Distribution::Unspecified | api::Distribution::Uniform) => {
            Ok(Distribution::Uniform)
        }
        Ok(api::Distribution::LogUniform) => Ok(Distribution::LogUniform),
        Ok(api::Distribution::Normal) => Ok(Distribution::Normal),
        Ok(api::Distribution::LogNormal) => Ok(Distribution::LogNormal),
        Err(_) => Err(ProtoError::invalid(
            format!("{fs_field}.distribution"),
            wire.to_string(),
            "is not a Distribution\nhint: use UNIFORM (1), LOG_UNIFORM (2), NORMAL (3) or LOG_NORMAL (4)",
        )),
    }
}

/// The `min`, `max` and optional `step` of a DOUBLE or (`int`) INT parameter.
fn range_from_wire(
    fs_field: &str,
    name: &str,
    int: bool,
    fs: &FeasibleSpace,
) -> Result<Domain, ProtoError> {
    let min_field = format!("{fs_field}.min");
    let max_field = format!("{fs_field}.max");
    let step_field = format!("{fs_field}.step");
    if int {
        let min = parse_integer(&min_field, &fs.min)?;
        let max = parse_integer(&max_field, &fs.max)?;
        check_order(fs_field, name, min > max, fs)?;
        let step = optional(&fs.step, || parse_integer(&step_field, &fs.step))?;
        Ok(Domain::Int { min, max, step })
    } else {
        let min = parse_finite(&min_field, &fs.min)?;
        let max = parse_finite(&max_field, &fs.max)?;
        check_order(fs_field, name, min > max, fs)?;
        let step = optional(&fs.step, || parse_finite(&step_field, &fs.step))?;
        Ok(Domain::Double { min, max, step })
    }
}

/// The `list` of a DISCRETE (`discrete`) or CATEGORICAL parameter; Katib's tolerated oddities
/// (repeats, labels in a DISCRETE list) are converted as the YAML path does, with warnings.
fn list_from_wire(
    fs_field: &str,
    name: &str,
    discrete: bool,
    fs: &FeasibleSpace,
    warnings: &mut Vec<ConversionWarning>,
) -> Result<Domain, ProtoError> {
    if fs.list.is_empty() {
        return Err(ProtoError::missing(
            format!("{fs_field}.list"),
            format!("list the values of parameter {name:?}"),
        ));
    }
    if fs.list.len() > MAX_LIST_VALUES {
        return Err(ProtoError::Core {
            field: format!("{fs_field}.list"),
            reason: too_many_values(fs.list.len()),
        });
    }
    Ok(list_domain(
        &format!("{fs_field}.list"),
        discrete,
        &fs.list,
        warnings,
    ))
}

fn check_order(
    field: &str,
    name: &str,
    reversed: bool,
    fs: &FeasibleSpace,
) -> Result<(), ProtoError> {
    if reversed {
        return Err(ProtoError::Core {
            field: field.to_string(),
            reason: format!(
                "min {:?} is greater than max {:?} for parameter {name:?}\nhint: swap min and max",
                fs.min, fs.max
            ),
        });
    }
    Ok(())
}

/// The objective of `spec.objective`. Katib has no metric strategies on the wire (trials
/// arrive already reduced), so the direction's default strategy is used; a zero goal is
/// indistinguishable from no goal in proto3 and is read as none.
pub fn objective_from_wire(
    field: &str,
    o: Option<&ObjectiveSpec>,
) -> Result<Objective, ProtoError> {
    let o = o.ok_or_else(|| ProtoError::missing(field, "set type and objective_metric_name"))?;
    let direction = match ObjectiveType::try_from(o.r#type) {
        Ok(ObjectiveType::Minimize) => Direction::Minimize,
        Ok(ObjectiveType::Maximize) => Direction::Maximize,
        _ => {
            return Err(ProtoError::invalid(
                format!("{field}.type"),
                o.r#type.to_string(),
                "is not MINIMIZE (1) or MAXIMIZE (2)",
            ));
        }
    };
    if o.objective_metric_name.is_empty() {
        return Err(ProtoError::missing(
            format!("{field}.objective_metric_name"),
            "name the metric to optimise",
        ));
    }
    let mut objective = Objective::new(o.objective_metric_name.clone(), direction);
    objective.goal = (o.goal != 0.0).then_some(o.goal);
    objective.additional = o
        .additional_metric_names
        .iter()
        .map(|m| (m.clone(), direction.default_strategy()))
        .collect();
    Ok(objective)
}

/// Katib's condition enum as a core state; `UNKNOWN` (what Katib sends for MetricsUnavailable)
/// becomes MetricsUnavailable, so algorithms never learn from it.
pub fn state_from_wire(field: &str, condition: i32) -> Result<TrialState, ProtoError> {
    Ok(match TrialConditionType::try_from(condition) {
        Ok(TrialConditionType::Created) => TrialState::Created,
        Ok(TrialConditionType::Running) => TrialState::Running,
        Ok(TrialConditionType::Succeeded) => TrialState::Succeeded,
        Ok(TrialConditionType::Killed) => TrialState::Killed,
        Ok(TrialConditionType::Failed) => TrialState::Failed,
        Ok(TrialConditionType::Metricsunavailable | TrialConditionType::Unknown) => {
            TrialState::MetricsUnavailable
        }
        Ok(TrialConditionType::Earlystopped) => TrialState::EarlyStopped,
        Err(_) => {
            return Err(ProtoError::invalid(
                field,
                condition.to_string(),
                "is not a TrialConditionType (0..=7)",
            ));
        }
    })
}

/// The core condition enum value Katib's controller sends for a state.
pub fn state_to_wire(state: TrialState) -> TrialConditionType {
    match state {
        TrialState::Created => TrialConditionType::Created,
        TrialState::Running => TrialConditionType::Running,
        TrialState::Succeeded => TrialConditionType::Succeeded,
        TrialState::Failed => TrialConditionType::Failed,
        TrialState::Killed => TrialConditionType::Killed,
        TrialState::EarlyStopped => TrialConditionType::Earlystopped,
        TrialState::MetricsUnavailable => TrialConditionType::Metricsunavailable,
    }
}

/// Trials left out of a request's history: each one's name, with the warning saying why.
pub type LeftOut = Vec<(String, ConversionWarning)>;

/// The request's trials as core records, and the name of each trial left out because its
/// assignment is not a point of the space, with a warning. `extra_labels` adds labels by trial name (labels a
/// Katib controller does not echo back, carried in algorithm settings instead). Only numbers
/// are kept as metric values: empty values (Katib sends them for metrics without a strategy),
/// Katib's `unavailable` and text (a DARTS genotype, a `latest` strategy's label) are no value,
/// as Katib's services never parse them; a succeeded trial whose objective is text is then one
/// without an objective, which no algorithm learns from.
///
/// A trial whose values lie off a step's grid or outside the range, or that lacks a parameter,
/// is left out rather than refusing the request: Katib's own services propose such values
/// (hyperopt's `quniform` rounds to multiples of the step from 0, below `min`), and its
/// controller sends every trial in every request and retries a refusal forever, so one such
/// trial would end the experiment's suggestions.
pub fn trials_from_wire(
    trials: &[Trial],
    space: &SearchSpace,
    objective: &Objective,
    extra_labels: &BTreeMap<String, BTreeMap<String, String>>,
) -> Result<(Vec<TrialRecord>, LeftOut), ProtoError> {
    let mut records = Vec::with_capacity(trials.len());
    let mut left_out = Vec::new();
    for (i, t) in trials.iter().enumerate() {
        let field = format!("trials[{i}]");
        match trial_from_wire(&field, t, space, objective, extra_labels)? {
            Ok(record) => records.push(record),
            Err(warning) => left_out.push((t.name.clone(), warning)),
        }
    }
    Ok((records, left_out))
}

/// A trial as a record; the inner error is the warning for an assignment outside the space.
fn trial_from_wire(
    field: &str,
    t: &Trial,
    space: &SearchSpace,
    objective: &Objective,
    extra_labels: &BTreeMap<String, BTreeMap<String, String>>,
) -> Result<Result<TrialRecord, ConversionWarning>, ProtoError> {
    let default_spec = TrialSpec::default();
    let spec = t.spec.as_ref().unwrap_or(&default_spec);
    let pairs: Vec<(&str, &str)> = spec
        .parameter_assignments
        .as_ref()
        .map(|a| {
            a.assignments
                .iter()
                .map(|p| (p.name.as_str(), p.value.as_str()))
                .collect()
        })
        .unwrap_or_default();
    let default_status = TrialStatus::default();
    let status = t.status.as_ref().unwrap_or(&default_status);
    let state = state_from_wire(&format!("{field}.status.condition"), status.condition)?;
    let assignment = match space.parse_assignment(&pairs) {
        Ok(assignment) => assignment,
        Err(e) => {
            return Ok(Err(ConversionWarning {
                field: format!("{field}.spec.parameter_assignments (trial {:?})", t.name),
                message: format!("{e}; the algorithm does not learn from this trial"),
            }));
        }
    };
    let mut metrics = BTreeMap::new();
    if let Some(obs) = &status.observation {
        for m in &obs.metrics {
            if let Ok(v) = m.value.trim().parse::<f64>() {
                metrics.insert(m.name.clone(), v);
            }
        }
    }
    let mut labels: BTreeMap<String, String> = spec
        .labels
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Some(extra) = extra_labels.get(&t.name) {
        labels.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    Ok(Ok(TrialRecord {
        name: t.name.clone(),
        assignment,
        state,
        objective: metrics.get(&objective.metric).copied(),
        labels,
        metrics,
    }))
}

/// Name/value assignment pairs on the wire.
pub fn assignment_to_wire(a: &Assignment) -> Vec<ParameterAssignment> {
    a.to_strings()
        .into_iter()
        .map(|(name, value)| ParameterAssignment { name, value })
        .collect()
}

/// Proposals as a reply's assignment list; `names` are optional trial names, one per proposal.
pub fn proposals_to_wire(
    proposals: &[Proposal],
    names: &[String],
) -> Vec<get_suggestions_reply::ParameterAssignments> {
    proposals
        .iter()
        .enumerate()
        .map(|(i, p)| get_suggestions_reply::ParameterAssignments {
            assignments: assignment_to_wire(&p.assignment),
            trial_name: names.get(i).cloned().unwrap_or_default(),
            labels: p
                .labels
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        })
        .collect()
}

/// Reads a plugin's reply back into proposals, checking every assignment against the space.
pub fn proposals_from_wire(
    reply: &[get_suggestions_reply::ParameterAssignments],
    space: &SearchSpace,
) -> Result<Vec<Proposal>, ProtoError> {
    reply
        .iter()
        .enumerate()
        .map(|(i, pa)| {
            let pairs: Vec<(&str, &str)> = pa
                .assignments
                .iter()
                .map(|a| (a.name.as_str(), a.value.as_str()))
                .collect();
            let assignment = space
                .parse_assignment(&pairs)
                .map_err(|e| ProtoError::Core {
                    field: format!("parameter_assignments[{i}]"),
                    reason: e.to_string(),
                })?;
            Ok(Proposal {
                assignment,
                labels: pa
                    .labels
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            })
        })
        .collect()
}

fn trim_number(x: f64) -> String {
    format!("{x}")
}

/// The wire form of a parameter, as Katib's controller builds it from the Experiment.
pub fn parameter_to_wire(p: &Parameter) -> ParameterSpec {
    let distribution = match p.distribution {
        Distribution::Uniform => api::Distribution::Uniform,
        Distribution::LogUniform => api::Distribution::LogUniform,
        Distribution::Normal => api::Distribution::Normal,
        Distribution::LogNormal => api::Distribution::LogNormal,
    };
    let (kind, fs) = match &p.domain {
        Domain::Double { min, max, step } => (
            ParameterType::Double,
            FeasibleSpace {
                min: trim_number(*min),
                max: trim_number(*max),
                step: step.map(trim_number).unwrap_or_default(),
                ..Default::default()
            },
        ),
        Domain::Int { min, max, step } => (
            ParameterType::Int,
            FeasibleSpace {
                min: min.to_string(),
                max: max.to_string(),
                step: step.map(|s| s.to_string()).unwrap_or_default(),
                ..Default::default()
            },
        ),
        Domain::Discrete { values } => (
            ParameterType::Discrete,
            FeasibleSpace {
                list: values.clone(),
                ..Default::default()
            },
        ),
        Domain::Categorical { values } => (
            ParameterType::Categorical,
            FeasibleSpace {
                list: values.clone(),
                ..Default::default()
            },
        ),
    };
    ParameterSpec {
        name: p.name.clone(),
        parameter_type: kind as i32,
        feasible_space: Some(FeasibleSpace {
            distribution: distribution as i32,
            ..fs
        }),
    }
}

/// The wire objective (no strategies: Katib sends none).
pub fn objective_to_wire(o: &Objective) -> ObjectiveSpec {
    ObjectiveSpec {
        r#type: match o.direction {
            Direction::Minimize => ObjectiveType::Minimize,
            Direction::Maximize => ObjectiveType::Maximize,
        } as i32,
        goal: o.goal.unwrap_or(0.0),
        objective_metric_name: o.metric.clone(),
        additional_metric_names: o.additional.iter().map(|(n, _)| n.clone()).collect(),
    }
}

/// The experiment as Katib's controller sends it to a suggestion service.
pub fn experiment_to_wire(view: &ExperimentView) -> Experiment {
    Experiment {
        name: view.name.clone(),
        spec: Some(ExperimentSpec {
            parameter_specs: Some(api::experiment_spec::ParameterSpecs {
                parameters: view
                    .space
                    .parameters()
                    .iter()
                    .map(parameter_to_wire)
                    .collect(),
            }),
            objective: Some(objective_to_wire(&view.objective)),
            algorithm: Some(AlgorithmSpec {
                algorithm_name: view.algorithm.clone(),
                algorithm_settings: view
                    .settings
                    .iter()
                    .map(|(name, value)| AlgorithmSetting {
                        name: name.clone(),
                        value: value.clone(),
                    })
                    .collect(),
            }),
            early_stopping: view.early_stopping.as_ref().map(|(name, settings)| {
                EarlyStoppingSpec {
                    algorithm_name: name.clone(),
                    algorithm_settings: settings
                        .iter()
                        .map(|(name, value)| EarlyStoppingSetting {
                            name: name.clone(),
                            value: value.clone(),
                        })
                        .collect(),
                }
            }),
            parallel_trial_count: view.parallel_trial_count,
            max_trial_count: view.max_trial_count,
            nas_config: view.space.nas().map(nas_to_wire),
        }),
    }
}

/// A trial as Katib's controller sends it: the objective value and every other metric as the
/// strategy-selected value, times at second precision, and a time the trial does not have yet
/// (start while created, completion while running) as the empty string, as Katib's
/// `convertTrialStatusTime` sends a nil time.
pub fn trial_to_wire(
    record: &TrialRecord,
    objective: &Objective,
    start_us: Option<i64>,
    completion_us: Option<i64>,
) -> Trial {
    let mut metrics: Vec<Metric> = Vec::new();
    if let Some(v) = record.objective {
        metrics.push(Metric {
            name: objective.metric.clone(),
            value: v.to_string(),
        });
    }
    for (name, v) in &record.metrics {
        if *name != objective.metric {
            metrics.push(Metric {
                name: name.clone(),
                value: v.to_string(),
            });
        }
    }
    Trial {
        name: record.name.clone(),
        spec: Some(TrialSpec {
            objective: Some(objective_to_wire(objective)),
            parameter_assignments: Some(trial_spec::ParameterAssignments {
                assignments: assignment_to_wire(&record.assignment),
            }),
            labels: record
                .labels
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        }),
        status: Some(TrialStatus {
            start_time: start_us
                .map(crate::time::format_rfc3339_seconds)
                .unwrap_or_default(),
            completion_time: completion_us
                .map(crate::time::format_rfc3339_seconds)
                .unwrap_or_default(),
            condition: state_to_wire(record.state) as i32,
            observation: Some(api::Observation { metrics }),
        }),
    }
}

mod nas;
mod tolerated;
pub use nas::{nas_from_wire, nas_to_wire};
pub use tolerated::ConversionWarning;
use tolerated::{list_domain, range_distribution};

#[cfg(test)]
mod tests;
