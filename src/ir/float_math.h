// Float functions as scanc defines them, shared by the reference executor, constant folding and
// the CPU backend, so that `ordered` CPU runs keep the reference's bits: exp, log and log1p of
// an f32, and the formulas built on them (sigmoid, softplus, logaddexp). glibc's are a call per
// element; exp_f32, log_f32 and log1p_f32 are straight-line arithmetic that the compiler
// turns into SIMD code in the CPU backend's lane loops, with the same bits at every ISA (no FMA
// contraction, no table lookups). Each is within 1 ulp (tests/ir/float_math_test.cpp).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace scanc {

inline float exp_f32(float x) {
    // exp(x) = 2^n exp(r), n = round(x / ln 2), r = x - n ln 2 in [-ln 2 / 2, ln 2 / 2]. Inputs
    // are first clamped to where n fits the two scalings below: exp(89) overflows and exp(-104)
    // is below half the smallest subnormal, so the clamps change no result. Written as
    // (a > b ? a : b) and (a < b ? a : b), one maxps and one minps in the lane loops, which also
    // take NaN to -104 (a NaN must not reach the integer conversion); it comes back at the end.
    float c = x > -104.0f ? x : -104.0f;
    c = c < 89.0f ? c : 89.0f;
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
    // rounds once, to a subnormal, zero or infinity where the result is one. n1 = floor(n / 2)
    // (a shift; any split with both parts normal gives the same product).
    const std::int32_t ni = static_cast<std::int32_t>(n), n1 = ni >> 1, n2 = ni - n1;
    const float s1 = std::bit_cast<float>(static_cast<std::uint32_t>(n1 + 127) << 23);
    const float s2 = std::bit_cast<float>(static_cast<std::uint32_t>(n2 + 127) << 23);
    const float e = (y * s1) * s2;
    return x != x ? x : e;
}

// log(2^k (1 + f)) + c for f in [sqrt(2)/2 - 1, sqrt(2) - 1): log(1 + f) = 2 atanh(s), s = f /
// (2 + f), by a degree-4 polynomial in s^2 (musl's logf and log1pf and their coefficients).
inline float log_reduced(float f, float k, float c) {
    const float s = f / (2.0f + f), z = s * s, w = z * z;
    const float t1 = w * (0.40000972152f + w * 0.24279078841f);
    const float t2 = z * (0.66666662693f + w * 0.28498786688f);
    const float hfsq = 0.5f * f * f;
    return (((s * (hfsq + (t2 + t1)) + (k * 9.0580006145e-06f + c)) - hfsq) + f) + k * 6.9313812256e-01f;
}

// The exponent k and the f of log_reduced of a positive normal float's bits: 2^k (1 + f).
inline void split_log(std::uint32_t bits, std::int32_t& k, float& f) {
    const std::uint32_t i = bits + (0x3f800000u - 0x3f3504f3u);
    k = static_cast<std::int32_t>(i >> 23) - 0x7f;
    f = std::bit_cast<float>((i & 0x007fffffu) + 0x3f3504f3u) - 1.0f;
}

// log of an f32 (shared like exp_f32). Subnormals are scaled by 2^23 first. Every path is
// computed and the right one selected. Within 1 ulp of log.
inline float log_f32(float x) {
    const bool sub = x < 1.17549435e-38f;
    std::int32_t k;
    float f;
    split_log(std::bit_cast<std::uint32_t>(sub ? x * 8388608.0f : x), k, f);
    const float r = log_reduced(f, static_cast<float>(sub ? k - 23 : k), 0.0f);
    // 0: -inf; below 0 or NaN: NaN; inf: inf.
    const float low = x == 0.0f ? -INFINITY : x < 0.0f ? NAN : r;
    return x != x || x == INFINITY ? x : low;
}

// log(1 + x) of an f32 (shared like exp_f32): log_reduced of u = 1 + x, plus the rounding error
// of 1 + x as a correction c / u. Every path is computed and the right one selected. Within 1
// ulp of log1p.
inline float log1p_f32(float x) {
    const std::uint32_t ix = std::bit_cast<std::uint32_t>(x);
    const float u = 1.0f + x;
    std::int32_t ku;
    float fu;
    split_log(std::bit_cast<std::uint32_t>(u), ku, fu);
    float c = ku >= 2 ? 1.0f - (u - x) : x - (u - 1.0f);
    c = ku < 25 ? c / u : 0.0f;
    // 1 + x within [sqrt(2)/2, sqrt(2)): x itself is f, exactly (k = 0, no correction).
    const bool near = x > -0.29289323f && x < 0.41421357f;
    const float r = log_reduced(near ? x : fu, near ? 0.0f : static_cast<float>(ku), near ? 0.0f : c);
    // |x| < 2^-24: x (1 + x rounds to 1). x = -1: -inf; x < -1 or NaN: NaN; x = inf: inf.
    const float tiny = (ix & 0x7fffffffu) < 0x33800000u ? x : r;
    const float low = x == -1.0f ? -INFINITY : x < -1.0f ? NAN : tiny;
    return x != x || x == INFINITY ? x : low;
}

// At the compute dtype: scanc's functions for f32, the C library's for f64.
inline float exp_of(float x) { return exp_f32(x); }
inline double exp_of(double x) { return std::exp(x); }
inline float log_of(float x) { return log_f32(x); }
inline double log_of(double x) { return std::log(x); }
inline float log1p_of(float x) { return log1p_f32(x); }
inline double log1p_of(double x) { return std::log1p(x); }

// The logistic function, stable on both sides.
template <typename T>
inline T sigmoid_of(T x) {
    return x >= T(0) ? T(1) / (T(1) + exp_of(-x)) : exp_of(x) / (T(1) + exp_of(x));
}

// log(1 + exp(x)), stable on both sides.
template <typename T>
inline T softplus_of(T x) {
    return x > T(0) ? x + log1p_of(exp_of(-x)) : log1p_of(exp_of(x));
}

// log(exp(a) + exp(b)): NaN if either is; +inf dominates, and both -inf give -inf (no inf - inf).
template <typename T>
inline T logaddexp_of(T a, T b) {
    if (a != a || b != b) return std::numeric_limits<T>::quiet_NaN();
    T m = a < b ? b : a;
    if (std::isinf(m)) return m;
    return m + log1p_of(exp_of(-std::fabs(a - b)));
}

}  // namespace scanc
