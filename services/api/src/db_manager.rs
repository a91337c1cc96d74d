//! `api.v1.beta1.DBManager` over the store: Katib's observation-log table semantics (reference
//! §7). Logs with an empty `time_stamp` are skipped as Katib does; values stay strings.
//!
//! Katib's collectors send all of a trial's logs in one `ReportObservationLog` (a million
//! logs is about 45 MB), so the request is checked whole first, then recorded in batches of
//! [`REPORT_BATCH`] logs, each batch's strings moved out of the request: memory beyond the
//! decoded request stays one batch. A store failure part-way leaves the earlier batches
//! recorded, and the error says how many logs were (reporting the same logs again adds them
//! again, as in Katib, where a report is one insert).

use crate::error::ApiError;
use tonic::{Request, Response, Status};
use vernier_core::{MAX_TRIAL_NAME_BYTES, Observation};
use vernier_proto::ProtoError;
use vernier_proto::api::{
    DeleteObservationLogReply, DeleteObservationLogRequest, GetObservationLogReply,
    GetObservationLogRequest, Metric, MetricLog, ObservationLog, ReportObservationLogReply,
    ReportObservationLogRequest, db_manager_server::DbManager,
};
use vernier_proto::time::{format_rfc3339_us, parse_rfc3339_us};
use vernier_store::SqlStore;

/// Logs recorded per store transaction.
pub const REPORT_BATCH: usize = 20_000;

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
    // MySQL compares with trailing spaces padded, so `t1 ` would read and delete `t1`'s logs
    // there and not elsewhere; no trial Vernier or Katib names has such spaces.
    if trial.trim() != trial {
        return Err(ProtoError::Core {
            field: "trial_name".into(),
            reason: format!(
                "value {trial:?} begins or ends with whitespace, which no trial name has; \
                 hint: send the name as the trial has it"
            ),
        }
        .into());
    }
    no_nul_byte("trial_name", trial)?;
    // The server stores' trial name columns hold 255 bytes (Katib's too): a longer name would
    // be stored on SQLite and refused by the others as a retryable error.
    if trial.len() > MAX_TRIAL_NAME_BYTES {
        return Err(ProtoError::Core {
            field: "trial_name".into(),
            reason: format!(
                "value of {} bytes is longer than a trial name can be ({MAX_TRIAL_NAME_BYTES}); \
                 hint: send the name as the trial has it",
                trial.len()
            ),
        }
        .into());
    }
    Ok(())
}

/// Checks every metric log of the request, naming the first unusable field by its path.
pub fn check_observation_log(log: Option<&ObservationLog>) -> Result<(), ApiError> {
    let Some(log) = log else {
        return Err(ProtoError::Missing {
            field: "observation_log".into(),
            hint: "send at least one metric log".into(),
        }
        .into());
    };
    for (i, ml) in log.metric_logs.iter().enumerate() {
        if !ml.time_stamp.is_empty() {
            observation_from_wire(i, ml)?;
        }
    }
    Ok(())
}

/// One metric log's time and metric, checked; the strings are borrowed.
fn observation_from_wire(i: usize, ml: &MetricLog) -> Result<(i64, &Metric), ApiError> {
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
    check_metric_name(&format!("{field}.metric.name"), &metric.name)?;
    no_nul_byte(&format!("{field}.metric.value"), &metric.value)?;
    // Beyond what every store's columns hold (as Katib's do): refused here as the caller's
    // error, not failed in the database as one the caller would retry forever.
    for (part, text, limit) in [
        ("name", &metric.name, vernier_core::MAX_METRIC_NAME_BYTES),
        ("value", &metric.value, vernier_core::MAX_METRIC_VALUE_BYTES),
    ] {
        if text.len() > limit {
            return Err(ProtoError::Core {
                field: format!("{field}.metric.{part}"),
                reason: format!(
                    "{} bytes, more than the {limit} a metric {part} may have",
                    text.len()
                ),
            }
            .into());
        }
    }
    Ok((timestamp_us, metric))
}

/// A metric name every store keys alike: MySQL and MariaDB compare `loss ` equal to `loss`,
/// so a name with trailing whitespace would read and reduce with another metric's logs there
/// and not elsewhere; no metric Katib's collectors parse has such spaces.
fn check_metric_name(field: &str, name: &str) -> Result<(), ApiError> {
    if name.trim() != name {
        return Err(ProtoError::Core {
            field: field.into(),
            reason: format!(
                "value {name:?} begins or ends with whitespace, which no metric name of \
                 Katib's collectors has (they trim names), and MySQL takes `loss ` for `loss`; \
                 hint: send the name without it"
            ),
        }
        .into());
    }
    no_nul_byte(field, name)
}

/// PostgreSQL's text cannot hold a NUL byte: refused on every store as the caller's error, not
/// failed there as one the caller would retry forever.
fn no_nul_byte(field: &str, text: &str) -> Result<(), ApiError> {
    match text.contains('\0') {
        false => Ok(()),
        true => Err(ProtoError::Core {
            field: field.into(),
            reason: format!(
                "value {:?} holds a NUL byte, which a database cannot store as text; hint: \
                 send text without it",
                text.chars().take(40).collect::<String>()
            ),
        }
        .into()),
    }
}

