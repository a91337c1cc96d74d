//! One module per subcommand.

pub mod benchmark;
pub mod compare;
pub mod delete;
pub mod list;
pub mod plugins;
pub mod push;
pub mod report;
pub mod run;
pub mod serve;
pub mod validate;
