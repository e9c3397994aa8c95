#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "scanc/ir/scalar_eval.h"
#include "test_tensors.h"

namespace scanc {
namespace {

using testing::nearest_bf16;
using testing::nearest_f16;

// Edge cases of both formats: ties, subnormal boundaries, overflow thresholds, signed zeros.
std::vector<float> awkward_floats() {
    std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.99f, 65520.0f, -65520.0f,
                            65536.0f, 1e-8f, 2.98e-8f, 2.9802322e-8f, 5.9604645e-8f, 6.1e-5f,
                            6.103515625e-5f, 1.0009765625f, 1.00048828125f, 1.00146484375f,
                            3.3895314e38f, 3.4e38f, 1e-40f, 1.17549435e-38f, 0.1f, 1.0f / 3};
    // Exact midpoints between neighbouring f16 values (ties) around 1 and 2048.
    for (int m = 0; m < 8; ++m) {
        v.push_back(1.0f + (2 * m + 1) * 0.00048828125f);
        v.push_back(2048.0f + (2 * m + 1) * 1.0f);
        v.push_back(1.0f + (2 * m + 1) * 0.00390625f);  // bf16 ties
    }
    return v;
}

// Checks round(x) against the nearest value found by table search, for every x.
void expect_nearest_even(const std::vector<float>& xs, float (*round)(float), double (*nearest)(double)) {
    for (float x : xs) {
        double want = nearest(x);
        float got = round(x);
        if (std::isnan(want)) {
            EXPECT_TRUE(std::isnan(got)) << x;
        } else {
            EXPECT_EQ(static_cast<double>(got), want) << "x = " << x;
            EXPECT_EQ(std::signbit(got), std::signbit(x)) << x;
        }
    }
}

TEST(Half, EveryF16BitPatternDecodesToItsValueAndEncodesBack) {
    for (std::uint32_t b = 0; b < 65536; ++b) {
        auto bits = static_cast<std::uint16_t>(b);
        float x = f16_from_bits(bits);
        std::uint32_t e = (b >> 10) & 31, m = b & 1023;
        double want = e == 0    ? std::ldexp(m, -24)
                      : e == 31 ? (m ? NAN : INFINITY)
                                : std::ldexp(1024 + m, static_cast<int>(e) - 25);
        if (b & 0x8000) want = -want;
        if (e == 31 && m) {
            // Quiet, its payload kept (a signalling NaN made quiet, as IEEE 754 converts).
            EXPECT_EQ(std::bit_cast<std::uint32_t>(x), (b & 0x8000) << 16 | 0x7fc00000u | m << 13) << b;
            EXPECT_TRUE(std::isnan(f16_from_bits(f16_bits(x)))) << b;
            continue;
        }
        EXPECT_EQ(static_cast<double>(x), want) << b;
        EXPECT_EQ(f16_bits(x), bits) << b;
    }
}

TEST(Half, EveryBf16BitPatternRoundTrips) {
    for (std::uint32_t b = 0; b < 65536; ++b) {
        auto bits = static_cast<std::uint16_t>(b);
        float x = bf16_from_bits(bits);
        EXPECT_EQ(std::bit_cast<std::uint32_t>(x), b << 16);
        if (!std::isnan(x)) {
            EXPECT_EQ(bf16_bits(x), bits) << b;
        }
    }
}

TEST(Half, RoundingToF16IsNearestEvenIncludingSubnormalsAndOverflow) {
    std::mt19937_64 rng(7);
    std::vector<float> xs = awkward_floats();
    std::uniform_int_distribution<std::uint32_t> any;
    for (int i = 0; i < 200000; ++i) xs.push_back(std::bit_cast<float>(any(rng)));
    // Many more in f16's range, where rounding actually varies.
    std::uniform_real_distribution<float> range(-70000.0f, 70000.0f);
    for (int i = 0; i < 100000; ++i) xs.push_back(range(rng) * std::ldexp(1.0f, -(i % 40)));
    expect_nearest_even(xs, round_to_f16, nearest_f16);
}

TEST(Half, RoundingToBf16IsNearestEvenIncludingSubnormalsAndOverflow) {
    std::mt19937_64 rng(8);
    std::vector<float> xs = awkward_floats();
    std::uniform_int_distribution<std::uint32_t> any;
    for (int i = 0; i < 300000; ++i) xs.push_back(std::bit_cast<float>(any(rng)));
    xs.push_back(std::numeric_limits<float>::max());
    xs.push_back(std::numeric_limits<float>::denorm_min());
    expect_nearest_even(xs, round_to_bf16, nearest_bf16);
}

TEST(Half, CastFromF64RoundsOnceNotTwice) {
    // 1 + 2^-11 + 2^-40 lies just above an f16 tie: one rounding goes up, but rounding to f32
    // first would land on the tie and then go to even (down).
    double x = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
    ASSERT_EQ(nearest_f16(x), 1.0 + std::ldexp(1.0, -10));
    ScalarType f64{DType::F64, false};
    Scalar v = eval_op(Op::Cast, std::vector<Scalar>{Scalar::of_double(DType::F64, x)},
                       {DType::F16, false}, std::span<const ScalarType>(&f64, 1));
    EXPECT_EQ(v.f, nearest_f16(x));
    EXPECT_EQ(Scalar::of_double(DType::BF16, 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40)).f,
              nearest_bf16(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40)));
}

TEST(Half, NanAndInfinitySurviveBothFormats) {
    for (float x : {INFINITY, -INFINITY}) {
        EXPECT_EQ(round_to_f16(x), x);
        EXPECT_EQ(round_to_bf16(x), x);
    }
    EXPECT_TRUE(std::isnan(round_to_f16(NAN)));
    EXPECT_TRUE(std::isnan(round_to_bf16(NAN)));
    // A NaN whose payload lives only in low bits must not become inf.
    float low_payload_nan = std::bit_cast<float>(0x7f800001u);
    EXPECT_TRUE(std::isnan(round_to_f16(low_payload_nan)));
    EXPECT_TRUE(std::isnan(round_to_bf16(low_payload_nan)));
}

}  // namespace
}  // namespace scanc
