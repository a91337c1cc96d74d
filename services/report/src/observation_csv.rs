//! `vernier report NAME --format observations`: every value every trial reported, one CSV row
//! each (trial, metric, step, time, value), streamed from the store so an experiment with
//! millions of observations is written without holding them in memory. The learning curves a
//! dataframe plots, and the intermediate values an Optuna user reads per trial.

use super::ReportError;
use super::csv::push_record;
use std::collections::HashMap;
use std::io::Write;
use vernier_spec::conditions::rfc3339_micros;
use vernier_store::SqlStore;

/// The header of the observation CSV.
pub const HEADER: [&str; 5] = ["trial", "metric", "step", "time", "value"];

/// Numbers each trial's values of each metric 1, 2, 3, ... in the order they were reported:
/// the count Katib's early-stopping `start_step` compares with.
#[derive(Default)]
struct Steps {
    trial: String,
    seen: HashMap<String, u64>,
}

impl Steps {
    fn next(&mut self, trial: &str, metric: &str) -> u64 {
        if self.trial != trial {
            self.trial = trial.to_owned();
            self.seen.clear();
        }
        let n = self.seen.entry(metric.to_owned()).or_default();
        *n += 1;
        *n
    }
}

/// What was written: how many rows, and the experiment's phase (a report of a Failed
/// experiment exits as such, whatever its format).
#[derive(Debug)]
pub struct Written {
    pub rows: u64,
    pub phase: String,
}

/// Writes the experiment's observation log to `out`, header first, trials in creation order
/// and each trial's values in time order. Fails with [`ReportError::ExperimentNotFound`]
/// before writing anything for an unknown experiment.
pub async fn write(
    store: &SqlStore,
    name: &str,
    out: &mut (dyn Write + Send),
) -> Result<Written, ReportError> {
    let experiment = store
        .get_experiment(name)
        .await?
        .ok_or_else(|| ReportError::ExperimentNotFound(name.to_string()))?;
    let mut line = String::new();
    push_record(&mut line, &HEADER.map(String::from));
    out.write_all(line.as_bytes()).map_err(ReportError::Write)?;
    let mut steps = Steps::default();
    let mut rows = 0;
    let mut failed = None;
    store
        .for_each_experiment_observation(name, &mut |trial, time_us, metric, value| {
            if failed.is_some() {
                return;
            }
            line.clear();
            let step = steps.next(trial, metric);
            let record = [
                trial,
                metric,
                &step.to_string(),
                &rfc3339_micros(time_us),
                value,
            ];
            push_record(&mut line, &record.map(String::from));
            match out.write_all(line.as_bytes()) {
                Ok(()) => rows += 1,
                Err(e) => failed = Some(e),
            }
        })
        .await?;
    match failed {
        Some(e) => Err(ReportError::Write(e)),
        None => Ok(Written {
            rows,
            phase: experiment.status.phase,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::Steps;

    #[test]
    fn steps_count_per_trial_and_metric() {
        let mut s = Steps::default();
        let seen: Vec<u64> = [
            ("a", "loss"),
            ("a", "acc"),
            ("a", "loss"),
            ("b", "loss"),
            ("b", "loss"),
            ("b", "acc"),
        ]
        .iter()
        .map(|(t, m)| s.next(t, m))
        .collect();
        assert_eq!(seen, [1, 1, 2, 1, 2, 1]);
    }
}
