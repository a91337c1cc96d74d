//! One module per subcommand.

pub mod benchmark;
pub mod benchmark_problems;
pub mod compare;
pub mod delete;
pub mod enqueue;
pub mod list;
pub mod report;
pub mod run;
pub mod validate;
