//! Tests of the scraped source: how scrape failures, resets and pages become recorded
//! values and shown messages.
#![allow(clippy::unwrap_used)]
use super::*;
use crate::error::CollectorError;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn source() -> ScrapedSource {
    ScrapedSource::new(9090, "/metrics", vec!["loss".into(), "accuracy".into()])
}

fn error(reason: &str) -> CollectorError {
    CollectorError::Scrape {
        url: "http://127.0.0.1:9090/metrics".into(),
        reason: reason.into(),
    }
}

fn reset() -> Result<String, ScrapeFailure> {
    Err(ScrapeFailure::Reset(error("Connection reset by peer")))
}

fn failed(reason: &str) -> Result<String, ScrapeFailure> {
    Err(ScrapeFailure::Failed(error(reason)))
}

fn page(text: &str) -> Result<String, ScrapeFailure> {
    Ok(text.to_string())
}

/// What a read handed on: values as `name=value`, then rejected values and warnings (the
/// warnings shortened to their first line).
fn shown(read: &SourceRead) -> (Vec<String>, Vec<String>) {
    let values = read
        .metrics
        .iter()
        .map(|m| format!("{}={}", m.name, m.value))
        .collect();
    let mut notes: Vec<String> = read.rejected.iter().map(ToString::to_string).collect();
    notes.extend(
        read.warnings
            .iter()
            .map(|w| w.lines().next().unwrap_or_default().to_string()),
    );
    (values, notes)
}

/// One scrape's outcome, the values and notes it hands on, and the wait before the next.
type Row = (
    Result<String, ScrapeFailure>,
    &'static [&'static str],
    &'static [&'static str],
    Duration,
);

#[test]
fn outcomes_in_turn_report_each_failure_once_and_a_single_reset_never() {
    let every = Duration::from_secs(1);
    let mut s = source();
    let table: Vec<Row> = vec![
        (Err(ScrapeFailure::NotListening), &[], &[], LISTEN_RETRY),
        (Err(ScrapeFailure::NotListening), &[], &[], LISTEN_RETRY),
        (page("# HELP x\n"), &[], &[], every),
        (
            page("loss 0.5\naccuracy NaN\nnot a sample\n"),
            &["loss=0.5"],
            &[
                "accuracy=NaN",
                "1 malformed line(s) in http://127.0.0.1:9090/metrics",
            ],
            every,
        ),
        // The same faults again are not repeated.
        (
            page("loss 0.4\naccuracy NaN\nnot a sample\n"),
            &["loss=0.4"],
            &[],
            every,
        ),
        (
            failed("status line \"HTTP/1.1 500\" is not 200"),
            &[],
            &[
                "scraping http://127.0.0.1:9090/metrics failed: status line \"HTTP/1.1 500\" is not 200",
            ],
            every,
        ),
        (
            failed("status line \"HTTP/1.1 500\" is not 200"),
            &[],
            &[],
            every,
        ),
        // One reset between pages is a server going away and back: silent.
        (reset(), &[], &[], every),
        (page("loss 0.3\n"), &["loss=0.3"], &[], every),
        (reset(), &[], &[], every),
        (Err(ScrapeFailure::NotListening), &[], &[], every),
        (reset(), &[], &[], every),
        // Two in a row is a server that resets what it is asked: said once.
        (
            reset(),
            &[],
            &["scraping http://127.0.0.1:9090/metrics failed: Connection reset by peer"],
            every,
        ),
        (reset(), &[], &[], every),
    ];
    for (i, (outcome, values, notes, wait)) in table.into_iter().enumerate() {
        let read = s.take(outcome);
        let (got_values, got_notes) = shown(&read);
        assert_eq!(got_values, values, "row {i}");
        assert_eq!(got_notes, notes, "row {i}");
        assert_eq!(s.wait(every), wait, "row {i}");
    }
}

#[test]
fn values_carry_no_time_of_their_own() {
    let read = source().take(page("accuracy{split=\"val\"} 0.8\nloss 1\n"));
    assert!(!read.exact_time);
    assert!(read.metrics.iter().all(|m| m.timestamp_us.is_none()));
    assert_eq!(shown(&read).0, ["loss=1", "accuracy=0.8"]);
}

#[test]
fn a_short_interval_is_kept_while_waiting_for_the_port() {
    let s = source();
    let short = Duration::from_millis(10);
    assert_eq!(s.wait(short), short);
}

/// Every read, and a signal on the first one.
struct Reads {
    reads: Vec<SourceRead>,
    first: Option<tokio::sync::oneshot::Sender<()>>,
}

impl ReadSink for Reads {
    async fn take(&mut self, read: SourceRead, last: bool) {
        assert!(!last, "a scraped source has no last read");
        self.reads.push(read);
        if let Some(first) = self.first.take() {
            let _ = first.send(());
        }
    }
}

/// The port starts listening only after the first scrape was refused; the page it then
/// serves is read, and the scraping ends when the trial does.
#[tokio::test]
async fn the_endpoint_is_read_once_it_listens_and_refusals_stay_silent() {
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let (first_tx, first_rx) = tokio::sync::oneshot::channel();
    let (ended_tx, ended_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        first_rx.await.unwrap();
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap();
        let (mut s, _) = listener.accept().await.unwrap();
        let mut request = Vec::new();
        while !request.ends_with(b"\r\n\r\n") {
            let mut byte = [0u8; 1];
            if s.read(&mut byte).await.unwrap() == 0 {
                break;
            }
            request.push(byte[0]);
        }
        s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nloss 0.5\n")
            .await
            .unwrap();
        drop(s);
        ended_tx.send(()).unwrap();
    });
    let mut source = ScrapedSource::new(port, "/metrics", vec!["loss".into()]);
    let mut sink = Reads {
        reads: Vec::new(),
        first: Some(first_tx),
    };
    let ended = async {
        let _ = ended_rx.await;
    };
    // An hour between scrapes: only the retry while the port is closed can reach the server.
    scrape_until(&mut source, Duration::from_secs(3600), ended, &mut sink).await;
    server.await.unwrap();
    let (last, before) = sink.reads.split_last().unwrap();
    assert!(!before.is_empty(), "the first scrape was refused");
    assert!(before.iter().all(SourceRead::is_empty), "{before:?}");
    assert_eq!(shown(last), (vec!["loss=0.5".to_string()], Vec::new()));
}
