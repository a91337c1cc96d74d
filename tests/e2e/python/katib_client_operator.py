"""Drives `vernier operator` the way a Katib user's notebook drives Katib: with the
kubeflow-katib SDK's KatibClient, against a Kubernetes API server (the test double).

  katib_client_operator.py crds KUBE_URL CRD_DIR   installs the Experiment and Trial CRDs
  katib_client_operator.py tune KUBE_URL GRPC_ADDR  tunes a function and checks every answer
  katib_client_operator.py plugin KUBE_URL          tunes with algorithm my-ladder, which only
                                                    a suggestion plugin (suggestion_plugin.py) serves

Prints one line per check and exits non-zero on the first that fails; exits 3 when the SDK
cannot be imported."""
import sys

try:
    import yaml
    from kubernetes import client
    import kubeflow.katib as katib
    from kubeflow.katib import KatibClient
except ImportError as e:  # pragma: no cover - the failure path is the point
    print(f"missing Python dependency: {e}\nhint: pip install kubeflow-katib 'kubernetes<36'",
          file=sys.stderr)
    sys.exit(3)

NAME = "tune-quadratic"


def configuration(url):
    cfg = client.Configuration()
    cfg.host = url
    return cfg


def install_crds(url, crd_dir):
    api = client.ApiextensionsV1Api(client.ApiClient(configuration(url)))
    for f in ("experiments.yaml", "trials.yaml"):
        with open(f"{crd_dir}/{f}") as fh:
            api.create_custom_resource_definition(body=yaml.safe_load(fh))
        print(f"ok: created the CRD of {f}")


def objective(parameters):
    import time
    lr = float(parameters["lr"])
    for _ in range(2):
        print(f"result={1 - abs(lr - 0.03) * 10:.4f}")
        time.sleep(0.1)


def objective_push(parameters):
    import os
    import kubeflow.katib as katib
    import kubeflow.katib.utils.utils as sdk_utils
    # The SDK reads the pod's service-account namespace file; the double's pods are local
    # processes without that mount.
    sdk_utils.get_current_k8s_namespace = lambda: "default"
    lr = float(parameters["lr"])
    katib.report_metrics({"result": 1 - abs(lr - 0.03) * 10},
                         db_manager_address=os.environ["VERNIER_TEST_DB_MANAGER"])


def expected(lr):
    return f"{1 - abs(float(lr) - 0.03) * 10:.4f}"


def field(obj, name):
    """A field of an SDK answer, which mixes dicts and generated models."""
    return obj[name] if isinstance(obj, dict) else getattr(obj, name)


def check(what, ok, detail=""):
    if not ok:
        print(f"FAILED: {what}: {detail}")
        sys.exit(1)
    print(f"ok: {what}")


def tune_and_wait(kc, name, function, trials, lr_max=0.05, **extra):
    """Tunes `function` over lr in [0.01, lr_max], `result` maximised, and waits for the end."""
    kc.tune(
        name=name,
        objective=function,
        parameters={"lr": katib.search.double(min=0.01, max=lr_max)},
        objective_metric_name="result",
        max_trial_count=trials,
        parallel_trial_count=2,
        base_image="python:3.11",
        **extra,
    )
    kc.wait_for_experiment_condition(name=name, timeout=240, polling_interval=1)


def tune(url, grpc_addr):
    kc = KatibClient(client_configuration=configuration(url), namespace="default")
    tune_and_wait(kc, NAME, objective, 4)
    check("is_experiment_succeeded", kc.is_experiment_succeeded(NAME))
    conditions = kc.get_experiment_conditions(NAME)
    check("the Succeeded condition is ExperimentMaxTrialsReached",
          conditions[-1].reason == "ExperimentMaxTrialsReached", conditions)

    trials = kc.list_trials(NAME)
    check("list_trials gives the 4 trials", len(trials) == 4, [t.metadata.name for t in trials])
    details = kc.get_success_trial_details(NAME)
    check("get_success_trial_details gives 4", len(details) == 4, details)
    results = {}
    for d in details:
        lr = field(d["parameter_assignments"][0], "value")
        result = next(m for m in d["metrics"] if field(m, "name") == "result")
        check(f"{d['name']} observed what its objective printed for lr {lr}",
              field(result, "latest") == expected(lr), result)
        results[d["name"]] = (float(field(result, "latest")), lr)

    best = kc.get_optimal_hyperparameters(NAME)
    top = max(results, key=lambda n: results[n][0])
    check("get_optimal_hyperparameters names the best trial",
          field(best, "best_trial_name") == top, (best, results))
    assignment = field(best, "parameter_assignments")[0]
    check("its assignment is that trial's", field(assignment, "value") == results[top][1], best)

    logs = kc.get_trial_metrics(top, db_manager_address=grpc_addr)
    values = [m.metric.value for m in logs if m.metric.name == "result"]
    check("get_trial_metrics reads both epochs from the DBManager",
          values == [expected(results[top][1])] * 2, logs)

    kc.delete_experiment(NAME)
    names = [e.metadata.name for e in kc.list_experiments()]
    check("delete_experiment removes it", NAME not in names, names)

    # The Push collector: the function reports with katib.report_metrics, whose trial name
    # comes from KATIB_TRIAL_NAME in the pod, as Katib's webhook sets it.
    tune_and_wait(kc, "tune-push", objective_push, 2,
                  env_per_trial={"VERNIER_TEST_DB_MANAGER": grpc_addr},
                  metrics_collector_config={"kind": "Push"})
    check("the Push experiment succeeded", kc.is_experiment_succeeded("tune-push"))
    for d in kc.get_success_trial_details("tune-push"):
        lr = float(field(d["parameter_assignments"][0], "value"))
        result = next(m for m in d["metrics"] if field(m, "name") == "result")
        check(f"{d['name']} observed what it pushed for lr {lr}",
              abs(float(field(result, "latest")) - (1 - abs(lr - 0.03) * 10)) < 1e-9, result)


def plugin(url):
    """An algorithm only a suggestion plugin serves, as a katib-config entry would serve it."""
    kc = KatibClient(client_configuration=configuration(url), namespace="default")
    tune_and_wait(kc, "plugged", objective, 3, lr_max=1.0, algorithm_name="my-ladder")
    check("the plugged experiment succeeded", kc.is_experiment_succeeded("plugged"))
    lrs = sorted(field(d["parameter_assignments"][0], "value")
                 for d in kc.get_success_trial_details("plugged"))
    check("its trials are the plugin's proposals", lrs == ["0.1", "0.2", "0.3"], lrs)


if __name__ == "__main__":
    if sys.argv[1] == "crds":
        install_crds(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "plugin":
        plugin(sys.argv[2])
    else:
        tune(sys.argv[2], sys.argv[3])
