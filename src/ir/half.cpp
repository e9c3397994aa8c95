// f16 and bf16: bit-level conversions from/to float, round-to-nearest-even, with NaN, inf,
// subnormals and overflow handled (scalar_eval.h states the semantics).
#include "half.h"

#include <bit>
#include <cmath>
#include <cstdint>

#include "scanc/ir/scalar_eval.h"

namespace scanc {

std::uint16_t f16_bits(float x) {
    std::uint32_t u = std::bit_cast<std::uint32_t>(x);
    std::uint32_t sign = (u >> 16) & 0x8000u;
    std::uint32_t ax = u & 0x7fffffffu;
    if (ax > 0x7f800000u)  // NaN: keep the top payload bits, force quiet
        return static_cast<std::uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
    if (ax >= 0x477ff000u)  // >= 65520 (halfway past 65504, ties to even = up): inf
        return static_cast<std::uint16_t>(sign | 0x7c00u);
    if (ax < 0x38800000u) {  // below 2^-14: subnormal, quantum 2^-24; scaling is exact
        float scaled = std::bit_cast<float>(ax) * 16777216.0f;
        auto m = static_cast<std::uint32_t>(std::nearbyint(scaled));  // 1024 encodes 2^-14
        return static_cast<std::uint16_t>(sign | m);
    }
    std::uint32_t h = ((((ax >> 23) - 127 + 15) << 10) | ((ax >> 13) & 0x3ffu));
    std::uint32_t rest = ax & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry bumps the exponent
    return static_cast<std::uint16_t>(sign | h);
}

float f16_from_bits(std::uint16_t b) {
    std::uint32_t sign = static_cast<std::uint32_t>(b & 0x8000u) << 16;
    std::uint32_t e = (b >> 10) & 0x1fu, m = b & 0x3ffu;
    if (e == 0) {
        float v = static_cast<float>(m) * 5.9604644775390625e-8f;  // m * 2^-24, exact
        return std::bit_cast<float>(std::bit_cast<std::uint32_t>(v) | sign);
    }
    // A signalling NaN comes out quiet, as IEEE 754 converts and as F16C does (ops_narrow.inc).
    if (e == 31) return std::bit_cast<float>(sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0u));
    return std::bit_cast<float>(sign | ((e - 15 + 127) << 23) | (m << 13));
}

std::uint16_t bf16_bits(float x) {
    std::uint32_t u = std::bit_cast<std::uint32_t>(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
    // Adding 0x7fff plus the lowest kept bit rounds to nearest, ties to even; a carry into the
    // exponent (up to inf) is the right result.
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<std::uint16_t>(u >> 16);
}

float bf16_from_bits(std::uint16_t b) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

float round_to_f16(float x) { return f16_from_bits(f16_bits(x)); }
float round_to_bf16(float x) { return bf16_from_bits(bf16_bits(x)); }

namespace detail {
namespace {

// Rounds to a binary format with `fraction_bits` stored fraction bits, normal exponents in
// [emin, emax]. The quantum is the spacing of the format at x; dividing by a power of two is
// exact in double for these ranges, and nearbyint rounds to nearest even.
double round_to_format(double x, int fraction_bits, int emin, int emax) {
    if (!std::isfinite(x) || x == 0) return x;
    double a = std::fabs(x);
    int e = std::ilogb(a);
    if (e < emin) e = emin;
    double quantum = std::ldexp(1.0, e - fraction_bits);
    double r = std::nearbyint(a / quantum) * quantum;
    if (r >= std::ldexp(1.0, emax + 1)) r = INFINITY;
    return std::copysign(r, x);
}

}  // namespace

double round_double_to_f16(double x) { return round_to_format(x, 10, -14, 15); }
double round_double_to_bf16(double x) { return round_to_format(x, 7, -126, 127); }

}  // namespace detail
}  // namespace scanc
