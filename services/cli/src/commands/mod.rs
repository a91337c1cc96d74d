//! One module per subcommand.

pub mod benchmark;
pub mod compare;
pub mod delete;
pub mod list;
pub mod operator;
pub mod report;
pub mod run;
pub mod validate;
