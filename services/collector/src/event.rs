//! TensorFlow `Event` protobufs reduced to what a metrics collector needs: wall time, step and
//! scalar summary values (`simple_value`, or a one-element float, double or integer
//! `TensorProto`), plus Katib's rule for which tags feed which metric.
//!
//! The messages are declared by hand with `prost` derive (field numbers from TensorFlow's
//! `event.proto`, `summary.proto`, `tensor.proto`), so no protoc and no build script are
//! needed. Fields we do not declare (graphs, images, histograms, ...) are skipped by prost.
//! A `oneof` is wire-identical to optional fields, so `Event.what` is declared as such.

use crate::error::CollectorError;
use prost::Message;

#[derive(Clone, PartialEq, Message)]
pub struct Event {
    #[prost(double, tag = "1")]
    pub wall_time: f64,
    #[prost(int64, tag = "2")]
    pub step: i64,
    #[prost(string, optional, tag = "3")]
    pub file_version: Option<String>,
    #[prost(message, optional, tag = "5")]
    pub summary: Option<Summary>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Summary {
    #[prost(message, repeated, tag = "1")]
    pub value: Vec<SummaryValue>,
}

#[derive(Clone, PartialEq, Message)]
pub struct SummaryValue {
    #[prost(string, tag = "1")]
    pub tag: String,
    #[prost(float, optional, tag = "2")]
    pub simple_value: Option<f32>,
    #[prost(message, optional, tag = "8")]
    pub tensor: Option<TensorProto>,
}

#[derive(Clone, PartialEq, Message)]
pub struct TensorProto {
    #[prost(int32, tag = "1")]
    pub dtype: i32,
    #[prost(message, optional, tag = "2")]
    pub tensor_shape: Option<TensorShape>,
    #[prost(bytes = "vec", tag = "4")]
    pub tensor_content: Vec<u8>,
    #[prost(float, repeated, tag = "5")]
    pub float_val: Vec<f32>,
    #[prost(double, repeated, tag = "6")]
    pub double_val: Vec<f64>,
    /// DT_INT32 (and the smaller ints) values.
    #[prost(int32, repeated, tag = "7")]
    pub int_val: Vec<i32>,
    #[prost(int64, repeated, tag = "10")]
    pub int64_val: Vec<i64>,
}

#[derive(Clone, PartialEq, Message)]
pub struct TensorShape {
    #[prost(message, repeated, tag = "2")]
    pub dim: Vec<TensorDim>,
}

#[derive(Clone, PartialEq, Message)]
pub struct TensorDim {
    #[prost(int64, tag = "1")]
    pub size: i64,
}

/// `tensorflow.DataType` values we can read as a number.
const DT_FLOAT: i32 = 1;
const DT_DOUBLE: i32 = 2;
const DT_INT32: i32 = 3;
const DT_INT64: i32 = 9;

/// A scalar read from an event, for one wanted metric.
#[derive(Debug, Clone, PartialEq)]
pub struct EventScalar {
    /// The wanted metric name (e.g. `train/accuracy`), not the tag.
    pub metric: String,
    pub tag: String,
    /// Formatted as Python's `str()` of the value would (shortest round-trip form).
    pub value: String,
    pub step: i64,
    /// The event's `wall_time`, in µs since the Unix epoch; `None` when it is no time RFC 3339
    /// can write (not finite, or outside the years 0000 to 9999, such as milliseconds written
    /// as seconds): the value is then dated when it is read, as a text line without a time is.
    pub timestamp_us: Option<i64>,
}

/// Everything one event yielded for the wanted metrics.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EventScalars {
    pub scalars: Vec<EventScalar>,
    /// Matching values that are not finite scalars, as `tag=raw` (counted, never recorded).
    pub rejected: Vec<String>,
}

/// Decodes one record's payload.
pub fn decode_event(payload: &[u8]) -> Result<Event, CollectorError> {
    Event::decode(payload).map_err(|e| CollectorError::BadEvent {
        bytes: payload.len(),
        reason: e.to_string(),
    })
}

/// Katib's tag rule (`tfevent_loader.py`): a metric `dir/name` takes tags starting with `name`
/// from event files whose directory path ends with `dir` (a plain string suffix, so `train`
/// also matches `.../pretrain`); a metric without `/` takes tags starting with it, from any
/// directory. Katib matches by prefix, so `loss` also takes `loss_ema`; we do the same.
pub fn tag_matches(metric: &str, event_dir: &str, tag: &str) -> bool {
    match metric.rsplit_once('/') {
        // Python's `os.path.dirname("/loss")` is `/`, which no walked directory ends with.
        Some(("", _)) => event_dir.ends_with('/') && tag.starts_with(&metric[1..]),
        Some((dir, name)) => tag.starts_with(name) && event_dir.ends_with(dir),
        None => tag.starts_with(metric),
    }
}

