// Square transposes in SIMD registers: r[i] (row i) -> r[j] (column j); each is its own
// inverse. Used by the tile moves (ops_memory.inc) and the register kernels
// (ops_seg_local.inc). Only for translation units built for AVX2 / AVX-512.
#pragma once

#if defined(__x86_64__) && defined(__AVX2__)
#include <immintrin.h>

namespace scanc::cpu {
// Internal linkage: each instruction set's translation unit keeps its own copy.
namespace {

// 8x8 floats: 24 shuffles.
[[gnu::always_inline]] inline void transpose8_regs(__m256* r) {
    __m256 t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 4; ++i) {
        r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
}

#if defined(__AVX512F__)
// 16x16 floats: 64 shuffles (a third fewer per element than 8x8). After the first two stages
// u[4q + c]'s 128-bit lane L holds column 4L + c of rows 4q..4q + 3; the last two gather the
// four row quads of each column from u[c], u[4 + c], u[8 + c], u[12 + c].
[[gnu::always_inline]] inline void transpose16_regs(__m512* r) {
    __m512 t[16], u[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        u[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
        u[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int c = 0; c < 4; ++c) {
        // lanes 0/2 (0x88) and 1/3 (0xDD) of row quads 0-1 and 2-3
        __m512 a0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88);
        __m512 a1 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xDD);
        __m512 b0 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88);
        __m512 b1 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xDD);
        r[c] = _mm512_shuffle_f32x4(a0, b0, 0x88);
        r[8 + c] = _mm512_shuffle_f32x4(a0, b0, 0xDD);
        r[4 + c] = _mm512_shuffle_f32x4(a1, b1, 0x88);
        r[12 + c] = _mm512_shuffle_f32x4(a1, b1, 0xDD);
    }
}
#endif

}  // namespace
}  // namespace scanc::cpu
#endif
