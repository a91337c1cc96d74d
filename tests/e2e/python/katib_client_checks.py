"""Calls `vernier serve` at argv[1] with the api.v1.beta1 stubs from the kubeflow-katib package
and checks the replies: GetSuggestions for every algorithm, INVALID_ARGUMENT for bad settings,
report and read back observation logs, and the health check. Prints one line per check."""
import sys

from katib_stubs import grpc, pb, pb_grpc

ADDR = sys.argv[1]
ALGORITHMS = sys.argv[2].split(",")

channel = grpc.insecure_channel(ADDR)
grpc.channel_ready_future(channel).result(timeout=20)
suggestion = pb_grpc.SuggestionStub(channel)
db = pb_grpc.DBManagerStub(channel)
early = pb_grpc.EarlyStoppingStub(channel)


def space():
    return [
        pb.ParameterSpec(name="lr", parameter_type=pb.DOUBLE,
                         feasible_space=pb.FeasibleSpace(min="0.01", max="0.05", step="0.01")),
        pb.ParameterSpec(name="epochs", parameter_type=pb.INT,
                         feasible_space=pb.FeasibleSpace(min="1", max="9")),
        pb.ParameterSpec(name="units", parameter_type=pb.INT,
                         feasible_space=pb.FeasibleSpace(min="8", max="64", step="8")),
        pb.ParameterSpec(name="opt", parameter_type=pb.CATEGORICAL,
                         feasible_space=pb.FeasibleSpace(list=["sgd", "adam"])),
    ]


def experiment(algorithm, settings):
    return pb.Experiment(
        name="interop",
        spec=pb.ExperimentSpec(
            parameter_specs=pb.ExperimentSpec.ParameterSpecs(parameters=space()),
            objective=pb.ObjectiveSpec(type=pb.MAXIMIZE, goal=0.99, objective_metric_name="acc"),
            algorithm=pb.AlgorithmSpec(
                algorithm_name=algorithm,
                algorithm_settings=[pb.AlgorithmSetting(name=k, value=v) for k, v in settings.items()],
            ),
            parallel_trial_count=3,
            max_trial_count=20,
        ),
    )


SETTINGS = {
    "hyperband": {"r_l": "9", "resource_name": "epochs", "eta": "3"},
    "bohb": {"r_l": "9", "resource_name": "epochs", "eta": "3", "random_state": "5"},
    "pbt": {"suggestion_trial_dir": "/var/log/katib/checkpoints/", "n_population": "5",
            "truncation_threshold": "0.2", "random_state": "5"},
}
failures = []

for algorithm in [a for a in ALGORITHMS if a not in ("darts", "enas")]:
    exp = experiment(algorithm, SETTINGS.get(algorithm, {"random_state": "5"}))
    reply = suggestion.GetSuggestions(
        pb.GetSuggestionsRequest(experiment=exp, current_request_number=2, total_request_number=2),
        timeout=60,
    )
    # Second request as Katib's controller makes it: all trials so far, with results.
    trials = []
    for i, a in enumerate(reply.parameter_assignments):
        values = {p.name: p.value for p in a.assignments}
        assert set(values) == {"lr", "epochs", "units", "opt"}, values
        assert 0.01 <= float(values["lr"]) <= 0.05 and values["opt"] in ("sgd", "adam"), values
        assert int(values["units"]) % 8 == 0, values
        trials.append(pb.Trial(
            name=a.trial_name or f"{algorithm}-t{i}",
            spec=pb.TrialSpec(parameter_assignments=pb.TrialSpec.ParameterAssignments(assignments=a.assignments)),
            status=pb.TrialStatus(
                condition=pb.TrialStatus.SUCCEEDED,
                start_time="2024-01-01T00:00:0%dZ" % i,
                completion_time="2024-01-01T00:01:0%dZ" % i,
                observation=pb.Observation(metrics=[pb.Metric(name="acc", value=str(0.5 + 0.1 * i))]),
            ),
        ))
    if reply.HasField("algorithm"):
        merged = {s.name: s.value for s in exp.spec.algorithm.algorithm_settings}
        merged.update({s.name: s.value for s in reply.algorithm.algorithm_settings})
        del exp.spec.algorithm.algorithm_settings[:]
        exp.spec.algorithm.algorithm_settings.extend(
            pb.AlgorithmSetting(name=k, value=v) for k, v in merged.items())
    again = suggestion.GetSuggestions(
        pb.GetSuggestionsRequest(experiment=exp, trials=trials, current_request_number=1, total_request_number=3),
        timeout=60,
    )
    if len(reply.parameter_assignments) != 2 or len(again.parameter_assignments) != 1:
        failures.append(f"{algorithm}: got {len(reply.parameter_assignments)} then {len(again.parameter_assignments)}")
    print(f"GetSuggestions {algorithm}: ok ({len(reply.parameter_assignments)} then {len(again.parameter_assignments)})")



