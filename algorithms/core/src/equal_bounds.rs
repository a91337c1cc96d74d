//! What a Katib parameter written with `min == max` means, decided once for the YAML and the
//! gRPC conversions so a spec reads the same however it arrives. Katib's webhook accepts it:
//! it is one fixed value, except for the resource parameter of Hyperband or ASHA, which Katib
//! overwrites with each rung's budget whatever its feasible space says (Katib's own
//! `hp-tuning/hyperband.yaml` writes `num-epochs` as `"1"`..`"1"`).

use crate::Domain;

/// What an equal-bounds parameter becomes.
#[derive(Debug, Clone, PartialEq)]
pub enum EqualBounds {
    /// Every trial gets this one value, as written.
    Fixed(Domain),
    /// The resource parameter widened to every budget the algorithm's settings can give; it
    /// is sampled uniformly.
    Placeholder(Domain),
}

/// The settings that may hold the top budget of an algorithm that overwrites its resource
/// parameter, in the order they are looked for (BOHB takes either name).
fn top_budget_settings(algorithm: &str) -> &'static [&'static str] {
    match algorithm {
        "hyperband" => &["r_l"],
        "asha" => &["max_resource"],
        "bohb" => &["r_l", "max_resource"],
        _ => &[],
    }
}

/// The last non-blank value of setting `key`, trimmed (a later duplicate wins, as in a merged
/// request; a blank value counts as unset, as Katib's services read an empty setting).
pub fn nonblank_setting<'a>(settings: &'a [(String, String)], key: &str) -> Option<&'a str> {
    settings
        .iter()
        .rev()
        .find(|(k, v)| k == key && !v.trim().is_empty())
        .map(|(_, v)| v.trim())
}

/// The resource parameter `name` of `domain` (bounds already equal) widened to the budgets the
/// settings give: from the lowest (at least 1 for an int, Katib's `int(r)` is never 0) up to the
/// top budget. A double placeholder of `hyperband` widens to ints: Katib's Hyperband writes
/// every budget as `str(int(r))` whatever the parameter's type, so its trials get `3`, never
/// `3.1666`. `None` when `name` is not the resource parameter or the top budget is unusable
/// (the algorithm then reports the setting).
fn placeholder(
    algorithm: &str,
    settings: &[(String, String)],
    name: &str,
    domain: &Domain,
) -> Option<Domain> {
    let keys = top_budget_settings(algorithm);
    if keys.is_empty() || nonblank_setting(settings, "resource_name")? != name {
        return None;
    }
    let top: f64 = keys
        .iter()
        .find_map(|k| nonblank_setting(settings, k))?
        .parse()
        .ok()?;
    if !(top.is_finite() && top > 0.0) {
        return None;
    }
    let whole = matches!(domain, Domain::Int { .. }) || algorithm == "hyperband";
    match domain {
        Domain::Int { .. } | Domain::Double { .. } if whole => Some(Domain::Int {
            min: 1,
            max: (top.ceil() as i64).max(2),
            step: None,
        }),
        Domain::Double { .. } => Some(Domain::Double {
            min: 0.0,
            max: top,
            step: None,
        }),
        _ => None,
    }
}

/// What an int or double parameter with `min == max` becomes; `None` for any other domain.
/// `min_text` is the bound as written, which a fixed value passes on unchanged.
pub fn equal_bounds(
    algorithm: &str,
    settings: &[(String, String)],
    name: &str,
    domain: &Domain,
    min_text: &str,
) -> Option<EqualBounds> {
    let equal = match domain {
        Domain::Double { min, max, .. } => min == max,
        Domain::Int { min, max, .. } => min == max,
        _ => false,
    };
    if !equal {
        return None;
    }
    Some(match placeholder(algorithm, settings, name, domain) {
        Some(widened) => EqualBounds::Placeholder(widened),
        None => EqualBounds::Fixed(Domain::Discrete {
            values: vec![fixed_text(domain, min_text)],
        }),
    })
}

