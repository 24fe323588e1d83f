//! One wgpu device with our kernels: pipelines, buffers, readback, errors; command recording is
//! [`Batch`]'s (`batch.rs`).
//!
//! Every kernel binds a 64-byte uniform of parameters at binding 0 (a dynamic offset into one
//! uniform buffer per submission, so a whole sequence of dispatches with different parameters
//! is recorded into one command buffer) and a fixed number of read-write storage buffers at
//! bindings 1…k. Dispatches of more than 65535 workgroups are spread over a second grid
//! dimension (the kernels' `linear_id`).
//!
//! Errors: wgpu reports validation, out-of-memory and internal errors asynchronously; its default
//! handler panics. Here every operation runs inside error scopes ([`Gpu::scoped`]) that turn
//! them into [`bellows_backend_api::Error`]s, an uncaptured-error handler keeps anything else for the
//! next operation to report, and a lost device fails every later call.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use bellows_backend_api::{Error, Result};

use crate::{adapter::NAME, shader};

mod batch;

pub use batch::{Batch, Timing, KEEP_STAGING};

/// Bytes of the parameter block every kernel binds.
pub const PARAMS_BYTES: u64 = 64;
/// Parameters of one dispatch: 16 words, each kernel's `Params` struct (unused words 0).
pub type Params = [u32; 16];
/// Threads per workgroup of the one-thread-per-item kernels (`WG` in common.wgsl).
pub const WG: u32 = 64;

/// The kernel modules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Module {
    /// NTT stages and element-wise Fr passes (4 storage buffers).
    Ntt,
    /// Prefix sums (2 storage buffers).
    Scan,
    /// MSM of a group (7 storage buffers).
    Msm(shader::GroupKind),
    /// Element-wise test kernels of a group (3 storage buffers).
    Testing(shader::GroupKind),
}

impl Module {
    /// The WGSL text (`wide`: with 64-bit integer limb products; `msm_wg`: threads per
    /// workgroup of the MSM's one-thread-per-item kernels; `msm_straight`: the MSM's arithmetic
    /// as straight-line code).
    fn source(self, wide: bool, msm_wg: u32, msm_straight: (bool, bool)) -> String {
        match self {
            Module::Ntt => shader::ntt_module(wide),
            Module::Scan => shader::scan_module(wide),
            Module::Msm(g) => {
                let straight = match g {
                    shader::GroupKind::G1 => msm_straight.0,
                    shader::GroupKind::G2 => msm_straight.1,
                };
                shader::with_workgroup(&shader::msm_module_with(g, wide, straight), msm_wg)
            }
            // The element-by-element checks run the arithmetic in the form the MSM uses.
            Module::Testing(g) => shader::testing_module_with(
                g,
                wide,
                match g {
                    shader::GroupKind::G1 => msm_straight.0,
                    shader::GroupKind::G2 => msm_straight.1,
                },
            ),
        }
    }
    /// Storage buffers its kernels bind.
    pub fn arity(self) -> usize {
        match self {
            Module::Ntt => 4,
            Module::Scan => 2,
            Module::Msm(_) => 7,
            Module::Testing(_) => 3,
        }
    }
}

/// One compiled kernel.
pub struct Kernel {
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
    arity: usize,
    /// Threads per workgroup of this kernel.
    pub workgroup: u32,
}

/// A range of a buffer bound to a kernel.
#[derive(Clone, Debug)]
pub struct Slice {
    /// The buffer.
    pub buffer: wgpu::Buffer,
    /// Byte offset (a multiple of the adapter's storage offset alignment).
    pub offset: u64,
    /// Byte length; `None`: to the end.
    pub size: Option<u64>,
}

impl From<&wgpu::Buffer> for Slice {
    fn from(b: &wgpu::Buffer) -> Self {
        Slice {
            buffer: b.clone(),
            offset: 0,
            size: None,
        }
    }
}

