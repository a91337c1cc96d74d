//! Katib's `api.v1.beta1` gRPC protocol (Suggestion, EarlyStopping, DBManager) and the
//! `grpc.health.v1` health check, generated from `proto/*.proto`, plus the conversions between
//! these wire messages and Vernier's core types.

pub mod convert;
mod error;
pub mod time;

pub use error::ProtoError;

/// The generated `api.v1.beta1` messages, clients and servers.
#[allow(missing_debug_implementations, clippy::all)]
pub mod api {
    tonic::include_proto!("api.v1.beta1");
}

/// The generated `grpc.health.v1` messages, client and server.
#[allow(missing_debug_implementations, clippy::all)]
pub mod health {
    tonic::include_proto!("grpc.health.v1");
}

/// The encoded descriptor set of both protos, for server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("vernier_descriptor");
