//! `api.v1.beta1.Suggestion` over every algorithm of `vernier_algorithms::build`, with Katib's
//! request semantics: each request carries the experiment and all its trials, and asks for
//! `current_request_number` new assignments.
//!
//! Vernier's algorithms are stateless functions of the history; what they keep between calls
//! lives in trial labels (Hyperband's bracket and rung) and in an opaque state string. Katib's
//! controller neither keeps the reply's labels nor sends them back, so both are returned in the
//! reply's `algorithm` settings, which the controller merges into the next request by name
//! (reference §8.3): [`LABELS_SETTING`] maps the trial name each labelled proposal is given in
//! the reply to its labels (Katib's controller names its trials so), and also its assignment
//! (`name=value,...`, sorted) to the same labels with a `*/parent` label holding the parent's
//! assignment rather than its name, for a controller that names trials itself (two proposals
//! of one assignment share that entry); [`STATE_SETTING`] holds the state. Both are removed
//! from the settings before the algorithm is built. Labels a request sends on the trial win.
//!
//! The controller refuses a reply whose length differs from `current_request_number`, so a
//! shorter answer is first made up by the algorithm's [`vernier_core::Suggester::fill`] when
//! no trial runs (extra members of a PBT or NSGA-II generation waiting on one retried member),
//! and is otherwise an error: `UNAVAILABLE` while the algorithm waits for running trials (the
//! controller retries), `OUT_OF_RANGE` once its search is complete or no trial is running to
//! change its answer. The controller retries `OUT_OF_RANGE` too, forever, so
//! an algorithm that samples points of the space ([`vernier_core::POINT_SAMPLERS`]) and has tried every
//! point of a finite space smaller than `maxTrialCount` gets the rest of the request filled
//! with points drawn at random from the space (repeats, the same for a retried request), as
//! Katib's hyperopt, optuna and skopt services answer, so the experiment completes. Grid
//! refuses such a `maxTrialCount` in `ValidateAlgorithmSettings` instead; schedules
//! (hyperband, asha, bohb, pbt) and NAS keep the error, a repeat having no place in them.
//!
//! Parameters Katib accepts but Vernier runs differently (a repeated list value, a label in a
//! DISCRETE list, a log scale from 0) are converted as `vernier run` converts them, with a
//! warning logged: at `warn` for `ValidateAlgorithmSettings` and a controller's first
//! `GetSuggestions` (no trials yet), at `debug` for the rest, which repeat the same spec.

use crate::error::ApiError;
use crate::workers::Workers;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, HashMap, HashSet};
use tonic::{Request, Response, Status};
use vernier_core::{Cancel, Proposal, SearchSpace, SuggestRequest, Suggestions, TrialRecord};
use vernier_proto::ProtoError;
use vernier_proto::api::{
    AlgorithmSetting, AlgorithmSpec, GetSuggestionsReply, GetSuggestionsRequest,
    ValidateAlgorithmSettingsReply, ValidateAlgorithmSettingsRequest,
    suggestion_server::Suggestion,
};
use vernier_proto::convert::{
    ConversionWarning, ExperimentView, experiment_from_wire_warned, proposals_to_wire,
    trials_from_wire,
};

/// Setting carrying the labels of proposals, as JSON `{assignment: {key: value}}`.
pub const LABELS_SETTING: &str = "vernier/trial-labels";
/// Setting carrying the algorithm's opaque state between calls.
pub const STATE_SETTING: &str = "vernier/state";

/// Most assignments one request may ask for; bounds the work a single call can cause.
const MAX_REQUEST_NUMBER: i32 = 10_000;

/// The Suggestion service. Stateless: everything comes with each request; the only thing
/// shared between calls is the bounded pool the algorithm work runs on.
#[derive(Debug, Clone, Default)]
pub struct SuggestionService {
    workers: Workers,
}

