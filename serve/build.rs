//! Compiles proto/bellows.proto (the daemon's own API) and proto/cuzk/v1/proving.proto (the
//! cuzk API Curio speaks, which bellows.proto imports) into Rust with protox (a protobuf
//! compiler in Rust, so no system `protoc` is needed) and tonic's code generator.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/bellows.proto");
    println!("cargo:rerun-if-changed=proto/cuzk/v1/proving.proto");
    let fds = protox::compile(["bellows.proto", "cuzk/v1/proving.proto"], ["proto"])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(fds)?;
    Ok(())
}
