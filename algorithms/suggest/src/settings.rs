//! Typed access to Katib's string-valued algorithm settings, rejecting unknown names once,
//! when the algorithm is built.

use crate::error::AlgorithmError;
use std::str::FromStr;

/// An algorithm's settings, checked against the names it accepts.
#[derive(Debug, Clone)]
pub struct Settings<'a> {
    algorithm: &'a str,
    pairs: &'a [(String, String)],
}

impl<'a> Settings<'a> {
    /// Fails on the first setting whose name is not in `accepted`.
    pub fn new(
        algorithm: &'a str,
        pairs: &'a [(String, String)],
        accepted: &[&str],
    ) -> Result<Self, AlgorithmError> {
        if let Some((name, _)) = pairs.iter().find(|(n, _)| !accepted.contains(&n.as_str())) {
            return Err(AlgorithmError::UnknownSetting {
                algorithm: algorithm.to_string(),
                setting: name.clone(),
                accepted: if accepted.is_empty() {
                    "no settings".to_string()
                } else {
                    accepted.join(", ")
                },
            });
        }
        Ok(Settings { algorithm, pairs })
    }

    /// The last value given for `name`, trimmed, unparsed.
    pub(crate) fn raw(&self, name: &str) -> Option<&'a str> {
        self.pairs
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.trim())
    }

    /// The last non-blank value given for `name`, trimmed, read as the resource placeholder
    /// reads it ([`vernier_core::nonblank_setting`]).
    pub(crate) fn nonblank(&self, name: &str) -> Option<&'a str> {
        vernier_core::nonblank_setting(self.pairs, name)
    }

    /// What the last value of `name` chooses among `choices`, matched without regard to case;
    /// the refusal of any other value lists every choice, after "is not supported" and
    /// `context`.
    pub(crate) fn one_of<T: Copy>(
        &self,
        name: &str,
        choices: &[(&str, T)],
        context: &str,
    ) -> Result<Option<T>, AlgorithmError> {
        let Some(value) = self.raw(name) else {
            return Ok(None);
        };
        match choices.iter().find(|(c, _)| c.eq_ignore_ascii_case(value)) {
            Some((_, chosen)) => Ok(Some(*chosen)),
            None => {
                let names: Vec<&str> = choices.iter().map(|(c, _)| *c).collect();
                let reason = format!(
                    "is not supported{context}: expected one of {}",
                    names.join(", ")
                );
                Err(self.invalid(name, value, reason))
            }
        }
    }

    pub(crate) fn invalid(
        &self,
        name: &str,
        value: &str,
        reason: impl Into<String>,
    ) -> AlgorithmError {
        AlgorithmError::InvalidSetting {
            algorithm: self.algorithm.to_string(),
            setting: name.to_string(),
            value: value.to_string(),
            reason: reason.into(),
        }
    }

    /// Parses `name` if present, then checks it with `valid` (whose text says what is wanted).
    /// A name given more than once has every value checked, as Katib's services check each
    /// entry, and the last one counts.
    pub fn get<T: FromStr + Copy>(
        &self,
        name: &str,
        valid: impl Fn(T) -> bool,
        wanted: &str,
    ) -> Result<Option<T>, AlgorithmError> {
        let mut last = None;
        for (_, raw) in self.pairs.iter().filter(|(n, _)| n == name) {
            let value: T = raw.trim().parse().map_err(|_| {
                // `-1` for a count is a number outside what is wanted, and more digits than
                // the setting holds a number too large for it, not text that is no number.
                let problem = match integer_sign(raw.trim()) {
                    Some('-') => "is out of range",
                    Some(_) => "is too large",
                    None => "does not parse",
                };
                self.invalid(name, raw, format!("{problem}: {wanted}"))
            })?;
            if !valid(value) {
                return Err(self.invalid(name, raw, format!("is out of range: {wanted}")));
            }
            last = Some(value);
        }
        Ok(last)
    }

    /// `random_state`, which every algorithm accepts (the driver passes the experiment seed
    /// through it), read as Katib's service for the algorithm reads it: an integer >= 0 for
    /// the Python services that check it; any integer for `cmaes` (goptuna's `strconv.Atoi`);
    /// anything for `sobol`, `hyperband` and `pbt`, whose services never read it (an integer
    /// still seeds them, other text is ignored).
    pub fn random_state(&self) -> Result<Option<u64>, AlgorithmError> {
        let any_integer = |v: i64| v as u64;
        match self.algorithm {
            "cmaes" => self
                .get::<i64>("random_state", |_| true, "an integer")
                .map(|v| v.map(any_integer)),
            "sobol" | "hyperband" | "pbt" => Ok(self
                .raw("random_state")
                .and_then(|v| v.parse::<i64>().ok())
                .map(any_integer)),
            _ => self
                .get::<i64>("random_state", |v| v >= 0, "an integer >= 0")
                .map(|v| v.map(any_integer)),
        }
    }
}

