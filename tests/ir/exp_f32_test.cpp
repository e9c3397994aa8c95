// scanc's f32 exp (src/ir/exp_f32.h), which the reference executor and the CPU backend share,
// against the C library's f64 exp rounded to f32.
#include "../../src/ir/exp_f32.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace scanc {
namespace {

// Distance in units in the last place between two finite or infinite floats.
std::int64_t ulps_apart(float a, float b) {
    auto ordered = [](float f) {
        std::int32_t i;
        std::memcpy(&i, &f, 4);
        return i < 0 ? std::int64_t{INT32_MIN} - i : std::int64_t{i};
    };
    return std::llabs(ordered(a) - ordered(b));
}

float exp_rounded(float x) { return static_cast<float>(std::exp(static_cast<double>(x))); }

TEST(ExpF32, IsWithinOneUlpOfExpAcrossEveryBinade) {
    // Every 4099th bit pattern (about a million floats of either sign, all exponents), and every
    // float within 64 ulps of the ends of the range where the result is finite and nonzero.
    std::int64_t worst = 0;
    float worst_at = 0;
    auto check = [&](float x) {
        std::int64_t d = ulps_apart(exp_f32(x), exp_rounded(x));
        if (d > worst) worst = d, worst_at = x;
    };
    for (std::uint64_t u = 0; u <= 0xFFFFFFFFu; u += 4099) {
        float x;
        std::uint32_t bits = static_cast<std::uint32_t>(u);
        std::memcpy(&x, &bits, 4);
        if (!std::isnan(x)) check(x);
    }
    for (float edge : {88.7228394f, -87.3365479f, -103.278931f, -103.972084f}) {
        float x = edge;
        for (int k = 0; k < 64; ++k) x = std::nextafter(x, -INFINITY);
        for (int k = 0; k < 128; ++k, x = std::nextafter(x, INFINITY)) check(x);
    }
    EXPECT_LE(worst, 1) << "at " << worst_at;
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

TEST(ExpF32, LeavesF64ToTheCLibrary) {
    for (double x : {-700.0, -1.5, 0.25, 1.0, 3.0, 709.0}) EXPECT_EQ(exp_of(x), std::exp(x));
}

}  // namespace
}  // namespace scanc
