//! Katib's `EarlyStopping.SetTrialStatus` for Trials the operator manages: the gRPC API (which
//! never depends on this crate) reaches it through a hook the binary composes. The request
//! names only the trial, so it is looked up in the watched namespace(s); `namespace/name` picks
//! one where the same name exists twice.

use crate::error::OperatorError;
use crate::objects::{now_rfc3339, now_us, trial_resource};
use crate::trial_state::{state_of, trial_status};
use kube::api::{Api, DynamicObject, ListParams};
use kube::{Client, ResourceExt};
use vernier_core::TrialState;
use vernier_engine::reason::{TRIAL_EARLY_STOPPED, TRIAL_EARLY_STOPPED_MESSAGE};
use vernier_spec::conditions::set_terminal;

/// What marking a trial EarlyStopped came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EarlyStopOutcome {
    /// Marked now, or EarlyStopped already; the trial reconciler deletes its job.
    Stopped { namespace: String },
    /// It ended otherwise before the call.
    AlreadyEnded { state: TrialState },
    /// No Trial of that name in the watched namespace(s).
    NotFound,
    /// The name exists in several namespaces: these, to pick from with `namespace/name`.
    Ambiguous(Vec<String>),
}

/// Which Trial `request` (`name` or `namespace/name`) means among the listed ones.
fn pick<'a>(
    request: &str,
    trials: &'a [DynamicObject],
) -> Result<&'a DynamicObject, EarlyStopOutcome> {
    let (ns, name) = match request.split_once('/') {
        Some((ns, name)) => (Some(ns), name),
        None => (None, request),
    };
    let found: Vec<&DynamicObject> = trials
        .iter()
        .filter(|t| {
            t.name_any() == name && ns.is_none_or(|ns| t.namespace().as_deref() == Some(ns))
        })
        .collect();
    match found.as_slice() {
        [] => Err(EarlyStopOutcome::NotFound),
        [one] => Ok(one),
        many => Err(EarlyStopOutcome::Ambiguous(
            many.iter().filter_map(|t| t.namespace()).collect(),
        )),
    }
}

/// Marks the Trial EarlyStopped (reason `TrialEarlyStopped`) unless it has ended already.
pub async fn early_stop_trial(
    client: &Client,
    watch_namespace: Option<&str>,
    request: &str,
) -> Result<EarlyStopOutcome, OperatorError> {
    let resource = trial_resource();
    let all: Api<DynamicObject> = match watch_namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    // A conflicting write means the trial changed under us: read it again, a few times.
    for _ in 0..3 {
        let listed = all.list(&ListParams::default()).await?.items;
        let obj = match pick(request, &listed) {
            Ok(obj) => obj,
            Err(outcome) => return Ok(outcome),
        };
        let namespace = obj.namespace().unwrap_or_default();
        let mut status = trial_status(obj);
        match state_of(&status.conditions) {
            TrialState::EarlyStopped => return Ok(EarlyStopOutcome::Stopped { namespace }),
            s if s.is_terminal() => return Ok(EarlyStopOutcome::AlreadyEnded { state: s }),
            _ => {}
        }
        set_terminal(
            &mut status.conditions,
            "EarlyStopped",
            TRIAL_EARLY_STOPPED,
            TRIAL_EARLY_STOPPED_MESSAGE,
            now_us(),
        );
        status.completion_time = Some(now_rfc3339());
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &namespace, &resource);
        match crate::objects::replace_status(&api, obj, &status).await {
            Ok(()) => return Ok(EarlyStopOutcome::Stopped { namespace }),
            Err(kube::Error::Api(e)) if e.code == 409 => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(OperatorError::Malformed {
        object: format!("Trial {request}"),
        message: "kept changing while being marked EarlyStopped; try again".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(ns: &str, name: &str) -> DynamicObject {
        let mut o = DynamicObject::new(name, &trial_resource());
        o.metadata.namespace = Some(ns.into());
        o
    }

    #[test]
    fn picks_by_name_then_by_namespace() {
        let trials = [trial("a", "t1"), trial("b", "t1"), trial("a", "t2")];
        assert_eq!(
            pick("t2", &trials).unwrap().namespace().as_deref(),
            Some("a")
        );
        assert_eq!(
            pick("t1", &trials).unwrap_err(),
            EarlyStopOutcome::Ambiguous(vec!["a".into(), "b".into()])
        );
        assert_eq!(
            pick("b/t1", &trials).unwrap().namespace().as_deref(),
            Some("b")
        );
        assert_eq!(pick("t3", &trials).unwrap_err(), EarlyStopOutcome::NotFound);
        assert_eq!(
            pick("c/t1", &trials).unwrap_err(),
            EarlyStopOutcome::NotFound
        );
    }
}
