//! The TensorFlow-event collector against files written by tensorboardX, a real writer
//! (regenerate with `fixtures/write_events.py`), so framing, checksums and Event decoding are
//! checked on bytes this crate did not produce.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use vernier_collector::TfEventFollower;

const BASE_US: i64 = 1_700_000_000_000_000;

fn fixture() -> &'static Path {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/tfevent"
    ))
}

#[test]
fn reads_tensorboardx_scalars_with_steps_and_wall_times() {
    let wanted = vec![
        "loss".to_string(),
        "train/accuracy".to_string(),
        "lr".to_string(),
    ];
    let mut f = TfEventFollower::new(fixture(), wanted);
    let p = f.poll();
    let got: Vec<(&str, &str, &str, i64, Option<i64>)> = p
        .scalars
        .iter()
        .map(|s| {
            (
                s.metric.as_str(),
                s.tag.as_str(),
                s.value.as_str(),
                s.step,
                s.timestamp_us,
            )
        })
        .collect();
    let at = |step: i64| Some(BASE_US + step * 1_000_000);
    // Files in path order: eval/ before train/. `train/accuracy` only reads files under a
    // directory ending in "train"; `lr` also takes `lr_double`, Katib's prefix rule.
    let expected = vec![
        ("loss", "loss", "0.33333334", 2, at(2)),
        ("lr", "lr", "0.03", 2, at(2)),
        ("lr", "lr_double", "0.375", 2, at(2)),
        ("loss", "loss", "1", 0, at(0)),
        ("train/accuracy", "accuracy", "0.5", 0, at(0)),
        ("lr", "lr", "0.01", 0, at(0)),
        ("lr", "lr_double", "0.125", 0, at(0)),
        ("loss", "loss", "0.5", 1, at(1)),
        ("train/accuracy", "accuracy", "0.6", 1, at(1)),
        ("lr", "lr", "0.02", 1, at(1)),
        ("lr", "lr_double", "0.25", 1, at(1)),
        ("loss", "loss", "0.33333334", 2, at(2)),
        ("train/accuracy", "accuracy", "0.7", 2, at(2)),
        ("lr", "lr", "0.03", 2, at(2)),
        ("lr", "lr_double", "0.375", 2, at(2)),
    ];
    assert_eq!(got, expected);
    // The NaN loss each writer logged at step 99 is rejected, not recorded.
    assert_eq!(p.rejected, vec!["loss=NaN", "loss=NaN"]);
    assert_eq!(p.corrupt_records, 0);
    assert!(p.errors.is_empty(), "{:?}", p.errors);
}

#[test]
fn a_fixture_copied_in_pieces_is_read_once_and_whole() {
    let src = std::fs::read(fixture().join("train/events.out.tfevents.fixture")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.out.tfevents.copy");
    let mut f = TfEventFollower::new(dir.path(), vec!["loss".to_string()]);
    let mut values = Vec::new();
    // Odd-sized writes so records are split at every kind of boundary.
    for end in (0..src.len()).step_by(37).skip(1).chain([src.len()]) {
        std::fs::write(&path, &src[..end]).unwrap();
        let p = f.poll();
        assert_eq!(p.corrupt_records, 0, "cut at {end}");
        values.extend(p.scalars.into_iter().map(|s| s.value));
    }
    assert_eq!(values, vec!["1", "0.5", "0.33333334"]);
}
