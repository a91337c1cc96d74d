//! Property tests: every parser takes arbitrary input without panicking, and the framing
//! round-trips. Case counts are bounded so the suite stays fast.

#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use vernier_collector::{
    MetricsFilter, decode_event, encode_record, event_scalars, parse_exposition, parse_json_line,
    parse_response, split_records, tag_matches,
};

/// Compiled once: building the regex per case would dominate the run time.
static FILTER: std::sync::LazyLock<MetricsFilter> =
    std::sync::LazyLock::new(MetricsFilter::katib_default);

fn wanted() -> Vec<String> {
    vec!["loss".to_string(), "train/accuracy".to_string()]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn text_parse_line_never_panics(line in any::<String>()) {
        let p = FILTER.parse_line(&line, &wanted());
        for m in p.metrics {
            prop_assert!(m.value.parse::<f64>().unwrap().is_finite());
        }
    }

    #[test]
    fn text_parse_line_on_metric_like_text(line in r"(loss|acc|[a-z]{0,4})\s*=\s*[-+.0-9eE]{0,8}( [a-z=0-9.]{0,10}){0,3}") {
        let _ = FILTER.parse_line(&line, &wanted());
    }

    #[test]
    fn json_line_never_panics(line in any::<String>()) {
        let _ = parse_json_line(&line, &wanted());
    }

    #[test]
    fn json_line_on_json_like_text(line in r#"\{("(loss|timestamp)": ?("[0-9.a-z]{0,5}"|[-0-9.e]{1,6}|null|\[\]),? ?){0,3}\}"#) {
        let _ = parse_json_line(&line, &wanted());
    }

    #[test]
    fn tfrecord_split_never_panics_and_stays_in_bounds(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let (records, used, _) = split_records(&bytes);
        prop_assert!(used <= bytes.len());
        for r in records {
            if let Ok(e) = decode_event(r) {
                let _ = event_scalars(&e, "/logs/train", &wanted());
            }
        }
    }

    #[test]
    fn event_decoder_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        if let Ok(e) = decode_event(&bytes) {
            let _ = event_scalars(&e, "/logs/train", &wanted());
        }
    }

    #[test]
    fn tfrecord_round_trips(payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..8), cut in any::<prop::sample::Index>()) {
        let mut file = Vec::new();
        for p in &payloads {
            file.extend(encode_record(p));
        }
        let (records, used, corrupt) = split_records(&file);
        prop_assert_eq!(records, payloads.iter().map(Vec::as_slice).collect::<Vec<_>>());
        prop_assert_eq!((used, corrupt), (file.len(), 0));
        // Any prefix is a clean prefix of the records: a truncated tail is waited for.
        let end = cut.index(file.len() + 1);
        let (prefix, used, corrupt) = split_records(&file[..end]);
        prop_assert_eq!(corrupt, 0);
        prop_assert!(used <= end);
        prop_assert!(prefix.len() <= payloads.len());
    }

    #[test]
    fn tag_matching_never_panics(metric in any::<String>(), dir in any::<String>(), tag in any::<String>()) {
        let _ = tag_matches(&metric, &dir, &tag);
    }

    #[test]
    fn prometheus_parser_never_panics(page in any::<String>()) {
        let e = parse_exposition(&page, &wanted());
        for (_, v) in e.values {
            prop_assert!(v.parse::<f64>().unwrap().is_finite());
        }
    }

    #[test]
    fn prometheus_parser_on_sample_like_text(page in r#"(#[ A-Z]{0,6}\n)?(loss|train/accuracy|[a-z_]{1,5})(\{[a-z]{0,3}="[^"\n]{0,5}"(,[a-z]=".")?\})? ?[-+0-9.eInfNa]{0,6}( [0-9]{0,4})?\n?"#) {
        let _ = parse_exposition(&page, &wanted());
    }

    #[test]
    fn http_response_parser_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..1024)) {
        let _ = parse_response(&bytes);
        let mut framed = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        framed.extend(&bytes);
        let _ = parse_response(&framed);
    }
}
