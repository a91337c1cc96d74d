//! From the Katib-shaped `Experiment` to Vernier's core types. Validation has already accepted
//! anything that reaches here, so the errors below only fire on unvalidated input.

use crate::error::{SpecError, SpecErrors};
use crate::number::{parse_f64, parse_i64};
use crate::types::{Experiment, FeasibleSpace, NasConfig, ObjectiveSpec, ParameterSpec};
use std::collections::{HashMap, HashSet};
use vernier_core::{
    Constraint, ConstraintOp, Direction, Distribution, Domain, EqualBounds, MetricStrategy,
    NasOperation, NasParameter, NasParameterKind, Objective, ObjectiveTerm, Parameter, SearchSpace,
    equal_bounds,
};

impl Experiment {
    /// The experiment's name (`metadata.name`), or `""` when unnamed.
    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or("")
    }

    /// The experiment's namespace (`metadata.namespace`), Kubernetes' `default` when unset:
    /// where its trials' jobs and pods are.
    pub fn namespace(&self) -> &str {
        let namespace = self.metadata.namespace.as_deref();
        namespace
            .filter(|n| !n.is_empty())
            .unwrap_or(crate::known::DEFAULT_NAMESPACE)
    }

    /// The search space of `spec.parameters`, in spec order.
    pub fn search_space(&self) -> Result<SearchSpace, SpecErrors> {
        if self.spec.parameters.is_empty()
            && let Some(nas) = &self.spec.nas_config
        {
            return convert_nas(nas).map(SearchSpace::for_nas);
        }
        let mut errors = SpecErrors::default();
        let mut params = Vec::with_capacity(self.spec.parameters.len());
        let algorithm = algorithm_settings(self);
        for (i, p) in self.spec.parameters.iter().enumerate() {
            match convert_parameter(p, &format!("spec.parameters[{i}]"), &algorithm) {
                Ok(p) => params.push(p),
                Err(e) => errors.push(e),
            }
        }
        let params = errors.into_result(params)?;
        SearchSpace::new(params)
            .map_err(|e| SpecError::new("spec.parameters", e.to_string()).into())
    }

    /// The objective with every metric's strategy resolved (Katib's default where unset).
    pub fn objective(&self) -> Result<Objective, SpecErrors> {
        let Some(obj) = &self.spec.objective else {
            return Err(SpecError::new("spec.objective", "is required").into());
        };
        let direction = direction_of(obj.type_.as_deref(), "spec.objective.type")?;
        let metric = obj.objective_metric_name.clone().unwrap_or_default();
        if metric.is_empty() {
            return Err(SpecError::new("spec.objective.objectiveMetricName", "is required").into());
        }
        let mut errors = SpecErrors::default();
        // The first strategy of each metric, by name: one lookup per metric keeps this linear
        // when a spec lists 100,000 metrics.
        let mut first_strategy: HashMap<&str, (usize, &str)> =
            HashMap::with_capacity(obj.metric_strategies.len());
        for (i, s) in obj.metric_strategies.iter().enumerate() {
            first_strategy
                .entry(s.name.as_str())
                .or_insert((i, s.value.as_str()));
        }
        let mut strategy_of = |name: &str| -> MetricStrategy {
            let Some(&(i, value)) = first_strategy.get(name) else {
                return direction.default_strategy();
            };
            match value {
                "min" => MetricStrategy::Min,
                "max" => MetricStrategy::Max,
                "latest" => MetricStrategy::Latest,
                other => {
                    errors.push(SpecError::new(
                        format!("spec.objective.metricStrategies[{i}].value"),
                        format!("value {other:?} is not supported; hint: use min, max or latest"),
                    ));
                    direction.default_strategy()
                }
            }
        };
        let strategy = strategy_of(&metric);
        let additional = dedup(&obj.additional_metric_names)
            .into_iter()
            .map(|n| (n.clone(), strategy_of(&n)))
            .collect();
        let objectives = objective_terms(obj, &metric, direction, &mut errors);
        let constraints = constraints_of(obj, &mut errors);
        errors.into_result(Objective {
            metric,
            direction,
            goal: obj.goal,
            strategy,
            additional,
            objectives,
            constraints,
        })
    }

    /// Every metric the collector must look for, objective first (empty names skipped).
    pub fn metric_names(&self) -> Vec<String> {
        let Some(obj) = &self.spec.objective else {
            return Vec::new();
        };
        let names: Vec<String> = obj
            .objective_metric_name
            .iter()
            .chain(obj.additional_metric_names.iter())
            .filter(|n| !n.is_empty())
            .cloned()
            .collect();
        dedup(&names)
    }
}