/// Checked logs `offset..` as observations, moving their strings out (the caller checked them
/// with [`check_observation_log`]); logs without a time are skipped.
fn take_observations(offset: usize, logs: &mut [MetricLog]) -> Result<Vec<Observation>, ApiError> {
    let mut out = Vec::with_capacity(logs.len());
    for (k, ml) in logs.iter_mut().enumerate() {
        if ml.time_stamp.is_empty() {
            continue;
        }
        let (timestamp_us, _) = observation_from_wire(offset + k, ml)?;
        let metric = ml.metric.take().unwrap_or_default();
        out.push(Observation {
            metric: metric.name,
            timestamp_us,
            value: metric.value,
        });
    }
    Ok(out)
}

impl DbManagerService {
    pub fn new(store: SqlStore) -> Self {
        DbManagerService { store }
    }

    /// Records the request's logs: all checked first, then stored batch by batch.
    pub async fn report(&self, mut req: ReportObservationLogRequest) -> Result<(), ApiError> {
        require_trial(&req.trial_name)?;
        check_observation_log(req.observation_log.as_ref())?;
        let logs = req
            .observation_log
            .as_mut()
            .map(|l| l.metric_logs.as_mut_slice())
            .unwrap_or_default();
        let total = logs.len();
        for (b, chunk) in logs.chunks_mut(REPORT_BATCH).enumerate() {
            let batch = take_observations(b * REPORT_BATCH, chunk)?;
            let recorded = self
                .store
                .report_observations(&req.trial_name, &batch)
                .await;
            match recorded {
                Ok(()) => {}
                // A database deleted, dropped or damaged under the server holds nothing of
                // the earlier batches anyone can read: the report failed whole.
                Err(e) if b == 0 || e.lost_what_was_recorded() => return Err(e.into()),
                Err(source) => {
                    return Err(ApiError::PartlyRecorded {
                        recorded: b * REPORT_BATCH,
                        total,
                        source: Box::new(source),
                    });
                }
            }
        }
        Ok(())
    }

    async fn get(&self, req: &GetObservationLogRequest) -> Result<ObservationLog, ApiError> {
        require_trial(&req.trial_name)?;
        // A SQLite file deleted or replaced since it was opened is no longer what anyone else
        // reads or writes: its logs are refused as a report to it is, not answered as current.
        self.store.check_in_place()?;
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
        if let Some(name) = metric {
            check_metric_name("metric_name", name)?;
        }
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
        self.report(request.into_inner()).await?;
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
        // A delete from a SQLite file deleted since it was opened changes nothing anyone can
        // read again: refused as `report` refuses a write there, not answered OK.
        self.store.check_in_place().map_err(ApiError::from)?;
        self.store
            .delete_observations(&request.get_ref().trial_name)
            .await
            .map_err(ApiError::from)?;
        Ok(Response::new(DeleteObservationLogReply {}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_names_and_values_no_store_keeps_alike_are_refused_by_field() {
        let log = |name: &str, value: &str| MetricLog {
            time_stamp: "2024-05-01T12:00:00Z".into(),
            metric: Some(Metric {
                name: name.into(),
                value: value.into(),
            }),
        };
        let field = "observation_log.metric_logs[0].metric";
        let cases = [
            (log("loss", "0.5"), None),
            (log("loss", "Genotype(normal=[])"), None),
            (
                log("loss ", "0.5"),
                Some(format!("{field}.name: value \"loss \" begins")),
            ),
            (
                log("\tloss", "0.5"),
                Some(format!("{field}.name: value \"\\tloss\" begins")),
            ),
            (
                log("lo\0ss", "0.5"),
                Some(format!("{field}.name: value \"lo\\0ss\" holds a NUL")),
            ),
            (
                log("loss", "1\0x"),
                Some(format!("{field}.value: value \"1\\0x\" holds a NUL")),
            ),
            (
                log("", "0.5"),
                Some(format!("{field}.name is missing\nhint: name the metric")),
            ),
            (
                MetricLog {
                    metric: None,
                    ..log("loss", "0.5")
                },
                Some(format!("{field} is missing\nhint: send the metric's name")),
            ),
        ];
        for (ml, refused) in cases {
            let got = check_observation_log(Some(&ObservationLog {
                metric_logs: vec![ml.clone()],
            }));
            match (got, refused) {
                (Ok(()), None) => {}
                (Err(e), Some(text)) => assert!(e.to_string().contains(&text), "{e}"),
                (got, want) => panic!("{ml:?}: {got:?}, wanted {want:?}"),
            }
        }
    }

    #[test]
    fn trial_names_no_trial_has_are_refused_by_field() {
        let long = "t".repeat(256);
        let cases = [
            ("exp-abc", None),
            (&"t".repeat(255)[..], None),
            ("", Some("trial_name")),
            ("t1 ", Some("begins or ends with whitespace")),
            ("t\0x", Some("trial_name: value \"t\\0x\" holds a NUL byte")),
            (
                &long[..],
                Some("value of 256 bytes is longer than a trial name can be (255)"),
            ),
        ];
        for (name, refused) in cases {
            match (require_trial(name), refused) {
                (Ok(()), None) => {}
                (Err(e), Some(text)) => assert!(e.to_string().contains(text), "{e}"),
                (got, want) => panic!("{name:?}: {got:?}, wanted {want:?}"),
            }
        }
    }
}
