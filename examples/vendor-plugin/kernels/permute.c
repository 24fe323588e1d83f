/* The vendor's "device kernel", in C: the bit-reversal permutation of a vector of 2^log_n
 * scalars of 32 bytes (4 little-endian 64-bit limbs each, Bellows' crossing layout). Compiled into
 * a static library by build.rs and linked into the plugin, as a CUDA or C++ kernel library would
 * be. The C ABI is the contract: plain pointers and sizes, no exceptions, no allocation. */

#include <stddef.h>
#include <stdint.h>

static size_t reverse_bits(size_t x, unsigned bits) {
    size_t r = 0;
    for (unsigned i = 0; i < bits; i++) {
        r = (r << 1) | (x & 1);
        x >>= 1;
    }
    return r;
}

/* Permutes data[0 .. 2^log_n) (each element 4 uint64_t) into bit-reversed order, in place.
 * Returns 0, or -1 when log_n is out of range. */
int vendor_bitrev_permute(uint64_t *data, unsigned log_n) {
    if (log_n >= 8 * sizeof(size_t)) {
        return -1;
    }
    size_t n = (size_t)1 << log_n;
    for (size_t i = 0; i < n; i++) {
        size_t j = reverse_bits(i, log_n);
        if (i < j) {
            for (int k = 0; k < 4; k++) {
                uint64_t t = data[4 * i + k];
                data[4 * i + k] = data[4 * j + k];
                data[4 * j + k] = t;
            }
        }
    }
    return 0;
}
