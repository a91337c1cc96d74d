"""Imports the generated api.v1.beta1 stubs shipped in the PyPI package kubeflow-katib, failing
loudly (exit 3) when they are missing, so an unprovisioned CI machine cannot pass silently."""
import sys

try:
    import grpc  # noqa: F401
    from kubeflow.katib import katib_api_pb2 as pb  # noqa: F401
    from kubeflow.katib import katib_api_pb2_grpc as pb_grpc  # noqa: F401
except ImportError as e:  # pragma: no cover - the failure path is the point
    print(
        f"missing Python dependency: {e}\n"
        "hint: pip install kubeflow-katib grpcio (the CI script .ci/run installs them)",
        file=sys.stderr,
    )
    sys.exit(3)
