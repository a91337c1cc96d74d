//! Vernier's Katib-compatible gRPC services: Suggestion (every built-in algorithm),
//! EarlyStopping (medianstop), DBManager (observation logs over the store), health and
//! reflection, all behind one [`router`] used by `vernier serve`, `vernier run` and the tests;
//! plus a client for external suggestion plugins.

mod db_manager;
mod early_stopping;
mod error;
mod first_values;
mod health;
pub mod plugin;
mod plugin_request;
mod remote_logs;
mod server;
mod size_refusal;
mod suggestion;
mod workers;

pub use db_manager::DbManagerService;
pub use early_stopping::{EarlyStoppingService, ManagedOutcome, ManagedTrials};
pub use error::ApiError;
pub use health::HealthService;
pub use server::{
    ApiRouter, DB_MANAGER_MAX_MESSAGE_BYTES, MAX_MESSAGE_BYTES, bind, db_manager_router, router,
    router_with_managed_trials, serve, server_builder,
};
pub use suggestion::{LABELS_SETTING, STATE_SETTING, SuggestionService};
pub use vernier_proto as proto;
