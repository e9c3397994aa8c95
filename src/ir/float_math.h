// Float functions as scanc defines them, shared by the reference executor, constant folding and
// the CPU backend, so that `ordered` CPU runs keep the reference's bits: exp, exp2, log, log2,
// log10, log1p, expm1, tanh, sin and cos of f32 and f64, and the formulas built on them
// (sigmoid, softplus, logaddexp).
// glibc's are a call per element; these are straight-line arithmetic that the compiler turns
// into SIMD code in the CPU backend's lane loops, with the same bits at every ISA (no FMA
// contraction, no table lookups, no conversions between f64 and 64-bit integers, which AVX2
// lacks). Each is within 1 ulp (tests/ir/float_math_test.cpp, float_math_base_test.cpp).
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace scanc {
// Internal linkage: the CPU backend includes these in files compiled for AVX2 and AVX-512, and
// an inline function of external linkage would leave the linker one copy for every caller,
// possibly one compiled for an instruction set the machine lacks.
namespace {

// y 2^(n1 + n2) for n1, n2 exponents of normal numbers of F: y 2^n1 is exact, and the second
// product rounds once, to a subnormal, zero or infinity where the result is one.
template <typename F, typename I>
inline F times_two_powers(F y, I n1, I n2) {
    using U = std::make_unsigned_t<I>;
    constexpr int kMantissa = std::numeric_limits<F>::digits - 1;
    constexpr I kBias = std::numeric_limits<F>::max_exponent - 1;
    const F s1 = std::bit_cast<F>(static_cast<U>(n1 + kBias) << kMantissa);
    const F s2 = std::bit_cast<F>(static_cast<U>(n2 + kBias) << kMantissa);
    return (y * s1) * s2;
}

// 2^n for an integral n in [-151, 129], as two normal powers of two (y 2^n1 is exact, the
// second product rounds once, to a subnormal, zero or infinity where the result is one).
// n1 = floor(n / 2) (a shift; any split with both parts normal gives the same product).
inline float times_two_to(float y, float n) {
    const std::int32_t ni = static_cast<std::int32_t>(n), n1 = ni >> 1;
    return times_two_powers(y, n1, ni - n1);
}

// exp(r) - 1 - r = r^2 p(r) for |r| <= ln 2 / 2: p (Cephes' expf coefficients).
inline float exp_poly_f32(float r) {
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    return p * r + 5.0000001201e-1f;
}

inline float exp_f32(float x) {
    // exp(x) = 2^n exp(r), n = round(x / ln 2), r = x - n ln 2 in [-ln 2 / 2, ln 2 / 2]. Inputs
    // are first clamped to where n fits the two scalings of times_two_to: exp(89) overflows and
    // exp(-104) is below half the smallest subnormal, so the clamps change no result. Written as
    // (a > b ? a : b) and (a < b ? a : b), one maxps and one minps in the lane loops, which also
    // take NaN to -104 (a NaN must not reach the integer conversion); it comes back at the end.
    float c = x > -104.0f ? x : -104.0f;
    c = c < 89.0f ? c : 89.0f;
    // Round to nearest by the 1.5 x 2^23 trick: additions only, the same on every ISA.
    constexpr float kRound = 12582912.0f;
    const float n = (c * 1.44269504088896341f + kRound) - kRound;
    // ln 2 in two parts (Cody-Waite): n * hi is exact (hi has 9 significant bits, |n| <= 150).
    const float r = (c - n * 0.693359375f) - n * -2.12194440e-4f;
    const float y = (exp_poly_f32(r) * (r * r) + r) + 1.0f;
    const float e = times_two_to(y, n);
    return x != x ? x : e;
}

// 2^x of an f32: 2^n 2^r, n = round(x), r = x - n exact in [-1/2, 1/2]; 2^r = exp(a + e) with
// a + e = r ln 2 to about 2^-35 of it: r's high 12 bits times ln 2's high 12 (exact) plus the small
// products, a their rounded sum and e its rounding error, added to exp_f32's polynomial. An
// integer x gives r = 0 and exactly 2^x. Clamped (NaN too) to where n fits times_two_to: 2^129
// overflows and 2^-151 is below half the smallest subnormal. Within 1 ulp (checked over every
// f32).
inline float exp2_f32(float x) {
    float c = x > -151.0f ? x : -151.0f;
    c = c < 129.0f ? c : 129.0f;
    constexpr float kRound = 12582912.0f;
    const float n = (c + kRound) - kRound, r = c - n;
    const float rh = std::bit_cast<float>(std::bit_cast<std::uint32_t>(r) & 0xfffff000u), rl = r - rh;
    const float hi = rh * 0x1.62ep-1f, lo = rl * 0x1.62ep-1f + r * 0x1.0bfbe8p-15f;
    const float a = hi + lo, e = lo - (a - hi);
    const float y = ((exp_poly_f32(a) * (a * a) + e) + a) + 1.0f;
    const float v = times_two_to(y, n);
    return x != x ? x : v;
}

// log(1 + f) - f + f^2 / 2 for f in [sqrt(2)/2 - 1, sqrt(2) - 1): log(1 + f) = 2 atanh(s), s =
// f / (2 + f), by a degree-4 polynomial in s^2 (musl's logf and log1pf and their coefficients);
// hfsq = f^2 / 2.
inline float log1p_kernel(float f, float& hfsq) {
    const float s = f / (2.0f + f), z = s * s, w = z * z;
    const float t1 = w * (0.40000972152f + w * 0.24279078841f);
    const float t2 = z * (0.66666662693f + w * 0.28498786688f);
    hfsq = 0.5f * f * f;
    return s * (hfsq + (t2 + t1));
}

// The same for f64, by fdlibm's degree-7 polynomial in s^2 (its log and log1p coefficients).
inline double log1p_kernel(double f, double& hfsq) {
    const double s = f / (2.0 + f), z = s * s, w = z * z;
    const double t1 = w * (3.999999999940941908e-01 + w * (2.222219843214978396e-01 + w * 1.531383769920937332e-01));
    const double t2 =
        z * (6.666666666666735130e-01 + w * (2.857142874366239149e-01 + w * (1.818357216161805012e-01 + w * 1.479819860511658591e-01)));
    hfsq = 0.5 * f * f;
    return s * (hfsq + (t2 + t1));
}

// log(2^k (1 + f)) + c at T, ln 2 in two parts (musl's for f32, fdlibm's for f64; k ln2_hi is
// exact).
template <typename T>
inline T log_reduced(T f, T k, T c) {
    constexpr bool f32 = std::is_same_v<T, float>;
    constexpr T ln2_hi = f32 ? T(6.9313812256e-01f) : T(6.93147180369123816490e-01);
    constexpr T ln2_lo = f32 ? T(9.0580006145e-06f) : T(1.90821492927058770002e-10);
    T hfsq;
    const T r = log1p_kernel(f, hfsq);
    return (((r + (k * ln2_lo + c)) - hfsq) + f) + k * ln2_hi;
}

// The exponent k and the f of log_reduced of a positive normal float's bits: 2^k (1 + f).
inline void split_log(std::uint32_t bits, std::int32_t& k, float& f) {
    const std::uint32_t i = bits + (0x3f800000u - 0x3f3504f3u);
    k = static_cast<std::int32_t>(i >> 23) - 0x7f;
    f = std::bit_cast<float>((i & 0x007fffffu) + 0x3f3504f3u) - 1.0f;
}
// The same of any positive f32: subnormals are scaled by 2^23 first.
inline void split_log_of(float x, float& k, float& f) {
    const bool sub = x < 1.17549435e-38f;
    std::int32_t ki;
    split_log(std::bit_cast<std::uint32_t>(sub ? x * 8388608.0f : x), ki, f);
    k = static_cast<float>(sub ? ki - 23 : ki);
}

// A logarithm's special values: 0: -inf; below 0 or NaN: NaN; inf: inf; r elsewhere.
template <typename T>
inline T log_special(T x, T r) {
    const T low = x == T(0) ? -std::numeric_limits<T>::infinity() : x < T(0) ? std::numeric_limits<T>::quiet_NaN() : r;
    return x != x || x == std::numeric_limits<T>::infinity() ? x : low;
}

// log of an f32 (shared like exp_f32). Every path is computed and the right one selected.
// Within 1 ulp of log.
inline float log_f32(float x) {
    float k, f;
    split_log_of(x, k, f);
    return log_special(x, log_reduced(f, k, 0.0f));
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

// exp(hi - lo) for |hi - lo| <= about ln 2 / 2: 1 + r + r g / (2 - g), r = hi - lo, g = r -
// r^2 P(r^2) (fdlibm's exp and its coefficients), with lo folded in last so that its bits are
// not lost in r. exp_reduced_rest is r g / (2 - g), exp(r) - 1 - r (erfc_far_f64 sums the
// rest itself).
inline double exp_reduced_rest(double hi, double lo) {
    const double r = hi - lo, rr = r * r;
    const double g = r - rr * (1.66666666666666019037e-01 +
                               rr * (-2.77777777770155933842e-03 +
                                     rr * (6.61375632143793436117e-05 + rr * (-1.65339022054652515390e-06 + rr * 4.13813679705723846039e-08))));
    return (r * g) / (2.0 - g);
}
inline double exp_reduced_f64(double hi, double lo) { return 1.0 - ((lo - exp_reduced_rest(hi, lo)) - hi); }

// y 2^n for t = n + 1.5 x 2^52 (n in t's low bits, n in [-1076, 1025]), as two normal powers of
// two, n1 = floor(n / 2) by a logical shift of n + 2048: y 2^n1 is exact, the second product
// rounds once.
inline double times_two_to_shifted(double y, double t) {
    constexpr double kRound = 6755399441055744.0;
    const std::int64_t ni = static_cast<std::int64_t>(std::bit_cast<std::uint64_t>(t) - std::bit_cast<std::uint64_t>(kRound));
    const std::int64_t n1 = static_cast<std::int64_t>(static_cast<std::uint64_t>(ni + 2048) >> 1) - 1024;
    return times_two_powers(y, n1, ni - n1);
}

inline double exp_f64(double x) {
    // As exp_f32: exp(x) = 2^n exp(r), the input first clamped to where n fits two normal
    // scalings (exp(710) overflows, exp(-746) is below half the smallest subnormal); NaN comes
    // back at the end.
    double c = x > -746.0 ? x : -746.0;
    c = c < 710.0 ? c : 710.0;
    // Round to nearest by the 1.5 x 2^52 trick; t's low bits then hold n as an integer.
    constexpr double kRound = 6755399441055744.0;
    const double t = c * 1.44269504088896338700 + kRound, n = t - kRound;
    // r = hi - lo, ln 2 in fdlibm's two parts (n * ln2_hi is exact), kept apart for the end.
    const double hi = c - n * 6.93147180369123816490e-01, lo = n * 1.90821492927058770002e-10;
    const double e = times_two_to_shifted(exp_reduced_f64(hi, lo), t);
    return x != x ? x : e;
}

// 2^x of an f64: 2^n 2^r, n = round(x), r = x - n exact in [-1/2, 1/2]; 2^r = exp(hi - lo) with
// hi - lo = r ln 2 to about 2^-75 of it: r's high 26 bits times ln 2's high 21 (exact) plus the
// small products. An integer x gives r = 0 and exactly 2^x. Clamped (NaN too) to where n fits
// times_two_to_shifted: 2^1025 overflows and 2^-1076 is below half the smallest subnormal.
// Within 1 ulp.
inline double exp2_f64(double x) {
    double c = x > -1076.0 ? x : -1076.0;
    c = c < 1025.0 ? c : 1025.0;
    constexpr double kRound = 6755399441055744.0;
    const double t = c + kRound, r = c - (t - kRound);
    const double rh = std::bit_cast<double>(std::bit_cast<std::uint64_t>(r) & 0xfffffffff8000000u), rl = r - rh;
    const double hi = rh * 0x1.62e43p-1, lo = -(rl * 0x1.62e43p-1 + r * -0x1.05c610ca86c39p-29);
    const double e = times_two_to_shifted(exp_reduced_f64(hi, lo), t);
    return x != x ? x : e;
}

// The exponent k (as a double, without an integer conversion) and the f of log_reduced of a
// positive normal double's bits: 2^k (1 + f).
inline void split_log_f64(std::uint64_t bits, double& k, double& f) {
    const std::uint64_t i = bits + (0x3ff0000000000000u - 0x3fe6a09e667f3bcdu);
    k = std::bit_cast<double>((i >> 52) | 0x4330000000000000u) - (4503599627370496.0 + 1023.0);
    f = std::bit_cast<double>((i & 0x000fffffffffffffu) + 0x3fe6a09e667f3bcdu) - 1.0;
}
// The same of any positive f64: subnormals are scaled by 2^52 first.
inline void split_log_of(double x, double& k, double& f) {
    const bool sub = x < 2.2250738585072014e-308;
    split_log_f64(std::bit_cast<std::uint64_t>(sub ? x * 4503599627370496.0 : x), k, f);
    k = sub ? k - 52.0 : k;
}

// log of an f64, as log_f32. Within 1 ulp of log.
inline double log_f64(double x) {
    double k, f;
    split_log_of(x, k, f);
    return log_special(x, log_reduced(f, k, 0.0));
}

// log(1 + x) of an f64, as log1p_f32. Within 1 ulp of log1p.
inline double log1p_f64(double x) {
    const double u = 1.0 + x;
    double ku, fu;
    split_log_f64(std::bit_cast<std::uint64_t>(u), ku, fu);
    double c = ku >= 2.0 ? 1.0 - (u - x) : x - (u - 1.0);
    c = ku < 54.0 ? c / u : 0.0;
    const bool near = x > -0.29289321881345248 && x < 0.41421356237309515;
    const double r = log_reduced(near ? x : fu, near ? 0.0 : ku, near ? 0.0 : c);
    // |x| < 2^-54: x (1 + x rounds to 1). x = -1: -inf; x < -1 or NaN: NaN; x = inf: inf.
    const double tiny = std::fabs(x) < 0x1p-54 ? x : r;
    const double low = x == -1.0 ? -INFINITY : x < -1.0 ? NAN : tiny;
    return x != x || x == INFINITY ? x : low;
}

// k and log(1 + f) = hi + lo of a positive x = 2^k (1 + f): hi = f - f^2 / 2 cut to its high 12
// (f32) or 21 (f64) bits, so that hi times a constant's high part is exact, and lo the rest
// (FreeBSD's e_log2f, e_log10f, e_log2 and e_log10). log2 and log10 scale both by 1 / ln 2 or
// 1 / ln 10 in two parts and add k (times log10(2) in two parts) last, so that a power of two
// (f = 0) gives k exactly. Not log(x) / ln 2, which misses 441 of the f64 powers of two.
template <typename T>
inline void log_parts(T x, T& k, T& hi, T& lo) {
    using U = std::conditional_t<std::is_same_v<T, float>, std::uint32_t, std::uint64_t>;
    constexpr U kHigh = std::is_same_v<T, float> ? U(0xfffff000u) : U(0xffffffff00000000u);
    T f, hfsq;
    split_log_of(x, k, f);
    const T r = log1p_kernel(f, hfsq);
    hi = std::bit_cast<T>(std::bit_cast<U>(f - hfsq) & kHigh);
    lo = ((f - hi) - hfsq) + r;
}

// Within 1 ulp of log2 and log10 (f32 checked over every f32); k exactly at 2^k, and 0 .. 10
// exactly at 10^0 .. 10^10 (f32) and 0 .. 22 at 10^0 .. 10^22 (f64).
inline float log2_f32(float x) {
    float k, hi, lo;
    log_parts(x, k, hi, lo);
    return log_special(x, (((lo + hi) * -1.7605285393e-04f + lo * 1.4428710938e+00f) + hi * 1.4428710938e+00f) + k);
}
inline float log10_f32(float x) {
    float k, hi, lo;
    log_parts(x, k, hi, lo);
    const float r = (k * 7.9034151668e-07f + (lo + hi) * -3.1689971365e-05f) + lo * 4.3432617188e-01f;
    return log_special(x, (r + hi * 4.3432617188e-01f) + k * 3.0102920532e-01f);
}
// f64: the high parts' sum a + b kept as a pair (|a| >= |b| or a = 0), c the low parts.
inline double sum_high_first(double a, double b, double c) {
    const double w = a + b;
    return (c + ((a - w) + b)) + w;
}
inline double log2_f64(double x) {
    double k, hi, lo;
    log_parts(x, k, hi, lo);
    const double l = (lo + hi) * 1.67517131648865118353e-10 + lo * 1.44269504072144627571e+00;
    return log_special(x, sum_high_first(k, hi * 1.44269504072144627571e+00, l));
}
inline double log10_f64(double x) {
    double k, hi, lo;
    log_parts(x, k, hi, lo);
    const double l = (k * 3.69423907715893078616e-13 + (lo + hi) * 2.50829467116452752298e-11) + lo * 4.34294481878168880939e-01;
    return log_special(x, sum_high_first(k * 3.01029995663611771306e-01, hi * 4.34294481878168880939e-01, l));
}

// exp(x) - 1 of an f64 (fdlibm's expm1 and its coefficients), every case computed and the right
// one selected: x = k ln 2 + r + c, |r| <= ln 2 / 2, expm1(r) by a rational form in r^2, then
// 2^k (1 + expm1(r)) - 1 arranged per k so that no bits cancel. k = round(x / ln 2) covers
// fdlibm's k = 0 and +-1 cases (hi and lo are then x and 0, or x -+ ln 2's parts). Within 1 ulp.
inline double expm1_f64(double x) {
    // Below -40 the result is -1 (exp(-40) is under half an ulp of 1); above 710, inf.
    double a = x > -40.0 ? x : -40.0;
    a = a < 710.0 ? a : 710.0;
    constexpr double kRound = 6755399441055744.0;
    const double t = a * 1.44269504088896338700 + kRound, k = t - kRound;
    const std::int64_t ki = static_cast<std::int64_t>(std::bit_cast<std::uint64_t>(t) - std::bit_cast<std::uint64_t>(kRound));
    const double hi = a - k * 6.93147180369123816490e-01, lo = k * 1.90821492927058770002e-10;
    const double r = hi - lo, c = (hi - r) - lo;
    const double hfx = 0.5 * r, hxs = r * hfx;
    const double r1 = 1.0 + hxs * (-3.33333333333331316428e-02 +
                                   hxs * (1.58730158725481460165e-03 +
                                          hxs * (-7.93650757867487942473e-05 + hxs * (4.00821782732936239552e-06 + hxs * -2.01099218183624371326e-07))));
    const double q = 3.0 - r1 * hfx;
    const double e0 = hxs * ((r1 - q) / (6.0 - r * q));
    const double e = (r * (e0 - c) - c) - hxs;
    // 2^-k for 2 <= k <= 56 (garbage elsewhere, where it is not selected).
    const double two_minus_k = std::bit_cast<double>(static_cast<std::uint64_t>(1023 - ki) << 52);
    const double k0 = r - (r * e0 - hxs);
    const double k_minus_1 = 0.5 * (r - e) - 0.5;
    const double k_1 = r < -0.25 ? -2.0 * (e - (r + 0.5)) : 1.0 + 2.0 * (r - e);
    const double y_far = 1.0 - (e - r);
    const double y_low = (1.0 - two_minus_k) - (e - r);
    const double y_high = (r - (e + two_minus_k)) + 1.0;
    // k <= -2 or k >= 57 as one comparison (a compound one keeps GCC from vectorizing the loop).
    const bool far_k = std::fabs(k - 27.5) > 29.0;
    const double y = far_k ? y_far : k < 20.0 ? y_low : y_high;
    const std::int64_t k1 = static_cast<std::int64_t>(static_cast<std::uint64_t>(ki + 2048) >> 1) - 1024;
    const double scaled = times_two_powers(y, k1, ki - k1);
    const double far = far_k ? scaled - 1.0 : scaled;
    const double v = k == 0.0 ? k0 : k == -1.0 ? k_minus_1 : k == 1.0 ? k_1 : far;
    // |x| < 2^-54: x itself (keeps -0).
    const double tiny = std::fabs(x) < 0x1p-54 ? x : v;
    return x != x ? x : tiny;
}

// c[0] + z (c[1] + z (... + z c[N-1])), in that order.
template <std::size_t N> [[gnu::always_inline]] inline double horner(const double (&c)[N], double z) {
    double r = c[N - 1];
#pragma GCC unroll 16
    for (int k = static_cast<int>(N) - 2; k >= 0; --k) r = c[k] + z * r;
    return r;
}

// tanh of an f64: x + x^3 P(x^2) below 0.625 (a degree-11 fit in x^2, least squares on
// Chebyshev nodes, 2^-56 relative; scripts/fit_tanh_poly.py prints these coefficients),
// 1 - 2 / (expm1(2|x|) + 2) above (1 once expm1 overflows), the sign of x. fdlibm's
// -t / (t + 2) with t = expm1(-2|x|) below 1 reads 2 ulp; the polynomial keeps its rounding
// error in a term under x / 7. Both forms computed. Within 1 ulp.
inline constexpr double kTanhF64[] = {-0.3333333333333331,     0.1333333333332957,    -0.05396825396597651,
                                      0.021869488466722938,   -0.008863234284130923, 0.0035921137418269277,
                                      -0.001455724403739675,  0.0005894456214566338, -0.00023699538163262211,
                                      9.153093608172281e-05,  -3.0160663062913175e-05, 6.03122660263008e-06};
inline constexpr double kTanhF64Near = 0.625;
inline double tanh_f64(double x) {
    const double a = std::fabs(x), z = a * a;
    const double near = a + a * (z * horner(kTanhF64, z));
    const double far = 1.0 - 2.0 / (expm1_f64(2.0 * a) + 2.0);
    const double s = std::copysign(a < kTanhF64Near ? near : far, x);
    return x != x ? x : s;
}

// f32 expm1 and tanh, computed in f64 on exp_f64 (cheaper than the f64 functions above, whose
// care for the last f64 bit an f32 result does not need): exp(x) - 1 loses at most 2^-33 of
// the result for |x| >= 2^-20, and below, x (1 + x/2 + x^2/6) is exact to 2^-52. tanh = (1 - e) /
// (1 + e) with e = exp(-2|x|) loses at most 2^-42 for |x| >= 2^-10; below, x - x^3/3 is
// exact to 2^-42. Each then rounds once to f32: within 1 ulp.
inline float expm1_f32(float x) {
    const double d = x;
    const double near = d * (1.0 + d * (0.5 + d * (1.0 / 6.0)));  // keeps -0
    const double e = exp_f64(d) - 1.0;
    return static_cast<float>(std::fabs(d) < 0x1p-20 ? near : e);
}

inline float tanh_f32(float x) {
    const double a = std::fabs(static_cast<double>(x));
    const double near = a - a * (a * a) * (1.0 / 3.0);
    const double e = exp_f64(-2.0 * a);
    const double t = std::copysign(a < 0x1p-10 ? near : (1.0 - e) / (1.0 + e), static_cast<double>(x));
    return static_cast<float>(t);
}

// sin and cos of an f32, computed in f64 where |x| <= kTrigReducedLimit: x = k pi/2 + r with
// |r| <= pi/4, k = round(x 2/pi) by the 1.5 x 2^52 trick (k mod 4 in t's low bits), r by pi/2
// in four parts, the first three of 25 bits (each times k exact for |k| < 2^28, and x - k p1
// exact by cancellation; 128 bits of pi/2 in all); sin(r) and cos(r) by polynomials in r^2
// (FreeBSD's __kernel_sindf and __kernel_cosdf coefficients, within 2^-37.5 and 2^-34.1 of the
// result), the quadrant's chosen, one rounding to f32: within 1 ulp. Beyond the limit, and at
// inf and NaN, the C library's (sin_of / cos_of below); the CPU backend's lane loops take the
// polynomial path a vector at a time when every lane is within the limit.
constexpr float kTrigReducedLimit = 0x1p28f;
inline constexpr double kRoundToInteger = 6755399441055744.0;  // 1.5 x 2^52: t - it is round(x)
inline constexpr double kTwoOverPi = 0x1.45f306dc9c883p-1;
inline void sin_cos_reduced(float x, double& s, double& c, std::uint64_t& quadrant) {
    const double d = x;
    const double t = d * kTwoOverPi + kRoundToInteger, k = t - kRoundToInteger;
    quadrant = std::bit_cast<std::uint64_t>(t);
    const double r = (((d - k * 0x1.921fb5p+0) - k * 0x1.110b46p-26) - k * 0x1.1a6263p-54) - k * 0x1.8a2e03707344ap-81;
    const double z = r * r, w = z * z, rz = r * z;
    s = (r + rz * (-0x1.5555554cbac77p-3 + z * 0x1.11110896efbb2p-7)) +
        rz * w * (-0x1.a00f9e2cae774p-13 + z * 0x1.6cd878c3b46a7p-19);
    c = ((1.0 + z * -0x1.ffffffd0c5e81p-2) + w * 0x1.55553e1053a42p-5) +
        w * z * (-0x1.6c087e80f1e27p-10 + z * 0x1.99342e0ee5069p-16);
}
// sin and cos of an f64 where |x| <= kTrigReducedLimitF64: k as for f32, x - k pi/2 = y0 + y1
// (a pair of doubles) by pi/2 in fdlibm's four parts (kPio2F64), three of 33 bits (each times k
// exact for |k| < 2^20, x - k p1 exact by cancellation) and the rest by exact two-sums, 152 bits
// of pi/2 in all; then fdlibm's __kernel_sin and __kernel_cos on (y0, y1) and their
// coefficients (kSinF64S1, then kSinF64: S2..S6; kCosF64Low and High: C1..C3, C4..C6), both
// computed and the quadrant's chosen: within 1 ulp. Beyond the limit, at inf and at NaN, the
// C library's, as for f32. The constants are shared with the ONNX exporter (src/backends/onnx/onnx_float_math.cpp).
constexpr double kTrigReducedLimitF64 = 0x1p20;
inline constexpr double kPio2F64[] = {0x1.921fb544p+0, 0x1.0b4611a6p-34, 0x1.3198a2ep-69, 0x1.b839a252049c1p-104};
inline constexpr double kSinF64S1 = -1.66666666666666324348e-01;
inline constexpr double kSinF64[] = {8.33333333332248946124e-03, -1.98412698298579493134e-04, 2.75573137070700676789e-06,
                                     -2.50507602534068634195e-08, 1.58969099521155010221e-10};
inline constexpr double kCosF64Low[] = {4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05};
inline constexpr double kCosF64High[] = {-2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11};
inline void two_sum(double a, double b, double& sum, double& err) {
    sum = a + b;
    const double bb = sum - a;
    err = (a - (sum - bb)) + (b - bb);
}
inline void sin_cos_reduced(double x, double& s, double& c, std::uint64_t& quadrant) {
    const double t = x * kTwoOverPi + kRoundToInteger, k = t - kRoundToInteger;
    quadrant = std::bit_cast<std::uint64_t>(t);
    double s1, e1, s2, e2, y0, y1;
    two_sum(x - k * kPio2F64[0], -(k * kPio2F64[1]), s1, e1);
    two_sum(s1, -(k * kPio2F64[2]), s2, e2);
    two_sum(s2, (e1 + e2) - k * kPio2F64[3], y0, y1);
    const double z = y0 * y0, v = z * y0, w = z * z;
    // Written out: through horner()'s loop GCC no longer inlines this into the lane loops
    // (f64 sin 5.7 -> 37 ms on the CPU bench).
    const double rs = kSinF64[0] + z * (kSinF64[1] + z * (kSinF64[2] + z * (kSinF64[3] + z * kSinF64[4])));
    s = y0 - ((z * (0.5 * y1 - v * rs) - y1) - v * kSinF64S1);
    const double rc = z * (kCosF64Low[0] + z * (kCosF64Low[1] + z * kCosF64Low[2])) +
                      w * w * (kCosF64High[0] + z * (kCosF64High[1] + z * kCosF64High[2]));
    const double hz = 0.5 * z, one_minus = 1.0 - hz;
    c = one_minus + (((1.0 - one_minus) - hz) + (z * rc - y0 * y1));
}
// The polynomial paths' limits, by type.
template <typename T>
constexpr T kTrigLimit = std::is_same_v<T, float> ? T(kTrigReducedLimit) : T(kTrigReducedLimitF64);
// The polynomial paths (T float or double; sin_cos_reduced in f64 for both). Quadrants 0..3 of
// x + turns pi/2 give s, c, -s, -c: sin is turns 0 (and x itself below 2^-12 (f32) or 2^-26
// (f64), which keeps -0), cos turns 1.
template <typename T>
inline T trig_reduced(T x, std::uint64_t turns) {
    double s, c;
    std::uint64_t q;
    sin_cos_reduced(x, s, c, q);
    q += turns;
    const double v = (q & 1) ? c : s;
    return static_cast<T>((q & 2) ? -v : v);
}
template <typename T>
inline T sin_reduced_of(T x) {
    return std::fabs(x) < (std::is_same_v<T, float> ? T(0x1p-12) : T(0x1p-26)) ? x : trig_reduced(x, 0);
}
template <typename T>
inline T cos_reduced_of(T x) { return trig_reduced(x, 1); }
// sin and cos at the compute dtype: the polynomial path within its limit, else the C library's.
template <typename T>
inline T sin_of(T x) { return std::fabs(x) <= kTrigLimit<T> ? sin_reduced_of(x) : std::sin(x); }
template <typename T>
inline T cos_of(T x) { return std::fabs(x) <= kTrigLimit<T> ? cos_reduced_of(x) : std::cos(x); }

// At the compute dtype.
inline float exp_of(float x) { return exp_f32(x); }
inline double exp_of(double x) { return exp_f64(x); }
inline float log_of(float x) { return log_f32(x); }
inline double log_of(double x) { return log_f64(x); }
inline float log1p_of(float x) { return log1p_f32(x); }
inline double log1p_of(double x) { return log1p_f64(x); }
inline float log2_of(float x) { return log2_f32(x); }
inline double log2_of(double x) { return log2_f64(x); }
inline float log10_of(float x) { return log10_f32(x); }
inline double log10_of(double x) { return log10_f64(x); }
inline float exp2_of(float x) { return exp2_f32(x); }
inline double exp2_of(double x) { return exp2_f64(x); }
inline float expm1_of(float x) { return expm1_f32(x); }
inline double expm1_of(double x) { return expm1_f64(x); }
inline float tanh_of(float x) { return tanh_f32(x); }
inline double tanh_of(double x) { return tanh_f64(x); }

// The logistic function, stable on both sides: 1 / (1 + e) for x >= 0, e / (1 + e) below, with
// one e = exp(-|x|) for both (lane loops compute both sides; the bits of exp(-x) and exp(x)).
template <typename T>
inline T sigmoid_of(T x) {
    const T e = exp_of(-std::fabs(x));
    return x >= T(0) ? T(1) / (T(1) + e) : e / (T(1) + e);
}

// log(1 + exp(x)), stable on both sides: max(x, 0) + log1p(exp(-|x|)), one exp and one log1p
// (the bits of x + log1p(exp(-x)) above 0 and of log1p(exp(x)) below, checked over every f32).
template <typename T>
inline T softplus_of(T x) {
    const T m = x > T(0) ? x : T(0);
    return m + log1p_of(exp_of(-std::fabs(x)));
}

// log(exp(a) + exp(b)): NaN if either is; +inf dominates, and both -inf give -inf (no inf - inf).
template <typename T>
inline T logaddexp_of(T a, T b) {
    if (a != a || b != b) return std::numeric_limits<T>::quiet_NaN();
    T m = a < b ? b : a;
    if (std::isinf(m)) return m;
    return m + log1p_of(exp_of(-std::fabs(a - b)));
}

}  // namespace
}  // namespace scanc
