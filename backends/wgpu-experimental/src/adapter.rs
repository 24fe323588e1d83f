//! Adapters: which GPUs wgpu sees, what their limits are, which one a configuration selects.
//!
//! wgpu is asked for every adapter of the native APIs compiled in (Vulkan on Linux and Windows,
//! Metal on Apple, DX12 on Windows; not OpenGL, whose compute support is too limited). They are
//! listed discrete GPUs first, then integrated, virtual, software (CPU, e.g. Mesa's lavapipe)
//! and others, in wgpu's order within each kind; index 0 of this list is the default. Each is
//! checked against what our kernels need ([`Requirements`]); an adapter that falls short is
//! listed with the reason, never selected.

use bellows_backend_api::{BackendConfig, Error, Result};

/// Name of the backend, as given to `--backend`.
pub const NAME: &str = "wgpu";

/// What the kernels need of an adapter.
#[derive(Clone, Copy, Debug)]
pub struct Requirements {
    /// Storage buffers bound at once by one kernel (the MSM's accumulation binds 7).
    pub storage_buffers: u32,
    /// Threads per workgroup (the prefix sum runs 256).
    pub invocations: u32,
    /// Workgroup memory in bytes (the MSM's fix-up of long buckets keeps 32 G2 points: 12 KiB;
    /// the NTT's 16 KiB passes are used when the adapter allows them, else single stages).
    pub workgroup_memory: u32,
    /// Smallest largest-storage-binding: one NTT vector of 2^10 elements (32 KiB).
    pub storage_binding: u64,
}

/// The requirements of this version of the kernels.
pub const REQUIRED: Requirements = Requirements {
    storage_buffers: 7,
    invocations: 256,
    workgroup_memory: 12 << 10,
    storage_binding: 32 << 10,
};

/// One adapter as listed.
#[derive(Clone, Debug)]
pub struct AdapterEntry {
    /// The wgpu adapter.
    pub adapter: wgpu::Adapter,
    /// Its description.
    pub info: wgpu::AdapterInfo,
    /// Its limits (what the device is then created with).
    pub limits: wgpu::Limits,
    /// Why the kernels cannot run on it, if they cannot.
    pub unusable: Option<String>,
}

fn kind_rank(t: wgpu::DeviceType) -> u8 {
    match t {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Cpu => 3,
        wgpu::DeviceType::Other => 4,
    }
}

fn kind_name(t: wgpu::DeviceType) -> &'static str {
    match t {
        wgpu::DeviceType::DiscreteGpu => "discrete GPU",
        wgpu::DeviceType::IntegratedGpu => "integrated GPU",
        wgpu::DeviceType::VirtualGpu => "virtual GPU",
        wgpu::DeviceType::Cpu => "software (CPU)",
        wgpu::DeviceType::Other => "other",
    }
}

/// Bytes in words: `128 MiB`, `4 GiB`, `512 KiB`.
pub fn show_bytes(b: u64) -> String {
    if b >= 1 << 30 && b.is_multiple_of(1 << 30) || b >= 16 << 30 {
        format!("{} GiB", b >> 30)
    } else if b >= 1 << 30 {
        format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
    } else if b >= 1 << 20 {
        format!("{} MiB", b >> 20)
    } else {
        format!("{} KiB", b >> 10)
    }
}

/// Why `limits` (and the adapter's downlevel flags) do not meet [`REQUIRED`], if they do not.
pub fn check_limits(limits: &wgpu::Limits, compute: bool) -> Option<String> {
    let r = REQUIRED;
    let mut why = Vec::new();
    if !compute {
        why.push("no compute shaders".to_string());
    }
    if limits.max_storage_buffers_per_shader_stage < r.storage_buffers {
        why.push(format!(
            "{} storage buffers per kernel (needs {})",
            limits.max_storage_buffers_per_shader_stage, r.storage_buffers
        ));
    }
    if limits.max_compute_invocations_per_workgroup < r.invocations
        || limits.max_compute_workgroup_size_x < r.invocations
    {
        why.push(format!(
            "{} threads per workgroup (needs {})",
            limits.max_compute_invocations_per_workgroup, r.invocations
        ));
    }
    if limits.max_compute_workgroup_storage_size < r.workgroup_memory {
        why.push(format!(
            "{} B of workgroup memory (needs {})",
            limits.max_compute_workgroup_storage_size, r.workgroup_memory
        ));
    }
    if limits.max_storage_buffer_binding_size < r.storage_binding {
        why.push(format!(
            "storage bindings of {} (needs {})",
            show_bytes(limits.max_storage_buffer_binding_size),
            show_bytes(r.storage_binding)
        ));
    }
    (!why.is_empty()).then(|| why.join(", "))
}

impl AdapterEntry {
    fn new(adapter: wgpu::Adapter) -> Self {
        let info = adapter.get_info();
        let limits = adapter.limits();
        let compute = adapter
            .get_downlevel_capabilities()
            .flags
            .contains(wgpu::DownlevelFlags::COMPUTE_SHADERS);
        let unusable = check_limits(&limits, compute);
        Self {
            adapter,
            info,
            limits,
            unusable,
        }
    }

