// Bellows CUDA kernels: Pippenger multi-scalar multiplication over resident bases, G1 and G2.
//
// Algorithm. N. Pippenger's bucket method ("On the evaluation of powers and related problems",
// FOCS 1976), in the form used by every GPU MSM since the ZPrize 2022 entries: each scalar is cut
// into windows of c bits, written as signed digits in [−2^(c−1), 2^(c−1)] (a digit above 2^(c−1)
// becomes d − 2^c with a carry into the next window, so a window needs 2^(c−1) buckets, not 2^c),
// each (window, |digit|) pair names a bucket, and the MSM is
//     Σ_w 2^(c·w) · Σ_j (j + 1) · B_{w,j},   B_{w,j} = Σ_{i : |d_{i,w}| = j + 1} ±P_i.
// On the device the buckets are not kept as per-thread state; the work is re-arranged as a sort:
//   1. digits:     every scalar (Montgomery → canonical) counts its non-zero digits into a
//                  histogram of bucket keys (key = w·2^(c−1) + |d| − 1). Scalar 0 adds nothing;
//                  scalar 1 (a Filecoin witness is mostly bits) is listed apart and summed by a
//                  plain parallel reduction, so it never piles into one bucket.
//   2. scan:       exclusive prefix sum of the histogram = each bucket's offset in one array.
//   3. scatter:    every scalar writes (point index | sign bit) of each digit at its bucket's
//                  cursor: a counting sort of all (window, digit) pairs by bucket.
//   4. accumulate: the sorted array is cut into equal chunks of L entries, one per thread, so the
//                  work is balanced whatever the digit distribution (L from the real number of
//                  entries, read on the device after the scan: effective_chunk); a thread sums each run of
//                  one bucket with mixed additions (XYZZ + affine). A run wholly inside the chunk
//                  is the bucket's sum; a run touching the chunk's ends is kept as its head or
//                  tail partial sum.
//   5. fixup:      a bucket spanning several chunks = tail of its first chunk + heads of the rest.
//   6. windows:    each window's Σ (j + 1)·B_j by running sums over segments of L buckets,
//                  Σ_{j∈seg} (j + 1)B_j = Σ_{j∈seg} (j − lo + 1)B_j + lo·Σ_{j∈seg} B_j: the first
//                  terms are added by a tree reduction, and since lo = L·g the second ones sum to
//                  L·Σ_g g·T_g (T_g the segment's plain sum), the same problem over 1/L as many
//                  points, solved a level up by the flat pass (short segments, double-and-add);
//                  the two combine as R_0 + L·R_1 (window_horner). Where there are few segments,
//                  each adds lo·T_g itself by double-and-add instead (the flat pass, tuning
//                  `window_pass`), as the second level's chained additions would cost more.
// The host finishes with Horner's rule over the window sums (c doublings per window).
//
// Group additions are exact, so the order of the entries inside a bucket (atomics make it vary
// from run to run) changes no result: the MSM is a function of its inputs, as conformance needs.
//
// Every kernel body in the headers below is a function of one thread index, shared by the device
// entry points (msm/kernels.cuh) and the host emulation (emulation.cpp), which runs them in loops.
#pragma once

#include "msm/digits.cuh"
#include "msm/bins.cuh"
#include "msm/accumulate.cuh"
#include "msm/window.cuh"
#include "msm/table.cuh"
