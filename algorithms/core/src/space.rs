//! The search space: typed parameters with their feasible domains and prior distributions.

use crate::Short;
use crate::error::CoreError;
use crate::nas::NasConfig;
use crate::range;
use crate::range::GRID_TOLERANCE;
use crate::value::{Assignment, ParamValue};
use serde::{Deserialize, Serialize};

/// The prior a parameter is sampled from (Katib `distribution`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub enum Distribution {
    #[default]
    Uniform,
    LogUniform,
    /// Mean `(min+max)/2`, standard deviation `(max-min)/6`, truncated to `[min, max]`.
    Normal,
    /// Normal on `ln(x)` with the same rule applied to `ln(min)`, `ln(max)`.
    LogNormal,
}

impl Distribution {
    pub fn is_log(self) -> bool {
        matches!(self, Distribution::LogUniform | Distribution::LogNormal)
    }
}

/// Where a parameter's values may lie.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Domain {
    /// Real values in `[min, max]`; with a step, only `min + k*step`.
    Double {
        min: f64,
        max: f64,
        step: Option<f64>,
    },
    /// Integers in `[min, max]`; with a step, only `min + k*step`.
    Int {
        min: i64,
        max: i64,
        step: Option<i64>,
    },
    /// A list of numeric values (kept as written).
    Discrete { values: Vec<String> },
    /// A list of labels.
    Categorical { values: Vec<String> },
}

/// A named parameter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Parameter {
    pub name: String,
    pub domain: Domain,
    pub distribution: Distribution,
}

/// An ordered set of uniquely named parameters, or a neural architecture search's `nasConfig`
/// (then no parameters: the NAS algorithm names its own assignments, whose values are text).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct SearchSpace {
    parameters: Vec<Parameter>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    nas: Option<NasConfig>,
}

/// Rounds away binary noise such as `0.30000000000000004` (12 significant digits).
pub fn tidy(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    format!("{x:.11e}").parse().unwrap_or(x)
}

/// The grid point `min + k*step` with its binary noise rounded away: the fewest significant
/// digits (12 or more) that stay on the point, so `1000000.000009` (13 digits) is kept apart
/// from its neighbours where [`tidy`] alone would merge them.
pub fn grid_point(min: f64, k: f64, step: f64) -> f64 {
    let x = min + k * step;
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let tol = (GRID_TOLERANCE * step.abs()).max(x.abs() * 4.0 * f64::EPSILON);
    // The point at zero (`-0.7 + 7 * 0.1`), whose noise no count of digits rounds away.
    if x.abs() <= tol {
        return 0.0;
    }
    (11..=16)
        .map(|digits| format!("{x:.digits$e}").parse().unwrap_or(x))
        .find(|t: &f64| (t - x).abs() <= tol)
        .unwrap_or(x)
}

/// A list as an error shows it: the first values, each cut short, and how many there are, so
/// a list of thousands (or of long values) stays a readable line.
fn shown_list(values: &[String]) -> String {
    const FIRST: usize = 10;
    const CHARS: usize = 40;
    let cut = |v: &String| match crate::first_chars(v, CHARS) {
        Some(head) => format!("{head:?}..."),
        None => format!("{v:?}"),
    };
    let shown: Vec<String> = values.iter().take(FIRST).map(cut).collect();
    if values.len() > FIRST {
        format!("[{}, ...] ({} values)", shown.join(", "), values.len())
    } else {
        format!("[{}]", shown.join(", "))
    }
}

/// The most values a `discrete` or `categorical` list may hold. Every algorithm's work grows
/// with it (the GP one-hot encodes it, TPE weighs every value), and a million values arrive in
/// a 4 MiB request; twice the largest list tested keeps real specs well inside.
pub const MAX_LIST_VALUES: usize = 200_000;

/// An integer as Katib's text fields hold one, surrounding whitespace ignored; `"3.0"` and
/// `"1e1"` count, as YAML writers and some clients (and Katib's `int(float(x))`) emit and read
/// integers that way. Beyond 2^53 an `f64` no longer holds every integer, so only exact
/// integer text counts there.
pub fn integer_text(text: &str) -> Option<i64> {
    let t = text.trim();
    if let Ok(v) = t.parse::<i64>() {
        return Some(v);
    }
    let f = t.parse::<f64>().ok().filter(|f| f.is_finite())?;
    (f.fract() == 0.0 && f.abs() <= 9.0e15).then_some(f as i64)
}