    /// One line: name, API, kind, and the limits that bound our work.
    pub fn describe(&self) -> String {
        let l = &self.limits;
        let mut s = format!(
            "{} ({:?}, {}; largest storage buffer {}, buffer {}; workgroups ≤ {} threads, {} KiB \
             shared memory; {} storage buffers per kernel)",
            self.info.name,
            self.info.backend,
            kind_name(self.info.device_type),
            show_bytes(l.max_storage_buffer_binding_size),
            show_bytes(l.max_buffer_size),
            l.max_compute_invocations_per_workgroup,
            l.max_compute_workgroup_storage_size >> 10,
            l.max_storage_buffers_per_shader_stage,
        );
        if let Some(why) = &self.unusable {
            s.push_str(&format!(" — unusable: {why}"));
        }
        s
    }
}

/// Every adapter wgpu finds, in the order described in the module documentation.
pub fn list(instance: &wgpu::Instance) -> Vec<AdapterEntry> {
    let backends = wgpu::Backends::VULKAN | wgpu::Backends::METAL | wgpu::Backends::DX12;
    let mut v: Vec<AdapterEntry> = pollster::block_on(instance.enumerate_adapters(backends))
        .into_iter()
        .map(AdapterEntry::new)
        .collect();
    v.sort_by_key(|a| kind_rank(a.info.device_type));
    v
}

/// A new wgpu instance over the native APIs (no display connection: compute only).
pub fn instance() -> wgpu::Instance {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::VULKAN | wgpu::Backends::METAL | wgpu::Backends::DX12;
    wgpu::Instance::new(desc)
}

/// The hint given when no adapter is usable.
pub const NO_ADAPTER_HINT: &str = "wgpu found no GPU adapter through Vulkan, Metal or DX12. On \
     Linux, install a Vulkan driver and loader (for a GPU, its vendor's driver; for a software \
     adapter, `apt-get install mesa-vulkan-drivers libvulkan1`, Mesa's lavapipe), or point \
     VK_ICD_FILENAMES at a driver's ICD file";

/// The adapter a configuration selects: option `adapter` (an index into [`list`], or a
/// case-insensitive part of an adapter's name), else [`BackendConfig::device`] as an index
/// (`--devices N`; default 0: the first usable adapter in listing order). Several devices
/// (option `devices` with a list) are refused: the backend drives one adapter. Returns the index
/// and the list.
pub fn select(
    instance: &wgpu::Instance,
    cfg: &BackendConfig,
) -> Result<(usize, Vec<AdapterEntry>)> {
    let all = list(instance);
    let backend_err = |reason: String| Error::Backend {
        name: NAME.into(),
        reason,
    };
    if all.is_empty() {
        return Err(backend_err(NO_ADAPTER_HINT.into()));
    }
    if let Some(list) = cfg.get_option("devices").filter(|d| d.contains(',')) {
        return Err(Error::invalid(format!(
            "devices {list}: the wgpu backend drives one adapter; give one index (or \
             --backend-opt adapter=INDEX|NAME)"
        )));
    }
    let listing = || {
        all.iter()
            .enumerate()
            .map(|(i, a)| format!("  {i}: {}", a.describe()))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let chosen = match cfg.get_option("adapter").map(str::trim) {
        Some(s) if !s.is_empty() => match s.parse::<usize>() {
            Ok(i) if i < all.len() => i,
            Ok(i) => {
                return Err(Error::invalid(format!(
                    "option adapter={i}: there are {} adapters:\n{}",
                    all.len(),
                    listing()
                )))
            }
            Err(_) => {
                let needle = s.to_lowercase();
                match all
                    .iter()
                    .position(|a| a.info.name.to_lowercase().contains(&needle))
                {
                    Some(i) => i,
                    None => {
                        return Err(Error::invalid(format!(
                            "option adapter={s:?} names no adapter; the adapters are:\n{}",
                            listing()
                        )))
                    }
                }
            }
        },
        _ if cfg.device != 0 => {
            if cfg.device >= all.len() {
                return Err(Error::invalid(format!(
                    "device {} asked for, but there are {} adapters:\n{}",
                    cfg.device,
                    all.len(),
                    listing()
                )));
            }
            cfg.device
        }
        _ => match all.iter().position(|a| a.unusable.is_none()) {
            Some(i) => i,
            None => {
                return Err(backend_err(format!(
                    "no adapter meets the kernels' needs:\n{}",
                    listing()
                )))
            }
        },
    };
    if let Some(why) = &all[chosen].unusable {
        return Err(backend_err(format!(
            "adapter {chosen} ({}) cannot run the kernels: {why}",
            all[chosen].info.name
        )));
    }
    Ok((chosen, all))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_below_the_requirements_are_named() {
        let mut l = wgpu::Limits::downlevel_defaults();
        l.max_storage_buffers_per_shader_stage = 4;
        l.max_compute_workgroup_storage_size = 512;
        let why = check_limits(&l, false).unwrap();
        assert!(why.contains("no compute shaders"), "{why}");
        assert!(why.contains("4 storage buffers"), "{why}");
        assert!(why.contains("512 B of workgroup memory"), "{why}");
        let ok = wgpu::Limits::default();
        assert_eq!(check_limits(&ok, true), None);
    }

    #[test]
    fn byte_sizes_read_well() {
        assert_eq!(show_bytes(128 << 20), "128 MiB");
        assert_eq!(show_bytes(4 << 30), "4 GiB");
        assert_eq!(show_bytes((4 << 30) - 4), "4.0 GiB");
        assert_eq!(show_bytes(32 << 10), "32 KiB");
    }
}
