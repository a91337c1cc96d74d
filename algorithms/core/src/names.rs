//! The suggestion algorithm names Vernier runs, in one place: spec validation accepts exactly
//! these and the algorithm registry builds exactly these, so the two cannot drift apart.

/// Every `spec.algorithm.algorithmName` Vernier can run.
pub const ALGORITHM_NAMES: &[&str] = &[
    "random",
    "grid",
    "sobol",
    "tpe",
    "multivariate-tpe",
    "bayesianoptimization",
    "cmaes",
    "hyperband",
    "asha",
    "nsga2",
    "pbt",
    "bohb",
    // Neural architecture search (spec.nasConfig).
    "darts",
    "enas",
];

/// The algorithms that propose points of the space with nothing tied to which trial is which
/// (no brackets, rungs or parents; NSGA-II's generation labels are not needed, an unlabelled
/// trial joining its first selection). Each runs a configuration of a finite space once: past
/// the last one, `vernier run` ends the experiment, and the gRPC service, serving Katib's
/// controller, answers with repeats.
pub const POINT_SAMPLERS: &[&str] = &[
    "random",
    "sobol",
    "tpe",
    "multivariate-tpe",
    "bayesianoptimization",
    "cmaes",
    "nsga2",
];

/// The algorithms that search `spec.nasConfig` instead of `spec.parameters`.
pub const NAS_ALGORITHM_NAMES: &[&str] = &["darts", "enas"];

/// Every `spec.earlyStopping.algorithmName` Vernier can run.
pub const EARLY_STOPPING_NAMES: &[&str] = &["medianstop", "asha"];