/// An objective's `type` as a direction.
fn direction_of(type_: Option<&str>, field: &str) -> Result<Direction, SpecError> {
    match type_ {
        Some("minimize") => Ok(Direction::Minimize),
        Some("maximize") => Ok(Direction::Maximize),
        other => Err(SpecError::new(
            field,
            format!(
                "value {:?} is not supported; hint: use minimize or maximize",
                other.unwrap_or("")
            ),
        )),
    }
}

/// Every objective, the primary one (Katib's fields) first, then `objectives[1..]`.
fn objective_terms(
    obj: &ObjectiveSpec,
    metric: &str,
    direction: Direction,
    errors: &mut SpecErrors,
) -> Vec<ObjectiveTerm> {
    let mut objectives = vec![ObjectiveTerm {
        metric: metric.to_string(),
        direction,
        goal: obj.goal,
    }];
    for (i, t) in obj.objectives.iter().enumerate().skip(1) {
        let field = format!("spec.objective.objectives[{i}].type");
        match direction_of(t.type_.as_deref(), &field) {
            Ok(direction) => objectives.push(ObjectiveTerm {
                metric: t.metric_name.clone(),
                direction,
                goal: t.goal,
            }),
            Err(e) => errors.push(e),
        }
    }
    objectives
}

/// The constraints, each with a metric, a comparison and a finite bound.
fn constraints_of(obj: &ObjectiveSpec, errors: &mut SpecErrors) -> Vec<Constraint> {
    let mut constraints = Vec::new();
    for (i, c) in obj.constraints.iter().enumerate() {
        let op = c.op.as_deref().and_then(ConstraintOp::parse);
        match (op, c.value.filter(|v| v.is_finite())) {
            (Some(op), Some(bound)) if !c.metric_name.is_empty() => constraints.push(Constraint {
                metric: c.metric_name.clone(),
                op,
                bound,
            }),
            _ => errors.push(SpecError::new(
                format!("spec.objective.constraints[{i}]"),
                "needs metricName, op (<=, >=, <, >) and a finite value",
            )),
        }
    }
    constraints
}

/// `items` without repeats, first occurrence kept (Katib accepts repeated names and values;
/// Vernier collects and samples each once). A set keeps it linear: 100,000 values once took
/// seconds here.
fn dedup(items: &[String]) -> Vec<String> {
    let mut seen: HashSet<&str> = HashSet::with_capacity(items.len());
    items
        .iter()
        .filter(|item| seen.insert(item.as_str()))
        .cloned()
        .collect()
}

/// The algorithm's name and settings, as the equal-bounds rule reads them.
fn algorithm_settings(exp: &Experiment) -> (String, Vec<(String, String)>) {
    let Some(algorithm) = exp.spec.algorithm.as_ref() else {
        return Default::default();
    };
    let settings = algorithm
        .algorithm_settings
        .iter()
        .map(|s| (s.name.clone(), s.value.clone()))
        .collect();
    (
        algorithm.algorithm_name.clone().unwrap_or_default(),
        settings,
    )
}

/// The domain a Hyperband or ASHA resource parameter written as a placeholder (`min == max`,
/// as in Katib's `hp-tuning/hyperband.yaml`) takes instead (see [`vernier_core::equal_bounds`]).
/// `None` when `p` is not such a placeholder, or when the settings give no usable top budget
/// (the algorithm then reports the setting).
pub(crate) fn resource_placeholder(exp: &Experiment, p: &ParameterSpec) -> Option<Domain> {
    let (algorithm, settings) = algorithm_settings(exp);
    let fs = p.feasible_space.as_ref()?;
    let (lo, hi) = (
        parse_f64(fs.min.as_deref()?)?,
        parse_f64(fs.max.as_deref()?)?,
    );
    let domain = match p.parameter_type.as_deref()? {
        "int" => Domain::Int {
            min: lo as i64,
            max: hi as i64,
            step: None,
        },
        "double" => Domain::Double {
            min: lo,
            max: hi,
            step: None,
        },
        _ => return None,
    };
    match equal_bounds(&algorithm, &settings, &p.name, &domain, "") {
        Some(EqualBounds::Placeholder(widened)) => Some(widened),
        _ => None,
    }
}

/// A feasible space's distribution; unset is uniform.
fn distribution_of(fs: &FeasibleSpace, fs_path: &str) -> Result<Distribution, SpecError> {
    match fs.distribution.as_deref() {
        None | Some("") | Some("uniform") => Ok(Distribution::Uniform),
        Some("logUniform") => Ok(Distribution::LogUniform),
        Some("normal") => Ok(Distribution::Normal),
        Some("logNormal") => Ok(Distribution::LogNormal),
        Some(other) => Err(SpecError::new(
            format!("{fs_path}.distribution"),
            format!("value {other:?} is not supported"),
        )),
    }
}