impl SuggestionService {
    /// A service running at most `limit` algorithm calls at once (the default: one per core).
    pub fn with_limit(limit: usize) -> Self {
        SuggestionService {
            workers: Workers::new(limit),
        }
    }

    /// Algorithm calls on a blocking thread now, cancelled ones still winding down included.
    pub fn running(&self) -> usize {
        self.workers.running()
    }
}

/// The settings split into the algorithm's own, the carried labels and the carried state.
struct CarriedSettings {
    algorithm: Vec<(String, String)>,
    labels: BTreeMap<String, BTreeMap<String, String>>,
    state: Option<String>,
}

fn split_settings(settings: Vec<(String, String)>) -> Result<CarriedSettings, ApiError> {
    let mut carried = CarriedSettings {
        algorithm: Vec::new(),
        labels: BTreeMap::new(),
        state: None,
    };
    for (name, value) in settings {
        if name == LABELS_SETTING {
            carried.labels = serde_json::from_str(&value).map_err(|e| {
                ProtoError::Invalid {
                    field: format!("experiment.spec.algorithm.algorithm_settings[{LABELS_SETTING}]"),
                    value: value.chars().take(80).collect(),
                    reason: format!("is not a JSON map of trial labels ({e})\nhint: send back the value an earlier reply returned"),
                }
            })?;
        } else if name == STATE_SETTING {
            carried.state = Some(value);
        } else {
            carried.algorithm.push((name, value));
        }
    }
    Ok(carried)
}

/// A seed that depends only on the request: the `random_state` setting (else the experiment
/// name) mixed with the history length, so a retried request gets the same answer.
fn request_seed(
    experiment: &str,
    algorithm: &str,
    settings: &[(String, String)],
    history: usize,
) -> u64 {
    let base = vernier_algorithms::seed_setting(algorithm, settings).unwrap_or_else(|| {
        // FNV-1a: stable across platforms and releases, unlike `DefaultHasher`.
        experiment.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
    });
    base.wrapping_add((history as u64).wrapping_mul(0xD1B5_4A32_D192_ED03))
}

/// Answers one `GetSuggestions` request, giving up once `cancel` is set (the caller left).
pub fn get_suggestions_cancellable(
    req: &GetSuggestionsRequest,
    cancel: &Cancel,
) -> Result<GetSuggestionsReply, ApiError> {
    let (view, warnings) = experiment_from_wire_warned("experiment", req.experiment.as_ref())?;
    log_warnings(&view.name, &warnings, req.trials.is_empty());
    let asked = asked_count(req.current_request_number)?;
    let carried = split_settings(view.settings.clone())?;
    let suggester = vernier_algorithms::build(
        &view.algorithm,
        &carried.algorithm,
        &view.space,
        &view.objective,
    )?;
    let (mut trials, left_out) =
        trials_from_wire(&req.trials, &view.space, &view.objective, &BTreeMap::new())?;
    log_left_out(&view.name, &left_out);
    attach_carried(&mut trials, &carried.labels);
    let seed = request_seed(
        &view.name,
        &view.algorithm,
        &carried.algorithm,
        trials.len(),
    );
    let request = SuggestRequest {
        space: &view.space,
        objective: &view.objective,
        trials: &trials,
        count: asked,
        seed,
        state: carried.state.as_deref(),
    };
    let mut suggestions =
        vernier_algorithms::suggest_guarded_cancellable(suggester.as_ref(), &request, cancel)
            .map_err(ApiError::Suggest)?;
    let idle = trials.iter().all(|t| t.state.is_terminal());
    if suggestions.proposals.len() < asked && idle && !suggestions.exhausted {
        let extra = suggester.fill(&request, &suggestions.proposals);
        suggestions.proposals.extend(extra);
    }
    let (proposals, state) = full_answer(&view, suggestions, asked, &trials, seed)?;
    let mut labels = carried.labels;
    let names = name_labelled(&view.name, seed, &trials, &proposals, &mut labels);
    Ok(GetSuggestionsReply {
        parameter_assignments: proposals_to_wire(&proposals, &names),
        algorithm: reply_settings(labels, state).map(|settings| AlgorithmSpec {
            algorithm_name: view.algorithm.clone(),
            algorithm_settings: settings,
        }),
        early_stopping_rules: Vec::new(),
    })
}