/// Why a list of `n` values is refused, with what to do instead.
pub fn too_many_values(n: usize) -> String {
    format!(
        "the list has {n} values, more than the {MAX_LIST_VALUES} a list may hold\nhint: \
         use an int or double range for ordered values, or fewer choices"
    )
}

impl Parameter {
    /// Checks the invariants the rest of Vernier relies on.
    pub fn validate(&self) -> Result<(), CoreError> {
        let bad =
            |reason: String| CoreError::InvalidSpace(format!("parameter {}: {reason}", self.name));
        match &self.domain {
            Domain::Double { min, max, step } => {
                if !(min.is_finite() && max.is_finite()) || min >= max {
                    return Err(bad(format!(
                        "min {} must be less than max {}",
                        Short(*min),
                        Short(*max)
                    )));
                }
                if let Some(s) = step
                    && !(s.is_finite() && *s > 0.0)
                {
                    return Err(bad(format!("step {} must be greater than 0", Short(*s))));
                }
                if let Some(s) = step
                    && !range::double_grid_fits(*min, *max, *s)
                {
                    let (s, min, max) = (Short(*s), Short(*min), Short(*max));
                    return Err(bad(format!(
                        "step {s} over [{min}, {max}] makes more than 2^53 grid points, too \
                         many to tell apart\nhint: remove the step for a continuous range, or use \
                         a larger step"
                    )));
                }
                if self.distribution.is_log() && *min <= 0.0 {
                    return Err(bad(format!(
                        "min {} must be greater than 0 for a log distribution",
                        Short(*min)
                    )));
                }
            }
            Domain::Int { min, max, step } => {
                if min >= max {
                    return Err(bad(format!("min {min} must be less than max {max}")));
                }
                if let Some(s) = step
                    && *s <= 0
                {
                    return Err(bad(format!("step {s} must be greater than 0")));
                }
                if self.distribution.is_log() && *min <= 0 {
                    return Err(bad(format!(
                        "min {min} must be greater than 0 for a log distribution"
                    )));
                }
            }
            Domain::Discrete { values } | Domain::Categorical { values } => {
                if values.is_empty() {
                    return Err(bad("the list of values is empty".into()));
                }
                if values.len() > MAX_LIST_VALUES {
                    return Err(bad(too_many_values(values.len())));
                }
                let mut seen = std::collections::HashSet::with_capacity(values.len());
                for v in values {
                    if !seen.insert(v) {
                        return Err(bad(format!("value {v:?} appears twice")));
                    }
                }
                if let Domain::Discrete { values } = &self.domain {
                    for v in values {
                        if v.trim().parse::<f64>().is_err() {
                            return Err(bad(format!("discrete value {v:?} is not a number")));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Number of distinct values, or `None` for a continuous double.
    pub fn cardinality(&self) -> Option<u128> {
        match &self.domain {
            Domain::Double { min, max, step } => step.map(|s| {
                // Validation keeps this below 2^53; saturate rather than wrap regardless.
                (range::double_last(*min, *max, s) as u128).saturating_add(1)
            }),
            Domain::Int { min, max, step } => {
                Some(u128::from(range::int_last(*min, *max, *step)) + 1)
            }
            Domain::Discrete { values } | Domain::Categorical { values } => {
                Some(values.len() as u128)
            }
        }
    }

    /// The `i`-th value of a finite domain, in ascending / list order.
    pub fn value_at(&self, i: u128) -> Option<ParamValue> {
        if i >= self.cardinality()? {
            return None;
        }
        Some(match &self.domain {
            Domain::Double { min, step, .. } => {
                ParamValue::Double(grid_point(*min, i as f64, step.unwrap_or(0.0)))
            }
            Domain::Int { min, step, .. } => ParamValue::Int(range::int_at(*min, *step, i as u64)),
            Domain::Discrete { values } | Domain::Categorical { values } => {
                ParamValue::Choice(values[i as usize].clone())
            }
        })
    }

    /// Parses a value written as a string (as stored or sent on the wire) and checks it lies
    /// in the domain.
    pub fn parse_value(&self, text: &str) -> Result<ParamValue, CoreError> {
        let invalid = |reason: &str| CoreError::InvalidValue {
            name: self.name.clone(),
            value: text.to_string(),
            reason: reason.to_string(),
        };
        let value = match &self.domain {
            Domain::Double { .. } => {
                let v: f64 = text.trim().parse().map_err(|_| invalid("not a number"))?;
                ParamValue::Double(v)
            }
            Domain::Int { .. } => {
                ParamValue::Int(integer_text(text).ok_or_else(|| invalid("not an integer"))?)
            }
            // A discrete value given another way ("2e0" for "2") becomes the list's spelling,
            // which is what trials receive.
            Domain::Discrete { values } => {
                ParamValue::Choice(discrete_spelling(values, text).unwrap_or(text).to_string())
            }
            Domain::Categorical { .. } => ParamValue::Choice(text.to_string()),
        };
        self.check(&value).map_err(|reason| invalid(&reason))?;
        Ok(value)
    }

    /// Checks that a value lies in the domain; the error says why not.
    pub fn check(&self, value: &ParamValue) -> Result<(), String> {
        match (&self.domain, value) {
            (Domain::Double { min, max, step }, ParamValue::Double(v)) => {
                let tol = GRID_TOLERANCE * range::span(*min, *max).max(1.0);
                if !v.is_finite() {
                    return Err("not a finite number".to_string());
                }
                if *v < min - tol || *v > max + tol {
                    return Err(format!("outside [{}, {}]", Short(*min), Short(*max)));
                }
                if let Some(s) = step {
                    let k = ((v - min) / s).round();
                    // A few units in the last place as well: far from zero (a min of
                    // 16777216.1, step 0.1) one unit exceeds the grid tolerance, and
                    // `grid_point` rounds within as many.
                    let ulps = 8.0 * f64::EPSILON * v.abs().max(min.abs());
                    if (min + k * s - v).abs() > tol.max(GRID_TOLERANCE * s).max(ulps) {
                        return Err(format!("not on the grid {} + k*{}", Short(*min), Short(*s)));
                    }
                }
                Ok(())
            }
            (Domain::Int { min, max, step }, ParamValue::Int(v)) => {
                if v < min || v > max {
                    return Err(format!("outside [{min}, {max}]"));
                }
                if step.is_some() && range::int_index(*v, *min, *step).is_none() {
                    return Err(format!("not on the grid {min} + k*{}", step.unwrap_or(1)));
                }
                Ok(())
            }
            (Domain::Discrete { values }, ParamValue::Choice(c)) => {
                match discrete_spelling(values, c) {
                    Some(_) => Ok(()),
                    None => Err(format!("not one of {}", shown_list(values))),
                }
            }
            (Domain::Categorical { values }, ParamValue::Choice(c)) => {
                if values.contains(c) {
                    Ok(())
                } else {
                    Err(format!("not one of {}", shown_list(values)))
                }
            }
            _ => Err("has the wrong type for this parameter".into()),
        }
    }
}

impl SearchSpace {
    /// Builds a space, checking every parameter and that names are unique.
    pub fn new(parameters: Vec<Parameter>) -> Result<Self, CoreError> {
        if parameters.is_empty() {
            return Err(CoreError::InvalidSpace(
                "the search space has no parameters".into(),
            ));
        }
        let mut names = std::collections::HashSet::with_capacity(parameters.len());
        for p in &parameters {
            p.validate()?;
            if !names.insert(p.name.as_str()) {
                return Err(CoreError::InvalidSpace(format!(
                    "parameter name {:?} appears twice",
                    p.name
                )));
            }
        }
        Ok(SearchSpace {
            parameters,
            nas: None,
        })
    }

    /// The space of a neural architecture search (Katib's `nasConfig`).
    pub fn for_nas(nas: NasConfig) -> Self {
        SearchSpace {
            parameters: Vec::new(),
            nas: Some(nas),
        }
    }

    /// The `nasConfig` of a neural architecture search.
    pub fn nas(&self) -> Option<&NasConfig> {
        self.nas.as_ref()
    }

    pub fn parameters(&self) -> &[Parameter] {
        &self.parameters
    }

    pub fn len(&self) -> usize {
        self.parameters.len()
    }

    pub fn is_empty(&self) -> bool {
        self.parameters.is_empty()
    }

    pub fn get(&self, name: &str) -> Option<&Parameter> {
        self.parameters.iter().find(|p| p.name == name)
    }

    /// Number of distinct configurations, or `None` when a double has no step (or overflow).
    pub fn cardinality(&self) -> Option<u128> {
        self.parameters
            .iter()
            .try_fold(1u128, |acc, p| acc.checked_mul(p.cardinality()?))
    }

    /// Parses string name/value pairs into an assignment in space order.
    pub fn parse_assignment<S: AsRef<str>>(
        &self,
        pairs: &[(S, S)],
    ) -> Result<Assignment, CoreError> {
        if self.nas.is_some() {
            // A NAS algorithm's assignments (architecture, genotype settings) are free text.
            return Ok(Assignment(
                pairs
                    .iter()
                    .map(|(n, v)| {
                        (
                            n.as_ref().to_string(),
                            ParamValue::Choice(v.as_ref().into()),
                        )
                    })
                    .collect(),
            ));
        }
        // Maps by name keep this linear: a request with thousands of parameters per trial
        // was quadratic per trial.
        let known: std::collections::HashSet<&str> =
            self.parameters.iter().map(|p| p.name.as_str()).collect();
        let mut given: std::collections::HashMap<&str, &str> =
            std::collections::HashMap::with_capacity(pairs.len());
        for (n, v) in pairs {
            if !known.contains(n.as_ref()) {
                return Err(CoreError::UnknownParameter(n.as_ref().to_string()));
            }
            // The first of repeated pairs wins, as the linear search it replaces did.
            given.entry(n.as_ref()).or_insert(v.as_ref());
        }
        let mut out = Vec::with_capacity(self.parameters.len());
        for p in &self.parameters {
            let text = given
                .get(p.name.as_str())
                .ok_or_else(|| CoreError::MissingParameter(p.name.clone()))?;
            out.push((p.name.clone(), p.parse_value(text.as_ref())?));
        }
        Ok(Assignment(out))
    }

    /// Checks that an assignment has exactly this space's parameters, each inside its domain.
    pub fn check(&self, assignment: &Assignment) -> Result<(), CoreError> {
        if self.nas.is_some() {
            return Ok(());
        }
        if assignment.len() != self.parameters.len() {
            return Err(CoreError::InvalidSpace(format!(
                "assignment has {} values for {} parameters",
                assignment.len(),
                self.parameters.len()
            )));
        }
        for p in &self.parameters {
            let v = assignment
                .get(&p.name)
                .ok_or_else(|| CoreError::MissingParameter(p.name.clone()))?;
            p.check(v).map_err(|reason| CoreError::InvalidValue {
                name: p.name.clone(),
                value: v.to_string(),
                reason,
            })?;
        }
        Ok(())
    }
}

/// The element of a discrete list that `text` names: itself, or the one of equal numeric value
/// ("1" finds "1.0").
fn discrete_spelling<'a>(values: &'a [String], text: &str) -> Option<&'a str> {
    let num = text.trim().parse::<f64>().ok();
    values
        .iter()
        .find(|v| *v == text)
        .or_else(|| {
            values
                .iter()
                .find(|v| num.is_some() && v.trim().parse::<f64>().ok() == num)
        })
        .map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(name: &str, domain: Domain) -> Parameter {
        Parameter {
            name: name.into(),
            domain,
            distribution: Distribution::Uniform,
        }
    }

    #[test]
    fn grid_points_keep_the_digits_that_tell_them_apart() {
        assert_eq!(grid_point(0.1, 2.0, 0.1), 0.3);
        assert_eq!(grid_point(0.0, 3.0, 0.1), 0.3);
        assert_eq!(grid_point(-0.7, 7.0, 0.1), 0.0);
        assert_eq!(grid_point(-0.7, 7.0, 0.1).to_string(), "0");
        assert_eq!(grid_point(-1e-12, 1.0, 1e-12), 0.0);
        let points: Vec<f64> = (0..9)
            .map(|k| grid_point(1000000.000001, k as f64, 0.000001))
            .collect();
        for (k, p) in points.iter().enumerate() {
            let want = format!("1000000.00000{}", k + 1);
            assert_eq!(p.to_string(), want);
        }
    }

    /// Every grid point, written as a trial receives it and read back, is on the grid, also
    /// where the bounds are so far from zero that one unit in the last place is more than the
    /// grid tolerance.
    #[test]
    fn every_grid_point_as_written_is_on_its_grid() {
        let cases = [
            (0.0, 1.0, 0.1),
            (-0.7, 0.7, 0.1),
            (16777216.1, 16777217.1, 0.1),
            (20000000.3, 20000001.3, 0.1),
            (100000000.01, 100000000.51, 0.01),
            (123456789.123, 123456789.623, 0.001),
            (1e15, 1e15 + 10.0, 0.5),
        ];
        for (min, max, step) in cases {
            let x = p(
                "x",
                Domain::Double {
                    min,
                    max,
                    step: Some(step),
                },
            );
            let n = ((max - min) / step).round() as i64;
            for k in 0..=n {
                let text = ParamValue::Double(grid_point(min, k as f64, step)).to_string();
                if let Err(e) = x.parse_value(&text) {
                    panic!("[{min}, {max}] step {step}: point {k} {text}: {e}");
                }
            }
        }
    }

    /// A `max` a hair below a grid point ends the grid one point earlier, so every point the
    /// algorithms enumerate passes the check that a stored or enqueued value must pass.
    #[test]
    fn a_max_just_below_a_grid_point_is_not_rounded_up_to_it() {
        for (max, last) in [(0.99999999, "0.9"), (0.29999999, "0.2"), (1.0, "1")] {
            let x = p(
                "x",
                Domain::Double {
                    min: 0.0,
                    max,
                    step: Some(0.1),
                },
            );
            let n = x.cardinality().unwrap();
            let top = x.value_at(n - 1).unwrap();
            assert_eq!(top.to_string(), last, "max {max}");
            for i in 0..n {
                let text = x.value_at(i).unwrap().to_string();
                assert!(x.parse_value(&text).is_ok(), "max {max}: {text}");
            }
        }
    }

    #[test]
    fn a_discrete_value_written_another_way_takes_the_lists_spelling() {
        let x = p(
            "x",
            Domain::Discrete {
                values: vec!["1".into(), "2.0".into(), "0.5".into()],
            },
        );
        let table = [
            ("1", "1"),
            ("1.0", "1"),
            ("2e0", "2.0"),
            ("+2", "2.0"),
            (".5", "0.5"),
        ];
        for (given, want) in table {
            assert_eq!(
                x.parse_value(given).unwrap(),
                ParamValue::Choice(want.into()),
                "{given}"
            );
        }
        assert!(x.parse_value("3").is_err());
    }

    #[test]
    fn a_long_list_is_shown_short_in_errors() {
        let few: Vec<String> = vec!["a".into(), "b c".into()];
        assert_eq!(shown_list(&few), r#"["a", "b c"]"#);
        let mut many: Vec<String> = (0..12).map(|i| i.to_string()).collect();
        many[0] = "x".repeat(4000);
        let shown = shown_list(&many);
        assert!(
            shown.starts_with(&format!("[{:?}..., \"1\",", "x".repeat(40))),
            "{shown}"
        );
        assert!(shown.ends_with(r#""9", ...] (12 values)"#), "{shown}");
    }

    #[test]
    fn a_non_finite_double_is_named_as_such() {
        let x = p(
            "x",
            Domain::Double {
                min: -2.0,
                max: 2.0,
                step: None,
            },
        );
        for text in ["nan", "inf", "-inf"] {
            let e = x.parse_value(text).unwrap_err().to_string();
            assert!(e.contains("not a finite number"), "{e}");
        }
        let e = x.parse_value("3").unwrap_err().to_string();
        assert!(e.contains("outside [-2, 2]"), "{e}");
    }

    #[test]
    fn cardinality_counts_steps_and_lists() {
        let space = SearchSpace::new(vec![
            p(
                "a",
                Domain::Double {
                    min: 0.0,
                    max: 1.0,
                    step: Some(0.1),
                },
            ),
            p(
                "b",
                Domain::Int {
                    min: 1,
                    max: 5,
                    step: Some(2),
                },
            ),
            p(
                "c",
                Domain::Categorical {
                    values: vec!["x".into(), "y".into()],
                },
            ),
        ])
        .unwrap();
        assert_eq!(space.cardinality(), Some(11 * 3 * 2));
        assert_eq!(
            space.parameters()[0].value_at(3),
            Some(ParamValue::Double(0.3))
        );
        assert_eq!(space.parameters()[1].value_at(2), Some(ParamValue::Int(5)));
        assert_eq!(space.parameters()[1].value_at(3), None);
    }

    #[test]
    fn rejects_bad_spaces() {
        assert!(
            p(
                "a",
                Domain::Double {
                    min: 1.0,
                    max: 1.0,
                    step: None
                }
            )
            .validate()
            .is_err()
        );
        assert!(
            p(
                "a",
                Domain::Int {
                    min: 0,
                    max: 3,
                    step: Some(0)
                }
            )
            .validate()
            .is_err()
        );
        let dup = p(
            "c",
            Domain::Categorical {
                values: vec!["x".into(), "x".into()],
            },
        );
        assert!(dup.validate().is_err());
        let log = Parameter {
            distribution: Distribution::LogUniform,
            ..p(
                "l",
                Domain::Double {
                    min: 0.0,
                    max: 1.0,
                    step: None,
                },
            )
        };
        assert!(log.validate().is_err());
        let a = p(
            "a",
            Domain::Int {
                min: 0,
                max: 3,
                step: None,
            },
        );
        assert!(SearchSpace::new(vec![a.clone(), a]).is_err());
    }

    #[test]
    fn parses_and_checks_assignments() {
        let space = SearchSpace::new(vec![
            p(
                "lr",
                Domain::Double {
                    min: 0.01,
                    max: 0.1,
                    step: None,
                },
            ),
            p(
                "n",
                Domain::Int {
                    min: 1,
                    max: 9,
                    step: Some(2),
                },
            ),
            p(
                "d",
                Domain::Discrete {
                    values: vec!["1.0".into(), "2.5".into()],
                },
            ),
        ])
        .unwrap();
        let a = space
            .parse_assignment(&[("n", "3"), ("lr", "0.05"), ("d", "2.5")])
            .unwrap();
        assert_eq!(a.to_string(), "lr=0.05, n=3, d=2.5");
        assert!(
            space
                .parse_assignment(&[("n", "4"), ("lr", "0.05"), ("d", "2.5")])
                .is_err()
        );
        assert!(
            space
                .parse_assignment(&[("n", "3"), ("lr", "0.5"), ("d", "2.5")])
                .is_err()
        );
        assert!(
            space
                .parse_assignment(&[("n", "3"), ("lr", "0.05")])
                .is_err()
        );
        assert!(space.parse_assignment(&[("x", "3")]).is_err());
        assert!(space.check(&a).is_ok());
    }
}

#[cfg(test)]
mod overflow_tests {
    use super::*;

    fn double(min: f64, max: f64, step: f64) -> Parameter {
        Parameter {
            name: "x".into(),
            domain: Domain::Double {
                min,
                max,
                step: Some(step),
            },
            distribution: Distribution::Uniform,
        }
    }

    #[test]
    fn refuses_double_grids_too_fine_to_count() {
        for p in [double(0.0, 1.0, 1e-300), double(-1.7e308, 1.7e308, 1.0)] {
            let e = p.validate().unwrap_err().to_string();
            assert!(e.contains("parameter x: step") && e.contains("2^53"), "{e}");
        }
        assert_eq!(
            double(0.0, 1.0, 1e-15).cardinality(),
            Some(1_000_000_000_000_001)
        );
    }

    #[test]
    fn int_domains_over_the_whole_i64_range_count_and_check() {
        let p = Parameter {
            name: "n".into(),
            domain: Domain::Int {
                min: i64::MIN,
                max: i64::MAX,
                step: Some(2),
            },
            distribution: Distribution::Uniform,
        };
        assert_eq!(p.cardinality(), Some(1u128 << 63));
        assert_eq!(
            p.value_at((1u128 << 63) - 1),
            Some(ParamValue::Int(i64::MAX - 1))
        );
        assert!(p.check(&ParamValue::Int(i64::MAX - 1)).is_ok());
        assert!(p.check(&ParamValue::Int(i64::MAX)).is_err());
    }

    #[test]
    fn duplicate_checks_are_linear() {
        let values: Vec<String> = (0..200_000).map(|i| format!("v{i}")).collect();
        let p = Parameter {
            name: "c".into(),
            domain: Domain::Categorical { values },
            distribution: Distribution::Uniform,
        };
        // Quadratic checking took minutes here; the set-based check answers at once.
        assert!(p.validate().is_ok());
    }
}
