//! Compiles proto/bellows.proto into Rust with protox (a protobuf compiler in Rust, so no system
//! `protoc` is needed) and tonic's code generator.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/bellows.proto");
    let fds = protox::compile(["bellows.proto"], ["proto"])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(fds)?;
    Ok(())
}
