// erf, erfc, atan and atan2 of f32 and f64 as scanc defines them, shared like float_math.h's
// functions (the reference executor, constant folding and the CPU backend's lane loops) and
// written to its rules: straight-line code, every path computed and the right one selected, no
// FMA contraction, no tables, no conversions between f64 and 64-bit integers, so that the lane
// loops vectorize them with the reference's bits at every ISA.
// erf and erfc follow fdlibm's s_erf.c near 0 and in the far tail (its intervals, rational
// approximations and their coefficients), with polynomials of log(erfc(x)) + x^2 fitted between
// (scripts/fit_erfc_poly.py); atan and atan2 follow its s_atan.c and e_atan2.c (the reduction
// to |t| <= 7/16 and its polynomial; FreeBSD's s_atanf.c polynomial for f32). f32 computes in
// f64 and rounds once; f64 carries erfc's exponent and atan2's quotient in two parts. Each is
// within 1 ulp (tests/ir/float_math_erf_atan_test.cpp).
// The large ones are always_inline (the lane loops vectorize only what is inlined, and GCC's
// budget would leave them out-of-line), and all have internal linkage: an out-of-line copy in
// an AVX-512 or AVX2 file would otherwise be one the linker may keep for every caller.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "float_math.h"

namespace scanc {
namespace {

// a b = p + e exactly (Dekker's product by Veltkamp's splits; no FMA), for |a|, |b| below
// 2^995 and a b's parts above the subnormals.
inline void split_half(double a, double& hi, double& lo) {
    const double c = a * 134217729.0;  // 2^27 + 1
    hi = c - (c - a);
    lo = a - hi;
}
inline void two_product(double a, double b, double& p, double& e) {
    double ah, al, bh, bl;
    split_half(a, ah, al);
    split_half(b, bh, bl);
    p = a * b;
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
}

// ---- erf and erfc ----------------------------------------------------------------------
// The coefficients are shared with the ONNX exporter, which writes the same formulas as graph
// arithmetic (src/backends/onnx/onnx_float_math.cpp).

// fdlibm's pp (P = p0 + p1 z + ... + p4 z^4) and qq (q = q1 z + ... + q5 z^5) of erf near 0.
// erf's near range [0, kErfNear), 2/sqrt(pi) and 2/sqrt(pi) - 1 (fdlibm's efx).
inline constexpr double kErfNear = 0.84375, kTwoOverSqrtPi = 1.12837916709551257390,
                        kTwoOverSqrtPiLessOne = 1.28379167095512586316e-01;
inline constexpr double kErfNearP[] = {1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02,
                                       -5.77027029648944159157e-03, -2.37630166566501626084e-05};
inline constexpr double kErfNearQ[] = {3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03,
                                       1.32494738004321644526e-04, -3.96022827877536812320e-06};
// fdlibm's rb (r = r0 + ... + r6 s^6) and sb (q = 1 + s1 s + ... + s7 s^7) of erfc's far tail.
inline constexpr double kErfcFarR[] = {-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e+01,
                                       -1.60636384855821916062e+02, -6.37566443368389627722e+02, -1.02509513161107724954e+03,
                                       -4.83519191608651397019e+02};
inline constexpr double kErfcFarS[] = {3.03380607434824582924e+01, 3.25792512996573918826e+02, 1.53672958608443695994e+03,
                                       3.19985821950859553908e+03, 2.55305040643316442583e+03, 4.74528541206955367215e+02,
                                       -2.24409524465858183362e+01};

// erf(a) = a + a y for 0 <= a < 0.84375, y = P(a^2) / Q(a^2) (fdlibm's pp and qq), Q = 1 + q:
// y = P - P q / (1 + q), whose rounding shrinks with a (P / Q rounds 1 + q first: 2^-51 of y).
inline double erf_near_ratio(double a) {
    const double z = a * a;
    const double p = horner(kErfNearP, z), q = z * horner(kErfNearQ, z);
    return p - (p * q) / (1.0 + q);
}

// log(a erfc(a)) + a^2 + 0.5625 for 1/0.35 <= a <= 28, fdlibm's rational function of s = 1 /
// a^2 (its rb and sb).
inline double erfc_far_exponent(double s) { return horner(kErfcFarR, s) / (1.0 + s * horner(kErfcFarS, s)); }

// The three intervals below 1/0.35 (kErfcFar): [0.5, kErfcSplit[0]), [kErfcSplit[0],
// kErfcSplit[1]), [kErfcSplit[1], kErfcFar); per interval its centre m, c0 + c0_lo, c1 and
// delta's p1 ... p14 (kErfcPoly[k] = p_{k+1}).
inline constexpr double kErfcSplit[] = {1.25, 2.0}, kErfcFar = 2.857142857142857;
inline constexpr double kErfcCentre[] = {0.875, 1.625, 2.375};
inline constexpr double kErfcC0[] = {-0x1.88ce5d53669b8p-1, -0x1.324b71fe93c9ap+0, -0x1.83076826cca9cp+0};
inline constexpr double kErfcC0Lo[] = {0x1.9f433934410c7p-55, -0x1.1f7ad752a52a2p-55, -0x1.57207cb5edbd0p-57};
inline constexpr double kErfcC1[] = {-0x1.5c45c2705ed3fp-1, -0x1.eeb8924843195p-2, -0x1.780c1ed5ab115p-2};
inline constexpr double kErfcFarC0 = -0.5625;
inline constexpr double kErfcPoly[][3] = {
    {0x1.923fa93b2fc9dp-56, -0x1.cfb4d6357a97cp-55, -0x1.d6b0ce162d9e1p-56},
    {0x1.633e1bd2ce087p-3, 0x1.9249dc598ca4bp-4, 0x1.eeb61afdbf74dp-5},
    {-0x1.802c2794aeae8p-5, -0x1.78fa9a8b7172bp-6, -0x1.8988b0c7ebca2p-7},
    {0x1.730b0ece761e6p-7, 0x1.59606b9a1c86cp-8, 0x1.40cd07e5e1296p-9},
    {-0x1.1904a08430a23p-9, -0x1.211a66c3815bap-10, -0x1.fa8e4e8390e67p-12},
    {0x1.a515529e9062bp-13, 0x1.99f921c91c12fp-13, 0x1.754137d00a259p-14},
    {0x1.f13fc9849a289p-15, -0x1.920c7be4996c0p-16, -0x1.ea2f23da83c72p-17},
    {-0x1.4a1878e14645fp-15, -0x1.0aa1d886eb702p-21, 0x1.03413cda7e76cp-19},
    {0x1.96c96c189df34p-17, 0x1.92daa2f73108ep-20, -0x1.155eb508311b9p-23},
    {-0x1.0b1ba5d49fa5ep-19, -0x1.38ecb0aaeb3d0p-21, -0x1.10d83656c8aacp-25},
    {-0x1.80fdbbc551bbap-23, 0x1.459ec35c43021p-23, 0x1.2b387e3b2352dp-26},
    {0x1.1930728eef3acp-22, -0x1.c6b68b8e610bfp-26, -0x1.66536facaca4ap-28},
    {-0x1.ba649b9bc9f26p-24, 0.0, 0x1.1c13c3519a1d1p-30},
    {0x1.71512ca32ac0bp-26, 0.0, 0.0},
};

// erfc(a) = exp(-a^2 + c0 + c0_lo + c1 w + delta) / d for 0.5 <= a <= 28, w = a - m, and
// rd = 1 / d. Below 1/0.35, on [0.5, 1.25), [1.25, 2) and [2, 1/0.35) around m = 0.875, 1.625
// and 2.375 (w exact): log(erfc(a)) + a^2 = c0 + c0_lo + c1 w + delta(w), delta = p1 w + ... + p14 w^14 (fitted by
// scripts/fit_erfc_poly.py, within 2^-59), d = 1; the constant and linear parts carry the
// exponent's size exactly, so the polynomial's roundings (|delta| < 0.03) stay far below an ulp
// (fdlibm's P/Q of erf near 1 and its rational ra/sa read 2.4 and 1.5 ulp of erfc there).
// From 1/0.35: fdlibm's c0 = -0.5625, delta = erfc_far_exponent of rd^2, d = a.
[[gnu::always_inline]] inline void erfc_exponent(double a, double& c0, double& c0_lo, double& c1, double& w, double& delta, double& d,
                                                 double& rd) {
    const bool first = a < kErfcSplit[0], second = a < kErfcSplit[1], far = a >= kErfcFar;
    auto pick = [&](const double (&c)[3]) { return first ? c[0] : second ? c[1] : c[2]; };
    w = a - pick(kErfcCentre);
    double p = 0.0;
    for (int k = 13; k >= 0; --k) p = (p + pick(kErfcPoly[k])) * w;
    c0 = far ? kErfcFarC0 : pick(kErfcC0);
    c0_lo = far ? 0.0 : pick(kErfcC0Lo);
    c1 = far ? 0.0 : pick(kErfcC1);
    d = far ? a : 1.0;
    rd = 1.0 / d;
    delta = far ? erfc_far_exponent(rd * rd) : p;
}

// erfc(a) of an f64 for 0.5 <= a <= 28, within 1 ulp: the exponent kept as v + lo exactly to
// 2^-60 (a's high 21 bits h give h^2 exactly and (a - h)(a + h) the rest, c1 w is a pair) and
// reduced as exp_f64 does; exp(hi - lo) kept as 1 + hi (rounded) plus its error and the
// polynomial's part, and the division by d done on that pair with its remainder (Dekker: q =
// (1 + hi) / d to an ulp or two, 1 + hi - q d exactly, the rest times 1 / d), so that the
// scaling by 2^n rounds once, into the subnormals too. (fdlibm's two exps, product and
// division read 2 ulp.)
[[gnu::always_inline]] inline double erfc_tail_f64(double a) {
    double c0, c0_lo, c1, w, delta, d, rd;
    erfc_exponent(a, c0, c0_lo, c1, w, delta, d, rd);
    const double h = std::bit_cast<double>(std::bit_cast<std::uint64_t>(a) & 0xffffffff00000000u);
    double cw, cw_err, v1, e1, v, e2;
    two_product(c1, w, cw, cw_err);
    two_sum(-(h * h), c0, v1, e1);
    two_sum(v1, cw, v, e2);
    const double rest = ((e1 + e2) + (cw_err + c0_lo)) + (delta - (a - h) * (a + h));
    constexpr double kRound = 6755399441055744.0;
    const double t = (v + rest) * 1.44269504088896338700 + kRound, n = t - kRound;
    const double hi = v - n * 6.93147180369123816490e-01, lo = n * 1.90821492927058770002e-10 - rest;
    const double one_hi = 1.0 + hi, one_err = (1.0 - one_hi) + hi;
    const double tail = one_err + (exp_reduced_rest(hi, lo) - lo);  // exp(hi - lo) = one_hi + tail
    const double q = one_hi * rd;
    double qd, qd_err;
    two_product(q, d, qd, qd_err);
    return times_two_to_shifted(q + (((one_hi - qd) - qd_err) + tail) * rd, t);
}

// erf(x) and erfc(x) in f64 given tail = erfc(|x|) where |x| >= 0.5 (any value elsewhere):
// erf below 0.84375 is x + x y (below 2^-28 y is 2/sqrt(pi) - 1, and below 2^-1018, where x y
// would be subnormal, x is multiplied by 2/sqrt(pi) instead: one rounding), from there
// 1 - tail; erfc below 1/4 (negatives to -0.84375 included) is (1 - x) - x y with 1 - x kept
// exactly as a pair, to 0.5 fdlibm's 0.5 - (x y + (x - 0.5)), from there tail, and 2 - tail
// below -0.84375.
[[gnu::always_inline]] inline double erf_from(double x, double tail) {
    const double a = std::fabs(x), an = a < kErfNear ? a : kErfNear;  // NaN: 0.84375
    const double tiny = a < 0x1p-1018 ? a * kTwoOverSqrtPi : a + a * kTwoOverSqrtPiLessOne;
    const double near = a < 0x1p-28 ? tiny : an + an * erf_near_ratio(an);
    const double e = a < kErfNear ? near : 1.0 - tail;
    return x != x ? x : std::copysign(e, x);
}
[[gnu::always_inline]] inline double erfc_from(double x, double tail) {
    const double a = std::fabs(x), an = a < kErfNear ? a : kErfNear;
    const double xn = std::copysign(an, x), y = erf_near_ratio(an);
    double one_minus, one_minus_err;
    two_sum(1.0, -xn, one_minus, one_minus_err);
    const double near = x < 0.25 ? one_minus + (one_minus_err - xn * y) : 0.5 - (xn * y + (xn - 0.5));
    const double e = x <= -kErfNear ? 2.0 - tail : x < 0.5 ? near : tail;
    return x != x ? x : e;
}

// |x| clamped to erfc's tail range [0.5, 28] (NaN to 0.5); erfc(28) is 0 in f64.
inline double erfc_tail_arg(double x) {
    const double a = std::fabs(x);
    const double c = a > 0.5 ? a : 0.5;
    return c < 28.0 ? c : 28.0;
}

[[gnu::always_inline]] inline double erf_f64(double x) { return erf_from(x, erfc_tail_f64(erfc_tail_arg(x))); }
[[gnu::always_inline]] inline double erfc_f64(double x) { return erfc_from(x, erfc_tail_f64(erfc_tail_arg(x))); }
// f32 in f64 (the f64 functions rounded once: within 1 ulp; their pairs are what keeps the
// exponential out of an out-of-line exp_f64, which the lane loops would not vectorize).
[[gnu::always_inline]] inline float erf_f32(float x) {
    const double d = x;
    return static_cast<float>(erf_from(d, erfc_tail_f64(erfc_tail_arg(d))));
}
[[gnu::always_inline]] inline float erfc_f32(float x) {
    const double d = x;
    return static_cast<float>(erfc_from(d, erfc_tail_f64(erfc_tail_arg(d))));
}

// ---- atan and atan2 --------------------------------------------------------------------
// fdlibm's reduction bounds of n / d, atan(c) for c = 1/2, 1, 3/2, inf as the nearest double
// (its atanhi) and the rest (atanlo), and its aT as t - atan(t) = t (z A(w) + w B(w)), z = t^2,
// w = z^2: kAtanOdd the coefficients of A, kAtanEven of B.
inline constexpr double kAtanBound[] = {0.4375, 0.6875, 1.1875, 2.4375};
inline constexpr double kAtanHi[] = {0x1.dac670561bb4fp-2, 0x1.921fb54442d18p-1, 0x1.f730bd281f69bp-1, 0x1.921fb54442d18p+0};
inline constexpr double kAtanLo[] = {0x1.a2b7f222f65e2p-56, 0x1.1a62633145c07p-55, 0x1.007887af0cbbdp-56, 0x1.1a62633145c07p-54};
inline constexpr double kAtanOdd[] = {3.33333333333329318027e-01, 1.42857142725034663711e-01, 9.09088713343650656196e-02,
                                      6.66107313738753120669e-02, 4.97687799461593236017e-02, 1.62858201153657823623e-02};
inline constexpr double kAtanEven[] = {-1.99999999998764832476e-01, -1.11111104054623557880e-01, -7.69187620504482999495e-02,
                                       -5.83357013379057348645e-02, -3.65315727442169155270e-02};

// fdlibm's reduction of atan(n / d) for n, d >= 0: by n / d against 7/16, 11/16, 19/16 and
// 39/16, t = num / den = n / d, (2n - d) / (2d + n), (n - d) / (n + d), (n - 1.5d) / (d + 1.5n)
// or -d / n, |t| <= 7/16, and atan(n / d) = atan(c) + atan(t) for c = 0, 1/2, 1, 3/2, inf;
// hi + lo is atan(c) in two parts, or pi - atan(c) where `flip` (atan2 of a negative x, where
// t's sign turns). num + num_err and den + den_err are the exact numerator and denominator
// (1.5 d and 1.5 n as d + d/2 and n + n/2 by two_sum; n - d, 2n - d and n - 1.5d are exact by
// Sterbenz's lemma). With d = 1 these are fdlibm's atan's own operations.
[[gnu::always_inline]] inline void atan_reduce(double n, double d, bool flip, double& num, double& num_err, double& den,
                                               double& den_err, double& hi, double& lo) {
    const bool r1 = n >= kAtanBound[0] * d, r2 = n >= kAtanBound[1] * d, r3 = n >= kAtanBound[2] * d, r4 = n >= kAtanBound[3] * d;
    double d15, d15_err, n15, n15_err, sum, sum_err, sum3, sum3_err;
    two_sum(d, 0.5 * d, d15, d15_err);
    two_sum(n, 0.5 * n, n15, n15_err);
    two_sum(r2 ? d : 2.0 * d, n, sum, sum_err);  // n + d or 2d + n
    two_sum(d, n15, sum3, sum3_err);
    // Two-way selects only: GCC if-converts a select of at most four values, and the lane loops
    // vectorize only then.
    const double num12 = r2 ? n - d : 2.0 * n - d, num34 = r4 ? -d : n - d15;
    const double num14 = r3 ? num34 : num12;
    num = r1 ? num14 : n;
    num_err = r3 & !r4 ? -d15_err : 0.0;
    const double den12 = r1 ? sum : d, den34 = r4 ? n : sum3;
    den = r3 ? den34 : den12;
    const double den_err12 = r1 ? sum_err : 0.0, den_err34 = r4 ? 0.0 : sum3_err + n15_err;
    den_err = r3 ? den_err34 : den_err12;
    // atan(c) (fdlibm's atanhi and atanlo) and pi - atan(c) where flip, each as the nearest
    // double and the rest.
    const double h01 = flip ? (r1 ? 0x1.56c6e7397f5aep+1 : 0x1.921fb54442d18p+1) : (r1 ? kAtanHi[0] : 0.0);
    const double l01 = flip ? (r1 ? 0x1.660b64ece6f4bp-53 : 0x1.1a62633145c07p-53) : (r1 ? kAtanLo[0] : 0.0);
    const double h23 = flip ? (r3 ? 0x1.145385fa3af71p+1 : 0x1.2d97c7f3321d2p+1) : (r3 ? kAtanHi[2] : kAtanHi[1]);
    const double l23 = flip ? (r3 ? 0x1.fa53523b6428fp-53 : 0x1.a79394c9e8a0ap-54) : (r3 ? kAtanLo[2] : kAtanLo[1]);
    hi = r4 ? kAtanHi[3] : r2 ? h23 : h01;
    lo = r4 ? kAtanLo[3] : r2 ? l23 : l01;
}

// t - atan(t) = t S(t^2) for |t| <= 7/16: S (fdlibm's aT, to 2^-57.6 of atan), or for f32
// FreeBSD's s_atanf.c aT (2^-27.8, a fourteenth of an f32 ulp), both in f64.
inline double atan_poly(double t) {
    const double z = t * t, w = z * z;
    return z * horner(kAtanOdd, w) + w * horner(kAtanEven, w);
}
inline double atan_poly_short(double t) {
    const double z = t * t, w = z * z;
    const double s1 = z * (3.3333328366e-01f + w * (1.4253635705e-01f + w * 6.1687607318e-02f));
    const double s2 = w * (-1.9999158382e-01f + w * -1.0648017377e-01f);
    return s1 + s2;
}

[[gnu::always_inline]] inline double atan_f64(double x) {
    double num, num_err, den, den_err, hi, lo;
    atan_reduce(std::fabs(x), 1.0, false, num, num_err, den, den_err, hi, lo);
    const double t = num / den;
    const double r = hi - ((t * atan_poly(t) - lo) - t);
    return x != x ? x : std::copysign(r, x);
}
[[gnu::always_inline]] inline float atan_f32(float x) {
    double num, num_err, den, den_err, hi, lo;
    atan_reduce(std::fabs(static_cast<double>(x)), 1.0, false, num, num_err, den, den_err, hi, lo);
    const double t = num / den;
    const float r = static_cast<float>(hi - ((t * atan_poly_short(t) - lo) - t));
    return x != x ? x : std::copysign(r, x);
}

// atan2 where y is +-0 or both are infinite (t is 0 / d, 0 / 0 or inf / inf there), before
// y's sign: 0, or pi for a negative x; pi/4, or 3pi/4 = pi - pi/4 (exact) for a negative x.
// Arithmetic on two-way selects, selected last: GCC merges selects of constants into one of
// more than four values (and replaced operands up front into others), and then vectorizes none
// of the lane loop.
inline double atan2_edge(bool both_inf, bool flip) {
    const double quarter = both_inf ? 0x1.921fb54442d18p-1 : 0.0, half_turn = flip ? 0x1.921fb54442d18p+1 : 0.0;
    return std::fabs(half_turn - quarter);
}

// atan2(y, x) of an f64, C's: +-0 for y = +-0 and x >= +0, +-pi for x <= -0, +-pi/2 for x =
// +-0 and y != 0, +-pi/4 and +-3pi/4 for infinite y and x, NaN (y's, else x's) for a NaN.
// n / d rounds, so its error t_l = (num - t den) / den (Dekker) is added, as t_l / (1 + t^2).
// So that the splits neither overflow nor underflow, operands whose larger is below 2^-500 are
// first scaled by 2^600, and those whose larger is beyond 2^500 by 2^-600 unless the smaller
// would then underflow (below 2^-400: the quotient is below 2^-900, left unscaled); the
// quotient is unchanged, and t_l is taken only where both are within [2^-900, 2^920] (beyond,
// the quotient is below 2^-400 or above 2^400 and needs none).
[[gnu::always_inline]] inline double atan2_f64(double y, double x) {
    const double ay = std::fabs(y), ax = std::fabs(x), m = ay > ax ? ay : ax, small = ay > ax ? ax : ay;
    const double scale = (m > 0x1p500) & (small >= 0x1p-400) ? 0x1p-600 : m < 0x1p-500 ? 0x1p600 : 1.0;
    const double n = ay * scale, d = ax * scale;
    // x's sign bit (GCC vectorizes no f64 std::signbit)
    const bool flip = static_cast<std::int64_t>(std::bit_cast<std::uint64_t>(x)) < 0;
    double num, num_err, den, den_err, hi, lo;
    atan_reduce(n, d, flip, num, num_err, den, den_err, hi, lo);
    const double t = num / den;
    double p, pe;
    two_product(t, den, p, pe);
    const bool exact = (n >= 0x1p-900) & (d >= 0x1p-900) & (n <= 0x1p920) & (d <= 0x1p920);
    const double tl = exact ? ((((num - p) - pe) + num_err) - t * den_err) / den : 0.0;
    const double ts = flip ? -t : t, tls = flip ? -tl : tl;
    const double r = hi - ((ts * atan_poly(t) - (lo + (tls - tls * (t * t)))) - ts);
    const bool both_inf = (ay == std::numeric_limits<double>::infinity()) & (ax == std::numeric_limits<double>::infinity());
    const double v = both_inf | (ay == 0.0) ? atan2_edge(both_inf, flip) : r;
    return y != y ? y : x != x ? x : std::copysign(v, y);
}
// f32 in f64, where n / d is exact enough and in range.
[[gnu::always_inline]] inline float atan2_f32(float y, float x) {
    const double ay = std::fabs(static_cast<double>(y)), ax = std::fabs(static_cast<double>(x));
    const bool flip = std::signbit(x);
    double num, num_err, den, den_err, hi, lo;
    atan_reduce(ay, ax, flip, num, num_err, den, den_err, hi, lo);
    const double t = num / den, ts = flip ? -t : t;
    const double r = hi - ((ts * atan_poly_short(t) - lo) - ts);
    const bool both_inf = (ay == std::numeric_limits<double>::infinity()) & (ax == std::numeric_limits<double>::infinity());
    const float v = static_cast<float>(both_inf | (ay == 0.0) ? atan2_edge(both_inf, flip) : r);
    return y != y ? y : x != x ? x : std::copysign(v, y);
}

// At the compute dtype.
[[gnu::always_inline]] inline float erf_of(float x) { return erf_f32(x); }
[[gnu::always_inline]] inline double erf_of(double x) { return erf_f64(x); }
[[gnu::always_inline]] inline float erfc_of(float x) { return erfc_f32(x); }
[[gnu::always_inline]] inline double erfc_of(double x) { return erfc_f64(x); }
[[gnu::always_inline]] inline float atan_of(float x) { return atan_f32(x); }
[[gnu::always_inline]] inline double atan_of(double x) { return atan_f64(x); }
[[gnu::always_inline]] inline float atan2_of(float y, float x) { return atan2_f32(y, x); }
[[gnu::always_inline]] inline double atan2_of(double y, double x) { return atan2_f64(y, x); }

}  // namespace
}  // namespace scanc
