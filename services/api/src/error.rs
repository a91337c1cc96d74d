//! The one error type of the API crate, and how each kind maps to a gRPC status code.

use thiserror::Error;
use tonic::{Code, Status};
use vernier_algorithms::AlgorithmError;
use vernier_core::CoreError;
use vernier_proto::ProtoError;
use vernier_store::StoreError;

#[derive(Debug, Error)]
pub enum ApiError {
    /// A request field that cannot be used.
    #[error(transparent)]
    Request(#[from] ProtoError),
    /// Bad algorithm name or settings (`ValidateAlgorithmSettings` is exactly this check).
    #[error(transparent)]
    Algorithm(#[from] AlgorithmError),
    /// The algorithm rejected the request's trials or space.
    #[error("{0}")]
    Suggest(CoreError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(
        "trial {0:?} not found\nhint: only trials recorded by `vernier run` in this database, or Trials `vernier operator` watches, can change status"
    )]
    TrialNotFound(String),
    /// The managed-trials hook could not reach what manages the trial.
    #[error("cannot mark trial {trial:?} EarlyStopped: {reason}")]
    Managed { trial: String, reason: String },
    /// The managed-trials hook found the request unusable.
    #[error("{0}")]
    ManagedRefused(String),
    #[error(
        "trial {name:?} already ended as {state}; only a created or running trial can be early-stopped"
    )]
    TrialAlreadyEnded { name: String, state: String },
    #[error("cannot listen on {addr}: {source}\nhint: {hint}")]
    Bind {
        addr: String,
        source: std::io::Error,
        hint: String,
    },
    #[error(
        "early stopping algorithm {0:?} cannot be expressed as Katib early stopping rules\nhint: use medianstop with a Katib controller; {0} works in `vernier run` and `vernier operator`"
    )]
    RulesUnsupported(String),
    /// The algorithm waits for running trials before it can give what was asked.
    #[error(
        "{algorithm} can give {given} of the {asked} trials asked for until running trials end{state}\nhint: ask again when a trial finishes; a Katib controller retries by itself"
    )]
    Waiting {
        algorithm: String,
        given: usize,
        asked: usize,
        state: String,
    },
    /// The algorithm has proposed everything it ever will.
    #[error(
        "{algorithm} has no more trials to suggest: {given} of the {asked} asked for remain{state}\nhint: lower maxTrialCount to the trials created so far plus {given}"
    )]
    SearchComplete {
        algorithm: String,
        given: usize,
        asked: usize,
        state: String,
    },
    /// Nothing of the experiment runs and the algorithm can give only part of what was asked:
    /// the rest needs the results of what it gives (Hyperband's promotions), so the same
    /// request never succeeds.
    #[error(
        "{algorithm} can give {given} of the {asked} trials asked for now; the others need the results of those {given}, so a request for all {asked} while nothing runs never succeeds{state}\nhint: lower parallelTrialCount to {given} or less (a Katib controller asks for parallelTrialCount minus the running trials, at most maxTrialCount minus those created)"
    )]
    Stalled {
        algorithm: String,
        given: usize,
        asked: usize,
        state: String,
    },
    /// The DBManager a request named (`db_manager_address`) could not be read from.
    #[error(
        "cannot read observation logs from the DBManager at {address} (db_manager_address): {reason}\nhint: check that a DBManager (e.g. katib-db-manager) listens at {address}, or send an empty db_manager_address to read this server's own store"
    )]
    DbManagerUnreachable { address: String, reason: String },
    /// A report's later batch failed after its earlier batches were recorded.
    #[error(
        "{recorded} of the report's {total} logs were recorded, then recording the rest failed: {}\nhint: send again only the logs from index {recorded} on; the whole report again would record those {recorded} twice",
        the_failure(.source)
    )]
    PartlyRecorded {
        recorded: usize,
        total: usize,
        source: Box<StoreError>,
    },
    #[error("the gRPC server on {addr} failed: {source}")]
    Transport {
        addr: String,
        source: tonic::transport::Error,
    },
    #[error("reflection descriptor cannot be loaded: {0}")]
    Reflection(String),
    /// The blocking thread an algorithm ran on was lost (the algorithm panicked past its
    /// guard, or the server is shutting down).
    #[error(
        "the thread running the algorithm stopped before it answered: {0}\nhint: send the request again"
    )]
    Task(String),
}

