//! Vernier's vocabulary: search spaces, assignments, objectives, trial records, observations and
//! the `Suggester` seam. Pure data and pure functions; no I/O, no clock, no randomness.

mod cut;
mod early_stopping;
mod equal_bounds;
mod error;
mod go_time;
mod names;
mod nas;
mod objective;
mod observation;
pub mod pareto;
pub mod range;
mod regex_compat;
mod short;
mod space;
mod suggester;
mod tolerated_list;
mod trial;
mod value;

pub use cut::first_chars;
pub use early_stopping::{EarlyStopper, EarlyStoppingRequest, TrialProgress};
pub use equal_bounds::{EqualBounds, equal_bounds, nonblank_setting};
pub use error::CoreError;
pub use go_time::go_rfc3339_text;
pub use names::{ALGORITHM_NAMES, EARLY_STOPPING_NAMES, NAS_ALGORITHM_NAMES, POINT_SAMPLERS};
pub use nas::{NasConfig, NasOperation, NasParameter, NasParameterKind};
pub use objective::{
    Constraint, ConstraintOp, Direction, MetricStrategy, Objective, ObjectiveTerm,
};
pub use observation::{
    MAX_METRIC_NAME_BYTES, MAX_METRIC_VALUE_BYTES, MAX_TRIAL_NAME_BYTES, MetricReducer,
    MetricSummary, Observation, UNAVAILABLE,
};
pub use regex_compat::{KATIB_DEFAULT_METRICS_FORMAT, escape_literal_braces, go_refusal, go_regex};
pub use short::Short;
pub use space::{
    Distribution, Domain, MAX_LIST_VALUES, Parameter, SearchSpace, grid_point, integer_text, tidy,
    too_many_values,
};
pub use suggester::{Cancel, Proposal, SuggestRequest, Suggester, Suggestions, suggest_seed};
pub use tolerated_list::{ListOddity, ToleratedList, tolerated_list};
pub use trial::{TrialRecord, TrialState, WARM_START_SOURCE_LABEL};
pub use value::{Assignment, ParamValue, shown_pair};