/// The scalars of `event` for the wanted metrics; `event_dir` is the directory of its file.
pub fn event_scalars(event: &Event, event_dir: &str, wanted: &[String]) -> EventScalars {
    let mut out = EventScalars::default();
    let Some(summary) = &event.summary else {
        return out;
    };
    let timestamp_us = wall_time_us(event.wall_time);
    for v in &summary.value {
        let matching: Vec<&String> = wanted
            .iter()
            .filter(|m| tag_matches(m, event_dir, &v.tag))
            .collect();
        if matching.is_empty() {
            continue;
        }
        let Some(value) = scalar_value(v) else {
            out.rejected.push(format!("{}={}", v.tag, describe(v)));
            continue;
        };
        for m in matching {
            out.scalars.push(EventScalar {
                metric: m.clone(),
                tag: v.tag.clone(),
                value: value.clone(),
                step: event.step,
                timestamp_us,
            });
        }
    }
    out
}

fn wall_time_us(secs: f64) -> Option<i64> {
    let us = (secs * 1e6).round();
    // Beyond ±2^62 µs (±146,000 years) is a garbage wall time, not a date.
    (us.is_finite() && us.abs() < 4.6e18)
        .then_some(us as i64)
        .and_then(crate::text::datable_us)
}

/// A finite scalar value, formatted in its own precision (an f32 0.1 is "0.1", not
/// "0.10000000149011612").
fn scalar_value(v: &SummaryValue) -> Option<String> {
    match number_of(v)? {
        (x, text) if x.is_finite() => Some(text),
        _ => None,
    }
}

/// The value of a `simple_value` or of a one-element float, double or integer tensor, finite
/// or not, with its text in its own precision.
fn number_of(v: &SummaryValue) -> Option<(f64, String)> {
    if let Some(x) = v.simple_value {
        return Some((f64::from(x), x.to_string()));
    }
    let t = v.tensor.as_ref()?;
    if let Some(shape) = &t.tensor_shape
        && shape.dim.iter().any(|d| d.size != 1)
    {
        return None;
    }
    let bytes = t.tensor_content.as_slice();
    match t.dtype {
        DT_FLOAT => {
            one(&t.float_val, bytes, f32::from_le_bytes).map(|x| (f64::from(x), x.to_string()))
        }
        DT_DOUBLE => one(&t.double_val, bytes, f64::from_le_bytes).map(|x| (x, x.to_string())),
        // Written by `tf.summary.write` of an integer; numpy prints it as the integer.
        DT_INT32 => {
            one(&t.int_val, bytes, i32::from_le_bytes).map(|x| (f64::from(x), x.to_string()))
        }
        DT_INT64 => one(&t.int64_val, bytes, i64::from_le_bytes).map(|x| (x as f64, x.to_string())),
        _ => None,
    }
}

/// A one-element tensor's value: from its typed field, or from its packed little-endian
/// `tensor_content` (TF2 writes that).
fn one<T: Copy, const N: usize>(typed: &[T], bytes: &[u8], from: fn([u8; N]) -> T) -> Option<T> {
    match (typed, <[u8; N]>::try_from(bytes)) {
        ([x], _) => Some(*x),
        ([], Ok(b)) => Some(from(b)),
        _ => None,
    }
}