def nas_experiment(algorithm, settings):
    """Katib's nas/ example shape: a graph config and two operations with their parameters."""
    def cat(name, values):
        return pb.ParameterSpec(name=name, parameter_type=pb.CATEGORICAL,
                                feasible_space=pb.FeasibleSpace(list=values))
    ops = [
        pb.Operation(operation_type="convolution", parameter_specs=pb.Operation.ParameterSpecs(
            parameters=[cat("filter_size", ["3", "5"]), cat("num_filter", ["32", "64"])])),
        pb.Operation(operation_type="reduction", parameter_specs=pb.Operation.ParameterSpecs(
            parameters=[cat("reduction_type", ["max_pooling", "avg_pooling"])])),
    ]
    return pb.Experiment(
        name="interop-" + algorithm,
        spec=pb.ExperimentSpec(
            objective=pb.ObjectiveSpec(type=pb.MAXIMIZE, goal=0.99,
                                       objective_metric_name="Validation-Accuracy"),
            algorithm=pb.AlgorithmSpec(
                algorithm_name=algorithm,
                algorithm_settings=[pb.AlgorithmSetting(name=k, value=v) for k, v in settings.items()],
            ),
            nas_config=pb.NasConfig(
                graph_config=pb.GraphConfig(num_layers=3, input_sizes=[32, 32, 3], output_sizes=[10]),
                operations=pb.NasConfig.Operations(operation=ops),
            ),
            parallel_trial_count=1,
            max_trial_count=3,
        ),
    )


NAS_ASSIGNMENTS = {"darts": {"algorithm-settings", "search-space", "num-layers"},
                   "enas": {"architecture", "nn_config"}}
for algorithm, names in NAS_ASSIGNMENTS.items():
    if algorithm not in ALGORITHMS:
        continue
    exp = nas_experiment(algorithm, {"num_epochs": "2"} if algorithm == "darts" else {})
    suggestion.ValidateAlgorithmSettings(pb.ValidateAlgorithmSettingsRequest(experiment=exp), timeout=20)
    reply = suggestion.GetSuggestions(
        pb.GetSuggestionsRequest(experiment=exp, current_request_number=1, total_request_number=1),
        timeout=60,
    )
    got = [{p.name for p in a.assignments} for a in reply.parameter_assignments]
    if got != [names]:
        failures.append(f"{algorithm}: wanted one trial with {sorted(names)}, got {got}")
    else:
        print(f"GetSuggestions {algorithm}: ok ({', '.join(sorted(names))})")

def expect_invalid(call, request, needle):
    try:
        call(request, timeout=20)
    except grpc.RpcError as e:
        if e.code() != grpc.StatusCode.INVALID_ARGUMENT or needle not in e.details():
            failures.append(f"wanted INVALID_ARGUMENT with {needle!r}, got {e.code()} {e.details()!r}")
        else:
            print(f"INVALID_ARGUMENT: {e.details().splitlines()[0]}")
        return
    failures.append(f"wanted INVALID_ARGUMENT with {needle!r}, the call succeeded")


validate = suggestion.ValidateAlgorithmSettings
expect_invalid(validate, pb.ValidateAlgorithmSettingsRequest(experiment=experiment("tpe", {"gamma": "1.5"})), '"1.5"')
expect_invalid(validate, pb.ValidateAlgorithmSettingsRequest(experiment=experiment("random", {"unknown_conf": "1"})), "unknown setting \"unknown_conf\" for algorithm random")
expect_invalid(validate, pb.ValidateAlgorithmSettingsRequest(experiment=experiment("unknown", {})), "unknown algorithm name \"unknown\"")
expect_invalid(validate, pb.ValidateAlgorithmSettingsRequest(experiment=experiment("bayesianoptimization", {"random_state": "-1"})), "random_state")
validate(pb.ValidateAlgorithmSettingsRequest(experiment=experiment("random", {"random_state": "10"})), timeout=20)
expect_invalid(early.ValidateEarlyStoppingSettings, pb.ValidateEarlyStoppingSettingsRequest(
    early_stopping=pb.EarlyStoppingSpec(algorithm_name="medianstop", algorithm_settings=[
        pb.EarlyStoppingSetting(name="min_trials_required", value="0")])), "min_trials_required must be greater than zero (>0)")

db.ReportObservationLog(pb.ReportObservationLogRequest(
    trial_name="py-trial",
    observation_log=pb.ObservationLog(metric_logs=[
        pb.MetricLog(time_stamp="2024-01-01T00:00:01Z", metric=pb.Metric(name="loss", value="0.9")),
        pb.MetricLog(time_stamp="2024-01-01T00:00:02Z", metric=pb.Metric(name="acc", value="0.4")),
        pb.MetricLog(time_stamp="2024-01-01T00:00:03Z", metric=pb.Metric(name="loss", value="0.3")),
    ])), timeout=20)
logs = db.GetObservationLog(pb.GetObservationLogRequest(trial_name="py-trial"), timeout=20).observation_log.metric_logs
loss = db.GetObservationLog(pb.GetObservationLogRequest(
    trial_name="py-trial", metric_name="loss", start_time="2024-01-01T00:00:02Z"), timeout=20).observation_log.metric_logs
if len(logs) != 3 or [(m.time_stamp, m.metric.value) for m in loss] != [("2024-01-01T00:00:03Z", "0.3")]:
    failures.append(f"observation logs read back wrong: {logs} / {loss}")
else:
    print("DBManager report/get: ok")
db.DeleteObservationLog(pb.DeleteObservationLogRequest(trial_name="py-trial"), timeout=20)
if db.GetObservationLog(pb.GetObservationLogRequest(trial_name="py-trial"), timeout=20).observation_log.metric_logs:
    failures.append("DeleteObservationLog left logs behind")

# grpc.health.v1: the package ships no health stub; the messages are tiny, so encode by hand.
check = channel.unary_unary("/grpc.health.v1.Health/Check",
                            request_serializer=lambda b: b, response_deserializer=lambda b: b)
status = check(b"", timeout=20)
if status != b"\x08\x01":
    failures.append(f"health: wanted SERVING (08 01), got {status!r}")
else:
    print("health: SERVING")

if failures:
    print("FAILURES:\n" + "\n".join(failures), file=sys.stderr)
    sys.exit(1)
