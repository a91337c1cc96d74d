//! End-to-end tests: the real `vernier` binary on real experiment files, trial processes and
//! SQLite databases. One test binary for the whole workspace.

// Test code: a panic with the failing value is the clearest report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod algorithms;
mod checkpoints;
mod collectors;
mod container;
mod dashboard;
mod distributed;
mod early_stopping;
mod extend;
mod harness;
mod hostile;
mod interrupt;
mod katib_client;
mod katib_controller;
mod katib_examples;
mod katib_interop;
mod lifecycle;
mod misuse;
mod nas;
mod reports;
mod sklearn_example;
mod spec_fuzz;
mod validation;
mod warm_start;