/// The values a parameter of its `parameterType` can take.
fn domain_of(
    p: &ParameterSpec,
    fs: &FeasibleSpace,
    path: &str,
    fs_path: &str,
) -> Result<Domain, SpecError> {
    let number = |field: &str, text: Option<&String>| -> Result<f64, SpecError> {
        let text = text.map(String::as_str).unwrap_or("");
        parse_f64(text).ok_or_else(|| {
            SpecError::new(
                format!("{fs_path}.{field}"),
                format!("value {text:?} is not a number"),
            )
        })
    };
    let integer = |field: &str, text: Option<&String>| -> Result<i64, SpecError> {
        let text = text.map(String::as_str).unwrap_or("");
        parse_i64(text).ok_or_else(|| {
            SpecError::new(
                format!("{fs_path}.{field}"),
                format!("value {text:?} is not an integer"),
            )
        })
    };
    Ok(match p.parameter_type.as_deref() {
        Some("double") => Domain::Double {
            min: number("min", fs.min.as_ref())?,
            max: number("max", fs.max.as_ref())?,
            step: fs
                .given_step()
                .map(|s| number("step", Some(s)))
                .transpose()?,
        },
        Some("int") => Domain::Int {
            min: integer("min", fs.min.as_ref())?,
            max: integer("max", fs.max.as_ref())?,
            step: fs
                .given_step()
                .map(|s| integer("step", Some(s)))
                .transpose()?,
        },
        // Katib accepts non-numeric discrete values (labels, so categorical) and repeats.
        Some(kind @ ("discrete" | "categorical")) => {
            vernier_core::tolerated_list(kind == "discrete", &fs.list).domain
        }
        other => {
            return Err(SpecError::new(
                format!("{path}.parameterType"),
                format!("value {:?} is not supported", other.unwrap_or("")),
            ));
        }
    })
}

fn convert_parameter(
    p: &ParameterSpec,
    path: &str,
    (algorithm, settings): &(String, Vec<(String, String)>),
) -> Result<Parameter, SpecError> {
    let fs = p.feasible_space.clone().unwrap_or_default();
    let fs_path = format!("{path}.feasibleSpace");
    let mut distribution = distribution_of(&fs, &fs_path)?;
    let domain = domain_of(p, &fs, path, &fs_path)?;
    let min_text = fs.min.as_deref().unwrap_or("");
    let domain = match equal_bounds(algorithm, settings, &p.name, &domain, min_text) {
        Some(EqualBounds::Placeholder(widened)) => {
            distribution = Distribution::Uniform;
            widened
        }
        Some(EqualBounds::Fixed(fixed)) => fixed,
        None => domain,
    };
    // A log scale needs positive bounds; Katib accepts `min: 0` but its algorithms then fail,
    // so Vernier samples such a parameter uniformly (the spec's warning says so).
    let positive = match &domain {
        Domain::Double { min, .. } => *min > 0.0,
        Domain::Int { min, .. } => *min > 0,
        _ => true,
    };
    if distribution.is_log() && !positive {
        distribution = Distribution::Uniform;
    }
    let parameter = Parameter {
        name: p.name.clone(),
        domain,
        distribution,
    };
    parameter
        .validate()
        .map_err(|e| SpecError::new(path, e.to_string()))?;
    Ok(parameter)
}

/// `spec.nasConfig` as the NAS algorithms read it (feasible spaces stay text, as on the wire).
fn convert_nas(nas: &NasConfig) -> Result<vernier_core::NasConfig, SpecErrors> {
    let graph = nas.graph_config.clone().unwrap_or_default();
    let mut errors = SpecErrors::default();
    let mut operations = Vec::with_capacity(nas.operations.len());
    for (i, op) in nas.operations.iter().enumerate() {
        let mut parameters = Vec::with_capacity(op.parameters.len());
        for (j, p) in op.parameters.iter().enumerate() {
            let path = format!("spec.nasConfig.operations[{i}].parameters[{j}].parameterType");
            let ty = p.parameter_type.as_deref().unwrap_or("");
            let Some(kind) = NasParameterKind::parse(ty) else {
                errors.push(SpecError::new(
                    path,
                    format!("value {ty:?} is not supported"),
                ));
                continue;
            };
            let fs = p.feasible_space.clone().unwrap_or_default();
            parameters.push(NasParameter {
                name: p.name.clone(),
                kind,
                min: fs.min.unwrap_or_default(),
                max: fs.max.unwrap_or_default(),
                step: fs.step.unwrap_or_default(),
                list: fs.list,
            });
        }
        operations.push(NasOperation {
            operation_type: op.operation_type.clone().unwrap_or_default(),
            parameters,
        });
    }
    errors.into_result(vernier_core::NasConfig {
        num_layers: graph.num_layers.unwrap_or(0),
        input_sizes: graph.input_sizes,
        output_sizes: graph.output_sizes,
        operations,
    })
}
