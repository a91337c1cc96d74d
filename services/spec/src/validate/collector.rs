//! Rules for `spec.metricsCollectorSpec`: per-kind source shape and `metricsFormat` regexes.

use super::Errors;
use crate::known::COLLECTOR_KINDS;
use crate::types::{Experiment, FileSystemPath, MetricsCollectorSpec};
use serde_json::Value;

const M: &str = "spec.metricsCollectorSpec";

pub(super) fn check(exp: &Experiment, errs: &mut Errors) {
    let Some(mc) = &exp.spec.metrics_collector_spec else {
        return;
    };
    let kind = mc
        .collector
        .as_ref()
        .and_then(|c| c.kind.as_deref())
        .unwrap_or("");
    let source = mc.source.as_ref();
    let fsp = source.and_then(|s| s.file_system_path.as_ref());
    let fsp_path = format!("{M}.source.fileSystemPath");
    match kind {
        "File" => {
            let fsp = fsp.cloned().unwrap_or_default();
            expect_kind(&fsp, &["File"], &fsp_path, errs);
            expect_absolute(&fsp, &fsp_path, errs);
            let format = fsp.format.as_deref().unwrap_or("");
            if !matches!(format, "TEXT" | "JSON") {
                errs.not_one_of(format!("{fsp_path}.format"), format, &["TEXT", "JSON"]);
            }
            if format == "JSON" && source.is_some_and(|s| s.filter.is_some()) {
                errs.add(
                    format!("{M}.source.filter"),
                    "must not be set with format JSON; hint: JSON lines name their metrics already",
                );
            }
        }
        "TensorFlowEvent" => {
            let fsp = fsp.cloned().unwrap_or_default();
            expect_kind(&fsp, &["Directory"], &fsp_path, errs);
            expect_absolute(&fsp, &fsp_path, errs);
            if let Some(f) = fsp.format.as_deref().filter(|f| !f.is_empty()) {
                errs.add(
                    format!("{fsp_path}.format"),
                    format!("value {f:?} must not be set for TensorFlowEvent"),
                );
            }
        }
        "PrometheusMetric" => check_http_get(mc, errs),
        "Custom" => {
            if mc
                .collector
                .as_ref()
                .is_none_or(|c| c.custom_collector.is_none())
            {
                errs.required(
                    format!("{M}.collector.customCollector"),
                    "describe the collector container",
                );
            }
            if let Some(fsp) = fsp {
                expect_kind(fsp, &["File", "Directory"], &fsp_path, errs);
                expect_absolute(fsp, &fsp_path, errs);
            }
        }
        "StdOut" | "Push" => {}
        // Katib's older guides show `None`, which Katib itself now refuses: it became `Push`.
        "None" => errs.add(
            format!("{M}.collector.kind"),
            "value \"None\" is not supported (Katib refuses it too since it was renamed); \
             hint: write Push, its name now, for trials that report their own metrics",
        ),
        other => errs.not_one_of(format!("{M}.collector.kind"), other, COLLECTOR_KINDS),
    }
    if let Some(filter) = source.and_then(|s| s.filter.as_ref()) {
        for (i, f) in filter.metrics_format.iter().enumerate() {
            check_format(f, &format!("{M}.source.filter.metricsFormat[{i}]"), errs);
        }
    }
}

fn expect_kind(fsp: &FileSystemPath, allowed: &[&str], path: &str, errs: &mut Errors) {
    let kind = fsp.kind.as_deref().unwrap_or("");
    if !allowed.contains(&kind) {
        errs.not_one_of(format!("{path}.kind"), kind, allowed);
    }
}

fn expect_absolute(fsp: &FileSystemPath, path: &str, errs: &mut Errors) {
    let p = fsp.path.as_deref().unwrap_or("");
    if !p.starts_with('/') {
        errs.add(
            format!("{path}.path"),
            format!("value {p:?} must be an absolute path; hint: start it with '/'"),
        );
    } else if p.split('/').any(|part| part == "..") {
        // Locally the path is placed under the trial's log directory; `..` would lead out of
        // it (and in a pod it only obscures where the file is).
        errs.add(
            format!("{path}.path"),
            format!(
                "value {p:?} must not contain '..'; hint: write the directory it means, \
                 e.g. /var/log/katib/metrics.log"
            ),
        );
    }
}

fn check_http_get(mc: &MetricsCollectorSpec, errs: &mut Errors) {
    let path = format!("{M}.source.httpGet");
    let Some(http) = mc.source.as_ref().and_then(|s| s.http_get.as_ref()) else {
        errs.required(path, "");
        return;
    };
    let port = match http.get("port") {
        Some(Value::Number(n)) => n.as_i64(),
        Some(Value::String(s)) => s.parse::<i64>().ok(),
        _ => None,
    };
    if port.is_none_or(|p| !(1..=65535).contains(&p)) {
        let shown = http.get("port").map_or("none".into(), Value::to_string);
        errs.add(
            format!("{path}.port"),
            format!(
                "value {shown} must be a port number from 1 to 65535; hint: the port the \
                 trial serves Prometheus text on, e.g. 8080"
            ),
        );
    }
    let p = http.get("path").and_then(Value::as_str).unwrap_or("");
    if !p.starts_with('/') {
        errs.add(
            format!("{path}.path"),
            format!("value {p:?} must start with '/'; hint: e.g. /metrics"),
        );
    }
}

/// Group 1 is the metric name and group 2 its value, so two capture groups are the minimum.
/// Compiled the way the collector compiles it: Go's regexp takes a `{` that starts no repetition
/// as a literal (Katib's PyTorch example relies on it), Rust's does not. The pattern is shown
/// as written, between backticks: quoted as a string its every backslash would be doubled.
fn check_format(format: &str, path: &str, errs: &mut Errors) {
    let shown = format!("`{format}`");
    if let Some(why) = vernier_core::go_refusal(format) {
        errs.add(
            path,
            format!(
                "value {shown} is not a valid regular expression for Go's regexp, which \
                 Katib compiles it with: {why}"
            ),
        );
        return;
    }
    match regex::Regex::new(&vernier_core::go_regex(format)) {
        Err(e) => {
            let first = e.to_string();
            let first = first.lines().last().unwrap_or("").trim().to_string();
            errs.add(
                path,
                format!("value {shown} is not a valid regular expression: {first}"),
            );
        }
        Ok(re) if re.captures_len() < 3 => errs.add(
            path,
            format!(
                "value {shown} has {} capture group(s); hint: it needs two, the metric name then its value",
                re.captures_len() - 1
            ),
        ),
        Ok(_) => {}
    }
}