/// Logs what the conversion warned about, naming the experiment: at `warn` when `first` (the
/// controller's first look at this spec), else at `debug`, since every later request repeats
/// the spec.
fn log_warnings(experiment: &str, warnings: &[ConversionWarning], first: bool) {
    for w in warnings {
        if first {
            tracing::warn!("experiment {experiment:?}: {w}");
        } else {
            tracing::debug!("experiment {experiment:?}: {w}");
        }
    }
}

/// Logs each trial left out of the history, at `warn` the first time this process meets it
/// by name (the controller sends every trial in every request, in no fixed order) and at
/// `debug` after that.
fn log_left_out(experiment: &str, left_out: &[(String, ConversionWarning)]) {
    static TOLD: std::sync::LazyLock<std::sync::Mutex<HashSet<String>>> =
        std::sync::LazyLock::new(Default::default);
    // Bounded: a long-lived server forgets what it told and may tell it once more.
    const REMEMBERED: usize = 10_000;
    for (trial, w) in left_out {
        let key = format!("{experiment}\n{trial}");
        let fresh = {
            let mut told = TOLD
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if told.len() >= REMEMBERED {
                told.clear();
            }
            told.insert(key)
        };
        if fresh {
            tracing::warn!("experiment {experiment:?}: {w}");
        } else {
            tracing::debug!("experiment {experiment:?}: {w}");
        }
    }
}

/// The `asked` proposals of the algorithm's answer and its state, or why there are fewer: an
/// exhausted point sampler's missing proposals are drawn at random from the space.
fn full_answer(
    view: &ExperimentView,
    suggestions: Suggestions,
    asked: usize,
    trials: &[TrialRecord],
    seed: u64,
) -> Result<(Vec<Proposal>, Option<String>), ApiError> {
    let mut proposals: Vec<_> = suggestions.proposals.into_iter().take(asked).collect();
    let missing = asked - proposals.len();
    if missing == 0 {
        return Ok((proposals, suggestions.state));
    }
    if fills_with_repeats(&view.algorithm, suggestions.exhausted) {
        tracing::warn!(
            "{} has tried every point of the search space of experiment {:?}; {missing} of the \
             {asked} assignments asked for are repeats drawn at random, as Katib's services \
             answer; hint: lower maxTrialCount to the number of points to try each once",
            view.algorithm,
            view.name
        );
        proposals.extend(repeats(&view.space, missing, seed));
        return Ok((proposals, suggestions.state));
    }
    let state = suggestions
        .state
        .filter(|s| !s.is_empty())
        .map_or_else(String::new, |s| format!(" ({s})"));
    let idle = trials.iter().all(|t| t.state.is_terminal());
    Err(too_few(
        (suggestions.exhausted, idle),
        view.algorithm.clone(),
        proposals.len(),
        asked,
        state,
    ))
}

/// Whether an answer short of what was asked is filled with repeats: only when the algorithm
/// says its search is exhausted and it is one of the [`vernier_core::POINT_SAMPLERS`].
fn fills_with_repeats(algorithm: &str, exhausted: bool) -> bool {
    exhausted && vernier_core::POINT_SAMPLERS.contains(&algorithm)
}

/// `count` points drawn at random from `space` (each parameter from its prior), repeats
/// allowed; the same points for the same `seed`, so a retried request gets the same answer.
fn repeats(space: &SearchSpace, count: usize, seed: u64) -> Vec<Proposal> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..count)
        .map(|_| {
            Proposal::new(vernier_algorithms::sample::sample_assignment(
                space, &mut rng,
            ))
        })
        .collect()
}

