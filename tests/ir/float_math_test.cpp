// scanc's exp, log, log1p, expm1, tanh, sin and cos (src/ir/float_math.h), which the reference executor
// and the CPU backend share: f32 against the C library's f64 functions rounded to f32, f64 against its long
// double ones rounded to f64.
#include "../../src/ir/float_math.h"
#include "float_math_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

namespace scanc {
namespace {

using namespace float_math_test;

float exp_rounded(float x) { return static_cast<float>(std::exp(static_cast<double>(x))); }
float log_rounded(float x) { return static_cast<float>(std::log(static_cast<double>(x))); }
float log1p_rounded(float x) { return static_cast<float>(std::log1p(static_cast<double>(x))); }
float expm1_rounded(float x) { return static_cast<float>(std::expm1(static_cast<double>(x))); }
float tanh_rounded(float x) { return static_cast<float>(std::tanh(static_cast<double>(x))); }
float sin_rounded(float x) { return static_cast<float>(std::sin(static_cast<double>(x))); }
float cos_rounded(float x) { return static_cast<float>(std::cos(static_cast<double>(x))); }

TEST(ExpF32, IsWithinOneUlpOfExpAcrossEveryBinade) {
    // Edges: overflow, the smallest normal result, the smallest subnormal, and zero.
    float at = 0;
    EXPECT_LE(worst_ulps(exp_f32, exp_rounded, {88.7228394f, -87.3365479f, -103.278931f, -103.972084f}, at), 1)
        << "at " << at;
}

TEST(LogF32, IsWithinOneUlpOfLogAcrossEveryBinade) {
    // Edges: the smallest normal (below it the input is scaled first), 1, sqrt(2) (where the
    // reduced argument wraps) and the largest float.
    float at = 0;
    EXPECT_LE(worst_ulps(log_f32, log_rounded, {1.17549435e-38f, 1.0f, 1.41421356f, 3.40282347e38f}, at), 1)
        << "at " << at;
}

TEST(LogF32, GivesTheSpecialValuesOfLog) {
    EXPECT_EQ(log_f32(1.0f), 0.0f);
    EXPECT_EQ(log_f32(0.0f), -INFINITY);
    EXPECT_EQ(log_f32(-0.0f), -INFINITY);
    EXPECT_TRUE(std::isnan(log_f32(-1.0f)));
    EXPECT_TRUE(std::isnan(log_f32(-INFINITY)));
    EXPECT_TRUE(std::isnan(log_f32(std::numeric_limits<float>::quiet_NaN())));
    EXPECT_EQ(log_f32(INFINITY), INFINITY);
    EXPECT_EQ(log_f32(std::numeric_limits<float>::denorm_min()), log_rounded(std::numeric_limits<float>::denorm_min()));
}

TEST(Log1pF32, IsWithinOneUlpOfLog1pAcrossEveryBinade) {
    // Edges: -1, where 1 + x leaves [sqrt(2)/2, sqrt(2)) on either side, 2^-24 (below it the
    // result is x), and 1 (where 1 + x starts to round).
    float at = 0;
    EXPECT_LE(worst_ulps(log1p_f32, log1p_rounded, {-1.0f, -0.29289323f, 0.41421357f, 5.96046448e-8f, 1.0f}, at), 1)
        << "at " << at;
}

TEST(Log1pF32, GivesTheSpecialValuesOfLog1p) {
    EXPECT_EQ(log1p_f32(0.0f), 0.0f);
    EXPECT_TRUE(std::signbit(log1p_f32(-0.0f)));
    EXPECT_EQ(log1p_f32(1e-30f), 1e-30f);
    EXPECT_EQ(log1p_f32(std::numeric_limits<float>::denorm_min()), std::numeric_limits<float>::denorm_min());
    EXPECT_EQ(log1p_f32(-1.0f), -INFINITY);
    EXPECT_TRUE(std::isnan(log1p_f32(-1.5f)));
    EXPECT_TRUE(std::isnan(log1p_f32(-INFINITY)));
    EXPECT_TRUE(std::isnan(log1p_f32(std::numeric_limits<float>::quiet_NaN())));
    EXPECT_EQ(log1p_f32(INFINITY), INFINITY);
    EXPECT_EQ(log1p_f32(std::numeric_limits<float>::max()), log1p_rounded(std::numeric_limits<float>::max()));
}

TEST(ExpF32, GivesTheSpecialValuesOfExp) {
    EXPECT_EQ(exp_f32(0.0f), 1.0f);
    EXPECT_EQ(exp_f32(-0.0f), 1.0f);
    EXPECT_EQ(exp_f32(INFINITY), INFINITY);
    EXPECT_EQ(exp_f32(-INFINITY), 0.0f);
    EXPECT_TRUE(std::isnan(exp_f32(std::numeric_limits<float>::quiet_NaN())));
    EXPECT_EQ(exp_f32(89.0f), INFINITY);               // past ln(FLT_MAX) = 88.72284
    EXPECT_EQ(exp_f32(88.72283f), exp_rounded(88.72283f));  // just below: the largest finite results
    EXPECT_EQ(exp_f32(-103.28f), std::numeric_limits<float>::denorm_min());
    EXPECT_EQ(exp_f32(-104.0f), 0.0f);
    EXPECT_EQ(exp_f32(-1000.0f), 0.0f);
    EXPECT_EQ(exp_f32(1000.0f), INFINITY);
}

TEST(Expm1F32, IsWithinOneUlpOfExpm1AcrossEveryBinade) {
    // Edges: 0, where the reduction's k leaves 0 and 1 (ln 2 / 2, 3 ln 2 / 2), overflow, and
    // where the result reaches -1.
    float at = 0;
    EXPECT_LE(worst_ulps(expm1_f32, expm1_rounded, {0.0f, 0.34657359f, -0.34657359f, 1.03972077f, 88.7228394f, -17.3286795f}, at), 1)
        << "at " << at;
}

TEST(TanhF32, IsWithinOneUlpOfTanhAcrossEveryBinade) {
    // Edges: 0, 0.625 (where the polynomial gives way to expm1) and where the result reaches 1.
    float at = 0;
    EXPECT_LE(worst_ulps(tanh_f32, tanh_rounded, {0.0f, 0.625f, -0.625f, 9.01091290f}, at), 1) << "at " << at;
}

TEST(TanhF32, GivesTheSpecialValuesOfTanhAndExpm1) {
    EXPECT_EQ(tanh_f32(0.0f), 0.0f);
    EXPECT_TRUE(std::signbit(tanh_f32(-0.0f)));
    EXPECT_EQ(tanh_f32(INFINITY), 1.0f);
    EXPECT_EQ(tanh_f32(-INFINITY), -1.0f);
    EXPECT_EQ(tanh_f32(20.0f), 1.0f);
    EXPECT_EQ(tanh_f32(std::numeric_limits<float>::denorm_min()), std::numeric_limits<float>::denorm_min());
    EXPECT_TRUE(std::isnan(tanh_f32(std::numeric_limits<float>::quiet_NaN())));
    EXPECT_EQ(expm1_f32(0.0f), 0.0f);
    EXPECT_TRUE(std::signbit(expm1_f32(-0.0f)));
    EXPECT_EQ(expm1_f32(INFINITY), INFINITY);
    EXPECT_EQ(expm1_f32(-INFINITY), -1.0f);
    EXPECT_EQ(expm1_f32(89.0f), INFINITY);
    EXPECT_EQ(expm1_f32(-100.0f), -1.0f);
    EXPECT_TRUE(std::isnan(expm1_f32(std::numeric_limits<float>::quiet_NaN())));
}

// sin and cos: every 4099th float (the C library's path beyond 2^20 included), the floats around
// 2^-12 (below it sin is x), pi/4 (where the quadrant turns) and the limit, and every float
// within 64 ulps of k pi/2 for k = 1 .. 1000 and every 4999th k up to the limit (2^28), where
// the reduced argument cancels most.
template <typename F, typename R>
std::int64_t worst_trig_ulps(F f, R ref, float& at) {
    std::int64_t worst = worst_ulps(f, ref, {0x1p-12f, 0.785398163f, 0x1p28f, -0x1p28f}, at);
    for (std::int64_t k = 1; k < 170891319; k += k < 1000 ? 1 : 4999) {
        const float multiple = static_cast<float>(static_cast<double>(k) * 1.5707963267948966);
        float x = multiple;
        for (int i = 0; i < 64; ++i) x = std::nextafter(x, 0.0f);
        for (int i = 0; i < 128; ++i, x = std::nextafter(x, INFINITY)) {
            const std::int64_t d = ulps_apart(f(x), ref(x));
            if (d > worst) worst = d, at = x;
        }
    }
    return worst;
}

TEST(SinF32, IsWithinOneUlpOfSinAcrossEveryBinadeAndNearMultiplesOfHalfPi) {
    float at = 0;
    EXPECT_LE(worst_trig_ulps(sin_of<float>, sin_rounded, at), 1) << "at " << at;
}

TEST(CosF32, IsWithinOneUlpOfCosAcrossEveryBinadeAndNearMultiplesOfHalfPi) {
    float at = 0;
    EXPECT_LE(worst_trig_ulps(cos_of<float>, cos_rounded, at), 1) << "at " << at;
}


TEST(ExpF64, IsWithinOneUlpOfExp) {
    ASSERT_GE(std::numeric_limits<long double>::digits, 64) << "the reference needs a long double wider than double";
    // Edges: overflow, the smallest normal result, the smallest subnormal, zero, and where the
    // reduction's n steps.
    double at = 0;
    EXPECT_LE(worst_ulps_f64(exp_f64, [](long double x) { return std::exp(x); }, -746.0, 710.0,
                             {709.782712893384, -708.3964185322641, -745.1332191019411, 0.0, 0.34657359027997264}, at),
              1)
        << "at " << at;
}

TEST(LogF64, IsWithinOneUlpOfLog) {
    ASSERT_GE(std::numeric_limits<long double>::digits, 64);
    // Edges: the smallest normal (below it the input is scaled first), 1, sqrt(2) and the
    // largest double.
    double at = 0;
    EXPECT_LE(worst_ulps_f64(log_f64, [](long double x) { return std::log(x); }, 0.0, 4.0,
                             {2.2250738585072014e-308, 1.0, 1.4142135623730951, std::numeric_limits<double>::max()}, at),
              1)
        << "at " << at;
}

TEST(Log1pF64, IsWithinOneUlpOfLog1p) {
    ASSERT_GE(std::numeric_limits<long double>::digits, 64);
    // Edges: -1, where 1 + x leaves [sqrt(2)/2, sqrt(2)) on either side, 2^-54 (below it the
    // result is x), and 1.
    double at = 0;
    EXPECT_LE(worst_ulps_f64(log1p_f64, [](long double x) { return std::log1p(x); }, -1.0, 4.0,
                             {-1.0, -0.29289321881345248, 0.41421356237309515, 0x1p-54, 1.0}, at),
              1)
        << "at " << at;
}

TEST(Expm1F64, IsWithinOneUlpOfExpm1) {
    ASSERT_GE(std::numeric_limits<long double>::digits, 64);
    // Edges: 2^-54 (below it the result is x), where the reduction's k leaves 0, +-1 and 19
    // (ln 2 / 2, 3 ln 2 / 2, 39 ln 2 / 2), where 2^k (1 + p) - 1 changes form (k = 56),
    // overflow, and where the result reaches -1.
    double at = 0;
    EXPECT_LE(worst_ulps_f64(expm1_f64, [](long double x) { return std::expm1(x); }, -4.0, 4.0,
                             {0x1p-54, -0x1p-54, 0.34657359027997264, -0.34657359027997264, 1.0397207708399179,
                              -1.0397207708399179, 13.516370020918933, 39.16281570163691, 709.782712893384, -37.42994775023705},
                             at),
              1)
        << "at " << at;
}

TEST(TanhF64, IsWithinOneUlpOfTanh) {
    ASSERT_GE(std::numeric_limits<long double>::digits, 64);
    // Edges: 0, 0.625 (where the polynomial gives way to expm1) and where the result reaches 1.
    double at = 0;
    EXPECT_LE(worst_ulps_f64(tanh_f64, [](long double x) { return std::tanh(x); }, -3.0, 3.0,
                             {0.0, 0.625, -0.625, 19.061547465398498}, at),
              1)
        << "at " << at;
}

// f64 sin and cos against the long double ones: random bit patterns, draws from +-2^21 (the
// C library's path beyond 2^20 included), the edges 2^-26 (below it sin is x), pi/4 and the
// limit, and every double within 64 ulps of k pi/2 for k = 1 .. 1000 and every 997th k up to
// the limit, where the reduced argument cancels most.
template <typename F, typename R>
std::int64_t worst_trig_ulps_f64(F f, R ref, double& at) {
    std::int64_t worst = worst_ulps_f64(f, ref, -0x1p21, 0x1p21, {0x1p-26, 0.78539816339744828, 0x1p20, -0x1p20}, at);
    for (std::int64_t k = 1; k < 667544; k += k < 1000 ? 1 : 997) {
        double x = static_cast<double>(static_cast<long double>(k) * 1.5707963267948966192313216916397514L);
        for (int i = 0; i < 64; ++i) x = std::nextafter(x, 0.0);
        for (int i = 0; i < 128; ++i, x = std::nextafter(x, INFINITY)) {
            const std::int64_t d = ulps_apart(f(x), static_cast<double>(ref(static_cast<long double>(x))));
            if (d > worst) worst = d, at = x;
        }
    }
    return worst;
}

TEST(SinF64, IsWithinOneUlpOfSinAcrossItsRangeAndNearMultiplesOfHalfPi) {
    ASSERT_GE(std::numeric_limits<long double>::digits, 64);
    double at = 0;
    EXPECT_LE(worst_trig_ulps_f64(sin_of<double>, [](long double x) { return std::sin(x); }, at), 1) << "at " << at;
}

TEST(CosF64, IsWithinOneUlpOfCosAcrossItsRangeAndNearMultiplesOfHalfPi) {
    ASSERT_GE(std::numeric_limits<long double>::digits, 64);
    double at = 0;
    EXPECT_LE(worst_trig_ulps_f64(cos_of<double>, [](long double x) { return std::cos(x); }, at), 1) << "at " << at;
}

// Signed zeros, the smallest subnormal, inf and NaN, and the C library's values just past the
// polynomials' limit, at T.
template <typename T>
void expect_special_values_of_sin_and_cos() {
    EXPECT_EQ(sin_of<T>(T(0)), T(0));
    EXPECT_TRUE(std::signbit(sin_of<T>(-T(0))));
    EXPECT_EQ(sin_of<T>(std::numeric_limits<T>::denorm_min()), std::numeric_limits<T>::denorm_min());
    EXPECT_EQ(cos_of<T>(T(0)), T(1));
    EXPECT_EQ(cos_of<T>(-T(0)), T(1));
    for (T x : {std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::infinity(), std::numeric_limits<T>::quiet_NaN()}) {
        EXPECT_TRUE(std::isnan(sin_of<T>(x))) << x;
        EXPECT_TRUE(std::isnan(cos_of<T>(x))) << x;
    }
    const T past = std::nextafter(kTrigLimit<T>, std::numeric_limits<T>::infinity());
    EXPECT_EQ(sin_of<T>(past), std::sin(past));
    EXPECT_EQ(cos_of<T>(-past), std::cos(-past));
}

TEST(SinAndCos, GiveTheirSpecialValuesAtF32AndF64) {
    expect_special_values_of_sin_and_cos<float>();
    expect_special_values_of_sin_and_cos<double>();
}

TEST(TanhF64, GivesTheSpecialValuesOfTanhAndExpm1) {
    const double nan = std::numeric_limits<double>::quiet_NaN(), tiny = std::numeric_limits<double>::denorm_min();
    EXPECT_EQ(tanh_f64(0.0), 0.0);
    EXPECT_TRUE(std::signbit(tanh_f64(-0.0)));
    EXPECT_EQ(tanh_f64(INFINITY), 1.0);
    EXPECT_EQ(tanh_f64(-INFINITY), -1.0);
    EXPECT_EQ(tanh_f64(40.0), 1.0);
    EXPECT_EQ(tanh_f64(tiny), tiny);
    EXPECT_TRUE(std::isnan(tanh_f64(nan)));
    EXPECT_EQ(expm1_f64(0.0), 0.0);
    EXPECT_TRUE(std::signbit(expm1_f64(-0.0)));
    EXPECT_EQ(expm1_f64(tiny), tiny);
    EXPECT_EQ(expm1_f64(INFINITY), INFINITY);
    EXPECT_EQ(expm1_f64(-INFINITY), -1.0);
    EXPECT_EQ(expm1_f64(709.79), INFINITY);  // past ln(DBL_MAX) = 709.7827
    EXPECT_EQ(expm1_f64(-1000.0), -1.0);
    EXPECT_TRUE(std::isnan(expm1_f64(nan)));
}

TEST(ExpF64, GivesTheSpecialValuesOfExpLogAndLog1p) {
    const double nan = std::numeric_limits<double>::quiet_NaN(), tiny = std::numeric_limits<double>::denorm_min();
    EXPECT_EQ(exp_f64(0.0), 1.0);
    EXPECT_EQ(exp_f64(INFINITY), INFINITY);
    EXPECT_EQ(exp_f64(-INFINITY), 0.0);
    EXPECT_TRUE(std::isnan(exp_f64(nan)));
    EXPECT_EQ(exp_f64(709.79), INFINITY);  // past ln(DBL_MAX) = 709.7827
    EXPECT_EQ(exp_f64(-745.1), tiny);
    EXPECT_EQ(exp_f64(-746.0), 0.0);
    EXPECT_EQ(log_f64(1.0), 0.0);
    EXPECT_EQ(log_f64(0.0), -INFINITY);
    EXPECT_EQ(log_f64(-0.0), -INFINITY);
    EXPECT_TRUE(std::isnan(log_f64(-1.0)));
    EXPECT_TRUE(std::isnan(log_f64(nan)));
    EXPECT_EQ(log_f64(INFINITY), INFINITY);
    EXPECT_EQ(log_f64(tiny), std::log(tiny));
    EXPECT_EQ(log1p_f64(0.0), 0.0);
    EXPECT_TRUE(std::signbit(log1p_f64(-0.0)));
    EXPECT_EQ(log1p_f64(tiny), tiny);
    EXPECT_EQ(log1p_f64(-1.0), -INFINITY);
    EXPECT_TRUE(std::isnan(log1p_f64(-1.5)));
    EXPECT_TRUE(std::isnan(log1p_f64(nan)));
    EXPECT_EQ(log1p_f64(INFINITY), INFINITY);
}

}  // namespace
}  // namespace scanc