/// What a rejected value looked like, for the warning.
fn describe(v: &SummaryValue) -> String {
    if let Some((_, text)) = number_of(v) {
        return text;
    }
    match &v.tensor {
        Some(t) if matches!(t.dtype, DT_FLOAT | DT_DOUBLE | DT_INT32 | DT_INT64) => {
            "a tensor of more than one element".to_string()
        }
        Some(t) => format!(
            "a tensor of dtype {} (only float, double and integer tensors are read)",
            t.dtype
        ),
        None => "no scalar".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wanted(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    fn scalar_event(tag: &str, value: f32, step: i64) -> Event {
        Event {
            wall_time: 1_638_422_847.25,
            step,
            file_version: None,
            summary: Some(Summary {
                value: vec![SummaryValue {
                    tag: tag.into(),
                    simple_value: Some(value),
                    tensor: None,
                }],
            }),
        }
    }

    #[test]
    fn katib_tag_rules() {
        assert!(tag_matches("loss", "/any/dir", "loss"));
        assert!(tag_matches("loss", "/any/dir", "loss_ema"));
        assert!(!tag_matches("loss", "/any/dir", "val_loss"));
        assert!(tag_matches("train/accuracy", "/logs/train", "accuracy"));
        assert!(tag_matches(
            "train/accuracy",
            "/logs/pretrain",
            "accuracy_top1"
        ));
        assert!(!tag_matches("train/accuracy", "/logs/test", "accuracy"));
        assert!(!tag_matches(
            "train/accuracy",
            "/logs/train",
            "train/accuracy"
        ));
        // Katib's `os.path.dirname("/loss")` is `/`, which no walked directory ends with.
        assert!(!tag_matches("/loss", "/logs/train", "loss"));
    }

    /// A wall time RFC 3339 cannot write (milliseconds written as seconds, a year before 0000,
    /// not a number) leaves the value to be dated when read; the value itself is kept.
    #[test]
    fn wall_times_outside_the_years_0000_to_9999_are_no_time() {
        for (wall_time, want) in [
            (1_638_422_847.25, Some(1_638_422_847_250_000)),
            (0.0, Some(0)),
            (1.0e12, None),
            (-1.0e11, None),
            (253_402_300_800.0, None),
            (f64::NAN, None),
        ] {
            let mut e = scalar_event("loss", 0.1, 7);
            e.wall_time = wall_time;
            let s = event_scalars(&e, "/d", &wanted(&["loss"]));
            assert_eq!(s.rejected, Vec::<String>::new(), "{wall_time}");
            assert_eq!(s.scalars[0].timestamp_us, want, "{wall_time}");
        }
    }

    #[test]
    fn reads_simple_values_with_step_and_wall_time() {
        let bytes = scalar_event("loss", 0.1, 7).encode_to_vec();
        let e = decode_event(&bytes).unwrap();
        let s = event_scalars(&e, "/d", &wanted(&["loss", "acc"]));
        assert_eq!(
            s.scalars,
            vec![EventScalar {
                metric: "loss".into(),
                tag: "loss".into(),
                value: "0.1".into(),
                step: 7,
                timestamp_us: Some(1_638_422_847_250_000),
            }]
        );
    }

    #[test]
    fn reads_float_double_and_integer_tensors() {
        let cases = [
            (DT_DOUBLE, 0.875f64.to_le_bytes().to_vec(), "0.875"),
            (DT_FLOAT, 0.25f32.to_le_bytes().to_vec(), "0.25"),
            (DT_INT32, (-3i32).to_le_bytes().to_vec(), "-3"),
            (DT_INT64, 3i64.to_le_bytes().to_vec(), "3"),
        ];
        for (dtype, content, want) in cases {
            let mut e = scalar_event("acc", 0.0, 1);
            let v = &mut e.summary.as_mut().unwrap().value[0];
            v.simple_value = None;
            v.tensor = Some(TensorProto {
                dtype,
                tensor_shape: Some(TensorShape::default()),
                tensor_content: content,
                ..Default::default()
            });
            let s = event_scalars(&e, "/d", &wanted(&["acc"]));
            assert_eq!(s.scalars[0].value, want, "dtype {dtype}");
        }
        // The same values in the typed fields, as older writers put them.
        let typed = [
            TensorProto {
                dtype: DT_FLOAT,
                float_val: vec![0.25],
                ..Default::default()
            },
            TensorProto {
                dtype: DT_INT64,
                int64_val: vec![7],
                ..Default::default()
            },
            TensorProto {
                dtype: DT_INT32,
                int_val: vec![7],
                ..Default::default()
            },
        ];
        for (t, want) in typed.into_iter().zip(["0.25", "7", "7"]) {
            let mut e = scalar_event("acc", 0.0, 1);
            let v = &mut e.summary.as_mut().unwrap().value[0];
            v.simple_value = None;
            v.tensor = Some(t);
            assert_eq!(
                event_scalars(&e, "/d", &wanted(&["acc"])).scalars[0].value,
                want
            );
        }
        // A half-precision tensor is not read; the warning names its dtype.
        let mut e = scalar_event("acc", 0.0, 1);
        e.summary.as_mut().unwrap().value[0].simple_value = None;
        e.summary.as_mut().unwrap().value[0].tensor = Some(TensorProto {
            dtype: 19,
            tensor_content: vec![0, 0x34],
            ..Default::default()
        });
        assert_eq!(
            event_scalars(&e, "/d", &wanted(&["acc"])).rejected,
            ["acc=a tensor of dtype 19 (only float, double and integer tensors are read)"]
        );
    }

    #[test]
    fn non_finite_and_non_scalar_values_are_rejected() {
        let e = scalar_event("loss", f32::NAN, 1);
        let s = event_scalars(&e, "/d", &wanted(&["loss"]));
        assert!(s.scalars.is_empty());
        assert_eq!(s.rejected, vec!["loss=NaN"]);
        let mut e = scalar_event("loss", 0.0, 1);
        let v = &mut e.summary.as_mut().unwrap().value[0];
        v.simple_value = None;
        v.tensor = Some(TensorProto {
            dtype: DT_FLOAT,
            tensor_shape: Some(TensorShape {
                dim: vec![TensorDim { size: 2 }],
            }),
            float_val: vec![1.0, 2.0],
            ..Default::default()
        });
        assert_eq!(
            event_scalars(&e, "/d", &wanted(&["loss"])).rejected.len(),
            1
        );
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(decode_event(&[0xff, 0xff, 0xff]).is_err());
    }
}
