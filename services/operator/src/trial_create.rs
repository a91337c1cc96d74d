//! Creating an experiment's Trial objects for the algorithm's proposals: named from the
//! experiment's UID and the trial's sequence number, rendered from the trial template, with the
//! checkpoint directory when the algorithm uses one and the early-stopping rules frozen now.
//! A name already taken by this experiment's own trial of the same sequence number (an
//! interrupted reconcile) is taken as it is.

use crate::context::Context;
use crate::error::{OperatorError, Result};
use crate::experiment_check::Resolved;
use crate::experiment_trials::{Listed, next_seq};
use crate::names::{FINALIZER, RENDER_ERROR_ANNOTATION, SEQ_ANNOTATION};
use crate::objects::{create_unless_present, namespaced, owner_reference, trial_resource};
use futures_util::StreamExt;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use vernier_algorithms::checkpoint::{parent_trial, trial_dir_setting};
use vernier_core::Proposal;
use vernier_engine::{identity_seed, trial_name};
use vernier_spec::status::ParameterAssignment;
use vernier_spec::trial::{EXPERIMENT_LABEL, EarlyStoppingRule, TrialSpec};
use vernier_spec::types::API_VERSION;

/// Trial objects created at once within one reconcile.
const CREATE_CONCURRENCY: usize = 16;

/// Names tried for one sequence number before giving up (a name taken by a stranger).
const NAME_RETRIES: u64 = 16;

/// What every trial created in one reconcile shares.
#[derive(Debug)]
pub struct Batch<'a> {
    pub ctx: &'a Context,
    pub owner: &'a DynamicObject,
    pub exp: &'a Resolved,
    pub ns: &'a str,
    /// Katib's `earlyStoppingRules`, frozen for trials created now.
    pub rules: Vec<EarlyStoppingRule>,
}

/// Creates a trial per proposal, numbered on from the highest number in use, and adds the new ones to
/// `listed`. Creates run concurrently (API round trips dominate); results come back in
/// sequence order, and the first error stops the batch after the trials already created.
pub async fn create_trials(
    batch: &Batch<'_>,
    proposals: &[Proposal],
    listed: &mut Vec<Listed>,
) -> Result<()> {
    if proposals.is_empty() {
        return Ok(());
    }
    ensure_checkpoint_claim(batch).await?;
    let first_seq = next_seq(listed);
    // Collected first: a lazy `map` over the proposals makes the future not `Send`.
    let mut creates = Vec::with_capacity(proposals.len());
    for (i, p) in proposals.iter().enumerate() {
        creates.push(create_trial(batch, first_seq + i as u64, p));
    }
    let mut created = futures_util::stream::iter(creates).buffered(CREATE_CONCURRENCY);
    while let Some(trial) = created.next().await {
        let trial = trial?;
        // Met an existing trial the cache did not show yet: count it once.
        if !listed.iter().any(|l| l.obj.uid() == trial.obj.uid()) {
            listed.push(trial);
        }
    }
    Ok(())
}

