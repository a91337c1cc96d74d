//! `api.v1.beta1.DBManager` over the store: Katib's observation-log table semantics (reference
//! §7). Logs with an empty `time_stamp` are skipped as Katib does; values stay strings.

use crate::error::ApiError;
use tonic::{Request, Response, Status};
use vernier_core::Observation;
use vernier_proto::ProtoError;
use vernier_proto::api::{
    DeleteObservationLogReply, DeleteObservationLogRequest, GetObservationLogReply,
    GetObservationLogRequest, Metric, MetricLog, ObservationLog, ReportObservationLogReply,
    ReportObservationLogRequest, db_manager_server::DbManager,
};
use vernier_proto::time::{format_rfc3339_us, parse_rfc3339_us};
use vernier_store::SqlStore;

#[derive(Debug, Clone)]
pub struct DbManagerService {
    store: SqlStore,
}

fn require_trial(trial: &str) -> Result<(), ApiError> {
    if trial.is_empty() {
        return Err(ProtoError::Missing {
            field: "trial_name".into(),
            hint: "name the trial the observation logs belong to".into(),
        }
        .into());
    }
    Ok(())
}

/// The request's metric logs as observations, rejecting unusable fields by path.
pub fn observations_from_wire(log: Option<&ObservationLog>) -> Result<Vec<Observation>, ApiError> {
    let Some(log) = log else {
        return Err(ProtoError::Missing {
            field: "observation_log".into(),
            hint: "send at least one metric log".into(),
        }
        .into());
    };
    let mut out = Vec::with_capacity(log.metric_logs.len());
    for (i, ml) in log.metric_logs.iter().enumerate() {
        if ml.time_stamp.is_empty() {
            continue;
        }
        let field = format!("observation_log.metric_logs[{i}]");
        let timestamp_us = parse_rfc3339_us(&format!("{field}.time_stamp"), &ml.time_stamp)?;
        let metric = ml.metric.as_ref().ok_or_else(|| ProtoError::Missing {
            field: format!("{field}.metric"),
            hint: "send the metric's name and value".into(),
        })?;
        if metric.name.is_empty() {
            return Err(ProtoError::Missing {
                field: format!("{field}.metric.name"),
                hint: "name the metric".into(),
            }
            .into());
        }
        out.push(Observation {
            metric: metric.name.clone(),
            timestamp_us,
            value: metric.value.clone(),
        });
    }
    Ok(out)
}

impl DbManagerService {
    pub fn new(store: SqlStore) -> Self {
        DbManagerService { store }
    }

    pub async fn report(&self, req: &ReportObservationLogRequest) -> Result<(), ApiError> {
        require_trial(&req.trial_name)?;
        let logs = observations_from_wire(req.observation_log.as_ref())?;
        self.store
            .report_observations(&req.trial_name, &logs)
            .await?;
        Ok(())
    }

    async fn get(&self, req: &GetObservationLogRequest) -> Result<ObservationLog, ApiError> {
        require_trial(&req.trial_name)?;
        let bound = |field: &str, text: &str| -> Result<Option<i64>, ApiError> {
            if text.is_empty() {
                Ok(None)
            } else {
                Ok(Some(parse_rfc3339_us(field, text)?))
            }
        };
        let start = bound("start_time", &req.start_time)?;
        let end = bound("end_time", &req.end_time)?;
        let metric = (!req.metric_name.is_empty()).then_some(req.metric_name.as_str());
        let logs = self
            .store
            .observations(&req.trial_name, metric, start, end)
            .await?;
        Ok(ObservationLog {
            metric_logs: logs
                .into_iter()
                .map(|o| MetricLog {
                    time_stamp: format_rfc3339_us(o.timestamp_us),
                    metric: Some(Metric {
                        name: o.metric,
                        value: o.value,
                    }),
                })
                .collect(),
        })
    }
}

#[tonic::async_trait]
impl DbManager for DbManagerService {
    async fn report_observation_log(
        &self,
        request: Request<ReportObservationLogRequest>,
    ) -> Result<Response<ReportObservationLogReply>, Status> {
        self.report(request.get_ref()).await?;
        Ok(Response::new(ReportObservationLogReply {}))
    }

    async fn get_observation_log(
        &self,
        request: Request<GetObservationLogRequest>,
    ) -> Result<Response<GetObservationLogReply>, Status> {
        let observation_log = self.get(request.get_ref()).await?;
        Ok(Response::new(GetObservationLogReply {
            observation_log: Some(observation_log),
        }))
    }

    async fn delete_observation_log(
        &self,
        request: Request<DeleteObservationLogRequest>,
    ) -> Result<Response<DeleteObservationLogReply>, Status> {
        require_trial(&request.get_ref().trial_name)?;
        self.store
            .delete_observations(&request.get_ref().trial_name)
            .await
            .map_err(ApiError::from)?;
        Ok(Response::new(DeleteObservationLogReply {}))
    }
}
