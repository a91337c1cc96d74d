//! The up-front settings check: the algorithm and the early-stopping rule are built once before
//! anything runs, so a setting they refuse ends the experiment naming the setting and value
//! instead of failing trial after trial (locally) or reconcile after reconcile (on a cluster).

use crate::error::EngineError;
use crate::resolved::ResolvedExperiment;
use vernier_algorithms::{AlgorithmError, MedianStop};
use vernier_core::EarlyStopper;
use vernier_spec::types::AlgorithmSpec;

/// Who proposes the trials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlgorithmSource {
    /// One of Vernier's algorithms: its settings are checked here.
    BuiltIn,
    /// A plugin or an external suggestion service, which checks its own settings.
    External,
}

impl AlgorithmSource {
    /// Built in when Vernier knows the algorithm's name, external otherwise (a plugin may
    /// serve it).
    pub fn by_name(algorithm: &str) -> AlgorithmSource {
        if vernier_algorithms::KNOWN_ALGORITHMS.contains(&algorithm) {
            AlgorithmSource::BuiltIn
        } else {
            AlgorithmSource::External
        }
    }
}

/// The early-stopping rule, built; medianstop's settings are kept apart because its rule is
/// frozen per trial when the trial is created (Katib's timing).
#[derive(Debug)]
pub struct BuiltEarlyStopping {
    pub stopper: Box<dyn EarlyStopper>,
    pub median: Option<MedianStop>,
}

/// Builds the algorithm (when built in) and the early-stopping rule, and drops them; returns
/// what the algorithm wants said about its settings ([`vernier_core::Suggester::notes`]).
pub fn check_settings(
    exp: &ResolvedExperiment,
    source: AlgorithmSource,
) -> Result<Vec<String>, EngineError> {
    let mut notes = Vec::new();
    if source == AlgorithmSource::BuiltIn {
        let built =
            vernier_algorithms::build(&exp.algorithm, &exp.settings, &exp.space, &exp.objective)
                .map_err(|e| algorithm_error(exp, e))?;
        notes = built.notes();
        notes.extend(schedule_shorter_than_budget(exp));
    }
    build_early_stopping(exp)?;
    Ok(notes)
}

/// A `maxTrialCount` above Hyperband's whole schedule (every bracket once): the run ends when
/// the schedule does. Grid's like case is a spec warning.
fn schedule_shorter_than_budget(exp: &ResolvedExperiment) -> Option<String> {
    if exp.algorithm != "hyperband" {
        return None;
    }
    let budget = exp.limits.max_trials?;
    let limit = vernier_algorithms::trial_limit(&exp.algorithm, &exp.settings, &exp.space)
        .ok()
        .flatten()?;
    (u64::from(budget) > limit).then(|| {
        format!(
            "spec.maxTrialCount: value {budget} is more than hyperband's schedule of {limit} \
             trial(s) (every bracket once), so the experiment ends after {limit} trial(s); \
             hint: lower maxTrialCount to {limit}, or raise r_l for more brackets"
        )
    })
}

/// Every algorithm setting a built-in algorithm refuses, not just the first, for `vernier
/// validate`: each refused entry is set aside and the algorithm built again, for as long as
/// the next refusal names an entry still given (one about a setting set aside, now missing,
/// would only echo the first).
pub fn algorithm_refusals(exp: &ResolvedExperiment) -> Vec<EngineError> {
    // Each entry still given, with its place in the file, so refusals come in file order.
    let mut given: Vec<(usize, (String, String))> =
        exp.settings.iter().cloned().enumerate().collect();
    let mut refusals = Vec::new();
    loop {
        let settings: Vec<(String, String)> = given.iter().map(|(_, kv)| kv.clone()).collect();
        let Err(e) =
            vernier_algorithms::build(&exp.algorithm, &settings, &exp.space, &exp.objective)
        else {
            break;
        };
        let Some(i) = refused_entry(&e).and_then(|entry| position_of(&settings, entry)) else {
            if refusals.is_empty() {
                refusals.push((0, algorithm_error(exp, e)));
            }
            break;
        };
        refusals.push((given.remove(i).0, algorithm_error(exp, e)));
    }
    refusals.sort_by_key(|(place, _)| *place);
    refusals.into_iter().map(|(_, e)| e).collect()
}

/// Where `(name, value)` stands in `settings`: the entry with that value, else the first of
/// that name.
fn position_of(
    settings: &[(String, String)],
    (name, value): (String, Option<String>),
) -> Option<usize> {
    let named = |k: &String| *k == name;
    settings
        .iter()
        .position(|(k, v)| named(k) && value.as_ref().is_none_or(|value| v == value))
        .or_else(|| settings.iter().position(|(k, _)| named(k)))
}

