//! Which suggestion service serves an experiment on this operator, where it answers, and
//! what the reconciler does around the calls: deploy an image's service before it is first
//! asked and retire it when the experiment ends ([`crate::suggestion_deployment`]), and have it
//! check the settings once per experiment and algorithm spec. The services themselves are the
//! composition root's ([`crate::suggestion_services`]).

use crate::context::Context;
use crate::suggestion_deployment::{self, Placement};
use crate::suggestion_services::{Endpoint, SuggestionServices};
use kube::ResourceExt;
use kube::api::DynamicObject;
use vernier_engine::{AlgorithmSource, ResolvedExperiment, ResumePolicy, SourceError};

/// The service serving an experiment's algorithm: where it answers, and how messages name it.
#[derive(Debug)]
pub struct Serving<'a> {
    pub services: &'a dyn SuggestionServices,
    pub address: String,
    pub describe: String,
    /// The Deployment's place and its container, when the operator deploys the service.
    deployed: Option<(Placement<'a>, &'a Endpoint)>,
    /// The experiment as this replica's memos know it: namespace, name and UID.
    key: String,
}

/// The service serving the algorithm of `obj` (in namespace `ns`), when the operator has one.
pub fn serving<'a>(
    ctx: &'a Context,
    obj: &'a DynamicObject,
    ns: &'a str,
    algorithm: &str,
) -> Option<Serving<'a>> {
    let services = ctx.suggestion_services.as_deref()?;
    let endpoint = ctx.suggestion_endpoints.get(algorithm)?;
    let key = memo_key(obj, ns);
    let (address, describe, deployed) = match endpoint {
        Endpoint::Address(address) => (
            address.clone(),
            format!("suggestion plugin {algorithm} at {address}"),
            None,
        ),
        Endpoint::Image { .. } => {
            let at = Placement::of(obj, ns, algorithm);
            let address = suggestion_deployment::address(at.experiment, algorithm, ns);
            let describe = format!(
                "suggestion service {algorithm} (Deployment {ns}/{}) at {address}",
                at.name
            );
            (address, describe, Some((at, endpoint)))
        }
    };
    Some(Serving {
        services,
        address,
        describe,
        deployed,
        key,
    })
}

impl Serving<'_> {
    /// Makes the service's Deployment and Service, once per experiment, when the operator
    /// deploys it; nothing for a service at a fixed address.
    pub async fn ready(&self, ctx: &Context) -> crate::error::Result<()> {
        let Some((
            at,
            Endpoint::Image {
                container,
                service_account,
            },
        )) = &self.deployed
        else {
            return Ok(());
        };
        if ctx.checked.deployed(&self.key) == Some(true) {
            return Ok(());
        }
        let account = service_account.as_deref();
        suggestion_deployment::ensure(&ctx.client, at, container, account).await?;
        ctx.checked.set_deployed(&self.key, true);
        Ok(())
    }

    /// Deletes the Deployment and Service of an experiment that ended, unless its resume
    /// policy keeps the service running (Katib's `LongRunning`).
    pub async fn retire(&self, ctx: &Context, policy: ResumePolicy) -> crate::error::Result<()> {
        let Some((at, _)) = &self.deployed else {
            return Ok(());
        };
        if suggestion_deployment::kept_after_end(policy)
            || ctx.checked.deployed(&self.key) == Some(false)
        {
            return Ok(());
        }
        suggestion_deployment::retire(&ctx.client, at).await?;
        ctx.checked.set_deployed(&self.key, false);
        Ok(())
    }

    /// Has the service check the experiment's settings, once per experiment and algorithm
    /// spec: a refusal is the message the experiment is refused with; a service not
    /// reachable yet is asked again at the next reconcile (its first request for proposals
    /// may refuse them).
    pub async fn check(
        &self,
        ctx: &Context,
        exp: &ResolvedExperiment,
    ) -> crate::error::Result<Result<(), String>> {
        let algorithm = serde_json::to_string(&exp.spec.spec.algorithm).unwrap_or_default();
        if ctx.checked.holds(&self.key, &algorithm) {
            return Ok(Ok(()));
        }
        self.ready(ctx).await?;
        Ok(match self.services.validate(&self.address, exp).await {
            Ok(()) => {
                ctx.checked.accept(&self.key, algorithm);
                Ok(())
            }
            Err(SourceError::Rejected(m)) => Err(format!(
                "spec.algorithm: checking the settings with {} failed: {m}",
                self.describe
            )),
            Err(SourceError::Unavailable(m)) => {
                tracing::warn!(
                    "experiment {}: {} is not reachable yet ({m}); its settings are checked \
                     when it answers",
                    self.key,
                    self.describe
                );
                Ok(())
            }
        })
    }
}

/// The algorithm names the operator's services serve, which an experiment may name though
/// Vernier has no such algorithm.
pub fn served(ctx: &Context) -> Vec<&str> {
    ctx.suggestion_endpoints
        .keys()
        .map(String::as_str)
        .collect()
}

/// Whether a service checks the settings of `algorithm`, or the built-in algorithm does.
pub fn algorithm_source(ctx: &Context, algorithm: &str) -> AlgorithmSource {
    match ctx.suggestion_endpoints.contains_key(algorithm) {
        true => AlgorithmSource::External,
        false => AlgorithmSource::BuiltIn,
    }
}

/// Forgets what this replica did for a deleted experiment (its objects go with it, by their
/// owner references).
pub fn forget(ctx: &Context, obj: &DynamicObject, ns: &str) {
    ctx.checked.forget(&memo_key(obj, ns));
    ctx.service_backoff
        .reset(&format!("{ns}/{}", obj.name_any()));
}

/// The experiment as this replica's memos know it: namespace, name and UID.
fn memo_key(obj: &DynamicObject, ns: &str) -> String {
    format!("{ns}/{}/{}", obj.name_any(), obj.uid().unwrap_or_default())
}
