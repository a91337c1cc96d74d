//! Compiles Katib's `api.proto` and the health proto with the protoc binary vendored in the
//! `protoc-bin-vendored` crate, so building needs no system protobuf compiler; also writes the
//! descriptor set that server reflection serves.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut config = prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);
    let out_dir = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    tonic_prost_build::configure()
        .file_descriptor_set_path(out_dir.join("vernier_descriptor.bin"))
        .compile_with_config(
            config,
            &["proto/api.proto", "proto/health.proto"],
            &["proto"],
        )?;
    Ok(())
}