/// Whether the kernels build their limb products with 64-bit integers (option `int64`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Int64 {
    /// On hardware adapters that offer them; off on software ones (Mesa's lavapipe offers
    /// 64-bit integers but runs the kernels no faster with them, and CI, which runs on it, then
    /// checks the portable path by default and the 64-bit one in dedicated tests).
    Auto,
    /// Wherever the adapter offers them.
    On,
    /// Never: the portable products of 16-bit halves.
    Off,
}

impl Int64 {
    /// Whether 64-bit products are wanted on an adapter of this kind (if it offers them).
    pub fn wanted(self, kind: wgpu::DeviceType) -> bool {
        match self {
            Int64::Auto => kind != wgpu::DeviceType::Cpu,
            Int64::On => true,
            Int64::Off => false,
        }
    }
}

/// How a device is opened ([`Gpu::open_with`]).
#[derive(Clone, Copy, Debug)]
pub struct DeviceOptions {
    /// Limb products (option `int64`).
    pub int64: Int64,
    /// Ask for timestamp queries (wgpu's `TIMESTAMP_QUERY`) where the adapter offers them: only
    /// for profiling (option `msm-profile`), so that a device opened without it is unchanged.
    pub timestamps: bool,
    /// Threads per workgroup of the MSM's one-thread-per-item kernels (option `msm-wg`).
    pub msm_wg: u32,
    /// The MSM's field multiplication, product batches and point loads as straight-line code
    /// (option `msm-arith`, [`shader::field_mul_straight`]): G1's kernels.
    pub msm_straight: bool,
    /// The same for G2's kernels.
    pub msm_straight_g2: bool,
}

impl Default for DeviceOptions {
    fn default() -> Self {
        Self {
            int64: Int64::Auto,
            timestamps: false,
            msm_wg: WG,
            msm_straight: false,
            msm_straight_g2: false,
        }
    }
}

