//! The names the operator writes on objects (finalizer, annotations), shared by the
//! reconcilers and the cluster report so that none of them imports another for a string.

/// Katib's finalizer name: the trial's observation logs are deleted before it goes.
pub const FINALIZER: &str = "clean-metrics-in-db";

/// Finalizer on each trial's job: the job stays readable until its trial has been judged on
/// how it ended, however soon something deletes it (`ttlSecondsAfterFinished: 0`).
pub const JOB_FINALIZER: &str = "vernier.kubeflow.org/trial-judged";

/// Annotation on each Trial: its position in the experiment's sequence.
pub const SEQ_ANNOTATION: &str = "vernier/trial-seq";

/// Annotation on a Trial whose template could not be rendered: why.
pub const RENDER_ERROR_ANNOTATION: &str = "vernier/render-error";

/// Annotation on the Experiment holding the algorithm's opaque state between calls.
pub const ALGORITHM_STATE_ANNOTATION: &str = "vernier/algorithm-state";

/// Annotation on a Trial an early-stopping rule ranking trials by step (ASHA) stopped: the
/// step it stopped it at, so an operator started later is shown its values up to it only.
pub const STOP_STEP_ANNOTATION: &str = "vernier/stop-step";
