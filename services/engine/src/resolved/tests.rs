//! The resolved experiment's defaults and collector kinds, and the experiment other tests
//! of this crate build on.

#![allow(clippy::unwrap_used)]
use super::*;

/// An experiment minimizing `loss` over `x` in [0, 1], with `extra` YAML lines appended to its
/// spec (an `  algorithm:` block replaces the default random one).
pub(crate) fn experiment(extra: &str) -> ResolvedExperiment {
    let algorithm = if extra.contains("  algorithm:") {
        ""
    } else {
        "  algorithm:\n    algorithmName: random\n"
    };
    let yaml = format!(
        r#"apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata:
  name: e
spec:
  objective:
    type: minimize
    objectiveMetricName: loss
{algorithm}  maxTrialCount: 4
  parameters:
    - name: x
      parameterType: double
      feasibleSpace: {{min: "0", max: "1"}}
  trialTemplate:
    primaryContainerName: main
    trialParameters:
      - name: x
        reference: x
    trialSpec:
      apiVersion: batch/v1
      kind: Job
      spec:
        template:
          spec:
            containers:
              - name: main
                image: none
                command: ["train", "${{trialParameters.x}}"]
{extra}
"#
    );
    let spec = vernier_spec::parse_experiment(&yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    ResolvedExperiment::new(spec).unwrap()
}

#[test]
fn defaults_fill_what_the_spec_leaves_out() {
    let exp = experiment("");
    assert_eq!(exp.name, "e");
    assert_eq!(exp.algorithm, "random");
    assert_eq!(
        exp.limits,
        Limits {
            parallel: 3,
            max_trials: Some(4),
            max_failed: None
        }
    );
    assert_eq!(exp.collector, Collector::StdOut);
    assert_eq!(exp.early_stopping, None);
    assert_eq!(exp.resume_policy, ResumePolicy::Never);
    assert_eq!(exp.objective.metric, "loss");
    assert_eq!(exp.space.len(), 1);
}

#[test]
fn collector_kinds_resolve_with_katib_defaults() {
    let c = |yaml: &str| experiment(&format!("  metricsCollectorSpec:\n{yaml}")).collector;
    let cases: Vec<(&str, Collector)> = vec![
        ("    collector: {kind: StdOut}", Collector::StdOut),
        (
            "    collector: {kind: File}",
            Collector::File {
                path: known::DEFAULT_METRICS_FILE.into(),
                json: false,
            },
        ),
        (
            "    collector: {kind: File}\n    source: {fileSystemPath: {path: /m.json, kind: File, format: JSON}}",
            Collector::File {
                path: "/m.json".into(),
                json: true,
            },
        ),
        (
            "    collector: {kind: TensorFlowEvent}",
            Collector::TensorFlowEvent {
                dir: known::DEFAULT_TFEVENT_DIR.into(),
            },
        ),
        (
            "    collector: {kind: PrometheusMetric}",
            Collector::Prometheus {
                port: PrometheusPort::Number(8080),
                path: "/metrics".into(),
            },
        ),
        (
            "    collector: {kind: PrometheusMetric}\n    source: {httpGet: {port: \"9100\", path: /m}}",
            Collector::Prometheus {
                port: PrometheusPort::Number(9100),
                path: "/m".into(),
            },
        ),
        ("    collector: {kind: Push}", Collector::Push),
    ];
    for (yaml, want) in cases {
        let got = c(yaml);
        assert_eq!(got, want, "{yaml}");
        assert_eq!(got.kind(), want.kind());
    }
    // Validation refuses a named port; a spec that skipped it still resolves, marked unusable.
    let named: MetricsCollectorSpec = serde_json::from_value(serde_json::json!({
        "collector": {"kind": "PrometheusMetric"},
        "source": {"httpGet": {"port": "metrics"}}
    }))
    .unwrap();
    assert_eq!(
        Collector::of(Some(&named)),
        Collector::Prometheus {
            port: PrometheusPort::Unusable("\"metrics\"".into()),
            path: "/metrics".into(),
        }
    );
    assert_eq!(
        Collector::Custom {
            container: None,
            path: None
        }
        .kind(),
        "Custom"
    );
    assert_eq!(Collector::Other("None".into()).kind(), "None");
}

#[test]
fn a_custom_collector_keeps_its_container_and_whether_it_shares_a_file_or_a_directory() {
    let container = serde_json::json!({"name": "my-collector", "image": "c:1"});
    let custom = |source: serde_json::Value| {
        let spec: MetricsCollectorSpec = serde_json::from_value(serde_json::json!({
            "collector": {"kind": "Custom", "customCollector": container},
            "source": source,
        }))
        .unwrap();
        Collector::of(Some(&spec))
    };
    let shared = |path: &str, directory: bool| {
        Some(SharedPath {
            path: path.into(),
            directory,
        })
    };
    let cases = [
        (
            serde_json::json!({"fileSystemPath": {"path": "/katib/mnist.log", "kind": "File"}}),
            shared("/katib/mnist.log", false),
        ),
        (
            serde_json::json!({"fileSystemPath": {"path": "/katib/out/", "kind": "Directory"}}),
            shared("/katib/out/", true),
        ),
        (
            serde_json::json!({"fileSystemPath": {"path": "/katib/m.log"}}),
            shared("/katib/m.log", false),
        ),
        (
            serde_json::json!({"fileSystemPath": {"path": "", "kind": "Directory"}}),
            None,
        ),
        (serde_json::json!({}), None),
    ];
    for (source, path) in cases {
        let spec_path = path.as_ref().map(|p| p.path.clone());
        let got = custom(source.clone());
        let want = Collector::Custom {
            container: Some(container.clone()),
            path,
        };
        assert_eq!(got, want, "{source}");
        assert_eq!(got.spec_path().map(str::to_string), spec_path, "{source}");
    }
}

#[test]
fn algorithm_early_stopping_and_resume_settings_are_kept() {
    let exp = experiment(
        "  algorithm:\n    algorithmName: tpe\n    algorithmSettings: [{name: n_startup_trials, value: '3'}]\n  earlyStopping:\n    algorithmName: medianstop\n    algorithmSettings: [{name: start_step, value: '2'}]\n  resumePolicy: LongRunning\n  parallelTrialCount: 2",
    );
    assert_eq!(exp.algorithm, "tpe");
    assert_eq!(
        exp.settings,
        vec![("n_startup_trials".to_string(), "3".to_string())]
    );
    assert_eq!(
        exp.early_stopping,
        Some(EarlyStopping {
            algorithm: "medianstop".into(),
            settings: vec![("start_step".into(), "2".into())],
        })
    );
    assert_eq!(exp.resume_policy, ResumePolicy::LongRunning);
    assert_eq!(exp.limits.parallel, 2);
    assert_eq!(exp.setting_seed(), None);
    let seeded = experiment(
        "  algorithm:\n    algorithmName: random\n    algorithmSettings: [{name: random_state, value: '42'}]",
    );
    assert_eq!(seeded.setting_seed(), Some(42));
}
