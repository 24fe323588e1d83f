//! Adapter listing and selection: what `bellows backends` shows, and the errors of options that
//! name no adapter or ask for what the backend does not do.

mod common;

use bellows_core::{Backend, BackendConfig, Error};
use bellows_wgpu::WgpuBackend;

fn with(k: &str, v: &str) -> std::result::Result<WgpuBackend, Error> {
    WgpuBackend::with_config(&BackendConfig::new().option(k, v))
}

#[test]
fn the_info_lists_every_adapter_with_its_limits() {
    let Some(b) = common::backend() else { return };
    let info = b.info();
    assert_eq!(info.name, "wgpu");
    assert!(!info.devices.is_empty());
    let in_use: Vec<_> = info
        .devices
        .iter()
        .filter(|d| d.name.starts_with("[in use] "))
        .collect();
    assert_eq!(in_use.len(), 1, "{:?}", info.devices);
    assert!(in_use[0].name.contains(&b.gpu().name));
    for d in &info.devices {
        assert!(d.name.contains("largest storage buffer"), "{}", d.name);
        assert!(d.name.contains("threads"), "{}", d.name);
    }
    let caps = &info.capabilities;
    assert!(caps.ntt && caps.coset_ntt && caps.fused_h_poly && caps.msm_g1 && caps.accelerator);
    assert!(caps.max_log_ntt >= 10);
    assert!(info.description.contains("adapter"), "{}", info.description);
}

#[test]
fn adapters_are_chosen_by_index_or_name() {
    let Some(b) = common::backend() else { return };
    let name = b.gpu().name.clone();
    // A part of the name, in another case, selects the same adapter.
    let part: String = name.chars().take(4).collect::<String>().to_uppercase();
    assert_eq!(with("adapter", &part).unwrap().gpu().name, name);
    let n = b.info().devices.len();
    match with("adapter", &n.to_string()) {
        Err(Error::InvalidInput(m)) => assert!(m.contains("adapters"), "{m}"),
        other => panic!("adapter {n} of {n}: {other:?}"),
    }
    match with("adapter", "no-such-gpu-anywhere") {
        Err(Error::InvalidInput(m)) => {
            assert!(m.contains("names no adapter") && m.contains(&name), "{m}")
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        with("devices", "0,1"),
        Err(Error::InvalidInput(_))
    ));
    assert!(matches!(with("g2", "gpu"), Err(Error::InvalidInput(_))));
}

/// The MSM's options: values outside their ranges, or beyond what the adapter allows, are
/// `InvalidInput` naming the option (no kernel is compiled for this).
#[test]
fn bad_msm_options_are_invalid_input() {
    let Some(b) = common::backend() else { return };
    for (k, v) in [
        ("msm-window", "3"),
        ("msm-window", "21"),
        ("msm-window", "wide"),
        ("msm-threads", "10"),
        ("msm-chunk", "4"),
        ("msm-segment", "12"),
        ("msm-segment", "2048"),
        ("msm-reduce", "1"),
        ("msm-wg", "48"),
        ("msm-wg", "2048"),
        ("msm-profile", "maybe"),
        ("msm-arith", "unrolled"),
    ] {
        match with(k, v) {
            Err(Error::InvalidInput(m)) => assert!(m.contains(k), "{k}={v}: {m}"),
            other => panic!("{k}={v}: {other:?}"),
        }
    }
    // Good values are taken.
    let t = *with("msm-segment", "8").unwrap().msm_engine().tuning();
    assert_eq!(t.segment, 8);
    assert_eq!(
        with("msm-window", "auto")
            .unwrap()
            .msm_engine()
            .tuning()
            .window,
        None
    );
    if b.gpu().device_type == wgpu::DeviceType::Cpu {
        // Loops past lavapipe's loop limiter are refused there.
        for (k, v) in [
            ("msm-chunk", "512"),
            ("msm-segment", "128"),
            ("msm-reduce", "100"),
        ] {
            match with(k, v) {
                Err(Error::InvalidInput(m)) => assert!(m.contains("software"), "{k}={v}: {m}"),
                other => panic!("{k}={v}: {other:?}"),
            }
        }
    }
}
