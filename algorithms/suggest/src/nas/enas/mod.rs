//! ENAS (Pham et al. 2018) as Katib's `nas/enas` service runs it: an LSTM controller samples
//! architectures (an operation per layer, skip connections to earlier layers), trials train
//! them, and REINFORCE on the trials' rewards trains the controller. Assignments are Katib's
//! `architecture` and `nn_config` texts, so Katib's ENAS trial images consume them.
//!
//! Where Vernier differs from Katib, on purpose:
//! - Katib trains on the *average* reward of all trials applied to freshly sampled
//!   architectures, so the reward never meets the architecture that earned it. Vernier replays
//!   each completed trial's own architecture with its own reward (the REINFORCE of the paper).
//! - The controller is rebuilt on every call by replaying the completed trials in creation
//!   order from the experiment seed, so a restarted service continues where it was (Katib
//!   keeps it in a pod-local checkpoint that a restart loses).
//! - The moving-average baseline starts at the first reward rather than 0, so early rewards
//!   are judged relative to each other instead of all being reinforced.

mod controller;
mod settings;

pub use controller::{Adam, Arch, Choose, Params, Shape, Tape};
pub use settings::EnasSettings;

use super::pyjson::PyJson;
use super::{NasRules, enas_values_of, nas_config, nas_error};
use crate::error::AlgorithmError;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use vernier_core::{
    Assignment, Cancel, CoreError, Direction, NasConfig, Objective, ParamValue, Proposal,
    SearchSpace, SuggestRequest, Suggester, Suggestions, TrialRecord,
};

/// Most candidate operations (all parameter combinations of all operations) ENAS accepts.
pub const MAX_OPERATIONS: usize = 10_000;

/// One candidate operation: Katib's `Operation` (id, type, one value per parameter).
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub id: usize,
    pub kind: String,
    pub params: Vec<(String, PyJson)>,
}

/// The ENAS suggester.
#[derive(Debug, Clone)]
pub struct Enas {
    nas: NasConfig,
    candidates: Vec<Candidate>,
    settings: EnasSettings,
    direction: Direction,
}

pub fn build(
    name: &str,
    settings: &[(String, String)],
    space: &SearchSpace,
    objective: &Objective,
) -> Result<Enas, AlgorithmError> {
    let nas = nas_config(name, space)?;
    NasRules::enas().check(name, nas)?;
    let settings = EnasSettings::parse(name, settings)?;
    let candidates = candidates(name, nas)?;
    Ok(Enas {
        nas: nas.clone(),
        candidates,
        settings,
        direction: objective.direction,
    })
}

/// Katib's `SearchSpace`: every combination of every operation's parameter values, numbered
/// in order (the last parameter varying fastest, as `itertools.product`).
pub fn candidates(algorithm: &str, nas: &NasConfig) -> Result<Vec<Candidate>, AlgorithmError> {
    let mut out = Vec::new();
    for (i, op) in nas.operations.iter().enumerate() {
        let mut combos: Vec<Vec<(String, PyJson)>> = vec![Vec::new()];
        for (j, p) in op.parameters.iter().enumerate() {
            let values = enas_values_of(p).map_err(|reason| {
                nas_error(
                    algorithm,
                    &format!("spec.nasConfig.operations[{i}].parameters[{j}].feasibleSpace"),
                    &reason,
                )
            })?;
            combos = combos
                .into_iter()
                .flat_map(|c| {
                    values.iter().map(move |v| {
                        let mut c = c.clone();
                        c.push((p.name.clone(), v.clone()));
                        c
                    })
                })
                .collect();
            if out.len() + combos.len() > MAX_OPERATIONS {
                return Err(nas_error(
                    algorithm,
                    "spec.nasConfig.operations",
                    &format!(
                        "give more than {MAX_OPERATIONS} candidate operations; hint: list fewer parameter values"
                    ),
                ));
            }
        }
        for params in combos {
            out.push(Candidate {
                id: out.len(),
                kind: op.operation_type.clone(),
                params,
            });
        }
    }
    Ok(out)
}

impl Enas {
    fn shape(&self) -> Shape {
        Shape {
            layers: self.nas.num_layers as usize,
            operations: self.candidates.len(),
            hidden: self.settings.hidden_size,
            temperature: self.settings.temperature,
            tanh_const: self.settings.tanh_const,
            skip_target: self.settings.skip_target,
        }
    }

    /// The controller after replaying every completed trial, from the experiment seed.
    pub fn trained_controller(&self, trials: &[TrialRecord]) -> Params {
        self.train(trials, &Cancel::new())
    }

