//! `grpc.health.v1.Health/Check`: SERVING only while the store answers a ping, for the whole
//! server (empty name) and for each service it hosts, including the name Katib's suggestion
//! probes ask for (`manager.v1beta1.Suggestion`). Unknown names get NOT_FOUND, as in the
//! standard health service.

use tonic::{Request, Response, Status};
use vernier_proto::health::{
    HealthCheckRequest, HealthCheckResponse, health_check_response::ServingStatus,
    health_server::Health,
};
use vernier_store::SqlStore;

/// Service names this server answers health checks for.
pub const SERVICE_NAMES: &[&str] = &[
    "",
    "grpc.health.v1.Health",
    "api.v1.beta1.Suggestion",
    "api.v1.beta1.EarlyStopping",
    "api.v1.beta1.DBManager",
    "manager.v1beta1.Suggestion",
];

#[derive(Debug, Clone)]
pub struct HealthService {
    store: SqlStore,
}

impl HealthService {
    pub fn new(store: SqlStore) -> Self {
        HealthService { store }
    }
}

#[tonic::async_trait]
impl Health for HealthService {
    async fn check(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        let service = &request.get_ref().service;
        if !SERVICE_NAMES.contains(&service.as_str()) {
            return Err(Status::not_found(format!(
                "unknown service {service:?}\nhint: ask for \"\" or one of {}",
                SERVICE_NAMES[1..].join(", ")
            )));
        }
        let status = match self.store.ping().await {
            Ok(()) => ServingStatus::Serving,
            Err(_) => ServingStatus::NotServing,
        };
        Ok(Response::new(HealthCheckResponse {
            status: status as i32,
        }))
    }
}