/// `current_request_number` as a count of proposals, if it is one Vernier answers.
fn asked_count(requested: i32) -> Result<usize, ApiError> {
    if requested <= 0 || requested > MAX_REQUEST_NUMBER {
        return Err(ProtoError::Invalid {
            field: "current_request_number".into(),
            value: requested.to_string(),
            reason: format!("must be between 1 and {MAX_REQUEST_NUMBER}\nhint: ask for the number of new trials wanted now"),
        }
        .into());
    }
    Ok(requested as usize)
}

/// The error for an algorithm that gave `given` of the `asked` proposals, by whether its
/// search is exhausted and whether every trial has ended (`idle`): the search is complete,
/// it needs the results of the proposals it can give (so the request as asked never
/// succeeds), or it is waiting for running trials.
fn too_few(
    (exhausted, idle): (bool, bool),
    algorithm: String,
    given: usize,
    asked: usize,
    state: String,
) -> ApiError {
    match (exhausted, idle) {
        (true, _) => ApiError::SearchComplete {
            algorithm,
            given,
            asked,
            state,
        },
        (false, true) => ApiError::Stalled {
            algorithm,
            given,
            asked,
            state,
        },
        (false, false) => ApiError::Waiting {
            algorithm,
            given,
            asked,
            state,
        },
    }
}

/// Names each proposal that carries labels (the name Katib's controller will give its trial;
/// empty for the others) and adds its labels to `labels`, keyed both by that name and by its
/// assignment, which survives the controller renaming trials.
fn name_labelled(
    experiment: &str,
    seed: u64,
    trials: &[TrialRecord],
    proposals: &[Proposal],
    labels: &mut BTreeMap<String, BTreeMap<String, String>>,
) -> Vec<String> {
    let key_by_name: HashMap<&str, String> = trials
        .iter()
        .map(|t| (t.name.as_str(), t.assignment.key()))
        .collect();
    let mut names = Vec::with_capacity(proposals.len());
    for (i, p) in proposals.iter().enumerate() {
        if p.labels.is_empty() {
            names.push(String::new());
            continue;
        }
        let name = unused_name(experiment, seed, trials.len() + i, trials, labels);
        labels.insert(p.assignment.key(), carried_form(&p.labels, &key_by_name));
        labels.insert(name.clone(), p.labels.clone());
        names.push(name);
    }
    names
}

/// The settings the reply carries back for the next request: the labels and the
/// algorithm's state, if any.
fn reply_settings(
    labels: BTreeMap<String, BTreeMap<String, String>>,
    state: Option<String>,
) -> Option<Vec<AlgorithmSetting>> {
    let mut settings = Vec::new();
    if !labels.is_empty() {
        settings.push(AlgorithmSetting {
            name: LABELS_SETTING.into(),
            value: serde_json::to_string(&labels).expect("maps of strings serialize"),
        });
    }
    if let Some(state) = state {
        settings.push(AlgorithmSetting {
            name: STATE_SETTING.into(),
            value: state,
        });
    }
    (!settings.is_empty()).then_some(settings)
}

/// A label naming another trial (Hyperband's and ASHA's `.../parent`).
fn names_a_trial(label: &str) -> bool {
    label.ends_with("/parent")
}

/// Labels as carried: a parent's name becomes its assignment, which survives the controller
/// renaming trials.
fn carried_form(
    labels: &BTreeMap<String, String>,
    key_by_name: &HashMap<&str, String>,
) -> BTreeMap<String, String> {
    labels
        .iter()
        .map(|(k, v)| {
            let v = match key_by_name.get(v.as_str()) {
                Some(key) if names_a_trial(k) => key.clone(),
                _ => v.clone(),
            };
            (k.clone(), v)
        })
        .collect()
}

