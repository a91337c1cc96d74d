//! Which trial's checkpoint a trial continues from, decided from its labels: PBT's exploit
//! and continue steps, and ASHA / Hyperband promotions, all name a parent trial. The local
//! runner and the operator copy the parent's checkpoint directory into the trial's own before
//! it starts; this module is the one place that knows which labels name a parent.

use crate::error::AlgorithmError;
use crate::settings::Settings;
use std::collections::BTreeMap;

/// Katib's setting naming where a trial's own checkpoint directory appears in its container.
/// Katib's webhook mounts the suggestion volume there whatever the algorithm; `pbt` requires
/// it, `asha`, `hyperband` and `bohb` accept it.
pub const TRIAL_DIR_SETTING: &str = "suggestion_trial_dir";

/// The label an ASHA promotion names the trial it continues with.
pub const ASHA_PARENT_LABEL: &str = "vernier.asha/parent";

/// The label a Hyperband promotion names the trial it continues with.
pub const HYPERBAND_PARENT_LABEL: &str = "vernier.hyperband/parent";

/// Labels that name the trial a trial continues, in order of precedence.
pub const PARENT_LABELS: &[&str] = &[
    crate::pbt::PARENT_LABEL,
    ASHA_PARENT_LABEL,
    HYPERBAND_PARENT_LABEL,
];

/// The trial whose checkpoint this trial starts from, if any.
pub fn parent_trial(labels: &BTreeMap<String, String>) -> Option<&str> {
    PARENT_LABELS
        .iter()
        .find_map(|k| labels.get(*k))
        .map(|v| v.trim())
        .filter(|v| !v.is_empty())
}

/// The `suggestion_trial_dir` setting, when set to a non-empty value.
pub fn trial_dir_setting(settings: &[(String, String)]) -> Option<&str> {
    settings
        .iter()
        .rev()
        .find(|(n, _)| n == TRIAL_DIR_SETTING)
        .map(|(_, v)| v.trim())
        .filter(|v| !v.is_empty())
}

/// Why a relative `suggestion_trial_dir` is refused: Kubernetes refuses a relative
/// `mountPath`, so the experiment could not run on a cluster.
pub(crate) const NOT_ABSOLUTE: &str = "is not an absolute path: it is where each trial's \
     checkpoint directory is mounted\nhint: e.g. /var/log/katib/checkpoints/";

/// Refuses a `suggestion_trial_dir` that is given but not absolute (`asha`, `hyperband`,
/// `bohb`).
pub(crate) fn refuse_relative_trial_dir(s: &Settings<'_>) -> Result<(), AlgorithmError> {
    match s.raw(TRIAL_DIR_SETTING) {
        Some(dir) if !dir.is_empty() && !dir.starts_with('/') => {
            Err(s.invalid(TRIAL_DIR_SETTING, dir, NOT_ABSOLUTE))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_come_from_any_continuing_algorithm() {
        type Case = (
            &'static [(&'static str, &'static str)],
            Option<&'static str>,
        );
        let cases: &[Case] = &[
            (&[], None),
            (
                &[("pbt.suggestion.katib.kubeflow.org/parent", "e-a")],
                Some("e-a"),
            ),
            (&[("vernier.asha/parent", "e-b")], Some("e-b")),
            (&[("vernier.hyperband/parent", " e-c ")], Some("e-c")),
            (&[("vernier.asha/parent", "")], None),
            (&[("vernier.asha/rung", "1")], None),
        ];
        for (pairs, want) in cases {
            let labels: BTreeMap<String, String> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            assert_eq!(parent_trial(&labels), *want, "{pairs:?}");
        }
    }

    #[test]
    fn reads_the_trial_dir_setting() {
        let s = |v: &str| vec![(TRIAL_DIR_SETTING.to_string(), v.to_string())];
        assert_eq!(trial_dir_setting(&s("/ckpt/")), Some("/ckpt/"));
        assert_eq!(trial_dir_setting(&s(" ")), None);
        assert_eq!(trial_dir_setting(&[]), None);
    }

    #[test]
    fn a_given_trial_dir_must_be_absolute() {
        // (value, accepted)
        let table = [
            ("/var/log/katib/checkpoints/", true),
            (" /ckpt ", true),
            ("", true),
            ("relative/ckpt", false),
            ("./ckpt", false),
        ];
        for (dir, ok) in table {
            let pairs = vec![(TRIAL_DIR_SETTING.to_string(), dir.to_string())];
            let s = Settings::new("asha", &pairs, &[TRIAL_DIR_SETTING]).unwrap();
            let got = refuse_relative_trial_dir(&s);
            assert_eq!(got.is_ok(), ok, "{dir:?}");
            if let Err(e) = got {
                assert!(e.to_string().contains(&format!("{dir:?}")), "{e}");
            }
        }
    }
}
