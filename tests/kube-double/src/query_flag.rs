//! Boolean query parameters as the API server reads them (Go's `strconv.ParseBool`): a Python
//! client sends `watch=True` and `follow=True`, which a check for `"true"` alone took as false.

use std::collections::HashMap;

/// Whether query parameter `name` is given and true: `1`, `t`, `T`, `true`, `True`, `TRUE`.
pub(crate) fn flag(query: &HashMap<String, String>, name: &str) -> bool {
    query
        .get(name)
        .is_some_and(|v| matches!(v.as_str(), "1" | "t" | "T" | "true" | "True" | "TRUE"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_spellings_of_true_are_true() {
        for (value, want) in [
            ("true", true),
            ("True", true),
            ("TRUE", true),
            ("1", true),
            ("t", true),
            ("false", false),
            ("False", false),
            ("0", false),
            ("yes", false),
        ] {
            let query = HashMap::from([("watch".to_string(), value.to_string())]);
            assert_eq!(flag(&query, "watch"), want, "{value}");
        }
        assert!(!flag(&HashMap::new(), "watch"));
    }
}