/// Gives each trial its carried labels: those kept under its name (a controller that names
/// trials as the reply did, as Katib's does), else those of its assignment with parents'
/// assignments turned back into the names this request uses, for a controller that renames
/// them. Labels the trial already has are kept.
fn attach_carried(
    trials: &mut [TrialRecord],
    carried: &BTreeMap<String, BTreeMap<String, String>>,
) {
    if carried.is_empty() {
        return;
    }
    let name_by_key: HashMap<String, String> = trials
        .iter()
        .map(|t| (t.assignment.key(), t.name.clone()))
        .collect();
    for t in trials.iter_mut() {
        let (labels, by_assignment) = match carried.get(&t.name) {
            Some(labels) => (labels, false),
            None => match carried.get(&t.assignment.key()) {
                Some(labels) => (labels, true),
                None => continue,
            },
        };
        for (k, v) in labels {
            let v = match name_by_key.get(v) {
                Some(name) if by_assignment && names_a_trial(k) => name.clone(),
                _ => v.clone(),
            };
            t.labels.entry(k.clone()).or_insert(v);
        }
    }
}

/// The trial name for index `index`, or the next index's while the name is already a trial of
/// the request or carried labels: the seed follows the history's length, which shrinks again
/// when the controller leaves ended trials out (MetricsUnavailable, EarlyStopped without an
/// observation), and Katib's controller creates no trial for a name it already has.
fn unused_name(
    experiment: &str,
    seed: u64,
    mut index: usize,
    trials: &[TrialRecord],
    labels: &BTreeMap<String, BTreeMap<String, String>>,
) -> String {
    loop {
        let name = trial_name(experiment, seed, index);
        if !labels.contains_key(&name) && !trials.iter().any(|t| t.name == name) {
            return name;
        }
        index += 1;
    }
}

/// Katib's `<experiment>-<8 characters>` trial name, derived from the request seed and index.
fn trial_name(experiment: &str, seed: u64, index: usize) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut x = seed ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let suffix: String = (0..8)
        .map(|_| {
            // splitmix64 step
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            ALPHABET[(z % ALPHABET.len() as u64) as usize] as char
        })
        .collect();
    format!("{experiment}-{suffix}")
}

/// Answers `ValidateAlgorithmSettings`: building the algorithm is the validation, plus Katib
/// grid's check that `max_trial_count` fits the grid (a Katib controller would otherwise ask
/// for trials the algorithm can never give). Hyperband's schedule is checked the same way.
pub fn validate_algorithm_settings(req: &ValidateAlgorithmSettingsRequest) -> Result<(), ApiError> {
    // An unknown name is the first thing to say, as Katib's services say it, before anything
    // the request lacks for the algorithm it cannot run anyway.
    let spec = req.experiment.as_ref().and_then(|e| e.spec.as_ref());
    let name = spec
        .and_then(|s| s.algorithm.as_ref())
        .map(|a| &a.algorithm_name);
    if let Some(name) = name.filter(|n| !vernier_algorithms::KNOWN_ALGORITHMS.contains(&n.as_str()))
    {
        return Err(vernier_algorithms::AlgorithmError::UnknownAlgorithm {
            name: name.clone(),
            known: vernier_algorithms::KNOWN_ALGORITHMS.join(", "),
        }
        .into());
    }
    let (view, warnings) = experiment_from_wire_warned("experiment", req.experiment.as_ref())?;
    log_warnings(&view.name, &warnings, true);
    let carried = split_settings(view.settings)?;
    vernier_algorithms::build(
        &view.algorithm,
        &carried.algorithm,
        &view.space,
        &view.objective,
    )?;
    let limit = vernier_algorithms::trial_limit(&view.algorithm, &carried.algorithm, &view.space)?;
    if let Some(limit) = limit.filter(|&l| i64::from(view.max_trial_count) > l as i64) {
        return Err(too_many_trials(&view.algorithm, view.max_trial_count, limit).into());
    }
    let generation = vernier_algorithms::generation_size(&view.algorithm, &carried.algorithm);
    if let Some((size, setting)) =
        generation.filter(|(size, _)| i64::from(view.parallel_trial_count) > *size as i64)
    {
        return Err(too_parallel(&view.algorithm, view.parallel_trial_count, size, setting).into());
    }
    Ok(())
}

