//! Early stopping on the cluster, with Katib's timing for medianstop: Katib computes the rule
//! when a trial is created (from the trials succeeded then), writes it into that Trial's
//! `spec.earlyStoppingRules`, and the trial's collector stops the trial once its own values
//! break it; a trial created before `min_trials_required` trials succeeded carries no rule and
//! runs to its end. The operator does the same with the engine's `frozen_rules`: written at
//! creation, `breaks` asked of each running trial's own rules and once more of a trial whose
//! job ended. Any other rule (ASHA ranks trials against each other at each rung) is asked about
//! the whole history at every experiment reconcile.

use crate::context::EarlyStopperFactory;
use vernier_algorithms::medianstop::MedianStop;
use vernier_core::EarlyStopper;
use vernier_spec::types::AlgorithmSpec;

/// The rule whose verdicts trials carry frozen in `spec.earlyStoppingRules`.
pub const FROZEN_RULE: &str = "medianstop";

/// The experiment's early-stopping rule as the operator applies it.
#[derive(Debug)]
pub enum Stopping {
    Off,
    /// Medianstop: rules fixed in each trial's spec when it is created.
    Frozen(MedianStop),
    /// Any other rule, applied to the current history.
    Continuous(Box<dyn EarlyStopper>),
}

impl Stopping {
    /// The rule `spec.earlyStopping` names, built by `factory` (which decides what this
    /// operator offers); medianstop gets Katib's timing. `Err` names the refused setting.
    pub fn build(
        spec: Option<&AlgorithmSpec>,
        factory: Option<&EarlyStopperFactory>,
    ) -> Result<Stopping, String> {
        let (Some(es), Some(factory)) = (spec, factory) else {
            return Ok(Stopping::Off);
        };
        let name = es.algorithm_name.as_deref().unwrap_or_default();
        let settings: Vec<(String, String)> = es
            .algorithm_settings
            .iter()
            .map(|s| (s.name.clone(), s.value.clone()))
            .collect();
        let stopper = factory(name, &settings)?;
        if stopper.name() != FROZEN_RULE {
            return Ok(Stopping::Continuous(stopper));
        }
        MedianStop::from_settings(&settings)
            .map(Stopping::Frozen)
            .map_err(|e| e.to_string())
    }

    /// The rule's name in events and conditions.
    pub fn name(&self) -> &str {
        match self {
            Stopping::Off => "",
            Stopping::Frozen(_) => FROZEN_RULE,
            Stopping::Continuous(s) => s.name(),
        }
    }
}
