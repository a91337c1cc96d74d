//! What a misspelt name most likely meant, for the `did you mean` hints of field names and of
//! values from a fixed list (algorithm names, parameter types).

/// The name of `names` a typo of `key` most likely meant, if any is within a few edits (case
/// aside) and fewer edits than its own length (`<` is no typo of `=<`).
pub(crate) fn closest_of<'a>(key: &str, names: &[&'a str]) -> Option<&'a str> {
    let lower = key.to_ascii_lowercase();
    names
        .iter()
        .map(|n| (strsim::levenshtein(&lower, &n.to_ascii_lowercase()), *n))
        .filter(|(d, n)| *d <= 2.max(n.len() / 5) && *d < n.len())
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

/// As [`closest_of`] for a value of a fixed list, which may also be cut short: the one name
/// that begins with it (`bayesian` for `bayesianoptimization`).
pub(crate) fn closest_value<'a>(key: &str, names: &[&'a str]) -> Option<&'a str> {
    closest_of(key, names).or_else(|| only_extension(&key.to_ascii_lowercase(), names))
}

/// The one name that begins with `lower` (at least three letters), if only one does.
fn only_extension<'a>(lower: &str, names: &[&'a str]) -> Option<&'a str> {
    if lower.len() < 3 {
        return None;
    }
    let mut longer = names
        .iter()
        .filter(|n| n.to_ascii_lowercase().starts_with(lower));
    match (longer.next(), longer.next()) {
        (Some(n), None) => Some(n),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{closest_of, closest_value};

    #[test]
    fn typos_and_beginnings_find_the_name_meant() {
        let algorithms = [
            "random",
            "tpe",
            "multivariate-tpe",
            "bayesianoptimization",
            "hyperband",
        ];
        let table = [
            ("radnom", Some("random")),
            ("Random", Some("random")),
            ("bayesian", Some("bayesianoptimization")),
            ("hyper", Some("hyperband")),
            ("grid", None),
            ("annealing", None),
        ];
        for (key, want) in table {
            assert_eq!(closest_value(key, &algorithms), want, "{key}");
        }
    }

    /// A field name is only ever a typo, never cut short; a short name is no typo at all.
    #[test]
    fn field_names_and_short_names_are_guessed_only_from_typos() {
        let fields = ["namespace", "labels", "ownerReferences"];
        assert_eq!(closest_of("namspace", &fields), Some("namespace"));
        assert_eq!(closest_of("owner", &fields), None);
        let ops = ["<=", ">=", "<", ">"];
        assert_eq!(closest_of("=<", &ops), None);
        assert_eq!(closest_value("=<", &ops), None);
    }
}
