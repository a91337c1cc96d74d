//! ENAS's settings: Katib's names, defaults, types and ranges (`AlgorithmSettings.py`), with
//! `"None"` accepted where Katib accepts it. Vernier also refuses what cannot run (`nan`, a
//! controller too large to hold in memory, a training cost no suggestion call should carry).

use crate::error::AlgorithmError;

/// Parsed settings, Katib's defaults where unset.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EnasSettings {
    pub hidden_size: usize,
    pub temperature: Option<f64>,
    pub tanh_const: Option<f64>,
    pub entropy_weight: Option<f64>,
    pub baseline_decay: f64,
    pub learning_rate: f64,
    pub skip_target: f64,
    pub skip_weight: Option<f64>,
    pub train_steps: usize,
    /// Katib logs every this many steps; accepted and checked, Vernier's pure algorithm logs
    /// nothing.
    pub log_every_steps: usize,
    /// The experiment seed (initial controller weights).
    pub random_state: u64,
}

impl Default for EnasSettings {
    fn default() -> Self {
        EnasSettings {
            hidden_size: 64,
            temperature: Some(5.0),
            tanh_const: Some(2.25),
            entropy_weight: Some(1e-5),
            baseline_decay: 0.999,
            learning_rate: 5e-5,
            skip_target: 0.4,
            skip_weight: Some(0.8),
            train_steps: 50,
            log_every_steps: 10,
            random_state: 0,
        }
    }
}

/// Largest controller Vernier builds: 8·H² LSTM weights must fit a suggestion call's budget.
pub const MAX_HIDDEN_SIZE: usize = 512;
/// Most controller steps per completed trial, so one suggestion call's work stays bounded.
pub const MAX_TRAIN_STEPS: usize = 1000;

const NAMES: &[&str] = &[
    "controller_hidden_size",
    "controller_temperature",
    "controller_tanh_const",
    "controller_entropy_weight",
    "controller_baseline_decay",
    "controller_learning_rate",
    "controller_skip_target",
    "controller_skip_weight",
    "controller_train_steps",
    "controller_log_every_steps",
    "random_state",
];

/// Settings that accept `"None"` (the term is then left out, as in Katib).
const NONE_OK: &[&str] = &[
    "controller_temperature",
    "controller_tanh_const",
    "controller_entropy_weight",
    "controller_skip_weight",
];

impl EnasSettings {
    pub fn parse(algorithm: &str, pairs: &[(String, String)]) -> Result<Self, AlgorithmError> {
        let mut s = EnasSettings::default();
        for (name, value) in pairs {
            let invalid = |reason: String| AlgorithmError::InvalidSetting {
                algorithm: algorithm.to_string(),
                setting: name.clone(),
                value: value.clone(),
                reason,
            };
            if !NAMES.contains(&name.as_str()) {
                return Err(AlgorithmError::UnknownSetting {
                    algorithm: algorithm.to_string(),
                    setting: name.clone(),
                    accepted: NAMES.join(", "),
                });
            }
            let none = value == "None" && NONE_OK.contains(&name.as_str());
            let int = |min: i64, max: usize| -> Result<usize, AlgorithmError> {
                let v: i64 = value
                    .trim()
                    .parse()
                    .map_err(|_| invalid("must be int type".into()))?;
                if v < min || v as u64 > max as u64 {
                    return Err(invalid(format!(
                        "with int type must be in range [{min}, {max}]"
                    )));
                }
                Ok(v as usize)
            };
            // Katib's float ranges are (low, high]: the low end excluded.
            let float = |low: f64, high: f64| -> Result<f64, AlgorithmError> {
                let v: f64 = value
                    .trim()
                    .parse()
                    .ok()
                    .filter(|v: &f64| !v.is_nan())
                    .ok_or_else(|| invalid("must be float type".into()))?;
                if v <= low || v > high {
                    let hi = if high.is_infinite() {
                        "inf".to_string()
                    } else {
                        high.to_string()
                    };
                    return Err(invalid(format!(
                        "with float type must be in range ({low}, {hi}]"
                    )));
                }
                Ok(v)
            };
            let opt = |low: f64| -> Result<Option<f64>, AlgorithmError> {
                if none {
                    Ok(None)
                } else {
                    float(low, f64::INFINITY).map(Some)
                }
            };
            match name.as_str() {
                "controller_hidden_size" => s.hidden_size = int(1, MAX_HIDDEN_SIZE)?,
                "controller_temperature" => s.temperature = opt(0.0)?,
                "controller_tanh_const" => s.tanh_const = opt(0.0)?,
                "controller_entropy_weight" => s.entropy_weight = opt(0.0)?,
                "controller_baseline_decay" => s.baseline_decay = float(0.0, 1.0)?,
                "controller_learning_rate" => s.learning_rate = float(0.0, 1.0)?,
                "controller_skip_target" => s.skip_target = float(0.0, 1.0)?,
                "controller_skip_weight" => s.skip_weight = opt(0.0)?,
                "controller_train_steps" => s.train_steps = int(1, MAX_TRAIN_STEPS)?,
                "controller_log_every_steps" => s.log_every_steps = int(1, usize::MAX >> 1)?,
                _ => {
                    s.random_state = value
                        .trim()
                        .parse()
                        .map_err(|_| invalid("does not parse: an integer >= 0".into()))?;
                }
            }
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(pairs: &[(&str, &str)]) -> Result<EnasSettings, String> {
        let owned: Vec<(String, String)> = pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        EnasSettings::parse("enas", &owned).map_err(|e| e.to_string())
    }

    #[test]
    fn katib_defaults_and_none() {
        assert_eq!(parse(&[]).unwrap(), EnasSettings::default());
        let s = parse(&[
            ("controller_temperature", "None"),
            ("controller_skip_weight", "None"),
            ("controller_hidden_size", "32"),
            ("controller_learning_rate", "1"),
        ])
        .unwrap();
        assert_eq!((s.temperature, s.skip_weight), (None, None));
        assert_eq!((s.hidden_size, s.learning_rate), (32, 1.0));
    }

    #[test]
    fn rejects_katibs_bad_values_naming_them() {
        let table = [
            (("controller_hidden_size", "0"), "must be in range [1, 512]"),
            (("controller_hidden_size", "1.5"), "must be int type"),
            (("controller_temperature", "0"), "must be in range (0, inf]"),
            (
                ("controller_baseline_decay", "1.5"),
                "must be in range (0, 1]",
            ),
            (("controller_learning_rate", "0"), "must be in range (0, 1]"),
            (("controller_skip_target", "nan"), "must be float type"),
            (
                ("controller_train_steps", "0"),
                "must be in range [1, 1000]",
            ),
            (("controller_baseline_decay", "None"), "must be float type"),
        ];
        for ((name, value), want) in table {
            let err = parse(&[(name, value)]).unwrap_err();
            assert!(
                err.contains(name) && err.contains(&format!("{value:?}")),
                "{err}"
            );
            assert!(err.contains(want), "{name}={value}: {err}");
        }
        let err = parse(&[("controller_hidden", "3")]).unwrap_err();
        assert!(
            err.starts_with("unknown setting \"controller_hidden\" for algorithm enas"),
            "{err}"
        );
    }
}
