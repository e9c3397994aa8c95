// scanc's erf, erfc, atan and atan2 (src/ir/float_math_erf_atan.h), which the reference executor
// and the CPU backend share: within 1 ulp of the C library's (f32: its f64 functions rounded to
// f32; f64: its long double ones rounded to f64), erfc to full relative precision in its tail
// down to the subnormals (where 1 - erf is 0), and C's special values, signed zeros and
// infinities included.
#include "../../src/ir/float_math_erf_atan.h"
#include "float_math_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>

namespace scanc {
namespace {

using namespace float_math_test;

const auto erf_rounded = rounded_from_f64([](double x) { return std::erf(x); });
const auto erfc_rounded = rounded_from_f64([](double x) { return std::erfc(x); });
const auto atan_rounded = rounded_from_f64([](double x) { return std::atan(x); });

TEST(ErfF32, IsWithinOneUlpOfErfAcrossEveryBinade) {
    // Edges: where the near interval's tiny case ends, fdlibm's 0.84375, the polynomials'
    // intervals of erfc, and where erf rounds to 1.
    float at = 0;
    EXPECT_LE(worst_ulps(erf_f32, erf_rounded, {0x1p-28f, 0x1p-126f, 0.25f, 0.5f, 0.84375f, 1.25f, 2.0f, 2.857142857f, 3.9f}, at),
              1)
        << "at " << at;
}

TEST(ErfcF32, IsWithinOneUlpOfErfcAcrossEveryBinadeIntoTheSubnormals) {
    // Edges as for erf, where the result turns subnormal (9.2) and where it rounds to 0 (10.05).
    float at = 0;
    EXPECT_LE(worst_ulps(erfc_f32, erfc_rounded,
                         {0.25f, 0.5f, 0.84375f, 1.25f, 2.0f, 2.857142857f, 9.194f, 10.05f, -0.84375f, -3.9f}, at),
              1)
        << "at " << at;
}

TEST(AtanF32, IsWithinOneUlpOfAtanAcrossEveryBinade) {
    // Edges: fdlibm's reduction intervals.
    float at = 0;
    EXPECT_LE(worst_ulps(atan_f32, atan_rounded, {0x1p-12f, 0.4375f, 0.6875f, 1.1875f, 2.4375f, 0x1p26f}, at), 1) << "at " << at;
}

TEST(Atan2F32, IsWithinOneUlpOfAtan2ForOperandsOfEveryBinadeAndSign) {
    float y = 0, x = 0;
    const auto atan2_rounded = [](float b, float a) { return static_cast<float>(std::atan2(double(b), double(a))); };
    EXPECT_LE(worst_ulps_of_pairs<float>(atan2_f32, atan2_rounded,
                                         {0.0f, 0x1p-149f, 0x1p-126f, 0.4375f, 1.0f, 1.1875f, 3.0f, 0x1p100f, 3.4e38f,
                                          std::numeric_limits<float>::infinity()},
                                         y, x),
              1)
        << "at y = " << y << ", x = " << x;
}

TEST(ErfF64, IsWithinOneUlpOfErf) {
    ASSERT_GE(std::numeric_limits<long double>::digits, 64) << "the reference needs a long double wider than double";
    double at = 0;
    EXPECT_LE(worst_ulps_f64(erf_f64, [](long double x) { return std::erf(x); }, -7.0, 7.0,
                             {0x1p-1018, 0x1p-1022, 0x1p-28, 0.5, 0.84375, 1.25, 2.0, 2.857142857142857, 5.9},
                             at),
              1)
        << "at " << at;
}

TEST(ErfcF64, IsWithinOneUlpOfErfcDownToTheSubnormals) {
    ASSERT_GE(std::numeric_limits<long double>::digits, 64);
    // Draws from where erfc is about 2 to where it rounds to 0; edges: the intervals, where it
    // turns subnormal (26.55) and where it rounds to 0 (27.23).
    double at = 0;
    EXPECT_LE(worst_ulps_f64(erfc_f64, [](long double x) { return std::erfc(x); }, -7.0, 28.0,
                             {0.25, 0.5, 0.84375, 1.25, 2.0, 2.857142857142857, 26.55, 27.23, -0.84375, -5.9},
                             at),
              1)
        << "at " << at;
}

TEST(AtanF64, IsWithinOneUlpOfAtan) {
    ASSERT_GE(std::numeric_limits<long double>::digits, 64);
    double at = 0;
    EXPECT_LE(worst_ulps_f64(atan_f64, [](long double x) { return std::atan(x); }, -4.0, 4.0,
                             {0x1p-29, 0x1p-1022, 0.4375, 0.6875, 1.1875, 2.4375, 0x1p66}, at),
              1)
        << "at " << at;
}

TEST(Atan2F64, IsWithinOneUlpOfAtan2ForOperandsOfEveryBinadeAndSign) {
    ASSERT_GE(std::numeric_limits<long double>::digits, 64);
    // Edges: zeros, subnormals, where the operands are scaled (2^+-500) and the quotient's error
    // is taken (2^+-900), the largest double and infinity.
    double y = 0, x = 0;
    const auto atan2_rounded = [](double b, double a) { return static_cast<double>(std::atan2(static_cast<long double>(b), a)); };
    EXPECT_LE(worst_ulps_of_pairs<double>(atan2_f64, atan2_rounded,
                                          {0.0, 0x1p-1074, 0x1p-1022, 0x1p-900, 0x1p-500, 0.4375, 1.0, 1.1875, 3.0, 0x1p500,
                                           0x1p900, std::numeric_limits<double>::max(), std::numeric_limits<double>::infinity()},
                                          y, x),
              1)
        << "at y = " << y << ", x = " << x;
}

// erfc where erf is within half an ulp of 1 (from 5.9 for f64, 3.9 for f32): 1 - erf would be 0,
// erfc keeps its relative precision to the last subnormal.
TEST(Erfc, KeepsItsTailWhere1MinusErfIsZero) {
    for (double x = 6.0; x < 27.2; x += 0.37) {
        EXPECT_EQ(1.0 - erf_f64(x), 0.0) << x;
        const double want = static_cast<double>(std::erfc(static_cast<long double>(x)));
        EXPECT_LE(ulps_apart(erfc_f64(x), want), 1) << x;
        EXPECT_GT(erfc_f64(x), 0.0) << x;
    }
    EXPECT_EQ(erfc_f64(27.3), 0.0);
    for (float x = 4.0f; x < 10.0f; x += 0.37f) {
        EXPECT_EQ(1.0f - erf_f32(x), 0.0f) << x;
        EXPECT_LE(ulps_apart(erfc_f32(x), erfc_rounded(x)), 1) << x;
        EXPECT_GT(erfc_f32(x), 0.0f) << x;
    }
    EXPECT_EQ(erfc_f32(10.1f), 0.0f);
}

// erf(+-0) = +-0, erf(+-inf) = +-1; erfc(+-0) = 1, erfc(inf) = 0, erfc(-inf) = 2; erf(-x) =
// -erf(x); NaN gives NaN.
template <typename T>
void expect_special_values_of_erf_and_erfc(T (*erf)(T), T (*erfc)(T)) {
    const T inf = std::numeric_limits<T>::infinity();
    for (T z : {T(0), -T(0)}) {
        EXPECT_EQ(erf(z), z);
        EXPECT_EQ(std::signbit(erf(z)), std::signbit(z));
        EXPECT_EQ(erfc(z), T(1));
    }
    EXPECT_EQ(erf(inf), T(1));
    EXPECT_EQ(erf(-inf), T(-1));
    EXPECT_EQ(erfc(inf), T(0));
    EXPECT_EQ(erfc(-inf), T(2));
    EXPECT_EQ(erfc(T(1e30)), T(0));
    EXPECT_EQ(erfc(T(-1e30)), T(2));
    EXPECT_TRUE(std::isnan(erf(std::numeric_limits<T>::quiet_NaN())));
    EXPECT_TRUE(std::isnan(erfc(std::numeric_limits<T>::quiet_NaN())));
    for (T x : {T(1e-30), T(0.3), T(0.9), T(1.7), T(4.0), T(30.0)}) EXPECT_EQ(erf(-x), -erf(x)) << x;
}

TEST(ErfAndErfc, GiveTheSpecialValuesOfTheCLibrarysAtF32AndF64) {
    expect_special_values_of_erf_and_erfc<float>(erf_f32, erfc_f32);
    expect_special_values_of_erf_and_erfc<double>(erf_f64, erfc_f64);
}

// atan(+-0) = +-0, atan(+-inf) = +-pi/2 rounded, atan(-x) = -atan(x), NaN gives NaN.
template <typename T>
void expect_special_values_of_atan(T (*atan)(T)) {
    const T inf = std::numeric_limits<T>::infinity();
    EXPECT_EQ(atan(T(0)), T(0));
    EXPECT_FALSE(std::signbit(atan(T(0))));
    EXPECT_TRUE(std::signbit(atan(-T(0))));
    EXPECT_EQ(atan(inf), static_cast<T>(std::numbers::pi_v<long double> / 2));
    EXPECT_EQ(atan(-inf), -static_cast<T>(std::numbers::pi_v<long double> / 2));
    EXPECT_EQ(atan(T(1)), static_cast<T>(std::numbers::pi_v<long double> / 4));
    EXPECT_TRUE(std::isnan(atan(std::numeric_limits<T>::quiet_NaN())));
    for (T x : {std::numeric_limits<T>::denorm_min(), T(0.3), T(0.5), T(1.5), T(1e30)}) EXPECT_EQ(atan(-x), -atan(x)) << x;
}

TEST(Atan, GivesTheSpecialValuesOfTheCLibrarysAtF32AndF64) {
    expect_special_values_of_atan<float>(atan_f32);
    expect_special_values_of_atan<double>(atan_f64);
}

// C's atan2 where either operand is a signed zero or an infinity, the other any of these or a
// finite value of either sign: the C library's long double result rounded to T, sign of zero
// included (those results are 0, +-pi/4, +-pi/2, +-3pi/4 and +-pi). NaN in either gives NaN.
template <typename T>
void expect_atan2_special_values(T (*atan2)(T, T)) {
    const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
    const T special[] = {T(0), -T(0), inf, -inf};
    const T values[] = {T(0), -T(0), inf, -inf, T(1), T(-1), T(0.5), T(-3), std::numeric_limits<T>::denorm_min(),
                        -std::numeric_limits<T>::denorm_min(), std::numeric_limits<T>::max(), -std::numeric_limits<T>::max()};
    auto expect_c = [&](T y, T x) {
        const T want = static_cast<T>(std::atan2(static_cast<long double>(y), static_cast<long double>(x)));
        const T got = atan2(y, x);
        EXPECT_EQ(got, want) << "atan2(" << y << ", " << x << ")";
        EXPECT_EQ(std::signbit(got), std::signbit(want)) << "atan2(" << y << ", " << x << ")";
    };
    for (T s : special)
        for (T v : values) expect_c(s, v), expect_c(v, s);
    for (T v : values) {
        EXPECT_TRUE(std::isnan(atan2(nan, v))) << v;
        EXPECT_TRUE(std::isnan(atan2(v, nan))) << v;
    }
}

TEST(Atan2, GivesCsValuesAtSignedZerosInfinitiesAndNaNAtF32AndF64) {
    expect_atan2_special_values<float>(atan2_f32);
    expect_atan2_special_values<double>(atan2_f64);
}

}  // namespace
}  // namespace scanc