async fn create_trial(batch: &Batch<'_>, seq: u64, proposal: &Proposal) -> Result<Listed> {
    let api = namespaced(&batch.ctx.client, &trial_resource(), batch.ns);
    let exp_name = batch.owner.name_any();
    // Names come from the experiment's UID, not its seed: two experiments of one name in two
    // namespaces often share a seed (`random_state`), and observation logs are keyed by trial
    // name alone (as Katib's are), so their trials must not share names.
    let name_seed = identity_seed(&batch.owner.uid().unwrap_or_else(|| exp_name.clone()));
    for retry in 0..NAME_RETRIES {
        let name = trial_name(&exp_name, name_seed, seq, retry);
        let (trial, spec) = trial_object(batch, &name, seq, proposal)?;
        match api.create(&PostParams::default(), &trial).await {
            Ok(created) => {
                batch.ctx.metrics.trial_created();
                return Ok(Listed::read(Arc::new(created), spec, &batch.exp.objective));
            }
            Err(kube::Error::Api(e)) if e.code == 409 => {
                if let Some(existing) = ours(&api, batch.owner, &name, seq).await? {
                    return Ok(Listed::read(Arc::new(existing), spec, &batch.exp.objective));
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(OperatorError::Malformed {
        object: format!("experiment {exp_name}"),
        message: "16 trial names in a row were taken; hint: delete stale trials of this experiment"
            .into(),
    })
}

/// The trial `name` when it is this experiment's own trial number `seq` (created by an
/// interrupted reconcile), `None` when a stranger holds the name.
async fn ours(
    api: &Api<DynamicObject>,
    owner: &DynamicObject,
    name: &str,
    seq: u64,
) -> Result<Option<DynamicObject>> {
    let Some(existing) = api.get_opt(name).await? else {
        return Ok(None);
    };
    let same_owner = existing
        .owner_references()
        .iter()
        .any(|o| Some(&o.uid) == owner.uid().as_ref());
    let same_seq = existing.annotations().get(SEQ_ANNOTATION) == Some(&seq.to_string());
    Ok((same_owner && same_seq).then_some(existing))
}

/// The Trial object for proposal `seq` named `name`, and its spec.
fn trial_object(
    batch: &Batch<'_>,
    name: &str,
    seq: u64,
    proposal: &Proposal,
) -> Result<(DynamicObject, TrialSpec)> {
    let exp = batch.exp;
    let pairs = proposal.assignment.to_strings();
    let mut annotations = BTreeMap::from([(SEQ_ANNOTATION.to_string(), seq.to_string())]);
    let run_spec = match vernier_spec::render_trial_spec(&exp.spec, name, &pairs) {
        Ok(v) => Some(with_checkpoints(batch, name, &proposal.labels, v)),
        Err(e) => {
            annotations.insert(RENDER_ERROR_ANNOTATION.into(), e.to_string());
            None
        }
    };
    let spec = trial_spec(exp, &pairs, run_spec, batch.rules.clone());
    let mut labels = batch.owner.labels().clone();
    labels.extend(proposal.labels.clone());
    labels.insert(EXPERIMENT_LABEL.into(), batch.owner.name_any());
    let owner_ref = owner_reference(batch.owner, API_VERSION, "Experiment");
    let trial = json!({
        "apiVersion": API_VERSION,
        "kind": "Trial",
        "metadata": {
            "name": name,
            "namespace": batch.ns,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": owner_ref.iter().collect::<Vec<_>>(),
            "finalizers": [FINALIZER],
        },
        "spec": spec,
    });
    let trial = serde_json::from_value(trial).map_err(|e| OperatorError::Malformed {
        object: format!("trial {name}"),
        message: e.to_string(),
    })?;
    Ok((trial, spec))
}

/// Katib's Trial spec: the experiment's objective, template fields and collector, with the
/// trial's assignments, rendered job and early-stopping rules.
fn trial_spec(
    exp: &Resolved,
    pairs: &[(String, String)],
    run_spec: Option<Value>,
    early_stopping_rules: Vec<EarlyStoppingRule>,
) -> TrialSpec {
    let tt = exp.spec.spec.trial_template.clone().unwrap_or_default();
    TrialSpec {
        objective: exp.spec.spec.objective.clone(),
        parameter_assignments: pairs
            .iter()
            .map(|(n, v)| ParameterAssignment {
                name: n.clone(),
                value: v.clone(),
            })
            .collect(),
        early_stopping_rules,
        run_spec,
        retain_run: tt.retain.unwrap_or(false),
        metrics_collector: exp.spec.spec.metrics_collector_spec.clone(),
        primary_pod_labels: tt.primary_pod_labels,
        primary_container_name: tt.primary_container_name,
        success_condition: tt.success_condition,
        failure_condition: tt.failure_condition,
        labels: BTreeMap::new(),
    }
}

/// With `suggestion_trial_dir` set, the experiment's checkpoint volume claim exists before
/// its trials do (created once, owned by the experiment; an existing one is kept as is).
async fn ensure_checkpoint_claim(batch: &Batch<'_>) -> Result<()> {
    let (exp, owner) = (batch.exp, batch.owner);
    if trial_dir_setting(&exp.settings).is_none() {
        return Ok(());
    }
    let name = crate::checkpoints::claim_name(&owner.name_any(), &exp.algorithm);
    let owner_ref = owner_reference(owner, API_VERSION, "Experiment")
        .and_then(|o| serde_json::to_value(o).ok());
    let claim = crate::checkpoints::claim_object(&name, batch.ns, owner_ref);
    let client = &batch.ctx.client;
    create_unless_present::<PersistentVolumeClaim>(client, batch.ns, claim).await
}

/// The rendered job with the trial's checkpoint directory (and its parent's copy) when the
/// experiment sets `suggestion_trial_dir`; unchanged otherwise.
fn with_checkpoints(
    batch: &Batch<'_>,
    trial: &str,
    labels: &BTreeMap<String, String>,
    run_spec: Value,
) -> Value {
    let exp = batch.exp;
    let Some(mount_path) = trial_dir_setting(&exp.settings) else {
        return run_spec;
    };
    let experiment = batch.owner.name_any();
    let claim = crate::checkpoints::claim_name(&experiment, &exp.algorithm);
    let tt = exp.spec.spec.trial_template.as_ref();
    let c = crate::checkpoints::TrialCheckpoint {
        claim: &claim,
        mount_path,
        experiment: &experiment,
        trial,
        parent: parent_trial(labels),
        primary_container: tt.and_then(|t| t.primary_container_name.as_deref()),
        image: &batch.ctx.config.collector_image,
    };
    crate::checkpoints::inject(&c, run_spec)
}
