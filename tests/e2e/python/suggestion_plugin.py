"""A small Katib suggestion plugin built on the kubeflow-katib stubs: proposes values of the
first parameter on a fixed ladder (0.1, 0.2, ...), one per requested trial, counting from the
trials it is sent.
Prints its port on stdout, logs each request to argv[1]. With argv[2] `short-once` its first
reply holds no assignment, as a plugin having a hiccup would; with `bad-later` every reply after
the first names a parameter the experiment does not have."""
import sys
from concurrent import futures

from katib_stubs import grpc, pb, pb_grpc

LOG = sys.argv[1]
SHORT_ONCE = sys.argv[2:] == ["short-once"]
BAD_LATER = sys.argv[2:] == ["bad-later"]


class Ladder(pb_grpc.SuggestionServicer):
    def GetSuggestions(self, request, context):
        spec = request.experiment.spec
        names = [p.name for p in spec.parameter_specs.parameters]
        done = len(request.trials)
        with open(LOG, "a") as f:
            f.write(f"{request.experiment.name} trials={done} current={request.current_request_number} "
                    f"total={request.total_request_number} names={','.join(names)}\n")
        out = []
        global SHORT_ONCE
        if SHORT_ONCE:
            SHORT_ONCE = False
            return pb.GetSuggestionsReply(parameter_assignments=out)
        name = "bogus" if BAD_LATER and done > 0 else names[0]
        for k in range(request.current_request_number):
            value = round(0.1 * (done + k + 1), 10)
            out.append(pb.GetSuggestionsReply.ParameterAssignments(
                assignments=[pb.ParameterAssignment(name=name, value=str(value))]))
        return pb.GetSuggestionsReply(parameter_assignments=out)

    def ValidateAlgorithmSettings(self, request, context):
        for s in request.experiment.spec.algorithm.algorithm_settings:
            if s.name != "random_state":
                context.set_code(grpc.StatusCode.INVALID_ARGUMENT)
                context.set_details(f"unknown setting {s.name} for algorithm random")
                return pb.ValidateAlgorithmSettingsReply()
        return pb.ValidateAlgorithmSettingsReply()


server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
pb_grpc.add_SuggestionServicer_to_server(Ladder(), server)
port = server.add_insecure_port("127.0.0.1:0")
server.start()
print(port, flush=True)
server.wait_for_termination()
