//! Command recording: a [`Batch`] of dispatches, copies and clears, recorded then submitted as
//! one command buffer (or, profiled on the host, one a phase), with its uploads through staging
//! buffers kept mapped across calls and its readbacks.

use std::sync::Arc;

use bellows_backend_api::Result;

use super::{Gpu, Kernel, Params, Slice, PARAMS_BYTES};

enum Op {
    Dispatch {
        kernel: Arc<Kernel>,
        buffers: Vec<Slice>,
        params: usize,
        groups: (u32, u32),
    },
    Copy {
        from: wgpu::Buffer,
        from_offset: u64,
        to: wgpu::Buffer,
        to_offset: u64,
        size: u64,
    },
    Clear {
        buffer: wgpu::Buffer,
        offset: u64,
        size: u64,
    },
    /// The end of a named phase of a profiled batch ([`Batch::mark`]).
    Mark(&'static str),
}

/// How the phases of a profiled batch are timed ([`Batch::profile`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timing {
    /// With the device's timestamps (wgpu's `TIMESTAMP_QUERY`): one command buffer as without
    /// profiling, an empty compute pass writing its end-of-pass timestamp at each mark (Vulkan
    /// writes it at the bottom of the pipe, after everything recorded before it has finished).
    Timestamps,
    /// On the host: each phase is submitted as a command buffer of its own and waited for.
    /// The times include a submission and a wait each (tens of microseconds), and the phases
    /// no longer overlap.
    Host,
}

impl Timing {
    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Timing::Timestamps => "timestamps",
            Timing::Host => "host",
        }
    }
}

/// A sequence of dispatches and copies, recorded then submitted as one command buffer.
pub struct Batch<'g> {
    gpu: &'g Gpu,
    ops: Vec<Op>,
    params: Vec<Params>,
    /// Upload staging buffers used by this batch (role, buffer), mapped again after it ran.
    uploads: Vec<(&'static str, wgpu::Buffer)>,
    /// Readback staging buffers (role, buffer, bytes), mapped and read by [`Batch::finish`].
    downloads: Vec<(&'static str, wgpu::Buffer, u64)>,
    /// How phases are timed; `None`: not profiled (marks are not recorded).
    timing: Option<Timing>,
    /// Profiled: the phases' names and, timed on the host, their milliseconds.
    phases: Vec<(&'static str, f64)>,
    /// Profiled with timestamps: the buffer the timestamps are copied into, and their count.
    stamps: Option<(wgpu::Buffer, u32)>,
}

/// Largest staging buffer kept across calls (1 GiB: an NTT of 2^25 per call; larger calls make
/// their staging buffers afresh).
pub const KEEP_STAGING: u64 = 1 << 30;

/// Host copies of more than this many bytes are split over threads.
const PARALLEL_COPY: usize = 4 << 20;

/// Pieces of a parallel host copy: the machine's threads, at most 16, at least 1 MiB each.
fn copy_parts(len: usize) -> usize {
    if len < PARALLEL_COPY {
        return 1;
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(16));
    threads.min(len >> 20).max(1)
}

/// A piece of a mapped range, written by another thread.
struct Piece<'a>(wgpu::WriteOnly<'a, [u8]>);

// SAFETY: a `WriteOnly<[u8]>` is a pointer and a length into mapped memory which only its holder
// may write; the pieces come from `split_at`, so they are disjoint, and the mapping outlives the
// scoped threads that write them. wgpu implements `Send` for `WriteOnly<T>` of sized `T` only
// (the bound of its generic impl), not because sending a slice's pointer would be unsound.
unsafe impl Send for Piece<'_> {}

impl Piece<'_> {
    fn write(mut self, src: &[u8]) {
        self.0.copy_from_slice(src);
    }
}

