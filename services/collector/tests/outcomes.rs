//! The collector's outcome rules (see the crate docs), one test each: what happens to
//! malformed, non-finite, split, endless and binary input.

#![allow(clippy::unwrap_used)]

use std::io::Write;
use vernier_collector::{
    FileFollower, MetricsFilter, parse_exposition, parse_json_line, read_lines,
};

fn wanted() -> Vec<String> {
    vec!["loss".to_string()]
}

#[test]
fn malformed_lines_are_errors_to_count_not_to_stop_on() {
    assert!(parse_json_line("{not json", &wanted()).is_err());
    assert_eq!(
        parse_json_line(r#"{"loss": "0.5"}"#, &wanted())
            .unwrap()
            .metrics
            .len(),
        1
    );
    let e = parse_exposition("loss oops\nloss 0.5\n", &wanted());
    assert_eq!((e.malformed, e.values.len()), (1, 1));
}

#[test]
fn non_finite_values_are_rejected() {
    let f = MetricsFilter::from_formats(&[r"(\w+)=(\S+)".to_string()]).unwrap();
    for raw in ["nan", "NaN", "inf", "-inf", "+Inf", "infinity"] {
        let p = f.parse_line(&format!("loss={raw}"), &wanted());
        assert!(p.metrics.is_empty(), "{raw}");
        assert_eq!(p.rejected.len(), 1, "{raw}");
    }
    let e = parse_exposition("loss NaN", &wanted());
    assert_eq!(e.rejected[0].to_string(), "loss=NaN");
    assert_eq!(e.rejected.len(), 1);
}

#[test]
fn a_metric_line_split_across_writes_is_read_once_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.log");
    let mut w = std::fs::File::create(&path).unwrap();
    let mut f = FileFollower::new(&path);
    w.write_all(b"lo").unwrap();
    assert!(f.poll().unwrap().is_empty());
    w.write_all(b"ss=0.").unwrap();
    assert!(f.poll().unwrap().is_empty());
    w.write_all(b"25\n").unwrap();
    assert_eq!(f.poll().unwrap(), vec!["loss=0.25"]);
}

/// A reader yielding `total` bytes of 'x' without a newline, then one metric line, in 64 KiB
/// reads: a stand-in for a 1 GB log without newlines that never touches the disk.
struct Endless {
    left: usize,
    tail: &'static [u8],
}

impl tokio::io::AsyncRead for Endless {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        if self.left > 0 {
            let n = self.left.min(buf.remaining()).min(64 * 1024);
            buf.put_slice(&vec![b'x'; n]);
            self.left -= n;
        } else if !self.tail.is_empty() {
            let n = self.tail.len().min(buf.remaining());
            buf.put_slice(&self.tail[..n]);
            self.tail = &self.tail[n..];
        }
        std::task::Poll::Ready(Ok(()))
    }
}

#[tokio::test]
async fn a_line_without_end_is_cut_so_memory_stays_bounded() {
    let total = 64 << 20;
    let reader = Endless {
        left: total,
        tail: b"\nloss=0.5\n",
    };
    let mut raw_bytes = 0usize;
    let mut lines = Vec::new();
    read_lines(
        reader,
        |raw| raw_bytes += raw.len(),
        |l| lines.push(l.len()),
    )
    .await
    .unwrap();
    // Every byte went to the raw log, but the line kept in memory stopped at the cap, and the
    // metric after it was still read.
    assert_eq!(raw_bytes, total + 10);
    // The cut line is one token with no whitespace, so nothing of it is kept.
    assert_eq!(lines, vec![0, 8]);
}

#[tokio::test]
async fn binary_garbage_yields_no_metrics_and_no_error() {
    let garbage: Vec<u8> = (0..200_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let f = MetricsFilter::katib_default();
    let mut found = 0;
    let mut lines = 0;
    read_lines(
        &garbage[..],
        |_| {},
        |l| {
            lines += 1;
            found += f.parse_line(l, &wanted()).metrics.len();
            let _ = parse_json_line(l, &wanted());
        },
    )
    .await
    .unwrap();
    assert!(lines > 0);
    assert_eq!(found, 0);
}
