//! The SDK stays small: a backend plugin links this crate's dependencies and nothing of the
//! prover. A new dependency is a decision, made here as well as in Cargo.toml.

/// The dependencies this crate may have, each with why.
const ALLOWED: &[(&str, &str)] = &[
    ("blstrs", "the curve types the layout mirrors"),
    (
        "blst",
        "the host MSM (blst's Pippenger) and the layout's blst types",
    ),
    ("ff", "the NTT's roots of unity and the quotient's constant"),
    (
        "rayon",
        "the host MSM and the default quotient's pointwise step",
    ),
    ("abi_stable", "the plugin ABI"),
    ("thiserror", "the error enum"),
    ("serde", "the serialisable backend info"),
    ("inventory", "the registry built-in backends submit to"),
    (
        "libc",
        "page advice (madvise) for large host buffers and a backend's own pinned blocks",
    ),
    (
        "tracing",
        "optional (feature plugin-log): the plugin's log events, which it logs anyway",
    ),
    (
        "tracing-subscriber",
        "optional (feature plugin-log): the plugin's own subscriber, writing to standard error",
    ),
];

/// The names in the `[dependencies]` table of a manifest (one `name = …` or
/// `name.workspace = true` line each, as this workspace writes them).
fn dependencies(manifest: &str) -> Vec<String> {
    let mut in_table = false;
    let mut names = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_table = line == "[dependencies]";
        } else if in_table && !line.is_empty() && !line.starts_with('#') {
            let name = line.split(['=', '.']).next().unwrap_or("").trim();
            names.push(name.to_string());
        }
    }
    names
}

#[test]
fn only_the_allowed_dependencies() {
    let manifest = include_str!("../Cargo.toml");
    let deps = dependencies(manifest);
    assert!(
        deps.len() >= 5,
        "the [dependencies] table was not read: {deps:?}"
    );
    for d in &deps {
        assert!(
            ALLOWED.iter().any(|(a, _)| a == d),
            "bellows-backend-api depends on {d}: a backend plugin would link it. Keep prover \
             crates (bellows-core, bellpepper, sha2, …) out; add a backend's need to ALLOWED \
             with its reason"
        );
    }
}

#[test]
fn the_reader_sees_dependencies_and_nothing_else() {
    let toml = "[package]\nname = \"x\"\n\n[dependencies]\n# note\nblstrs.workspace = true\n\
                serde = { version = \"1\" }\n\n[dev-dependencies]\nrand = \"0.8\"\n";
    assert_eq!(dependencies(toml), ["blstrs", "serde"]);
}
