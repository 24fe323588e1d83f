// Host emulation of the Bellows CUDA kernels.
//
// Compiled by a host C++ compiler with BELLOWS_HOST_EMULATION defined, this file runs the very
// same field, curve, NTT and MSM code as backend.cu, with the PTX carry-chain instructions replaced by
// their C++ definitions (ff/carry.cuh) and each kernel's grid replaced by loops. The tools crate's
// test tests/emulation.rs builds it as a shared library, loads it and compares its results with blst,
// so the arithmetic and the NTT index logic are checked bit for bit on machines without a GPU.
// Within one NTT stage the butterflies are independent, so running them one after another is
// exactly what the kernel's threads compute between two barriers.
#define BELLOWS_HOST_EMULATION 1

#include <string.h>

#include <algorithm>
#include <vector>

#include "ec/decode.cuh"
#include "msm/msm.cuh"
#include "ntt/ntt.cuh"
#include "ops.cuh"

using namespace bellows;

namespace {

// Set in bellows_emu_msm's seg_len: the flat window pass (see emu_msm).
constexpr uint32_t EMU_FLAT = 1u << 31;

template <class F>
void field_ops(uint32_t op, const F* a, const F* b, F* out, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) out[i] = field_apply<F>(op, a[i], b[i]);
}

template <class F>
void curve_ops(uint32_t op, const Jacobian<F>* p, const Jacobian<F>* q, const Affine<F>* a,
               Affine<F>* out_affine, Jacobian<F>* out_jacobian, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        Xyzz<F> r = curve_apply<F>(op, p[i], q[i], a[i]);
        out_affine[i] = op_to_affine<F>(r);
        out_jacobian[i] = op_to_jacobian<F>(r);
    }
}

// The tile as the pass kernel keeps it in shared memory: element e at slot smem_slot(e).
struct SwizzledTile {
    Fr* sm;
    Fr get(uint32_t e) const { return sm[smem_slot(e)]; }
    void set(uint32_t e, const Fr& x) { sm[smem_slot(e)] = x; }
};

}  // namespace

extern "C" {

// field: 0 = Fr, 1 = Fp, 2 = Fp2, 3 = Fr through the generic reduction, 5 = Fp with squares as
// products and a·b − c·d as two products (FpPlain, same layout).
void bellows_emu_field_op(uint32_t field, uint32_t op, const void* a, const void* b, void* out,
                          uint64_t n) {
    switch (field) {
        case 0: field_ops<Fr>(op, (const Fr*)a, (const Fr*)b, (Fr*)out, n); break;
        case 1: field_ops<Fp>(op, (const Fp*)a, (const Fp*)b, (Fp*)out, n); break;
        case 2: field_ops<Fp2>(op, (const Fp2*)a, (const Fp2*)b, (Fp2*)out, n); break;
        case 3: field_ops<FrGeneric>(op, (const FrGeneric*)a, (const FrGeneric*)b, (FrGeneric*)out, n); break;
        case 5: field_ops<FpPlain>(op, (const FpPlain*)a, (const FpPlain*)b, (FpPlain*)out, n); break;
    }
}

// group: 1 = G1, 2 = G2.
void bellows_emu_curve_op(uint32_t group, uint32_t op, const void* p, const void* q, const void* a,
                          void* out_affine, void* out_jacobian, uint64_t n) {
    if (group == 1)
        curve_ops<Fp>(op, (const G1Jacobian*)p, (const G1Jacobian*)q, (const G1Affine*)a,
                      (G1Affine*)out_affine, (G1Jacobian*)out_jacobian, n);
    else
        curve_ops<Fp2>(op, (const G2Jacobian*)p, (const G2Jacobian*)q, (const G2Affine*)a,
                       (G2Affine*)out_affine, (G2Jacobian*)out_jacobian, n);
}

// group: 1 = G1, 2 = G2: the n encoded points at `in` (96 or 192 bytes each) decoded into `out`
// (blst's affine layout), a verdict each in `verdicts`, as bellows_decode_g1/g2 do on the device.
void bellows_emu_decode(uint32_t group, const uint8_t* in, void* out, uint8_t* verdicts,
                        uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        if (group == 1)
            verdicts[i] = decode_g1(in + 96 * i, (G1Affine*)out + i);
        else
            verdicts[i] = decode_g2(in + 192 * i, (G2Affine*)out + i);
    }
}

