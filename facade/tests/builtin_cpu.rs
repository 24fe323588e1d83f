//! A program that depends on `bellows` alone finds the CPU backend by name: this test names
//! neither `bellows_cpu` nor `bellows::cpu`, only the registry.

#![cfg(feature = "cpu")]

use bellows::{registry, BackendConfig};

#[test]
fn the_cpu_backend_is_linked_and_registered() {
    let names: Vec<&str> = registry::builtin_backends()
        .iter()
        .map(|b| b.name)
        .collect();
    assert_eq!(names, ["cpu"]);
    let b = bellows::backend("cpu").unwrap();
    assert_eq!(b.info().name, "cpu");
    let b = registry::resolve("cpu", &BackendConfig::new().with_threads(1)).unwrap();
    assert_eq!(b.info().name, "cpu");
}

#[test]
fn unknown_backends_say_what_was_tried() {
    let err = match bellows::backend("no-such-backend") {
        Err(e) => e.to_string(),
        Ok(_) => panic!("resolved a backend that does not exist"),
    };
    assert!(err.contains("built-in: cpu"), "{err}");
    assert!(err.contains("libbellows_backend_no-such-backend"), "{err}");
}