/// The setting (and the value, when the refusal is of a value) an algorithm's refusal names.
fn refused_entry(e: &AlgorithmError) -> Option<(String, Option<String>)> {
    match e {
        AlgorithmError::UnknownSetting { setting, .. } => Some((setting.clone(), None)),
        AlgorithmError::InvalidSetting { setting, value, .. } => {
            Some((setting.clone(), Some(value.clone())))
        }
        _ => None,
    }
}

/// The experiment's early-stopping rule, or `None` when it has none.
pub fn build_early_stopping(
    exp: &ResolvedExperiment,
) -> Result<Option<BuiltEarlyStopping>, EngineError> {
    let Some(es) = &exp.early_stopping else {
        return Ok(None);
    };
    let refused = |source: AlgorithmError| {
        let spec = exp.spec.spec.early_stopping.as_ref();
        EngineError::EarlyStopping {
            path: field_of(spec, "spec.earlyStopping", &source),
            refusal: Box::new(source),
        }
    };
    let stopper =
        vernier_algorithms::build_early_stopper(&es.algorithm, &es.settings).map_err(refused)?;
    let median = (es.algorithm == "medianstop")
        .then(|| MedianStop::from_settings(&es.settings))
        .transpose()
        .map_err(refused)?;
    Ok(Some(BuiltEarlyStopping { stopper, median }))
}

/// The algorithm's refusal, at the field it is about.
pub(crate) fn algorithm_error(exp: &ResolvedExperiment, source: AlgorithmError) -> EngineError {
    let spec = exp.spec.spec.algorithm.as_ref();
    EngineError::Algorithm {
        path: field_of(spec, "spec.algorithm", &source),
        refusal: Box::new(source),
    }
}