void bellows_emu_expand_table(Fr* out, const Fr* lo, const Fr* hi, uint32_t lo_bits,
                              uint64_t count) {
    uint64_t mask = (1ull << lo_bits) - 1;
    for (uint64_t e = 0; e < count; e++) out[e] = hi[e >> lo_bits] * lo[e & mask];
}

void bellows_emu_bitrev(Fr* data, uint32_t log_n, uint64_t batch) {
    uint64_t n = 1ull << log_n;
    for (uint64_t b = 0; b < batch; b++) {
        Fr* vec = data + b * n;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t r = bit_reverse((uint32_t)i, log_n);
            if (i < r) {
                Fr t = vec[i];
                vec[i] = vec[r];
                vec[r] = t;
            }
        }
    }
}

// The tiled bit reversal: the loops stand for the blocks (middle values) and threads (a, b).
void bellows_emu_bitrev_tiled(Fr* data, uint32_t log_n, uint64_t batch) {
    const uint32_t T = 1u << BITREV_TILE_BITS;
    const uint32_t mid_bits = log_n - 2 * BITREV_TILE_BITS;
    uint64_t n = 1ull << log_n;
    std::vector<Fr> tiles[2] = {std::vector<Fr>(T * T), std::vector<Fr>(T * T)};
    for (uint64_t v = 0; v < batch; v++) {
        Fr* vec = data + v * n;
        for (uint64_t m = 0; m < (1ull << mid_bits); m++) {
            uint64_t mr = bit_reverse((uint32_t)m, mid_bits);
            if (m > mr) continue;
            uint64_t mids[2] = {m, mr};
            for (int s = 0; s < 2; s++)
                for (uint32_t a = 0; a < T; a++)
                    for (uint32_t b = 0; b < T; b++)
                        tiles[s][a * T + b] = vec[bitrev_tile_position(log_n, mids[s], a, b)];
            for (int s = 0; s < 2; s++)
                for (uint32_t a = 0; a < T; a++)
                    for (uint32_t b = 0; b < T; b++) {
                        uint32_t ra = bit_reverse(a, BITREV_TILE_BITS), rb = bit_reverse(b, BITREV_TILE_BITS);
                        vec[bitrev_tile_position(log_n, mids[s], a, b)] = tiles[1 - s][rb * T + ra];
                    }
        }
    }
}

// One NTT pass over `batch` vectors starting at pass->data, as bellows_ntt_pass runs it: the
// loops stand for the grid (tiles × vectors) and the block's threads, the tile buffer for shared
// memory, in the kernel's swizzled slot order.
void bellows_emu_ntt_pass(const NttPass* pass, uint64_t batch) {
    NttPass a = *pass;
    const uint32_t tile_size = 1u << (a.k + a.c);
    const uint64_t tiles = a.n >> (a.k + a.c);
    std::vector<Fr> sm(tile_size);
    SwizzledTile t{sm.data()};
    for (uint64_t b = 0; b < batch; b++) {
        Fr* vec = (Fr*)a.data + b * a.n;
        for (uint64_t tile = 0; tile < tiles; tile++) {
            for (uint32_t e = 0; e < tile_size; e++) {
                uint64_t pos = tile_position(a, tile, e);
                t.set(e, pre_scale(a, pos, vec[pos]));
            }
            for (uint32_t s = 0; s < a.k;) {
                if (radix2_step_at(a, s)) {
                    for (uint32_t q = 0; q < tile_size / 2; q++) radix2_step(a, tile, t, s, q);
                    s += 1;
                } else {
                    for (uint32_t q = 0; q < tile_size / 4; q++) radix4_step(a, tile, t, s, q);
                    s += 2;
                }
            }
            for (uint32_t e = 0; e < tile_size; e++) {
                uint64_t pos = tile_position(a, tile, e);
                vec[pos] = post_scale(a, pos, t.get(e));
            }
        }
    }
}

}  // extern "C"