impl From<ApiError> for Status {
    fn from(e: ApiError) -> Status {
        let code = match &e {
            ApiError::Suggest(CoreError::Cancelled(_)) => Code::Cancelled,
            ApiError::Request(_) | ApiError::Algorithm(_) | ApiError::Suggest(_) => {
                Code::InvalidArgument
            }
            ApiError::TrialNotFound(_) => Code::NotFound,
            ApiError::Waiting { .. }
            | ApiError::Managed { .. }
            | ApiError::DbManagerUnreachable { .. } => Code::Unavailable,
            ApiError::ManagedRefused(_) => Code::FailedPrecondition,
            ApiError::SearchComplete { .. } | ApiError::Stalled { .. } => Code::OutOfRange,
            ApiError::RulesUnsupported(_) => Code::Unimplemented,
            ApiError::TrialAlreadyEnded { .. } => Code::FailedPrecondition,
            ApiError::Store(source) => store_code(source),
            // Not the store error's code: UNAVAILABLE tells a client to send the same
            // request again, which would record the first batches twice.
            ApiError::PartlyRecorded { .. } => Code::Aborted,
            _ => Code::Internal,
        };
        Status::new(code, e.to_string())
    }
}

/// A store error's account of what failed, without what it says of a call as a whole
/// ("nothing of this call was recorded", "then retry"), which a report recorded in part
/// contradicts.
fn the_failure(e: &StoreError) -> String {
    let said = e.to_string();
    let said = said.split("\nhint:").next().unwrap_or_default();
    said.split("; nothing of this call was recorded")
        .next()
        .unwrap_or_default()
        .to_string()
}

fn store_code(e: &StoreError) -> Code {
    match e {
        StoreError::Connect { .. }
        | StoreError::Query { .. }
        | StoreError::Locked { .. }
        | StoreError::ConnectionLost { .. }
        | StoreError::Unreachable { .. } => Code::Unavailable,
        // Retrying cannot help until someone fixes the database.
        StoreError::DatabaseFileGone { .. }
        | StoreError::ReadOnly { .. }
        | StoreError::Damaged { .. }
        | StoreError::Vanished { .. }
        | StoreError::DamagedFile { .. } => Code::FailedPrecondition,
        StoreError::NotFound { .. } => Code::NotFound,
        _ => Code::Internal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_failed_part_way_says_what_was_recorded_and_is_not_to_be_sent_again_whole() {
        let locked = || StoreError::Locked {
            action: "record observations of trial",
            name: "t1".into(),
            url: "a.db".into(),
            waited: std::time::Duration::from_secs(30),
        };
        let whole = Status::from(ApiError::Store(locked()));
        let part = Status::from(ApiError::PartlyRecorded {
            recorded: 20_000,
            total: 50_000,
            source: Box::new(locked()),
        });
        assert_eq!(
            (whole.code(), part.code()),
            (Code::Unavailable, Code::Aborted)
        );
        assert!(
            part.message().starts_with(
                "20000 of the report's 50000 logs were recorded, then recording the rest failed: cannot record observations of trial `t1`"
            ),
            "{}",
            part.message()
        );
        assert!(
            !part.message().contains("nothing of this call was recorded")
                && part.message().matches("hint:").count() == 1,
            "{}",
            part.message()
        );
        assert!(
            part.message().ends_with(
                "hint: send again only the logs from index 20000 on; the whole report again would record those 20000 twice"
            ),
            "{}",
            part.message()
        );
    }
}