/// The refusal of a `parallel_trial_count` above the trials one generation has: Katib's
/// controller asks for exactly that many at once and would retry forever.
fn too_parallel(algorithm: &str, parallel: i32, size: usize, setting: &str) -> ProtoError {
    ProtoError::Invalid {
        field: "experiment.spec.parallel_trial_count".to_string(),
        value: parallel.to_string(),
        reason: format!(
            "is more than the {size} trials of one {algorithm} generation ({setting}), which it \
             proposes before any of the next; a controller asking for {parallel} at once would \
             wait forever\nhint: set parallelTrialCount to at most {size}, or raise {setting}"
        ),
    }
}

/// The refusal of a `max_trial_count` above the `limit` an algorithm can ever give; grid's
/// starts with Katib's own message, which users and tools search for.
fn too_many_trials(algorithm: &str, max_trial_count: i32, limit: u64) -> ProtoError {
    let field = "experiment.spec.max_trial_count".to_string();
    let explanation = format!(
        "({algorithm}); a controller would wait for trials that never come\nhint: set \
         maxTrialCount to at most {limit}"
    );
    if algorithm == "grid" {
        return ProtoError::Core {
            field,
            reason: format!(
                "Max Trial Count: {max_trial_count} > all possible search combinations: \
                 {limit} {explanation}"
            ),
        };
    }
    ProtoError::Invalid {
        field,
        value: max_trial_count.to_string(),
        reason: format!("is more than the {limit} trials in its bracket schedule {explanation}"),
    }
}

#[tonic::async_trait]
impl Suggestion for SuggestionService {
    async fn get_suggestions(
        &self,
        request: Request<GetSuggestionsRequest>,
    ) -> Result<Response<GetSuggestionsReply>, Status> {
        let req = request.into_inner();
        // Model-based algorithms are CPU-bound for hundreds of trials: on the bounded pool,
        // stopped when this call is dropped (client gone, deadline passed).
        let reply = self
            .workers
            .run(move |cancel| get_suggestions_cancellable(&req, cancel))
            .await??;
        Ok(Response::new(reply))
    }