    /// [`Enas::trained_controller`], stopping early once `cancel` is set (the caller then
    /// discards the half-trained controller).
    fn train(&self, trials: &[TrialRecord], cancel: &Cancel) -> Params {
        let mut init_rng = ChaCha8Rng::seed_from_u64(self.settings.random_state);
        let mut params = Params::init(self.shape(), &mut init_rng);
        let mut adam = Adam::new(params.data.len(), self.settings.learning_rate);
        let mut baseline: Option<f64> = None;
        let s = &self.settings;
        for (arch, value) in trials.iter().filter_map(|t| self.replayable(t)) {
            // Replaying one trial is the unit of work between polls.
            if cancel.is_cancelled() {
                break;
            }
            let reward_of = |tape: &Tape| {
                let r = match self.direction {
                    Direction::Maximize => value,
                    Direction::Minimize => -value,
                };
                r + s.entropy_weight.unwrap_or(0.0) * tape.entropy
            };
            let first = params.forward::<ChaCha8Rng>(Choose::Forced(&arch));
            let reward = reward_of(&first);
            let b = baseline.map_or(reward, |b| b - (1.0 - s.baseline_decay) * (b - reward));
            baseline = Some(b);
            let advantage = reward - b;
            for _ in 0..s.train_steps {
                let tape = params.forward::<ChaCha8Rng>(Choose::Forced(&arch));
                let grad = params.backward(&tape, advantage, s.skip_weight.unwrap_or(0.0));
                adam.step(&mut params.data, &grad);
            }
        }
        params
    }

    /// A completed trial's architecture and objective, if it has both and fits this space.
    fn replayable(&self, t: &TrialRecord) -> Option<(Arch, f64)> {
        let value = t.usable_objective()?;
        let text = t.assignment.get("architecture")?.to_string();
        let arch = parse_architecture(&text, self.shape())?;
        Some((arch, value))
    }

    /// Katib's two assignments for one architecture.
    pub fn assignment(&self, arch: &Arch) -> Assignment {
        let layers: Vec<PyJson> = arch
            .ops
            .iter()
            .zip(&arch.skips)
            .map(|(op, skips)| {
                PyJson::List(
                    std::iter::once(PyJson::Int(*op as i64))
                        .chain(skips.iter().map(|b| PyJson::Int(i64::from(*b))))
                        .collect(),
                )
            })
            .collect();
        let mut embedding: Vec<(String, PyJson)> = Vec::new();
        for op in &arch.ops {
            let key = op.to_string();
            if embedding.iter().any(|(k, _)| *k == key) {
                continue;
            }
            let c = &self.candidates[*op];
            embedding.push((
                key,
                PyJson::Dict(vec![
                    ("opt_id".into(), PyJson::Int(c.id as i64)),
                    ("opt_type".into(), PyJson::Str(c.kind.clone())),
                    ("opt_params".into(), PyJson::Dict(c.params.clone())),
                ]),
            ));
        }
        let ints = |v: &[i32]| PyJson::List(v.iter().map(|x| PyJson::Int(i64::from(*x))).collect());
        let nn_config = PyJson::Dict(vec![
            (
                "num_layers".into(),
                PyJson::Int(i64::from(self.nas.num_layers)),
            ),
            ("input_sizes".into(), ints(&self.nas.input_sizes)),
            ("output_sizes".into(), ints(&self.nas.output_sizes)),
            ("embedding".into(), PyJson::Dict(embedding)),
        ]);
        Assignment(vec![
            (
                "architecture".into(),
                ParamValue::Choice(PyJson::List(layers).katib_text()),
            ),
            (
                "nn_config".into(),
                ParamValue::Choice(nn_config.katib_text()),
            ),
        ])
    }
}

/// Reads Katib's `architecture` text (`[[op], [op, skip], ...]`); `None` unless it fits.
pub fn parse_architecture(text: &str, shape: Shape) -> Option<Arch> {
    let rows: Vec<Vec<i64>> = serde_json::from_str(text).ok()?;
    if rows.len() != shape.layers {
        return None;
    }
    let mut arch = Arch {
        ops: Vec::with_capacity(rows.len()),
        skips: Vec::with_capacity(rows.len()),
    };
    for (l, row) in rows.iter().enumerate() {
        let (&op, skips) = row.split_first()?;
        if skips.len() != l || op < 0 || op as usize >= shape.operations {
            return None;
        }
        if skips.iter().any(|b| *b != 0 && *b != 1) {
            return None;
        }
        arch.ops.push(op as usize);
        arch.skips.push(skips.iter().map(|b| *b == 1).collect());
    }
    Some(arch)
}

impl Suggester for Enas {
    fn name(&self) -> &str {
        "enas"
    }

    fn suggest(&self, request: &SuggestRequest<'_>) -> Result<Suggestions, CoreError> {
        self.suggest_cancellable(request, &Cancel::new())
    }

    fn suggest_cancellable(
        &self,
        request: &SuggestRequest<'_>,
        cancel: &Cancel,
    ) -> Result<Suggestions, CoreError> {
        let params = self.train(request.trials, cancel);
        cancel.check(self.name())?;
        let mut rng = ChaCha8Rng::seed_from_u64(request.seed);
        let proposals = (0..request.count)
            .map(|_| {
                let tape = params.forward(Choose::Sample(&mut rng));
                Proposal::new(self.assignment(&tape.arch))
            })
            .collect();
        Ok(Suggestions {
            proposals,
            state: None,
            exhausted: false,
        })
    }
}

#[cfg(test)]
mod tests;
