//! Condition mechanics live with the Katib types in `vernier_spec::conditions`, shared with the
//! operator; re-exported here so the driver and reports keep their import paths.

pub use vernier_spec::conditions::*;
