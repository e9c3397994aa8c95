// exp of an f32, as scanc defines it: the reference executor, constant folding and the CPU
// backend all call this one function, so that `ordered` CPU runs keep the reference's bits.
// glibc's expf is a call per element; this is straight-line arithmetic that the compiler turns
// into SIMD code in the CPU backend's lane loops, with the same bits at every ISA (no FMA
// contraction, no table lookups). Within 1 ulp of exp (tests/ir/exp_f32_test.cpp). Ops whose
// loops stay scalar anyway (softplus and logaddexp call log1p) keep glibc's faster scalar expf.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

namespace scanc {

inline float exp_f32(float x) {
    // exp(x) = 2^n exp(r), n = round(x / ln 2), r = x - n ln 2 in [-ln 2 / 2, ln 2 / 2]. Inputs
    // are first clamped to where n fits the two scalings below: exp(89) overflows and exp(-104)
    // is below half the smallest subnormal, so the clamps change no result. NaN goes to 0 here
    // (a NaN must not reach the integer conversion) and comes back at the end.
    float c = x < -104.0f ? -104.0f : x;
    c = c > 89.0f ? 89.0f : c;
    c = x != x ? 0.0f : c;
    // Round to nearest by the 1.5 x 2^23 trick: additions only, the same on every ISA.
    constexpr float kRound = 12582912.0f;
    const float n = (c * 1.44269504088896341f + kRound) - kRound;
    // ln 2 in two parts (Cody-Waite): n * hi is exact (hi has 9 significant bits, |n| <= 150).
    const float r = (c - n * 0.693359375f) - n * -2.12194440e-4f;
    // exp(r) = 1 + r + r^2 p(r) (Cephes' expf coefficients).
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    const float y = (p * (r * r) + r) + 1.0f;
    // 2^n as two normal powers of two (n in [-150, 128]): y 2^n1 is exact, the second product
    // rounds once, to a subnormal, zero or infinity where the result is one.
    const std::int32_t ni = static_cast<std::int32_t>(n), n1 = ni / 2, n2 = ni - n1;
    const float s1 = std::bit_cast<float>(static_cast<std::uint32_t>(n1 + 127) << 23);
    const float s2 = std::bit_cast<float>(static_cast<std::uint32_t>(n2 + 127) << 23);
    const float e = (y * s1) * s2;
    return x != x ? x : e;
}

// exp at the compute dtype T: scanc's for f32, the C library's for f64.
template <typename T>
inline T exp_of(T x) {
    if constexpr (std::is_same_v<T, float>) return exp_f32(x);
    else return std::exp(x);
}

}  // namespace scanc