/// One device with its queue, limits and kernel cache.
pub struct Gpu {
    /// The device.
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
    /// The limits it was created with (the adapter's own).
    pub limits: wgpu::Limits,
    /// The adapter's name.
    pub name: String,
    /// Whether the kernels use 64-bit integers for their limb products (the adapter offers
    /// `SHADER_INT64` and option `int64` did not turn it off).
    pub int64: bool,
    /// Whether the adapter offers 64-bit integers in shaders (`SHADER_INT64`) at all.
    pub offers_int64: bool,
    /// The adapter's kind (discrete, integrated, software, …).
    pub device_type: wgpu::DeviceType,
    /// Whether the device was opened with timestamp queries (asked for by
    /// [`DeviceOptions::timestamps`] and offered by the adapter).
    pub timestamps: bool,
    /// Threads per workgroup of the MSM's one-thread-per-item kernels (option `msm-wg`).
    pub msm_wg: u32,
    /// Whether the G1 MSM's arithmetic is straight-line code (option `msm-arith`).
    pub msm_straight: bool,
    /// Whether the G2 MSM's arithmetic is straight-line code (option `msm-arith`).
    pub msm_straight_g2: bool,
    /// Buffers kept across calls, by role (see [`Gpu::scratch`], [`Batch::upload`],
    /// [`Batch::download`]).
    cache: Mutex<HashMap<&'static str, wgpu::Buffer>>,
    kernels: Mutex<HashMap<(Module, &'static str), Arc<Kernel>>>,
    modules: Mutex<HashMap<Module, wgpu::ShaderModule>>,
    uncaptured: Arc<Mutex<Vec<String>>>,
    lost: Arc<Mutex<Option<String>>>,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

fn device_err(device: &str, reason: impl Into<String>) -> Error {
    Error::Device {
        device: format!("{NAME}:{device}"),
        reason: reason.into(),
    }
}

impl Gpu {
    /// Opens a device on `adapter` with the adapter's own limits (wgpu's defaults would cap a
    /// storage binding at 128 MiB), and with 64-bit integers in shaders as `int64` asks
    /// ([`Int64::wanted`]) where the adapter offers them.
    pub fn open(adapter: &wgpu::Adapter, int64: Int64) -> Result<Self> {
        Self::open_with(
            adapter,
            &DeviceOptions {
                int64,
                ..DeviceOptions::default()
            },
        )
    }

    /// As [`Gpu::open`], with the options of [`DeviceOptions`].
    pub fn open_with(adapter: &wgpu::Adapter, opts: &DeviceOptions) -> Result<Self> {
        let info = adapter.get_info();
        let limits = adapter.limits();
        let offers_int64 = adapter.features().contains(wgpu::Features::SHADER_INT64);
        let int64 = opts.int64.wanted(info.device_type) && offers_int64;
        let timestamps =
            opts.timestamps && adapter.features().contains(wgpu::Features::TIMESTAMP_QUERY);
        let mut required_features = wgpu::Features::empty();
        if int64 {
            required_features |= wgpu::Features::SHADER_INT64;
        }
        if timestamps {
            required_features |= wgpu::Features::TIMESTAMP_QUERY;
        }
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("bellows"),
            required_features,
            required_limits: limits.clone(),
            experimental_features: wgpu::ExperimentalFeatures::default(),
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        }))
        .map_err(|e| device_err(&info.name, format!("cannot open the device: {e}")))?;
        let uncaptured = Arc::new(Mutex::new(Vec::new()));
        let sink = uncaptured.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            tracing::error!("wgpu: {e}");
            if let Ok(mut v) = sink.lock() {
                v.push(e.to_string());
            }
        }));
        let lost = Arc::new(Mutex::new(None));
        let lost_sink = lost.clone();
        device.set_device_lost_callback(move |reason, msg| {
            if let Ok(mut l) = lost_sink.lock() {
                *l = Some(format!("{reason:?}: {msg}"));
            }
        });
        Ok(Self {
            device,
            queue,
            limits,
            name: info.name,
            int64,
            offers_int64,
            device_type: info.device_type,
            timestamps,
            msm_wg: opts.msm_wg,
            msm_straight: opts.msm_straight,
            msm_straight_g2: opts.msm_straight_g2,
            cache: Mutex::new(HashMap::new()),
            kernels: Mutex::new(HashMap::new()),
            modules: Mutex::new(HashMap::new()),
            uncaptured,
            lost,
        })
    }

    /// An error on this device.
    pub fn error(&self, reason: impl Into<String>) -> Error {
        device_err(&self.name, reason)
    }

    /// Runs `f` inside out-of-memory, validation and internal error scopes and waits for the
    /// device: a wgpu error raised by anything `f` did becomes this call's error (out of memory
    /// as [`Error::OutOfMemory`]). The caller holds the backend's lock, so the scopes (which
    /// are per thread) see only this operation.
    pub fn scoped<T>(&self, what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
        if let Some(l) = self.lost.lock().ok().and_then(|l| l.clone()) {
            return Err(self.error(format!("the device was lost ({l})")));
        }
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let val = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let int = self.device.push_error_scope(wgpu::ErrorFilter::Internal);
        let r = f();
        let errs = [
            pollster::block_on(int.pop()),
            pollster::block_on(val.pop()),
            pollster::block_on(oom.pop()),
        ];
        let stray: Vec<String> = self
            .uncaptured
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default();
        let failed = r.is_err() || errs.iter().any(Option::is_some) || !stray.is_empty();
        if failed {
            // Buffers kept across calls may be half-way through a mapping: start afresh.
            self.clear_cache();
        }
        if let Some(e) = errs.into_iter().flatten().next() {
            return Err(match e {
                wgpu::Error::OutOfMemory { .. } => Error::OutOfMemory {
                    device: format!("{NAME}:{}", self.name),
                    requested: 0,
                    available: 0,
                },
                other => self.error(format!("{what}: {other}")),
            });
        }
        if let Some(s) = stray.first() {
            return Err(self.error(format!("{what}: {s}")));
        }
        if let Some(l) = self.lost.lock().ok().and_then(|l| l.clone()) {
            return Err(self.error(format!("the device was lost during {what} ({l})")));
        }
        r
    }

    /// The kernel `entry` of `module`, compiled on first use.
    pub fn kernel(&self, module: Module, entry: &'static str) -> Result<Arc<Kernel>> {
        let mut cache = self.kernels.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(k) = cache.get(&(module, entry)) {
            return Ok(k.clone());
        }
        let k = self.scoped(&format!("compiling kernel {entry}"), || {
            let mut modules = self.modules.lock().unwrap_or_else(|e| e.into_inner());
            let m = modules.entry(module).or_insert_with(|| {
                self.device
                    .create_shader_module(wgpu::ShaderModuleDescriptor {
                        label: Some(entry),
                        source: wgpu::ShaderSource::Wgsl(
                            module
                                .source(
                                    self.int64,
                                    self.msm_wg,
                                    (self.msm_straight, self.msm_straight_g2),
                                )
                                .into(),
                        ),
                    })
            });
            let layout = self.layout(module.arity());
            let pl = self
                .device
                .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                    label: None,
                    bind_group_layouts: &[Some(&layout)],
                    immediate_size: 0,
                });
            let pipeline = self
                .device
                .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(entry),
                    layout: Some(&pl),
                    module: m,
                    entry_point: Some(entry),
                    compilation_options: Default::default(),
                    cache: None,
                });
            let workgroup = match (module, entry) {
                (Module::Scan, _) => 256,
                (Module::Ntt, "dif_block" | "dit_block") => 256,
                (Module::Msm(_), "fixup_big") => 32,
                (Module::Msm(_), _) => self.msm_wg,
                _ => WG,
            };
            Ok(Arc::new(Kernel {
                pipeline,
                layout,
                arity: module.arity(),
                workgroup,
            }))
        })?;
        cache.insert((module, entry), k.clone());
        Ok(k)
    }

    fn layout(&self, arity: usize) -> wgpu::BindGroupLayout {
        let mut entries = vec![wgpu::BindGroupLayoutEntry {
            binding: 0,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Uniform,
                has_dynamic_offset: true,
                min_binding_size: std::num::NonZeroU64::new(PARAMS_BYTES),
            },
            count: None,
        }];
        for i in 0..arity {
            entries.push(wgpu::BindGroupLayoutEntry {
                binding: i as u32 + 1,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Storage { read_only: false },
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            });
        }
        self.device
            .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: None,
                entries: &entries,
            })
    }

    /// A new buffer of `size` bytes (at least 16), checked against the adapter's limits first:
    /// a buffer the adapter cannot hold is an [`Error::OutOfMemory`] naming the limit.
    pub fn buffer(
        &self,
        size: u64,
        usage: wgpu::BufferUsages,
        label: &str,
    ) -> Result<wgpu::Buffer> {
        let size = size.max(16).next_multiple_of(4);
        let storage = usage.contains(wgpu::BufferUsages::STORAGE);
        let limit = if storage {
            self.limits
                .max_storage_buffer_binding_size
                .min(self.limits.max_buffer_size)
        } else {
            self.limits.max_buffer_size
        };
        if size > limit {
            return Err(Error::OutOfMemory {
                device: format!("{NAME}:{}", self.name),
                requested: size,
                available: limit,
            });
        }
        Ok(self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage,
            mapped_at_creation: false,
        }))
    }

    /// A storage buffer (also a copy source and destination) holding `data`.
    pub fn upload(&self, data: &[u8], label: &str) -> Result<wgpu::Buffer> {
        let b = self.storage(data.len() as u64, label)?;
        self.write(&b, 0, data);
        Ok(b)
    }

    /// Writes `data` into `buffer` at `offset` (lands before the next submission runs). Empty
    /// writes and lengths that are not a multiple of 4 are padded by the caller's buffer size.
    pub fn write(&self, buffer: &wgpu::Buffer, offset: u64, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        if data.len().is_multiple_of(4) {
            self.queue.write_buffer(buffer, offset, data);
        } else {
            let mut padded = data.to_vec();
            padded.resize(data.len().next_multiple_of(4), 0);
            self.queue.write_buffer(buffer, offset, &padded);
        }
    }

    /// A storage buffer of `size` bytes, also a copy source and destination.
    pub fn storage(&self, size: u64, label: &str) -> Result<wgpu::Buffer> {
        self.buffer(
            size,
            wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            label,
        )
    }

    /// A new recording.
    pub fn batch(&self) -> Batch<'_> {
        Batch::new(self)
    }

    /// The storage buffer of `role` kept across calls, of at least `size` bytes (reallocated,
    /// larger, when too small). Calls are serialised by the backend's lock, so one role is used
    /// by one call at a time; its contents are whatever the last call left.
    pub fn scratch(&self, role: &'static str, size: u64) -> Result<wgpu::Buffer> {
        let size = size.max(16).next_multiple_of(4);
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(b) = cache.get(role) {
            if b.size() >= size && b.usage().contains(wgpu::BufferUsages::STORAGE) {
                return Ok(b.clone());
            }
        }
        cache.remove(role);
        let b = self.storage(size, role)?;
        cache.insert(role, b.clone());
        Ok(b)
    }

    /// Takes the staging buffer of `role` out of the cache, or makes one: for uploads
    /// (`MAP_WRITE | COPY_SRC`) it is mapped, for downloads (`MAP_READ | COPY_DST`) not.
    fn staging(&self, role: &'static str, size: u64, upload: bool) -> Result<wgpu::Buffer> {
        let usage = if upload {
            wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC
        } else {
            wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST
        };
        {
            let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(b) = cache.remove(role) {
                if b.size() >= size && b.usage() == usage {
                    return Ok(b);
                }
            }
        }
        let size = size.max(16).next_multiple_of(4);
        if size > self.limits.max_buffer_size {
            return Err(Error::OutOfMemory {
                device: format!("{NAME}:{}", self.name),
                requested: size,
                available: self.limits.max_buffer_size,
            });
        }
        Ok(self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(role),
            size,
            usage,
            mapped_at_creation: upload,
        }))
    }

    /// Returns a staging buffer to the cache (uploads mapped, downloads unmapped); one larger
    /// than [`KEEP_STAGING`] is dropped instead (host memory, often pinned, held for the
    /// backend's life).
    fn put_staging(&self, role: &'static str, b: wgpu::Buffer) {
        if b.size() > KEEP_STAGING {
            return;
        }
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache.insert(role, b);
    }

    /// Drops every buffer kept across calls (after a failed call, whose buffers may be in any
    /// state).
    pub fn clear_cache(&self) {
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// Copies `out.len()` bytes of `buffer` from `offset` into `out` (through a mapped staging
    /// buffer), after everything submitted so far.
    pub fn read(&self, buffer: &wgpu::Buffer, offset: u64, out: &mut [u8]) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        let len = (out.len() as u64).next_multiple_of(4);
        let staging = self.buffer(
            len,
            wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            "readback",
        )?;
        let mut enc = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("readback"),
            });
        enc.copy_buffer_to_buffer(buffer, offset, &staging, 0, len);
        self.queue.submit([enc.finish()]);
        let (tx, rx) = std::sync::mpsc::channel();
        staging.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| self.error(format!("waiting for the device: {e}")))?;
        match rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(self.error(format!("reading results back: {e}"))),
            Err(_) => return Err(self.error("reading results back: the mapping was abandoned")),
        }
        {
            let view = staging
                .slice(..)
                .get_mapped_range()
                .map_err(|e| self.error(format!("reading results back: {e}")))?;
            out.copy_from_slice(&view[..out.len()]);
        }
        staging.unmap();
        Ok(())
    }

    /// Waits until the device has finished everything submitted.
    pub fn wait(&self) -> Result<()> {
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map(|_| ())
            .map_err(|e| self.error(format!("waiting for the device: {e}")))
    }
}

/// Bytes of a value for upload.
pub fn bytes_of<T: bytemuck::NoUninit>(v: &[T]) -> &[u8] {
    bytemuck::cast_slice(v)
}
