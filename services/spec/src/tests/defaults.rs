//! Katib's defaults, as filled in by `parse_experiment`.

use super::{RANDOM, TFJOB, mutated, parse_ok, set};
use serde_json::json;

#[test]
fn job_defaults_are_applied() {
    let text = mutated(RANDOM, |v| {
        v["spec"]
            .as_object_mut()
            .unwrap()
            .remove("parallelTrialCount");
    });
    let exp = parse_ok(&text);
    let s = &exp.spec;
    assert_eq!(s.parallel_trial_count, Some(3));
    assert_eq!(s.resume_policy.as_deref(), Some("Never"));
    let strategies: Vec<(&str, &str)> = s
        .objective
        .as_ref()
        .unwrap()
        .metric_strategies
        .iter()
        .map(|m| (m.name.as_str(), m.value.as_str()))
        .collect();
    assert_eq!(strategies, vec![("loss", "min"), ("accuracy", "min")]);
    let tt = s.trial_template.as_ref().unwrap();
    assert_eq!(
        tt.success_condition.as_deref(),
        Some(r#"status.conditions.#(type=="Complete")#|#(status=="True")#"#)
    );
    assert_eq!(
        tt.failure_condition.as_deref(),
        Some(r#"status.conditions.#(type=="Failed")#|#(status=="True")#"#)
    );
    assert!(tt.primary_pod_labels.is_none());
    let mc = s.metrics_collector_spec.as_ref().unwrap();
    assert_eq!(
        mc.collector.as_ref().unwrap().kind.as_deref(),
        Some("StdOut")
    );
    for p in &s.parameters {
        assert_eq!(
            p.feasible_space.as_ref().unwrap().distribution.as_deref(),
            Some("uniform")
        );
    }
}

#[test]
fn kubeflow_job_defaults_and_explicit_values_win() {
    let exp = parse_ok(TFJOB);
    let tt = exp.spec.trial_template.as_ref().unwrap();
    assert_eq!(
        tt.success_condition.as_deref(),
        Some(r#"status.conditions.#(type=="Succeeded")#|#(status=="True")#"#)
    );
    assert_eq!(
        tt.primary_pod_labels.as_ref().unwrap()["training.kubeflow.org/job-role"],
        "master"
    );
    let fsp = exp.spec.metrics_collector_spec.as_ref().unwrap();
    let fsp = fsp
        .source
        .as_ref()
        .unwrap()
        .file_system_path
        .as_ref()
        .unwrap();
    assert_eq!(fsp.path.as_deref(), Some("/mnist-with-summaries-logs/test"));
    assert_eq!(exp.spec.parallel_trial_count, Some(2));
    // The maximise objective's strategy follows its type.
    assert_eq!(
        exp.spec.objective.as_ref().unwrap().metric_strategies[0].value,
        "max"
    );
}

/// Katib's `KubeflowJobKinds` get the training operator's conditions and the master label;
/// any other kind gets nothing filled in.
#[test]
fn conditions_are_filled_in_for_katibs_kubeflow_job_kinds_only() {
    const SUCCEEDED: &str = r#"status.conditions.#(type=="Succeeded")#|#(status=="True")#"#;
    const COMPLETE: &str = r#"status.conditions.#(type=="Complete")#|#(status=="True")#"#;
    let cases: &[(&str, Option<&str>)] = &[
        ("TFJob", Some(SUCCEEDED)),
        ("PyTorchJob", Some(SUCCEEDED)),
        ("XGBoostJob", Some(SUCCEEDED)),
        ("MXJob", Some(SUCCEEDED)),
        ("MPIJob", Some(SUCCEEDED)),
        ("Job", Some(COMPLETE)),
        ("PaddleJob", None),
        ("Workflow", None),
    ];
    for (kind, success) in cases {
        let mut exp: crate::Experiment = yaml_serde::from_str(RANDOM).unwrap();
        let tt = exp.spec.trial_template.as_mut().unwrap();
        tt.success_condition = None;
        tt.failure_condition = None;
        tt.trial_spec.as_mut().unwrap()["kind"] = json!(kind);
        crate::defaults::apply_defaults(&mut exp);
        let tt = exp.spec.trial_template.as_ref().unwrap();
        assert_eq!(tt.success_condition.as_deref(), *success, "{kind}");
        assert_eq!(tt.failure_condition.is_some(), success.is_some(), "{kind}");
        let master = tt
            .primary_pod_labels
            .as_ref()
            .and_then(|l| l.get("training.kubeflow.org/job-role"));
        let kubeflow = !matches!(*kind, "Job" | "PaddleJob" | "Workflow");
        assert_eq!(
            master.map(String::as_str),
            kubeflow.then_some("master"),
            "{kind}"
        );
    }
}

#[test]
fn train_job_gets_jobset_labels() {
    let text = mutated(RANDOM, |v| {
        set(v, "/spec/trialTemplate/trialSpec/kind", json!("TrainJob"));
        set(
            v,
            "/spec/trialTemplate/trialSpec/apiVersion",
            json!("trainer.kubeflow.org/v1alpha1"),
        );
    });
    let exp = parse_ok(&text);
    let labels = exp.spec.trial_template.unwrap().primary_pod_labels.unwrap();
    assert_eq!(labels["jobset.sigs.k8s.io/replicatedjob-name"], "node");
    assert_eq!(labels["batch.kubernetes.io/job-completion-index"], "0");
}

#[test]
fn collector_source_defaults() {
    let file = mutated(RANDOM, |v| {
        set(
            v,
            "/spec/metricsCollectorSpec",
            json!({"collector": {"kind": "File"}}),
        );
    });
    let exp = parse_ok(&file);
    let mc = exp.spec.metrics_collector_spec.unwrap();
    let fsp = mc.source.unwrap().file_system_path.unwrap();
    assert_eq!(fsp.kind.as_deref(), Some("File"));
    assert_eq!(fsp.path.as_deref(), Some("/var/log/katib/metrics.log"));
    assert_eq!(fsp.format.as_deref(), Some("TEXT"));

    let prom = mutated(RANDOM, |v| {
        set(
            v,
            "/spec/metricsCollectorSpec",
            json!({"collector": {"kind": "PrometheusMetric"}}),
        );
    });
    let exp = parse_ok(&prom);
    let http = exp
        .spec
        .metrics_collector_spec
        .unwrap()
        .source
        .unwrap()
        .http_get
        .unwrap();
    assert_eq!(http, json!({"path": "/metrics", "port": 8080}));

    let tf = mutated(RANDOM, |v| {
        set(
            v,
            "/spec/metricsCollectorSpec",
            json!({"collector": {"kind": "TensorFlowEvent"}}),
        );
    });
    let exp = parse_ok(&tf);
    let fsp = exp
        .spec
        .metrics_collector_spec
        .unwrap()
        .source
        .unwrap()
        .file_system_path
        .unwrap();
    assert_eq!(fsp.kind.as_deref(), Some("Directory"));
    assert_eq!(fsp.path.as_deref(), Some("/var/log/katib/tfevent/"));
}

#[test]
fn explicit_strategy_is_kept() {
    let text = mutated(RANDOM, |v| {
        set(
            v,
            "/spec/objective/metricStrategies",
            json!([{"name": "accuracy", "value": "latest"}]),
        );
    });
    let exp = parse_ok(&text);
    let obj = exp.objective().unwrap();
    assert_eq!(
        obj.strategy_for("accuracy"),
        Some(vernier_core::MetricStrategy::Latest)
    );
    assert_eq!(
        obj.strategy_for("loss"),
        Some(vernier_core::MetricStrategy::Min)
    );
}
