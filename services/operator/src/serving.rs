//! Which suggestion service serves an experiment on this operator, where it answers, and
//! what the reconciler does around the calls: deploy an image's service, ask it only once its
//! Deployment is available, and retire it when the experiment ends
//! ([`crate::suggestion_deployment`]); and have it check the settings once per experiment and
//! algorithm spec. The services themselves are the composition root's
//! ([`crate::suggestion_services`]).

use crate::context::Context;
use crate::suggestion_deployment::{self, Image, Mount, Placement};
use crate::suggestion_services::{Deployed, Endpoint, SuggestionServices};
use kube::ResourceExt;
use kube::api::DynamicObject;
use vernier_engine::source::settings_refused;
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
    /// Whether the service may be asked: a service at a fixed address always; a deployed one
    /// once its Deployment is `Available`, as Katib's suggestion controller waits for it
    /// (until then its pod is starting, and a call would only fail). Makes the Deployment and
    /// Service first, once per experiment, and again if they were deleted while it ran.
    pub async fn ready(&self, ctx: &Context, policy: ResumePolicy) -> crate::error::Result<bool> {
        let Some((
            at,
            Endpoint::Image {
                container,
                service_account,
                volume,
            },
        )) = &self.deployed
        else {
            return Ok(true);
        };
        let image = Image {
            container,
            service_account: service_account.as_deref(),
            mount: Mount::of(policy, volume),
        };
        let state = ctx.checked.deployed(&self.key);
        if state == Some(Deployed::Available) {
            return Ok(true);
        }
        if state != Some(Deployed::Made) {
            suggestion_deployment::ensure(&ctx.client, at, &image).await?;
            ctx.checked.set_deployed(&self.key, Deployed::Made);
        }
        match suggestion_deployment::availability(&ctx.client, at).await? {
            Some(true) => {
                ctx.checked.set_deployed(&self.key, Deployed::Available);
                Ok(true)
            }
            Some(false) => Ok(false),
            None => {
                suggestion_deployment::ensure(&ctx.client, at, &image).await?;
                Ok(false)
            }
        }
    }

    /// A deployed service that gave no answer is looked at again before it is next asked: its
    /// Deployment may have been deleted, or its pod be restarting.
    pub fn unanswered(&self, ctx: &Context) {
        if self.deployed.is_some() && ctx.checked.deployed(&self.key) == Some(Deployed::Available) {
            ctx.checked.set_deployed(&self.key, Deployed::Made);
        }
    }

    /// Deletes the Deployment and Service of an experiment that ended, unless its resume
    /// policy keeps the service running (Katib's `LongRunning`).
    pub async fn retire(&self, ctx: &Context, policy: ResumePolicy) -> crate::error::Result<()> {
        let Some((at, _)) = &self.deployed else {
            return Ok(());
        };
        if suggestion_deployment::kept_after_end(policy)
            || ctx.checked.deployed(&self.key) == Some(Deployed::Deleted)
        {
            return Ok(());
        }
        suggestion_deployment::retire(&ctx.client, at).await?;
        ctx.checked.set_deployed(&self.key, Deployed::Deleted);
        Ok(())
    }

    /// Has the service check the experiment's settings, once per experiment and algorithm
    /// spec: a refusal is the message the experiment is refused with, kept until the spec
    /// changes, and its Deployment is retired meanwhile (Katib leaves a failed Suggestion's
    /// running); a service not ready or not reachable yet is asked again at the next
    /// reconcile (its first request for proposals may refuse them).
    pub async fn check(
        &self,
        ctx: &Context,
        exp: &ResolvedExperiment,
    ) -> crate::error::Result<Result<(), String>> {
        let algorithm = serde_json::to_string(&exp.spec.spec.algorithm).unwrap_or_default();
        if ctx.checked.holds(&self.key, &algorithm) {
            return Ok(Ok(()));
        }
        let spec = serde_json::to_string(&exp.spec.spec).unwrap_or_default();
        if let Some(refused) = ctx.checked.refusal(&self.key, &spec) {
            return Ok(Err(refused));
        }
        if !self.ready(ctx, exp.resume_policy).await? {
            return Ok(Ok(()));
        }
        Ok(match self.services.validate(&self.address, exp).await {
            Ok(()) => {
                ctx.checked.accept(&self.key, algorithm);
                Ok(())
            }
            Err(SourceError::Rejected(m)) => {
                let refused = settings_refused(&self.describe, &m);
                ctx.checked.refuse(&self.key, spec, refused.clone());
                self.retire(ctx, exp.resume_policy).await?;
                Err(refused)
            }
            Err(SourceError::Unavailable(m)) => {
                self.unanswered(ctx);
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
}

/// The experiment as this replica's memos know it: namespace, name and UID.
fn memo_key(obj: &DynamicObject, ns: &str) -> String {
    format!("{ns}/{}/{}", obj.name_any(), obj.uid().unwrap_or_default())
}
