//! End-to-end tests: the real `vernier` binary on real experiment files, trial processes and
//! SQLite databases. One test binary for the whole workspace.

// Test code: a panic with the failing value is the clearest report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod algorithms;
mod collectors;
mod dashboard;
mod distributed;
mod early_stopping;
mod harness;
mod interrupt;
mod katib_interop;
mod lifecycle;
mod reports;
mod spec_fuzz;
mod validation;
mod warm_start;
