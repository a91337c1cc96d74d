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
            let value: T = raw
                .trim()
                .parse()
                .map_err(|_| self.invalid(name, raw, format!("does not parse: {wanted}")))?;
            if !valid(value) {
                return Err(self.invalid(name, raw, format!("is out of range: {wanted}")));
            }
            last = Some(value);
        }
        Ok(last)
    }

    /// `random_state`, which every algorithm accepts: an integer >= 0 (the driver passes the
    /// experiment seed through it).
    pub fn random_state(&self) -> Result<Option<u64>, AlgorithmError> {
        self.get::<i64>("random_state", |v| v >= 0, "an integer >= 0")
            .map(|v| v.map(|v| v as u64))
    }
}