/// The text a fixed value is passed on as: a double as written (`1e-3` stays `1e-3`), an int
/// as its integer, since a bound written `3.0` is read as the int 3 and a trainer parsing an
/// int (Katib's services send `int(v)`) refuses `3.0`.
fn fixed_text(domain: &Domain, min_text: &str) -> String {
    match domain {
        Domain::Int { min, .. } => min.to_string(),
        _ => min_text.trim().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// Algorithm, settings, parameter, domain, `min` as written, expected rule.
    type Case<'a> = (
        &'a str,
        &'a [(String, String)],
        &'a str,
        Domain,
        &'a str,
        Option<EqualBounds>,
    );

    fn int(min: i64, max: i64) -> Domain {
        Domain::Int {
            min,
            max,
            step: None,
        }
    }

    #[test]
    fn equal_bounds_are_fixed_unless_the_resource_placeholder() {
        let hb = s(&[("resource_name", "epochs"), ("r_l", "9")]);
        let asha = s(&[("resource_name", "epochs"), ("max_resource", "2.5")]);
        let bad_top = s(&[("resource_name", "epochs"), ("r_l", "-1")]);
        let bohb_max = s(&[("resource_name", "epochs"), ("max_resource", "9")]);
        let hb_fraction = s(&[("resource_name", "epochs"), ("r_l", "9.5")]);
        let fixed = |v: &str| {
            Some(EqualBounds::Fixed(Domain::Discrete {
                values: vec![v.into()],
            }))
        };
        let cases: Vec<Case<'_>> = vec![
            ("random", &hb, "epochs", int(1, 1), " 1 ", fixed("1")),
            // An int is passed as its integer however its bound was written; a double as written.
            ("random", &hb, "layers", int(3, 3), "3.0", fixed("3")),
            (
                "random",
                &hb,
                "lr",
                Domain::Double {
                    min: 0.001,
                    max: 0.001,
                    step: None,
                },
                "1e-3",
                fixed("1e-3"),
            ),
            ("random", &hb, "epochs", int(1, 2), "1", None),
            (
                "hyperband",
                &hb,
                "epochs",
                int(1, 1),
                "1",
                Some(EqualBounds::Placeholder(int(1, 9))),
            ),
            ("hyperband", &hb, "lr", int(1, 1), "1", fixed("1")),
            // BOHB takes Hyperband's r_l or ASHA's max_resource.
            (
                "bohb",
                &hb,
                "epochs",
                int(1, 1),
                "1",
                Some(EqualBounds::Placeholder(int(1, 9))),
            ),
            (
                "bohb",
                &bohb_max,
                "epochs",
                int(1, 1),
                "1",
                Some(EqualBounds::Placeholder(int(1, 9))),
            ),
            (
                "asha",
                &asha,
                "epochs",
                Domain::Double {
                    min: 1.0,
                    max: 1.0,
                    step: None,
                },
                "1.0",
                Some(EqualBounds::Placeholder(Domain::Double {
                    min: 0.0,
                    max: 2.5,
                    step: None,
                })),
            ),
            // Katib's Hyperband writes whole budgets into a double placeholder too.
            (
                "hyperband",
                &hb_fraction,
                "epochs",
                Domain::Double {
                    min: 5.0,
                    max: 5.0,
                    step: None,
                },
                "5",
                Some(EqualBounds::Placeholder(int(1, 10))),
            ),
            ("hyperband", &bad_top, "epochs", int(1, 1), "1", fixed("1")),
            (
                "random",
                &hb,
                "c",
                Domain::Categorical {
                    values: vec!["a".into()],
                },
                "",
                None,
            ),
        ];
        for (algorithm, settings, name, domain, text, want) in cases {
            assert_eq!(
                equal_bounds(algorithm, settings, name, &domain, text),
                want,
                "{algorithm} {name} {domain:?}"
            );
        }
    }
}
