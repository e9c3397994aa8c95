// scanc's log2, log10 and exp2 (src/ir/float_math.h), which the reference executor and the CPU
// backend share: within 1 ulp of the C library's (f32: its f64 functions rounded to f32; f64:
// its long double ones rounded to f64), exact where the result is representable (powers of two
// for log2 and integers for exp2, 10^k for log10), and the C library's special values.
#include "../../src/ir/float_math.h"
#include "float_math_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace scanc {
namespace {

using namespace float_math_test;

const auto log2_rounded = rounded_from_f64([](double x) { return std::log2(x); });
const auto log10_rounded = rounded_from_f64([](double x) { return std::log10(x); });
const auto exp2_rounded = rounded_from_f64([](double x) { return std::exp2(x); });

TEST(Log2F32, IsWithinOneUlpOfLog2AcrossEveryBinade) {
    // Edges: the smallest subnormal, the smallest normal (below it the input is scaled first),
    // 1, sqrt(2) (where the reduced argument wraps) and the largest float.
    float at = 0;
    EXPECT_LE(worst_ulps(log2_f32, log2_rounded, {0x1p-149f, 0x1p-126f, 1.0f, 1.41421356f, 3.40282347e38f}, at), 1)
        << "at " << at;
}

TEST(Log10F32, IsWithinOneUlpOfLog10AcrossEveryBinade) {
    float at = 0;
    EXPECT_LE(worst_ulps(log10_f32, log10_rounded, {0x1p-149f, 0x1p-126f, 1.0f, 1.41421356f, 10.0f, 3.40282347e38f}, at), 1)
        << "at " << at;
}

TEST(Exp2F32, IsWithinOneUlpOfExp2AcrossEveryBinade) {
    // Edges: overflow, the smallest normal result, the smallest subnormal, where 2^x rounds to
    // 0, and where the rounding of x to an integer turns.
    float at = 0;
    EXPECT_LE(worst_ulps(exp2_f32, exp2_rounded, {128.0f, -126.0f, -149.0f, -150.0f, 0.0f, 0.5f, -0.5f, 100.5f}, at), 1)
        << "at " << at;
}

TEST(Log2F64, IsWithinOneUlpOfLog2) {
    ASSERT_GE(std::numeric_limits<long double>::digits, 64) << "the reference needs a long double wider than double";
    double at = 0;
    EXPECT_LE(worst_ulps_f64(log2_f64, [](long double x) { return std::log2(x); }, 0.0, 4.0,
                             {0x1p-1074, 0x1p-1022, 1.0, 1.4142135623730951, std::numeric_limits<double>::max()}, at),
              1)
        << "at " << at;
}

TEST(Log10F64, IsWithinOneUlpOfLog10) {
    ASSERT_GE(std::numeric_limits<long double>::digits, 64);
    double at = 0;
    EXPECT_LE(worst_ulps_f64(log10_f64, [](long double x) { return std::log10(x); }, 0.0, 4.0,
                             {0x1p-1074, 0x1p-1022, 1.0, 1.4142135623730951, 10.0, std::numeric_limits<double>::max()}, at),
              1)
        << "at " << at;
}

TEST(Exp2F64, IsWithinOneUlpOfExp2) {
    ASSERT_GE(std::numeric_limits<long double>::digits, 64);
    // Draws from past both ends; edges as for f32.
    double at = 0;
    EXPECT_LE(worst_ulps_f64(exp2_f64, [](long double x) { return std::exp2(x); }, -1080.0, 1030.0,
                             {1024.0, -1022.0, -1074.0, -1075.0, 0.0, 0.5, -0.5, 1000.5}, at),
              1)
        << "at " << at;
    EXPECT_LE(worst_ulps_f64(exp2_f64, [](long double x) { return std::exp2(x); }, -1.0, 1.0, {}, at), 1) << "at " << at;
}

// log2(2^k) = k, and exp2(k) = 2^k, for every k whose power of two is a T (subnormals too).
template <typename T>
void expect_exact_at_powers_of_two() {
    constexpr int lowest = std::numeric_limits<T>::min_exponent - std::numeric_limits<T>::digits;  // -149, -1074
    for (int k = lowest; k < std::numeric_limits<T>::max_exponent; ++k) {
        const T p = std::ldexp(T(1), k);
        ASSERT_EQ(log2_of(p), T(k)) << "log2(2^" << k << ")";
        ASSERT_EQ(exp2_of(T(k)), p) << "exp2(" << k << ")";
    }
}

TEST(Log2AndExp2, AreExactAtEveryPowerOfTwoAndEveryIntegerInRange) {
    expect_exact_at_powers_of_two<float>();
    expect_exact_at_powers_of_two<double>();
}

TEST(Log10, IsExactAtThePowersOfTenThatAreFloats) {
    float f = 1.0f;  // 10^0 .. 10^10 are f32 values (5^10 < 2^24)
    for (int k = 0; k <= 10; ++k, f *= 10.0f) EXPECT_EQ(log10_f32(f), static_cast<float>(k)) << "10^" << k;
    double d = 1.0;  // 10^0 .. 10^22 are f64 values
    for (int k = 0; k <= 22; ++k, d *= 10.0) EXPECT_EQ(log10_f64(d), static_cast<double>(k)) << "10^" << k;
}

// 0: -inf (either sign); below 0, -inf and NaN: NaN; inf: inf; 1: +0.
template <typename T>
void expect_special_values_of_a_logarithm(T (*f)(T)) {
    const T inf = std::numeric_limits<T>::infinity();
    EXPECT_EQ(f(T(0)), -inf);
    EXPECT_EQ(f(-T(0)), -inf);
    EXPECT_EQ(f(inf), inf);
    EXPECT_EQ(f(T(1)), T(0));
    EXPECT_FALSE(std::signbit(f(T(1))));
    for (T x : {T(-1), -std::numeric_limits<T>::denorm_min(), -inf, std::numeric_limits<T>::quiet_NaN()})
        EXPECT_TRUE(std::isnan(f(x))) << x;
}

TEST(Log2AndLog10, GiveTheSpecialValuesOfTheCLibrarysAtF32AndF64) {
    expect_special_values_of_a_logarithm<float>(log2_f32);
    expect_special_values_of_a_logarithm<float>(log10_f32);
    expect_special_values_of_a_logarithm<double>(log2_f64);
    expect_special_values_of_a_logarithm<double>(log10_f64);
}

// inf past the largest power, 0 below half the smallest subnormal (2^(lowest - 1) rounds to
// even, 0), 0 at -inf, 1 at either zero, NaN at NaN.
template <typename T>
void expect_special_values_of_exp2(T (*f)(T)) {
    const T inf = std::numeric_limits<T>::infinity();
    constexpr int lowest = std::numeric_limits<T>::min_exponent - std::numeric_limits<T>::digits;
    EXPECT_EQ(f(T(std::numeric_limits<T>::max_exponent)), inf);
    EXPECT_EQ(f(T(1e6)), inf);
    EXPECT_EQ(f(inf), inf);
    EXPECT_EQ(f(T(lowest - 1)), T(0));
    EXPECT_EQ(f(T(lowest) - T(0.5)), std::numeric_limits<T>::denorm_min());  // 2^-0.5 of it rounds up
    EXPECT_EQ(f(T(-1e6)), T(0));
    EXPECT_EQ(f(-inf), T(0));
    EXPECT_EQ(f(T(0)), T(1));
    EXPECT_EQ(f(-T(0)), T(1));
    EXPECT_TRUE(std::isnan(f(std::numeric_limits<T>::quiet_NaN())));
}

TEST(Exp2, GivesTheSpecialValuesOfTheCLibrarysAtF32AndF64) {
    expect_special_values_of_exp2<float>(exp2_f32);
    expect_special_values_of_exp2<double>(exp2_f64);
}

}  // namespace
}  // namespace scanc
