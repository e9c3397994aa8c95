// min and max of f32 vectors with the scalar ops' semantics (MinF / MaxF in ops_impl.inc): the
// smaller (larger) by a strict compare, else a, so ties keep a; b where b alone is NaN, so a
// NaN wins, a's first. Used by the register kernels (ops_seg_local.inc) and the one-op vector
// scans (ops_serial.inc). Only for translation units built for AVX2 / AVX-512.
#pragma once

#if defined(__x86_64__) && defined(__AVX2__)
#include <immintrin.h>

namespace scanc::cpu {
// Internal linkage: each instruction set's translation unit keeps its own copy.
namespace {

[[gnu::always_inline]] inline __m256 pick8_regs(__m256 a, __m256 b, __m256 b_wins) {
    const __m256 only_b_nan = _mm256_andnot_ps(_mm256_cmp_ps(a, a, _CMP_UNORD_Q), _mm256_cmp_ps(b, b, _CMP_UNORD_Q));
    return _mm256_blendv_ps(a, b, _mm256_or_ps(b_wins, only_b_nan));
}
[[gnu::always_inline]] inline __m256 min8_regs(__m256 a, __m256 b) {
    return pick8_regs(a, b, _mm256_cmp_ps(b, a, _CMP_LT_OQ));
}
[[gnu::always_inline]] inline __m256 max8_regs(__m256 a, __m256 b) {
    return pick8_regs(a, b, _mm256_cmp_ps(a, b, _CMP_LT_OQ));
}

#if defined(__AVX512F__)
[[gnu::always_inline]] inline __m512 pick16_regs(__m512 a, __m512 b, __mmask16 b_wins) {
    const __mmask16 only_b_nan = _mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q) & _mm512_cmp_ps_mask(a, a, _CMP_ORD_Q);
    return _mm512_mask_blend_ps(b_wins | only_b_nan, a, b);
}
[[gnu::always_inline]] inline __m512 min16_regs(__m512 a, __m512 b) {
    return pick16_regs(a, b, _mm512_cmp_ps_mask(b, a, _CMP_LT_OQ));
}
[[gnu::always_inline]] inline __m512 max16_regs(__m512 a, __m512 b) {
    return pick16_regs(a, b, _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ));
}
#endif

}  // namespace
}  // namespace scanc::cpu
#endif