/// `dst.copy_from_slice(src)` into mapped (possibly write-combined) memory, over several threads
/// for large copies: one thread copying into write-combined or freshly pinned memory reaches a
/// fraction of the host's memory bandwidth.
fn copy_to_mapped(dst: wgpu::WriteOnly<'_, [u8]>, src: &[u8]) {
    let parts = copy_parts(src.len());
    if parts == 1 {
        let mut dst = dst;
        dst.copy_from_slice(src);
        return;
    }
    let step = src.len().div_ceil(parts);
    std::thread::scope(|s| {
        let mut rest = dst;
        for piece in src.chunks(step) {
            let (head, tail) = rest.split_at(piece.len());
            rest = tail;
            let head = Piece(head);
            s.spawn(move || head.write(piece));
        }
    });
}

/// `dst.copy_from_slice(src)`, over several threads for large copies.
fn copy_from_mapped(dst: &mut [u8], src: &[u8]) {
    let parts = copy_parts(src.len());
    if parts == 1 {
        dst.copy_from_slice(src);
        return;
    }
    let step = src.len().div_ceil(parts);
    std::thread::scope(|s| {
        for (d, piece) in dst.chunks_mut(step).zip(src.chunks(step)) {
            s.spawn(move || d.copy_from_slice(piece));
        }
    });
}

impl<'g> Batch<'g> {
    /// A new recording on `gpu`.
    pub(super) fn new(gpu: &'g Gpu) -> Self {
        Batch {
            gpu,
            ops: Vec::new(),
            params: Vec::new(),
            uploads: Vec::new(),
            downloads: Vec::new(),
            timing: None,
            phases: Vec::new(),
            stamps: None,
        }
    }

