//! `vernier report NAME --format csv`: one row per trial in creation order, one column per
//! parameter, per metric (its metricStrategy value) and per trial label, for spreadsheets and
//! dataframes.
//! Quoting follows RFC 4180; written by hand because the format needs nothing more.

use super::ExperimentReport;
use super::analysis::duration_s;
use vernier_spec::conditions::rfc3339;
use vernier_spec::status;

/// The CSV text, header first, each record ending with `\n`.
pub fn render(r: &ExperimentReport) -> String {
    let params = r.parameter_names();
    let metrics = r.objective.metric_names();
    let mut out = String::new();
    let mut header: Vec<String> = status::CSV_TRIAL_COLUMNS
        .iter()
        .map(|s| s.to_string())
        .collect();
    header.extend(params.iter().map(|p| status::csv_parameter_column(p)));
    header.extend(
        metrics
            .iter()
            .map(|m| status::csv_metric_column(m, &params)),
    );
    // Only experiments that use the extensions get their columns, so Katib-shaped exports
    // keep their shape.
    let multi = r.objective.is_multi();
    let constrained = !r.objective.constraints.is_empty();
    let [front, feasible, times @ ..] = status::CSV_TAIL_COLUMNS;
    if multi {
        header.push(front.to_string());
    }
    if constrained {
        header.push(feasible.to_string());
    }
    header.extend(times.iter().map(|s| s.to_string()));
    let labels = label_keys(r);
    let label_columns: Vec<String> = labels
        .iter()
        .map(|k| match header.iter().any(|h| h == k) {
            true => format!("{k} (label)"),
            false => k.to_string(),
        })
        .collect();
    header.extend(label_columns);
    push_record(&mut out, &header);
    for (i, t) in r.trials.iter().enumerate() {
        let mut rec = vec![
            t.row.name.clone(),
            (i + 1).to_string(),
            t.row.state.as_str().to_string(),
            (Some(i) == r.best).to_string(),
        ];
        for p in &params {
            rec.push(r.assignment(t, p).unwrap_or_default().to_string());
        }
        for m in &metrics {
            rec.push(r.metric_text(t, m));
        }
        if multi {
            rec.push(r.front.contains(&i).to_string());
        }
        if constrained {
            rec.push(r.is_feasible(t).to_string());
        }
        rec.push(t.row.started_us.map(rfc3339).unwrap_or_default());
        rec.push(t.row.completed_us.map(rfc3339).unwrap_or_default());
        rec.push(
            duration_s(&t.row)
                .map(|d| d.to_string())
                .unwrap_or_default(),
        );
        for k in &labels {
            rec.push(t.row.labels.get(*k).cloned().unwrap_or_default());
        }
        push_record(&mut out, &rec);
    }
    out
}

/// Every label key some trial carries, sorted: the algorithms' bookkeeping (a Hyperband
/// bracket and rung, an ASHA or PBT parent, an NSGA-II generation, a warm start's source),
/// which a dataframe groups by. Last, so a search without labels keeps Katib's shape.
fn label_keys(r: &ExperimentReport) -> Vec<&str> {
    let keys: std::collections::BTreeSet<&str> = r
        .trials
        .iter()
        .flat_map(|t| t.row.labels.keys().map(String::as_str))
        .collect();
    keys.into_iter().collect()
}

pub(crate) fn push_record(out: &mut String, fields: &[String]) {
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        // Leading or trailing spaces are quoted too: readers (spreadsheets, Vernier's own
        // warm start) may trim them from unquoted fields.
        if f.contains([',', '"', '\n', '\r']) || f.trim() != f {
            out.push('"');
            out.push_str(&f.replace('"', "\"\""));
            out.push('"');
        } else {
            out.push_str(f);
        }
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::push_record;

    #[test]
    fn fields_a_reader_could_change_are_quoted() {
        let mut out = String::new();
        let fields = [" adam", "a,b", "say \"hi\"", "plain", "tail "].map(String::from);
        push_record(&mut out, &fields);
        assert_eq!(
            out,
            "\" adam\",\"a,b\",\"say \"\"hi\"\"\",plain,\"tail \"\n"
        );
    }
}