/// The sign (`-` or `+`) of `text` if it is an integer as written (an optional sign, then
/// digits), whatever its size.
fn integer_sign(text: &str) -> Option<char> {
    let (sign, digits) = match text.strip_prefix('-') {
        Some(digits) => ('-', digits),
        None => ('+', text.strip_prefix('+').unwrap_or(text)),
    };
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then_some(sign)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_params::pairs;

    const ACCEPTED: &[&str] = &["mode", "dir"];
    const MODES: &[(&str, u8)] = &[("none", 0), ("ipop", 1), ("BIPOP", 2)];
    /// Settings as written in a spec.
    type Given<'a> = &'a [(&'a str, &'a str)];

    fn mode(given: Given<'_>) -> Result<Option<u8>, String> {
        let given = pairs(given);
        let s = Settings::new("algo", &given, ACCEPTED).unwrap();
        s.one_of("mode", MODES, " in algo")
            .map_err(|e| e.to_string())
    }

    #[test]
    fn an_integer_the_type_cannot_hold_is_out_of_range_and_other_text_does_not_parse() {
        for (raw, said) in [
            ("3", None),
            ("-1", Some("is out of range: a count")),
            ("99999999999999999999", Some("is too large: a count")),
            ("2.5", Some("does not parse: a count")),
            ("x", Some("does not parse: a count")),
            ("-", Some("does not parse: a count")),
        ] {
            let given = pairs(&[("dir", raw)]);
            let s = Settings::new("algo", &given, ACCEPTED).unwrap();
            let got = s.get::<usize>("dir", |_| true, "a count");
            match (got, said) {
                (Ok(Some(3)), None) => {}
                (Err(e), Some(said)) => assert!(e.to_string().ends_with(said), "{e}"),
                (got, want) => panic!("{raw:?}: {got:?}, wanted {want:?}"),
            }
        }
    }

    #[test]
    fn one_of_matches_the_last_value_without_regard_to_case() {
        let cases: &[(Given<'_>, Option<u8>)] = &[
            (&[], None),
            (&[("mode", "ipop")], Some(1)),
            (&[("mode", " IPOP ")], Some(1)),
            (&[("mode", "bipop")], Some(2)),
            (&[("mode", "ipop"), ("mode", "None")], Some(0)),
        ];
        for (given, want) in cases {
            assert_eq!(mode(given), Ok(*want), "{given:?}");
        }
    }

    #[test]
    fn one_of_refuses_other_values_listing_every_choice() {
        for bad in ["", "restart", "ipop2"] {
            let err = mode(&[("mode", bad)]).unwrap_err();
            assert!(err.contains("mode"), "{err}");
            assert!(err.contains(&format!("{bad:?}")), "{err}");
            assert!(
                err.contains("is not supported in algo: expected one of none, ipop, BIPOP"),
                "{err}"
            );
        }
    }

    #[test]
    fn nonblank_skips_blank_values_and_trims() {
        let cases: &[(Given<'_>, Option<&str>)] = &[
            (&[], None),
            (&[("dir", "  ")], None),
            (&[("dir", " /ckpt/ ")], Some("/ckpt/")),
            (&[("dir", "/a"), ("dir", "")], Some("/a")),
            (&[("dir", "/a"), ("dir", "/b")], Some("/b")),
        ];
        for (given, want) in cases {
            let given = pairs(given);
            let s = Settings::new("algo", &given, ACCEPTED).unwrap();
            assert_eq!(s.nonblank("dir"), *want, "{given:?}");
        }
    }
}
