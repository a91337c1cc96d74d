//! Message-size caps: DBManager takes a whole trial's logs in one call, as Katib's collectors
//! send them; the other services keep the small cap.

#![allow(clippy::unwrap_used)]

mod support;

use tonic::Code;
use tonic::transport::Channel;
use vernier_api::proto::api::{
    Experiment, GetSuggestionsRequest, Metric, MetricLog, ObservationLog,
    ReportObservationLogRequest, db_manager_client::DbManagerClient,
    suggestion_client::SuggestionClient,
};
use vernier_store::SqlStore;

async fn start() -> (Channel, SqlStore, tokio::sync::oneshot::Sender<()>) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqlStore::connect(dir.path().join("db.sqlite").to_str().unwrap())
        .await
        .unwrap();
    std::mem::forget(dir);
    let router = vernier_api::router(store.clone()).unwrap();
    let (channel, tx) = support::serve(router).await;
    (channel, store, tx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_million_metric_logs_in_one_report_are_recorded() {
    let (channel, store, _stop) = start().await;
    const N: usize = 1_000_000;
    let metric_logs: Vec<MetricLog> = (0..N)
        .map(|i| MetricLog {
            time_stamp: format!(
                "2026-01-01T{:02}:{:02}:{:02}.{:06}Z",
                (i / 3_600_000) % 24,
                (i / 60_000) % 60,
                (i / 1000) % 60,
                i % 1000
            ),
            metric: Some(Metric {
                name: if i % 2 == 0 { "loss" } else { "accuracy" }.into(),
                value: format!("{:.6}", 1.0 / (1.0 + i as f64)),
            }),
        })
        .collect();
    let request = ReportObservationLogRequest {
        trial_name: "big".into(),
        observation_log: Some(ObservationLog { metric_logs }),
    };
    let bytes = prost::Message::encoded_len(&request);
    assert!(
        bytes > 40_000_000,
        "{bytes} bytes is not the size Katib sends"
    );
    assert!(bytes < vernier_api::DB_MANAGER_MAX_MESSAGE_BYTES);
    DbManagerClient::new(channel)
        .max_encoding_message_size(usize::MAX)
        .report_observation_log(request)
        .await
        .unwrap();
    let loss = store
        .observations("big", Some("loss"), None, None)
        .await
        .unwrap();
    assert_eq!(loss.len(), N / 2);
    assert_eq!(loss[0].value, "1.000000");
    let accuracy = store
        .observations("big", Some("accuracy"), None, None)
        .await
        .unwrap();
    assert_eq!(accuracy.len(), N / 2);
}

#[tokio::test]
async fn other_services_keep_the_small_cap() {
    let (channel, _store, _stop) = start().await;
    let big = "x".repeat(vernier_api::MAX_MESSAGE_BYTES + 1);
    let e = SuggestionClient::new(channel)
        .get_suggestions(GetSuggestionsRequest {
            experiment: Some(Experiment {
                name: big,
                spec: None,
            }),
            trials: vec![],
            current_request_number: 1,
            total_request_number: 1,
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::ResourceExhausted, "{e}");
}

/// A reply is never refused on the way out: every log of a trial reported in several calls
/// comes back in one `GetObservationLog`, even past the request cap (Katib's servers set no
/// send limit below gRPC's own).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_log_comes_back_whatever_the_reply_size() {
    use vernier_api::proto::api::GetObservationLogRequest;
    let (channel, _store, _stop) = start().await;
    // The longest value a metric may have, in enough logs to pass the request cap.
    let value = "7".repeat(vernier_core::MAX_METRIC_VALUE_BYTES);
    let mut client = DbManagerClient::new(channel)
        .max_encoding_message_size(usize::MAX)
        .max_decoding_message_size(usize::MAX);
    let per_call = 768;
    for call in 0..3 {
        let metric_logs = (0..per_call)
            .map(|i| MetricLog {
                time_stamp: format!("2026-01-01T00:{call:02}:00.{i:06}Z"),
                metric: Some(Metric {
                    name: "blob".into(),
                    value: value.clone(),
                }),
            })
            .collect();
        client
            .report_observation_log(ReportObservationLogRequest {
                trial_name: "wide".into(),
                observation_log: Some(ObservationLog { metric_logs }),
            })
            .await
            .unwrap();
    }
    let reply = client
        .get_observation_log(GetObservationLogRequest {
            trial_name: "wide".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let logs = reply.observation_log.unwrap().metric_logs;
    assert_eq!(logs.len(), 3 * per_call);
    assert!(3 * per_call * value.len() > vernier_api::DB_MANAGER_MAX_MESSAGE_BYTES);
}