/// `base.algorithmName`, `base.algorithmSettings[i].name` or `.value` for the setting an error
/// names (its index in the file), else `base`.
fn field_of(spec: Option<&AlgorithmSpec>, base: &str, e: &AlgorithmError) -> String {
    let (setting, value, part) = match e {
        AlgorithmError::UnknownAlgorithm { .. } => return format!("{base}.algorithmName"),
        AlgorithmError::UnknownSetting { setting, .. } => (setting, None, "name"),
        AlgorithmError::InvalidSetting { setting, value, .. } => (setting, Some(value), "value"),
        _ => return base.to_string(),
    };
    let settings = spec.map_or(&[][..], |s| s.algorithm_settings.as_slice());
    // A name given twice: the entry holding the refused value.
    let named = |a: &vernier_spec::types::AlgorithmSetting| a.name == *setting;
    settings
        .iter()
        .position(|a| named(a) && value.is_none_or(|v| a.value == *v))
        .or_else(|| settings.iter().position(named))
        .map_or(base.to_string(), |i| {
            format!("{base}.algorithmSettings[{i}].{part}")
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::resolved::tests::experiment;

    #[test]
    fn refused_settings_name_the_field_and_the_value() {
        // (algorithm block, early stopping block, source, error fragments or none)
        let cases: &[(&str, &str, AlgorithmSource, Option<&[&str]>)] = &[
            ("algorithmName: random", "", AlgorithmSource::BuiltIn, None),
            (
                "algorithmName: random\n    algorithmSettings: [{name: bogus, value: '1'}]",
                "",
                AlgorithmSource::BuiltIn,
                Some(&[
                    "spec.algorithm.algorithmSettings[0].name:",
                    "\"bogus\"",
                    "hint:",
                ]),
            ),
            (
                "algorithmName: random\n    algorithmSettings: [{name: bogus, value: '1'}]",
                "",
                AlgorithmSource::External,
                None,
            ),
            (
                "algorithmName: tpe\n    algorithmSettings: [{name: n_startup_trials, value: 'many'}]",
                "",
                AlgorithmSource::BuiltIn,
                Some(&[
                    "spec.algorithm.algorithmSettings[0].value:",
                    "n_startup_trials",
                    "\"many\"",
                ]),
            ),
            (
                "algorithmName: random",
                "  earlyStopping:\n    algorithmName: medianstop\n    algorithmSettings: [{name: start_step, value: 'x'}]",
                AlgorithmSource::BuiltIn,
                Some(&[
                    "spec.earlyStopping.algorithmSettings[0].value:",
                    "start_step",
                ]),
            ),
            (
                "algorithmName: random",
                "  earlyStopping:\n    algorithmName: medianstop",
                AlgorithmSource::BuiltIn,
                None,
            ),
            // A name given twice: each value is checked, and the refused one is pointed at.
            (
                "algorithmName: random",
                "  earlyStopping:\n    algorithmName: medianstop\n    algorithmSettings: [{name: start_step, value: '0'}, {name: start_step, value: '3'}]",
                AlgorithmSource::BuiltIn,
                Some(&["spec.earlyStopping.algorithmSettings[0].value:", "\"0\""]),
            ),
            (
                "algorithmName: tpe\n    algorithmSettings: [{name: n_startup_trials, value: '3'}, {name: gamma, value: '0.2'}, {name: n_startup_trials, value: 'many'}]",
                "",
                AlgorithmSource::BuiltIn,
                Some(&["spec.algorithm.algorithmSettings[2].value:", "\"many\""]),
            ),
        ];
        for (algorithm, early, source, want) in cases {
            let exp = experiment(&format!("  algorithm:\n    {algorithm}\n{early}"));
            let got = check_settings(&exp, *source);
            match want {
                None => assert!(got.is_ok(), "{algorithm} {early}: {got:?}"),
                Some(parts) => {
                    let text = got.unwrap_err().to_string();
                    for p in *parts {
                        assert!(text.contains(p), "{algorithm} {early}: {text}");
                    }
                }
            }
        }
    }

    /// Hyperband's schedule shorter than maxTrialCount is said before the run; a budget it
    /// fills is not.
    #[test]
    fn a_budget_above_hyperbands_schedule_is_noted() {
        let notes = |max: u32| {
            let mut spec = experiment("").spec;
            let epochs = serde_json::json!({"name": "epochs", "parameterType": "int",
                "feasibleSpace": {"min": "1", "max": "9"}});
            spec.spec
                .parameters
                .push(serde_json::from_value(epochs).unwrap());
            spec.spec.max_trial_count = Some(max as i32);
            let settings = serde_json::json!({"algorithmName": "hyperband", "algorithmSettings":
                [{"name": "resource_name", "value": "epochs"}, {"name": "r_l", "value": "9"},
                 {"name": "eta", "value": "3"}]});
            spec.spec.algorithm = Some(serde_json::from_value(settings).unwrap());
            let exp = ResolvedExperiment::new(spec).unwrap();
            check_settings(&exp, AlgorithmSource::BuiltIn).unwrap()
        };
        assert_eq!(
            notes(30),
            [
                "spec.maxTrialCount: value 30 is more than hyperband's schedule of 22 trial(s) \
              (every bracket once), so the experiment ends after 22 trial(s); hint: lower \
              maxTrialCount to 22, or raise r_l for more brackets"
            ]
        );
        assert!(notes(22).is_empty());
    }

    /// `validate` names every refused setting; a refusal that only follows from setting one
    /// aside (a required setting now missing) is not added.
    #[test]
    fn every_refused_setting_is_named_once() {
        let paths = |algorithm: &str| -> Vec<String> {
            let exp = experiment(&format!("  algorithm:\n    {algorithm}\n"));
            algorithm_refusals(&exp)
                .iter()
                .map(|e| e.to_string().split(':').next().unwrap().to_string())
                .collect()
        };
        assert_eq!(
            paths(
                "algorithmName: tpe\n    algorithmSettings: [{name: gamma, value: '2'}, \
                 {name: bogus, value: '1'}, {name: n_EI_candidates, value: '-1'}]"
            ),
            [
                "spec.algorithm.algorithmSettings[0].value",
                "spec.algorithm.algorithmSettings[1].name",
                "spec.algorithm.algorithmSettings[2].value",
            ]
        );
        assert!(paths("algorithmName: tpe").is_empty());
        // Hyperband's r_l refused: setting it aside leaves it missing, which is not news.
        assert_eq!(
            paths(
                "algorithmName: hyperband\n    algorithmSettings: [{name: resource_name, value: x}, \
                 {name: r_l, value: 'lots'}]"
            ),
            ["spec.algorithm.algorithmSettings[1].value"]
        );
    }

    #[test]
    fn medianstop_keeps_its_settings_apart() {
        let exp = experiment("  earlyStopping:\n    algorithmName: medianstop");
        let built = build_early_stopping(&exp).unwrap().unwrap();
        assert!(built.median.is_some());
        assert!(build_early_stopping(&experiment("")).unwrap().is_none());
        assert_eq!(AlgorithmSource::by_name("tpe"), AlgorithmSource::BuiltIn);
        assert_eq!(
            AlgorithmSource::by_name("my-plugin"),
            AlgorithmSource::External
        );
    }
}