    async fn validate_algorithm_settings(
        &self,
        request: Request<ValidateAlgorithmSettingsRequest>,
    ) -> Result<Response<ValidateAlgorithmSettingsReply>, Status> {
        let req = request.into_inner();
        // Building checks the whole space (a categorical may carry 150,000 values): off the
        // async workers, like GetSuggestions.
        self.workers
            .run(move |_| validate_algorithm_settings(&req))
            .await??;
        Ok(Response::new(ValidateAlgorithmSettingsReply {}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vernier_core::{Assignment, Distribution, Domain, ParamValue, Parameter, TrialState};

    /// A short answer is the search's end, a request that never succeeds as asked (nothing
    /// runs, the rest needs the results of what can be given), or a wait for running trials.
    #[test]
    fn a_short_answer_says_which_of_three_it_is() {
        let cases = [
            (
                (true, true),
                "has no more trials to suggest",
                tonic::Code::OutOfRange,
            ),
            (
                (true, false),
                "has no more trials to suggest",
                tonic::Code::OutOfRange,
            ),
            (
                (false, true),
                "hint: lower parallelTrialCount to 5 or less",
                tonic::Code::OutOfRange,
            ),
            (
                (false, false),
                "until running trials end",
                tonic::Code::Unavailable,
            ),
        ];
        for (flags, said, code) in cases {
            let e = too_few(flags, "hyperband".into(), 5, 6, String::new());
            assert!(e.to_string().contains(said), "{flags:?}: {e}");
            assert_eq!(tonic::Status::from(e).code(), code, "{flags:?}");
        }
    }

    #[test]
    fn only_exhausted_point_samplers_answer_with_repeats() {
        // (algorithm, exhausted, fills)
        let cases = [
            ("random", true, true),
            ("sobol", true, true),
            ("tpe", true, true),
            ("multivariate-tpe", true, true),
            ("bayesianoptimization", true, true),
            ("cmaes", true, true),
            ("random", false, false),
            ("grid", true, false),
            ("hyperband", true, false),
            ("asha", true, false),
            ("bohb", true, false),
            ("pbt", true, false),
            ("nsga2", true, true),
            ("nsga2", false, false),
            ("darts", true, false),
            ("enas", true, false),
        ];
        for (algorithm, exhausted, fills) in cases {
            assert_eq!(
                fills_with_repeats(algorithm, exhausted),
                fills,
                "{algorithm} {exhausted}"
            );
        }
    }

    fn labelled(x: f64) -> Proposal {
        let assignment = Assignment(vec![("x".into(), ParamValue::Double(x))]);
        let mut p = Proposal::new(assignment);
        p.labels.insert("vernier.hyperband/rung".into(), "0".into());
        p
    }

    fn trial(name: &str, x: f64) -> TrialRecord {
        TrialRecord {
            name: name.into(),
            assignment: labelled(x).assignment,
            state: TrialState::Running,
            objective: None,
            labels: BTreeMap::new(),
            metrics: BTreeMap::new(),
        }
    }

    /// A request whose history shrank back to a length seen before (the controller left an
    /// ended trial out) starts from a name it already handed out: the next unused one is
    /// given, so Katib's controller creates the trial instead of skipping it as a duplicate.
    #[test]
    fn names_already_handed_out_are_not_given_again() {
        let seed = 42;
        let first = trial_name("e", seed, 1);
        let second = trial_name("e", seed, 2);
        // (trials of the request, names carried in the labels, expected name)
        let cases: [(Vec<TrialRecord>, Vec<&str>, &str); 4] = [
            (vec![trial("e-a", 0.1)], vec![], &first),
            (vec![trial("e-a", 0.1)], vec![&first], &second),
            (vec![trial(&first, 0.1)], vec![], &second),
            (
                vec![trial("e-a", 0.1)],
                vec![&first, &second],
                &trial_name("e", seed, 3),
            ),
        ];
        for (i, (trials, carried, want)) in cases.into_iter().enumerate() {
            let mut labels: BTreeMap<String, BTreeMap<String, String>> = carried
                .iter()
                .map(|n| (n.to_string(), BTreeMap::new()))
                .collect();
            let names = name_labelled("e", seed, &trials, &[labelled(0.5)], &mut labels);
            assert_eq!(names, vec![want.to_string()], "case {i}");
            assert!(labels.contains_key(want), "case {i}");
        }
    }

    #[test]
    fn repeats_are_points_of_the_space_and_the_same_for_a_seed() {
        let space = SearchSpace::new(vec![Parameter {
            name: "opt".into(),
            domain: Domain::Categorical {
                values: vec!["a".into(), "b".into(), "c".into()],
            },
            distribution: Distribution::Uniform,
        }])
        .unwrap_or_else(|e| panic!("{e}"));
        let keys = |seed| -> Vec<String> {
            repeats(&space, 40, seed)
                .iter()
                .map(|p| p.assignment.key())
                .collect()
        };
        let drawn = keys(11);
        assert_eq!(drawn.len(), 40);
        assert_eq!(drawn, keys(11));
        assert_ne!(drawn, keys(12));
        for p in repeats(&space, 40, 11) {
            space.check(&p.assignment).unwrap_or_else(|e| panic!("{e}"));
        }
        let mut distinct = drawn.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), 3, "{drawn:?}");
    }
}