// The whole device MSM (kernels/msm/) with every kernel's grid run as a loop, in the order
// and with the sizes src/msm/pass/ launches them; the scan is sequential (the same exclusive sums).
// `chunk` is the accumulation chunk (small values exercise the head/tail fixups). Writes the
// window sums to window_out[0..windows) and the sum of the scalars equal to 1 to
// window_out[windows], as Jacobian points; the caller runs Horner's rule.
// `table`: non-zero to first build a precomputed table of the `bases_len` bases with windows of
// c bits, `table_chunk` points per launch pair and `table_per` points per inversion (as
// Msm::precompute_table does), and run the MSM over it: one shared bucket set, one
// window sum (window_out[0]) and the ones' sum in window_out[1].
// `bin_shift`: non-zero for the binned scatter with bins of 2^bin_shift keys, else the scatter by
// key ranges. Returns 0, or 1 for a shape the host never launches (binned with more than
// BIN_MAX_WINDOWS windows), 2 or 3 when a bin's or a bucket's cursor did not end
// where the next one starts (entries lost or written twice), 4 for a slot of the binned scratch
// left unwritten.
template <class F>
static uint32_t emu_msm(const Affine<F>* bases_in, uint64_t bases_len, const Fr* scalars, uint64_t n,
                    const uint64_t* density, uint32_t c, uint32_t chunk, uint32_t seg_len,
                    uint32_t table, uint32_t table_chunk,
                    uint32_t table_per, uint32_t bin_shift, Jacobian<F>* window_out) {
    using namespace msm;
    const uint32_t windows = (256 + c - 1) / c, half = 1u << (c - 1);
    const uint32_t sum_windows = table ? 1 : windows, keys = sum_windows * half;
    // The binned scatter keeps a digit's place for at most BIN_MAX_WINDOWS windows.
    if (bin_shift && windows > BIN_MAX_WINDOWS) return 1;
    std::vector<Affine<F>> table_points;
    const Affine<F>* bases = bases_in;
    if (table) {
        table_points.assign(bases_in, bases_in + bases_len);
        table_points.resize(bases_len * windows);
        std::vector<Xyzz<F>> scratch(table_chunk);
        for (uint64_t w = 1; w < windows; w++)
            for (uint64_t off = 0; off < bases_len; off += table_chunk) {
                const uint64_t count = std::min<uint64_t>(table_chunk, bases_len - off);
                const Affine<F>* prev = table_points.data() + (w - 1) * bases_len + off;
                Affine<F>* out = table_points.data() + w * bases_len + off;
                for (uint64_t t = 0; t < count; t++) table_double_body<F>(prev, count, c, t, scratch.data());
                const uint64_t threads = (count + table_per - 1) / table_per;
                for (uint64_t t = 0; t < threads; t++)
                    batch_to_affine_body<F>(scratch.data(), count, threads, table_per, t, out);
            }
        bases = table_points.data();
    }
    std::vector<uint32_t> rank;
    if (density) {
        uint64_t words = (n + 63) / 64, acc = 0;
        rank.resize(words);
        for (uint64_t w = 0; w < words; w++) {
            uint32_t pc = 0;
            popcount_body(density, words, w, &pc);
            rank[w] = (uint32_t)acc;
            acc += pc;
        }
    }
    const uint64_t max_entries = n * windows;
    std::vector<uint32_t> counts(keys + 1, 0), entries(max_entries + 1, 0xffffffffu), ones(n + 1);
    uint32_t ones_count = 0;
    std::vector<uint32_t> listed(bin_shift ? n + 1 : 0);
    uint32_t listed_count = 0;
    DigitArgs a{scalars, n, 0, density, density ? rank.data() : nullptr, c, windows,
                counts.data(), entries.data(), ones.data(), &ones_count, table ? bases_len : 0,
                keys, 0, 1, bin_shift ? listed.data() : nullptr, &listed_count};
    for (uint64_t i = 0; i < n; i++) digits_body(a, i, false);
    uint32_t run = 0;
    for (uint32_t k = 0; k <= keys; k++) {
        uint32_t x = counts[k];
        counts[k] = run;
        run += x;
    }
    std::vector<uint32_t> offsets(counts);
    if (bin_shift) {
        // The binned scatter (src/msm/pass/scatter.rs), in tiles of BIN_TILE scalars as the
        // device's blocks take them: a tile's counts per bin, its runs reserved from the bins'
        // cursors, its pairs written; then every pair placed, in order.
        const uint32_t bins = (keys + (1u << bin_shift) - 1) >> bin_shift;
        std::vector<uint32_t> cursors(bins), block_count(bins), block_base(bins);
        for (uint32_t b = 0; b < bins; b++) bin_start_body(offsets.data(), bin_shift, b, cursors.data());
        std::vector<uint64_t> scratch(offsets[keys] + 1, ~0ull);
        constexpr uint64_t BIN_TILE = 37;  // odd, so that tiles end anywhere
        std::vector<uint32_t> place(BIN_TILE * (BIN_MAX_WINDOWS / 2));
        for (uint64_t tile = 0; tile < listed_count; tile += BIN_TILE) {
            std::fill(block_count.begin(), block_count.end(), 0);
            std::fill(place.begin(), place.end(), 0);
            for (uint64_t t = 0; t < BIN_TILE; t++)
                bin_body<false>(a, listed_scalar(a, tile + t, listed_count), bin_shift, block_count.data(),
                                &place[t * (BIN_MAX_WINDOWS / 2)], scratch.data());
            for (uint32_t b = 0; b < bins; b++) {
                block_base[b] = block_count[b] ? atomic_add(&cursors[b], block_count[b]) : 0;
            }
            for (uint64_t t = 0; t < BIN_TILE; t++)
                bin_body<true>(a, listed_scalar(a, tile + t, listed_count), bin_shift, block_base.data(),
                               &place[t * (BIN_MAX_WINDOWS / 2)], scratch.data());
        }
        for (uint32_t b = 0; b < bins; b++) {
            const uint32_t end = (b + 1) << bin_shift < keys ? offsets[(b + 1) << bin_shift] : offsets[keys];
            if (cursors[b] != end) return 2;  // a bin's cursor missed its end
        }
        for (uint64_t j = 0; j < offsets[keys]; j++) {
            if ((scratch[j] >> 32) >= keys) return 4;  // a pair never written
            place_body(scratch.data(), j, counts.data(), entries.data());
        }
    } else {
        // The scatter in three launches, as the device may run it (src/msm/plan.rs, scatter_passes):
        // each takes its key range, or none when the entries are few (scatter_range).
        for (uint32_t p = 0; p < 3; p++) {
            DigitArgs x = a;
            x.pass = p;
            x.passes = 3;
            uint32_t lo, hi;
            if (!scatter_range(x, lo, hi)) continue;
            for (uint64_t i = 0; i < n; i++) digits_body(x, i, true, lo, hi);
        }
    }
    for (uint32_t k = 0; k < keys; k++)
        if (counts[k] != offsets[k + 1]) return 3;  // a bucket's cursor missed its end
    const uint64_t acc_entries = max_entries;
    // chunk = 0: the device's rule (the real count over the threads), with the threads sized as
    // src/msm/pass/accumulate.rs sizes them for a GPU of 64 (so that a chunk holds several entries).
    const uint64_t threads = chunk ? (acc_entries + chunk - 1) / chunk
                                   : std::min<uint64_t>(64, (acc_entries + MIN_CHUNK - 1) / MIN_CHUNK);
    chunk = effective_chunk(chunk, offsets.data(), keys, threads ? threads : 1);
    std::vector<Xyzz<F>> buckets(keys, Xyzz<F>::identity()), heads(threads), tails(threads);
    for (uint64_t t = 0; t < threads; t++)
        accumulate_body<F>(bases, entries.data(), offsets.data(), keys, chunk, t, buckets.data(),
                           heads.data(), tails.data());
    std::vector<uint32_t> big(threads / 32 + 2);
    uint32_t big_count = 0;
    for (uint64_t k = 0; k < keys; k++)
        fixup_body<F>(offsets.data(), keys, chunk, k, heads.data(), tails.data(), buckets.data(),
                      big.data(), &big_count);
    for (uint32_t b = 0; b < big_count; b++) {  // the device's warp-per-bucket pass, serially
        uint32_t key = big[b];
        uint32_t t0 = offsets[key] / chunk, t1 = (offsets[key + 1] - 1) / chunk;
        Xyzz<F> acc = tails[t0];
        for (uint32_t t = t0 + 1; t <= t1; t++) acc = Xyzz<F>::add(acc, heads[t]);
        buckets[key] = acc;
    }
    // The window pass: in two levels (src/msm/pass/reduce.rs, window_sums), or with EMU_FLAT in seg_len the
    // flat pass of one level with double-and-add (window_sums_flat). Tree reductions per window
    // in steps of 32, as reduce_groups does.
    auto reduce = [&](std::vector<Xyzz<F>> cur, uint32_t len) {
        while (true) {
            uint32_t parts = (len + 31) / 32;
            std::vector<Xyzz<F>> next((uint64_t)sum_windows * parts);
            for (uint64_t t = 0; t < next.size(); t++)
                reduce_body<F>(cur.data(), sum_windows, len, 32, t, next.data());
            cur.swap(next);
            len = parts;
            if (parts == 1) return cur;
        }
    };
    const bool flat = (seg_len & EMU_FLAT) != 0;
    const uint32_t seg_req = seg_len & ~EMU_FLAT;
    std::vector<Xyzz<F>> cur;
    if (flat) {
        const uint32_t seg = seg_req < half ? seg_req : half, segs = half / seg;
        std::vector<Xyzz<F>> seg_out((uint64_t)segs * sum_windows);
        for (uint64_t t = 0; t < seg_out.size(); t++)
            window_segment_body<F>(buckets.data(), half, seg, sum_windows, 1, true, t, seg_out.data(),
                                   nullptr);
        cur = reduce(seg_out, segs);
    } else {
        // Two levels, as window_sums: segments of seg_len over the buckets, then the flat pass
        // with weights from 0 over their totals in segments of 8, combined as R_0 + seg·R_1.
        const uint32_t seg = seg_req < half ? seg_req : half, segs = half / seg;
        std::vector<Xyzz<F>> acc((uint64_t)segs * sum_windows), total(acc.size());
        for (uint64_t t = 0; t < acc.size(); t++)
            window_segment_body<F>(buckets.data(), half, seg, sum_windows, 1, false, t, acc.data(),
                                   total.data());
        cur = reduce(acc, segs);
        if (segs > 1) {
            const uint32_t s1 = segs < 8 ? segs : 8, segs1 = segs / s1;
            std::vector<Xyzz<F>> acc1((uint64_t)segs1 * sum_windows);
            for (uint64_t t = 0; t < acc1.size(); t++)
                window_segment_body<F>(total.data(), segs, s1, sum_windows, 0, true, t, acc1.data(),
                                       nullptr);
            std::vector<Xyzz<F>> r1 = reduce(acc1, segs1);
            for (uint64_t t = 0; t < sum_windows; t++)
                window_horner_body<F>(cur.data(), r1.data(), (uint32_t)__builtin_ctz(seg), sum_windows, t);
        }
    }
    for (uint32_t w = 0; w < sum_windows; w++) window_out[w] = Xyzz<F>::to_jacobian(cur[w]);
    const uint64_t ones_threads = (n + 63) / 64;
    std::vector<Xyzz<F>> ones_out(ones_threads ? ones_threads : 1, Xyzz<F>::identity());
    for (uint64_t t = 0; t < ones_threads; t++)
        sum_listed_body<F>(bases, ones.data(), &ones_count, 64, t, ones_out.data());
    Xyzz<F> o = Xyzz<F>::identity();
    for (auto& x : ones_out) o = Xyzz<F>::add(o, x);
    window_out[sum_windows] = Xyzz<F>::to_jacobian(o);
    return 0;
}

extern "C" {

// group: 1 = G1, 2 = G2.
uint32_t bellows_emu_msm(uint32_t group, const void* bases, uint64_t bases_len, const void* scalars,
                     uint64_t n, const uint64_t* density, uint32_t c, uint32_t chunk,
                     uint32_t seg_len, uint32_t table,
                     uint32_t table_chunk, uint32_t table_per, uint32_t bin_shift, void* window_out) {
    if (group == 1)
        return emu_msm<Fp>((const G1Affine*)bases, bases_len, (const Fr*)scalars, n, density, c, chunk,
                    seg_len, table, table_chunk, table_per,
                    bin_shift, (G1Jacobian*)window_out);
    else
        return emu_msm<Fp2>((const G2Affine*)bases, bases_len, (const Fr*)scalars, n, density, c, chunk,
                     seg_len, table, table_chunk, table_per,
                     bin_shift, (G2Jacobian*)window_out);
}

}  // extern "C"
