//! One module per subcommand, so `main.rs` only parses the command line and dispatches, and each
//! command reads as one file.

pub mod benchmark;
pub mod collect;
pub mod compare;
pub mod completions;
pub mod dashboard;
pub mod delete;
pub mod enqueue;
pub mod list;
pub mod operator;
pub mod plugins;
pub mod push;
pub mod report;
pub mod run;
pub mod serve;
pub mod validate;
