"""A Katib Custom metrics collector as a user would write one: it follows the trial's metrics
file (its first argument), reports every `name=value` pair to the DBManager with
ReportObservationLog (the generated stubs of the kubeflow-katib package), and, on SIGTERM
(the trial has ended), reads what is left, reports it and exits."""
import signal

# First of all: SIGTERM may come while the imports below still load (a short trial).
ended = False


def on_term(signum, frame):
    global ended
    ended = True


signal.signal(signal.SIGTERM, on_term)

import os  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from datetime import datetime, timezone  # noqa: E402

from katib_stubs import grpc, pb, pb_grpc  # noqa: E402

path = sys.argv[1]
address = os.environ["VERNIER_DB_MANAGER_ADDRESS"]
katib_address = "{}:{}".format(
    os.environ["KATIB_DB_MANAGER_SERVICE_IP"], os.environ["KATIB_DB_MANAGER_SERVICE_PORT"]
)
assert katib_address == address, (katib_address, address)
trial = os.environ["KATIB_TRIAL_NAME"]
stub = pb_grpc.DBManagerStub(grpc.insecure_channel(address))

offset = 0
reported = 0
# Tells the test's trainer the imports are done: under a loaded CI machine they can outlast a
# short trial and the grace period after it.
os.makedirs(os.path.dirname(path), exist_ok=True)
open(path + ".ready", "w").close()


def stamp(i):
    t = datetime.fromtimestamp(time.time() + i * 1e-6, timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def report(last):
    """Reports the complete lines written since the last call (all of it when `last`)."""
    global offset, reported
    if not os.path.exists(path):
        return
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read()
    if not last:
        data = data[: data.rfind(b"\n") + 1]
    offset += len(data)
    pairs = re.findall(r"(\w+)=([-+.\deE]+)", data.decode())
    logs = [
        pb.MetricLog(time_stamp=stamp(i), metric=pb.Metric(name=n, value=v))
        for i, (n, v) in enumerate(pairs)
    ]
    if logs:
        stub.ReportObservationLog(
            pb.ReportObservationLogRequest(
                trial_name=trial, observation_log=pb.ObservationLog(metric_logs=logs)
            ),
            timeout=10,
        )
        reported += len(logs)


while True:
    last = ended
    report(last)
    if last:
        break
    time.sleep(0.1)
print(f"custom collector: reported {reported} value(s) of trial {trial}", flush=True)
