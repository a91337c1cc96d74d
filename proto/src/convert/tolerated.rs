//! What Katib accepts in a wire parameter and Vernier runs a little differently, each with a
//! warning naming the field: a repeated list value is sampled once, a DISCRETE list holding a
//! non-number is a categorical one, and a log distribution over a range reaching 0 or below is
//! sampled uniformly. These are the YAML path's rules (lists through the shared
//! [`vernier_core::tolerated_list`]), so a Katib controller and `vernier run` search the same
//! space for one spec; refusing them made a Katib controller fail Experiments Katib itself
//! accepts.

use vernier_core::{Distribution, Domain};

/// A request field Vernier accepts but runs differently from what it says; the message says how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversionWarning {
    pub field: String,
    pub message: String,
}

impl std::fmt::Display for ConversionWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// The domain of a DISCRETE (`discrete`) or CATEGORICAL `list` at `list_field`, by the YAML
/// path's rule ([`vernier_core::tolerated_list`]), with a warning for each oddity.
pub(crate) fn list_domain(
    list_field: &str,
    discrete: bool,
    list: &[String],
    warnings: &mut Vec<ConversionWarning>,
) -> Domain {
    let tolerated = vernier_core::tolerated_list(discrete, list);
    warnings.extend(tolerated.oddities.iter().map(|o| ConversionWarning {
        field: format!("{list_field}[{}]", o.index()),
        message: o.message(list, "CATEGORICAL"),
    }));
    tolerated.domain
}

/// The distribution a range is sampled with: a log scale needs a positive `min`; Katib accepts
/// `min <= 0` but its algorithms then fail, so such a range is sampled uniformly, with a
/// warning on `min_field` (`min_text` is the bound as sent).
pub(crate) fn range_distribution(
    min_field: &str,
    min_text: &str,
    domain: &Domain,
    distribution: Distribution,
    warnings: &mut Vec<ConversionWarning>,
) -> Distribution {
    let positive = match domain {
        Domain::Double { min, .. } => *min > 0.0,
        Domain::Int { min, .. } => *min > 0,
        Domain::Discrete { .. } | Domain::Categorical { .. } => true,
    };
    if !distribution.is_log() || positive {
        return distribution;
    }
    let name = match distribution {
        Distribution::LogNormal => "LOG_NORMAL",
        _ => "LOG_UNIFORM",
    };
    warnings.push(ConversionWarning {
        field: min_field.to_string(),
        message: format!(
            "value {min_text:?} is not positive, so distribution {name} has no log scale; the \
             parameter is sampled uniformly instead; hint: set min to the smallest positive \
             value worth trying to keep the log scale"
        ),
    });
    Distribution::Uniform
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(values: &[&str]) -> Vec<String> {
        values.iter().map(|v| v.to_string()).collect()
    }

    #[test]
    fn lists_become_the_yaml_paths_domain_with_one_warning_per_oddity() {
        // (discrete, list, domain, warned fields)
        let cases: &[(bool, &[&str], Domain, &[&str])] = &[
            (
                false,
                &["sgd", "adam", "sgd"],
                Domain::Categorical {
                    values: strings(&["sgd", "adam"]),
                },
                &["l[2]"],
            ),
            (
                true,
                &["16", "32", "auto"],
                Domain::Categorical {
                    values: strings(&["16", "32", "auto"]),
                },
                &["l[2]"],
            ),
            (
                true,
                &["1", "1.0", "-0", "0", "2"],
                Domain::Discrete {
                    values: strings(&["1", "-0", "2"]),
                },
                &["l[1]", "l[3]"],
            ),
            // Not numbers in the YAML path either: a label, so categorical, text repeats only.
            (
                true,
                &["1", "inf", "1.0", "1"],
                Domain::Categorical {
                    values: strings(&["1", "inf", "1.0"]),
                },
                &["l[1]", "l[3]"],
            ),
            (
                true,
                &["0.1", "0.2"],
                Domain::Discrete {
                    values: strings(&["0.1", "0.2"]),
                },
                &[],
            ),
            (
                false,
                &["1", "1.0"],
                Domain::Categorical {
                    values: strings(&["1", "1.0"]),
                },
                &[],
            ),
        ];
        for (discrete, list, domain, fields) in cases {
            let mut warnings = Vec::new();
            let got = list_domain("l", *discrete, &strings(list), &mut warnings);
            assert_eq!(&got, domain, "{list:?}");
            let warned: Vec<&str> = warnings.iter().map(|w| w.field.as_str()).collect();
            assert_eq!(&warned, fields, "{list:?}: {warnings:?}");
        }
    }

    #[test]
    fn a_log_scale_without_positive_bounds_is_uniform_with_a_warning() {
        let double = |min: f64| Domain::Double {
            min,
            max: 1.0,
            step: None,
        };
        let int = |min: i64| Domain::Int {
            min,
            max: 9,
            step: None,
        };
        let (u, lu, ln) = (
            Distribution::Uniform,
            Distribution::LogUniform,
            Distribution::LogNormal,
        );
        // (domain, distribution, expected, warned)
        let cases = [
            (double(0.0), lu, u, true),
            (double(-1.0), ln, u, true),
            (double(1e-3), lu, lu, false),
            (int(0), lu, u, true),
            (int(1), ln, ln, false),
            (double(0.0), u, u, false),
        ];
        for (domain, given, expected, warned) in cases {
            let mut warnings = Vec::new();
            let got = range_distribution("fs.min", "0", &domain, given, &mut warnings);
            assert_eq!(got, expected, "{domain:?} {given:?}");
            assert_eq!(warnings.len(), usize::from(warned), "{warnings:?}");
        }
        let mut warnings = Vec::new();
        range_distribution("fs.min", "0", &double(0.0), lu, &mut warnings);
        assert_eq!(
            warnings[0].to_string(),
            "fs.min: value \"0\" is not positive, so distribution LOG_UNIFORM has no log scale; \
             the parameter is sampled uniformly instead; hint: set min to the smallest positive \
             value worth trying to keep the log scale"
        );
    }
}
