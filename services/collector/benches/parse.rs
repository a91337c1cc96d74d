//! Parsing throughput of the metrics collectors (`cargo bench -p vernier-collector`): TEXT
//! lines through `MetricsFilter::parse_line` and TFRecord event records through framing,
//! decoding and tag matching. Figures go to BENCHMARKS.md, never into tests.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use prost::Message;
use std::hint::black_box;
use vernier_collector::{
    Event, MetricsFilter, Summary, SummaryValue, decode_event, encode_record, event_scalars,
    parse_exposition, split_records,
};

const LINES: usize = 10_000;
const RECORDS: usize = 10_000;

fn wanted() -> Vec<String> {
    vec!["loss".into(), "accuracy".into()]
}

/// A realistic training log: most lines carry metrics, some are chatter.
fn text_lines() -> Vec<String> {
    (0..LINES)
        .map(|i| match i % 4 {
            0 => format!(
                "epoch {i}: loss={:.6} accuracy={:.4}",
                1.0 / (i + 1) as f64,
                0.5
            ),
            1 => format!("2024-01-01T00:00:{:02}Z loss={}", i % 60, i as f64 * 1e-3),
            2 => "INFO loading batch 17 of 128 from the data loader".to_string(),
            _ => format!("step {i} accuracy = {:.3e}", i as f64 / 7.0),
        })
        .collect()
}

fn event_file() -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..RECORDS {
        let e = Event {
            wall_time: 1.7e9 + i as f64,
            step: i as i64,
            file_version: None,
            summary: Some(Summary {
                value: vec![
                    SummaryValue {
                        tag: "loss".into(),
                        simple_value: Some(1.0 / (i + 1) as f32),
                        tensor: None,
                    },
                    SummaryValue {
                        tag: "accuracy".into(),
                        simple_value: Some(0.5),
                        tensor: None,
                    },
                ],
            }),
        };
        out.extend(encode_record(&e.encode_to_vec()));
    }
    out
}

fn bench(c: &mut Criterion) {
    let filter = MetricsFilter::katib_default();
    let w = wanted();
    let lines = text_lines();
    let mut g = c.benchmark_group("text");
    g.throughput(Throughput::Elements(LINES as u64));
    g.bench_function("parse_line_10k_lines", |b| {
        b.iter(|| {
            let mut n = 0;
            for l in &lines {
                n += filter.parse_line(black_box(l), &w).metrics.len();
            }
            n
        })
    });
    g.finish();

    let file = event_file();
    let mut g = c.benchmark_group("tfevent");
    g.throughput(Throughput::Elements(RECORDS as u64));
    g.bench_function("records_10k", |b| {
        b.iter(|| {
            let (records, _, _) = split_records(black_box(&file));
            let mut n = 0;
            for r in records {
                if let Ok(e) = decode_event(r) {
                    n += event_scalars(&e, "/logs/train", &w).scalars.len();
                }
            }
            n
        })
    });
    g.finish();

    let page: String = (0..200)
        .map(|i| format!("# TYPE m{i} gauge\nm{i}{{a=\"b\"}} {i}.5\n"))
        .chain(["loss 0.25\naccuracy 0.9\n".to_string()])
        .collect();
    let mut g = c.benchmark_group("prometheus");
    g.throughput(Throughput::Elements(401));
    g.bench_function("page_401_lines", |b| {
        b.iter(|| parse_exposition(black_box(&page), &w).values.len())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