    /// Records a copy of `data` into `dst` at `dst_offset` through the upload staging buffer of
    /// `role`, kept mapped across calls: the host copies `data` straight into mapped memory
    /// (several threads for large data), and the copy to `dst` runs in this batch's command
    /// buffer. `Queue::write_buffer` would allocate a staging buffer per call instead (for
    /// 512 MiB, a fresh pinned allocation each time). Roles must differ within one batch.
    pub fn upload(
        &mut self,
        role: &'static str,
        dst: &wgpu::Buffer,
        dst_offset: u64,
        data: &[u8],
    ) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        let len = (data.len() as u64).next_multiple_of(4);
        let staging = self.gpu.staging(role, len, true)?;
        {
            let mut view = staging
                .get_mapped_range_mut(..len)
                .map_err(|e| self.gpu.error(format!("writing an upload: {e}")))?;
            let (head, mut pad) = view.slice(..).split_at(data.len());
            copy_to_mapped(head, data);
            pad.fill(0);
        }
        staging.unmap();
        self.copy(&staging, 0, dst, dst_offset, len);
        self.uploads.push((role, staging));
        Ok(())
    }

    /// Records a copy of `len` bytes of `src` from `src_offset` into the readback staging buffer
    /// of `role` (kept across calls); [`Batch::finish`] returns them. Returns the index of this
    /// download among the batch's downloads.
    pub fn download(
        &mut self,
        role: &'static str,
        src: &wgpu::Buffer,
        src_offset: u64,
        len: u64,
    ) -> Result<usize> {
        let padded = len.next_multiple_of(4).max(4);
        let staging = self.gpu.staging(role, padded, false)?;
        self.copy(src, src_offset, &staging, 0, padded);
        self.downloads.push((role, staging, padded));
        Ok(self.downloads.len() - 1)
    }

    /// Submits the batch (one command buffer), waits for the device, and copies download `i`
    /// into `outs[i]` (at most its recorded length). The staging buffers go back to the cache:
    /// uploads mapped again for the next call, downloads unmapped.
    pub fn finish(self, outs: &mut [&mut [u8]]) -> Result<()> {
        self.finish_profiled(outs).map(drop)
    }

    /// As [`Batch::finish`], and returns the phases of a profiled batch ([`Batch::profile`]):
    /// (name, milliseconds) in order, each phase ending at its [`Batch::mark`] and beginning at
    /// the previous one (the first at the start of the command buffer). Empty when the batch is
    /// not profiled.
    pub fn finish_profiled(mut self, outs: &mut [&mut [u8]]) -> Result<Vec<(&'static str, f64)>> {
        let gpu = self.gpu;
        let uploads = std::mem::take(&mut self.uploads);
        let downloads = std::mem::take(&mut self.downloads);
        self.run()?;
        let (tx, rx) = std::sync::mpsc::channel();
        for (i, (_, b)) in uploads.iter().enumerate() {
            let tx = tx.clone();
            b.map_async(wgpu::MapMode::Write, .., move |r| {
                let _ = tx.send((false, i, r));
            });
        }
        for (i, (_, b, len)) in downloads.iter().enumerate() {
            let tx = tx.clone();
            b.map_async(wgpu::MapMode::Read, ..*len, move |r| {
                let _ = tx.send((true, i, r));
            });
        }
        drop(tx);
        gpu.wait()?;
        let mut mapped_up = vec![false; uploads.len()];
        let mut mapped_down = vec![false; downloads.len()];
        let mut failure = None;
        for (down, i, r) in rx.try_iter() {
            match r {
                Ok(()) if down => mapped_down[i] = true,
                Ok(()) => mapped_up[i] = true,
                Err(e) => failure = Some(e.to_string()),
            }
        }
        for ((role, b), ok) in uploads.into_iter().zip(mapped_up) {
            if ok {
                gpu.put_staging(role, b);
            }
        }
        if let Some(e) = failure {
            return Err(gpu.error(format!("mapping a staging buffer: {e}")));
        }
        for (i, ((role, b, len), ok)) in downloads.into_iter().zip(mapped_down).enumerate() {
            if !ok {
                return Err(gpu.error("reading results back: the mapping was abandoned"));
            }
            {
                let view = b
                    .get_mapped_range(..len)
                    .map_err(|e| gpu.error(format!("reading results back: {e}")))?;
                if let Some(out) = outs.get_mut(i) {
                    let n = out.len().min(len as usize);
                    copy_from_mapped(&mut out[..n], &view[..n]);
                }
            }
            b.unmap();
            gpu.put_staging(role, b);
        }
        self.read_stamps()
    }

    /// Turns profiling on for this batch ([`Timing`]); [`Batch::mark`] then ends a phase and
    /// [`Batch::finish_profiled`] returns the phases' times.
    pub fn profile(&mut self, timing: Timing) {
        self.timing = Some(timing);
    }

    /// Ends the phase `name` here (nothing when the batch is not profiled).
    pub fn mark(&mut self, name: &'static str) {
        if self.timing.is_some() {
            self.ops.push(Op::Mark(name));
        }
    }

    /// The phases' times: measured on the host already, or read from the timestamps.
    fn read_stamps(&mut self) -> Result<Vec<(&'static str, f64)>> {
        let gpu = self.gpu;
        let Some((buf, count)) = self.stamps.take() else {
            return Ok(std::mem::take(&mut self.phases));
        };
        let (tx, rx) = std::sync::mpsc::channel();
        buf.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        gpu.wait()?;
        match rx.try_recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(gpu.error(format!("reading timestamps: {e}"))),
            Err(_) => return Err(gpu.error("reading timestamps: the mapping was abandoned")),
        }
        let ticks: Vec<u64> = {
            let view = buf
                .get_mapped_range(..)
                .map_err(|e| gpu.error(format!("reading timestamps: {e}")))?;
            view[..count as usize * 8]
                .chunks_exact(8)
                .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
                .collect()
        };
        buf.unmap();
        let ns = gpu.queue.get_timestamp_period() as f64;
        let phases = std::mem::take(&mut self.phases);
        Ok(phases
            .into_iter()
            .zip(ticks.windows(2))
            .map(|((name, _), w)| (name, w[1].wrapping_sub(w[0]) as f64 * ns * 1e-6))
            .collect())
    }

    /// Dispatches `kernel` over `items` threads (one per item, in workgroups of the kernel's
    /// size), binding `buffers` at 1…k and `params` at 0. Nothing is recorded for zero items.
    pub fn dispatch(
        &mut self,
        kernel: &Arc<Kernel>,
        buffers: &[Slice],
        params: Params,
        items: u64,
    ) {
        self.dispatch_groups(
            kernel,
            buffers,
            params,
            items.div_ceil(kernel.workgroup as u64),
        );
    }

    /// As [`Batch::dispatch`] with the number of workgroups given.
    pub fn dispatch_groups(
        &mut self,
        kernel: &Arc<Kernel>,
        buffers: &[Slice],
        params: Params,
        groups: u64,
    ) {
        if groups == 0 {
            return;
        }
        debug_assert_eq!(buffers.len(), kernel.arity);
        let max = self.gpu.limits.max_compute_workgroups_per_dimension.max(1) as u64;
        let x = groups.min(max);
        let y = groups.div_ceil(x);
        self.params.push(params);
        self.ops.push(Op::Dispatch {
            kernel: kernel.clone(),
            buffers: buffers.to_vec(),
            params: self.params.len() - 1,
            groups: (x as u32, y as u32),
        });
    }

    /// Copies `size` bytes between buffers.
    pub fn copy(
        &mut self,
        from: &wgpu::Buffer,
        from_offset: u64,
        to: &wgpu::Buffer,
        to_offset: u64,
        size: u64,
    ) {
        if size > 0 {
            self.ops.push(Op::Copy {
                from: from.clone(),
                from_offset,
                to: to.clone(),
                to_offset,
                size,
            });
        }
    }

    /// Zeroes `size` bytes of `buffer` from `offset` (both multiples of 4).
    pub fn clear(&mut self, buffer: &wgpu::Buffer, offset: u64, size: u64) {
        if size > 0 {
            self.ops.push(Op::Clear {
                buffer: buffer.clone(),
                offset,
                size,
            });
        }
    }

    /// Records everything into one command buffer and submits it (uploads recorded with
    /// [`Batch::upload`] are not mapped again: use [`Batch::finish`] for batches with uploads
    /// or downloads).
    pub fn submit(mut self) -> Result<()> {
        self.run()
    }

    /// Records and submits (the work of [`Batch::submit`]); a profiled batch records its marks
    /// (timestamps) or submits and waits at each (host timing).
    fn run(&mut self) -> Result<()> {
        let gpu = self.gpu;
        if self.ops.is_empty() {
            return Ok(());
        }
        let ops = std::mem::take(&mut self.ops);
        let stride = PARAMS_BYTES
            .next_multiple_of(gpu.limits.min_uniform_buffer_offset_alignment.max(1) as u64);
        let uniform = if self.params.is_empty() {
            None
        } else {
            let mut bytes = vec![0u8; self.params.len() * stride as usize];
            for (i, p) in self.params.iter().enumerate() {
                let at = i * stride as usize;
                bytes[at..at + PARAMS_BYTES as usize].copy_from_slice(bytemuck::cast_slice(p));
            }
            let buf = gpu.buffer(
                bytes.len() as u64,
                wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                "params",
            )?;
            gpu.queue.write_buffer(&buf, 0, &bytes);
            Some(buf)
        };
        let mut enc = gpu
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("bellows"),
            });
        // Profiling: the timestamps' query set (one more than the marks: the start), or the
        // host's clock.
        let marks = ops.iter().filter(|o| matches!(o, Op::Mark(_))).count() as u32;
        let stamps = match self.timing {
            Some(Timing::Timestamps) if marks > 0 => {
                let set = gpu.device.create_query_set(&wgpu::QuerySetDescriptor {
                    label: Some("bellows timestamps"),
                    ty: wgpu::QueryType::Timestamp,
                    count: marks + 1,
                });
                stamp(&mut enc, &set, 0);
                Some(set)
            }
            _ => None,
        };
        let mut stamped = 0u32;
        let mut clock = std::time::Instant::now();
        let mut ops = ops.into_iter().peekable();
        while let Some(op) = ops.next() {
            match op {
                Op::Mark(name) => {
                    if let Some(set) = &stamps {
                        stamped += 1;
                        stamp(&mut enc, set, stamped);
                        self.phases.push((name, 0.0));
                    } else {
                        let done = std::mem::replace(
                            &mut enc,
                            gpu.device
                                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                                    label: Some("bellows"),
                                }),
                        );
                        gpu.queue.submit([done.finish()]);
                        gpu.wait()?;
                        let now = std::time::Instant::now();
                        self.phases.push((name, (now - clock).as_secs_f64() * 1e3));
                        clock = now;
                    }
                }
                Op::Dispatch { .. } => {
                    let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                        label: None,
                        timestamp_writes: None,
                    });
                    let mut next = Some(op);
                    while let Some(Op::Dispatch {
                        kernel,
                        buffers,
                        params,
                        groups,
                    }) = next
                    {
                        let uniform = uniform.as_ref().expect("dispatches have parameters");
                        let mut entries = vec![wgpu::BindGroupEntry {
                            binding: 0,
                            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                                buffer: uniform,
                                offset: 0,
                                size: std::num::NonZeroU64::new(PARAMS_BYTES),
                            }),
                        }];
                        for (i, s) in buffers.iter().enumerate() {
                            entries.push(wgpu::BindGroupEntry {
                                binding: i as u32 + 1,
                                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                                    buffer: &s.buffer,
                                    offset: s.offset,
                                    size: s.size.and_then(std::num::NonZeroU64::new),
                                }),
                            });
                        }
                        let bg = gpu.device.create_bind_group(&wgpu::BindGroupDescriptor {
                            label: None,
                            layout: &kernel.layout,
                            entries: &entries,
                        });
                        pass.set_pipeline(&kernel.pipeline);
                        pass.set_bind_group(0, &bg, &[(params as u64 * stride) as u32]);
                        pass.dispatch_workgroups(groups.0, groups.1, 1);
                        next = if matches!(ops.peek(), Some(Op::Dispatch { .. })) {
                            ops.next()
                        } else {
                            None
                        };
                    }
                }
                Op::Copy {
                    from,
                    from_offset,
                    to,
                    to_offset,
                    size,
                } => enc.copy_buffer_to_buffer(&from, from_offset, &to, to_offset, size),
                Op::Clear {
                    buffer,
                    offset,
                    size,
                } => enc.clear_buffer(&buffer, offset, Some(size)),
            }
        }
        if let Some(set) = &stamps {
            let count = marks + 1;
            let bytes = count as u64 * wgpu::QUERY_SIZE as u64;
            let resolved = gpu.buffer(
                bytes,
                wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                "timestamps",
            )?;
            let read = gpu.buffer(
                bytes,
                wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                "timestamps readback",
            )?;
            enc.resolve_query_set(set, 0..count, &resolved, 0);
            enc.copy_buffer_to_buffer(&resolved, 0, &read, 0, bytes);
            self.stamps = Some((read, count));
        }
        gpu.queue.submit([enc.finish()]);
        Ok(())
    }
}

/// Writes timestamp `index` of `set` once everything recorded before has finished: the end of
/// an empty compute pass (which needs only wgpu's `TIMESTAMP_QUERY`, not timestamps inside
/// encoders; Vulkan writes it at the bottom of the pipe).
fn stamp(enc: &mut wgpu::CommandEncoder, set: &wgpu::QuerySet, index: u32) {
    let pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
        label: Some("timestamp"),
        timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
            query_set: set,
            beginning_of_pass_write_index: None,
            end_of_pass_write_index: Some(index),
        }),
    });
    drop(pass);
}
