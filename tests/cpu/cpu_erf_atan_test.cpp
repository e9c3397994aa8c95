// erf, erfc, atan and atan2 in whole programs, on the reference executor and the CPU backend:
// each elementwise function is the one its name says (within 1 ulp of the C library's at f32
// and f64, within an ulp of the narrow dtype at f16 and bf16, with the reference's bits on the
// CPU); a running sum of the standard normal's log CDF, log(erfc(-x / sqrt 2) / 2), follows a
// sequential loop in long double where x is far in the tail (1 - erf would give log 0 there),
// and so does a running heading wrapped by atan2 in its combine.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <numbers>
#include <random>
#include <vector>

#include "cpu_test_util.h"
#include "scanc/ir/scalar_eval.h"

namespace scanc::cpu_test {
namespace {

using dsl::Expr;
using dsl::Exprs;

// Values of every binade of either sign (subnormals too), the intervals' edges of erf and atan,
// and the special values.
std::vector<double> sweep(DType t, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    const int lowest = t == DType::F32 ? -149 : -1074, highest = t == DType::F32 ? 128 : 1024;
    std::vector<double> v = {0.0, -0.0, INFINITY, -INFINITY, NAN, 0.25, 0.5, 0.84375, 1.25, 2.0, 2.857142857142857,
                             6.0, 10.0, 27.0, 0.4375, 0.6875, 1.1875, 2.4375, -0.84375, -3.0};
    for (int k = 0; k < 6000; ++k) {
        const double unit = std::uniform_real_distribution<double>(0.5, 1.0)(rng) * (rng() % 2 ? 1 : -1);
        v.push_back(std::ldexp(unit, std::uniform_int_distribution<int>(lowest, highest)(rng)));
        v.push_back(std::uniform_real_distribution<double>(-30.0, 30.0)(rng));
    }
    if (t == DType::F32)
        for (double& x : v) x = static_cast<float>(x);
    return v;
}

TEST(ErfAtan, EachFunctionOnEachBackendIsWithinOneUlpOfTheCLibrarysAtF32AndF64) {
    for (DType t : {DType::F32, DType::F64}) {
        dsl::ProgramBuilder pb("p");
        Expr x = pb.param("x", t, {pb.symbol("N")}), y = pb.param("y", t, {pb.symbol("N")});
        ProgramRef p = pb.build({erf(x), erfc(x), atan(x), atan2(y, x)});
        const std::vector<double> xs = sweep(t, 7), ys = sweep(t, 8);
        const std::int64_t n = static_cast<std::int64_t>(xs.size());
        Tensor tx = tensor_of(t, {n}, xs), ty = tensor_of(t, {n}, ys);
        auto truth = [&](int f, std::size_t i) -> long double {
            const long double a = xs[i];
            return f == 0 ? std::erf(a) : f == 1 ? std::erfc(a) : f == 2 ? std::atan(a) : std::atan2((long double)ys[i], a);
        };
        for (bool cpu : {false, true}) {
            std::vector<Tensor> out = run_on(p, {tx.view(), ty.view()}, cpu);
            for (int f = 0; f < 4; ++f) {
                double worst = 0, at = 0;
                for (std::size_t i = 0; i < xs.size(); ++i) {
                    const double d = ulps_from(element(out[f], i), truth(f, i), t);
                    if (d > worst) worst = d, at = xs[i];
                }
                EXPECT_LE(worst, 1.0) << dtype_name(t) << (cpu ? " cpu" : " reference") << " function " << f << " at " << at;
            }
        }
    }
}

// f16 and bf16 compute in f32 and round once: over every finite value of the dtype (as x, and
// as y against x = 1 and -3 for atan2), within an ulp of the dtype of the long double result,
// and the CPU gives the reference's bits.
TEST(ErfAtan, NarrowFloatsComputeInF32AndRoundOnce) {
    for (DType t : {DType::F16, DType::BF16}) {
        const bool half = t == DType::F16;
        auto value_of = [&](std::uint16_t b) { return half ? f16_from_bits(b) : bf16_from_bits(b); };
        std::vector<std::uint16_t> xs, ys;
        for (std::uint32_t b = 0; b < 0x10000u; ++b)
            if (std::isfinite(value_of(static_cast<std::uint16_t>(b))))
                for (float other : {1.0f, -3.0f})
                    xs.push_back(static_cast<std::uint16_t>(b)), ys.push_back(half ? f16_bits(other) : bf16_bits(other));
        const std::int64_t n = static_cast<std::int64_t>(xs.size());
        Tensor in = Tensor::empty(t, {n}), other = Tensor::empty(t, {n});
        std::memcpy(in.data(), xs.data(), n * 2);
        std::memcpy(other.data(), ys.data(), n * 2);
        dsl::ProgramBuilder pb("p");
        Expr x = pb.param("x", t, {pb.symbol("N")}), y = pb.param("y", t, {pb.symbol("N")});
        ProgramRef p = pb.build({erf(x), erfc(x), atan(x), atan2(x, y)});
        std::vector<Tensor> ref = run_on(p, {in.view(), other.view()}, false), cpu = run_on(p, {in.view(), other.view()}, true);
        const int digits = half ? 11 : 8, lowest = half ? -13 : -125;  // frexp exponent of the smallest normal
        for (int f = 0; f < 4; ++f) {
            EXPECT_EQ(std::memcmp(ref[f].data(), cpu[f].data(), n * 2), 0) << dtype_name(t) << " function " << f;
            double worst = 0;
            for (std::int64_t i = 0; i < n; ++i) {
                const long double a = value_of(xs[i]), b = value_of(ys[i]);
                const long double want = f == 0 ? std::erf(a) : f == 1 ? std::erfc(a) : f == 2 ? std::atan(a) : std::atan2(a, b);
                const float got = value_of(static_cast<const std::uint16_t*>(ref[f].data())[i]);
                int e;
                std::frexp(static_cast<double>(want), &e);
                if (want != 0 || got != 0)
                    worst = std::max(worst, static_cast<double>(std::fabs(got - want) / std::ldexp(1.0L, std::max(e, lowest) - digits)));
            }
            EXPECT_LE(worst, 1.0) << dtype_name(t) << " function " << f;
        }
    }
}

// The standard normal's log CDF, log(erfc(-x / sqrt 2) / 2), summed along rows of 1000 of x in
// [-30, 4] (f64) or [-13, 4] (f32, where erfc stays above its smallest subnormal): the reference
// and the CPU (ordered: the same bits; reassociated over 1 to 4 threads: within a tolerance)
// against a loop in long double.
TEST(ErfAtan, RunningNormalLogCdfFollowsASequentialLoopIntoTheTail) {
    for (DType t : {DType::F32, DType::F64}) {
        constexpr std::int64_t rows = 3, length = 1000;
        std::mt19937_64 rng(5);
        std::vector<double> v(rows * length);
        const double low = t == DType::F32 ? -13.0 : -30.0;
        for (double& x : v) x = std::uniform_real_distribution<double>(low, 4.0)(rng);
        if (t == DType::F32)
            for (double& x : v) x = static_cast<float>(x);
        dsl::ProgramBuilder pb("p");
        Expr x = pb.param("x", t, {pb.symbol("N"), pb.symbol("T")});
        auto add = dsl::trace_combine("add", 1, 0, [](const Exprs& l, const Exprs& r, const Exprs&) { return Exprs{l[0] + r[0]}; });
        ProgramRef p = pb.build({pb.scan(add, {log(0.5 * erfc(-0.7071067811865476 * x))}, 1)[0]});
        Tensor in = tensor_of(t, {rows, length}, v);
        std::vector<Tensor> ref = run_on(p, {in.view()}, false);
        // Each step rounds about once in the running sum's last place, and each term within an
        // ulp or two of its own (the constant 1/sqrt 2 rounds at f32).
        const double eps = t == DType::F32 ? 0x1p-23 : 0x1p-52;
        for (std::int64_t r = 0; r < rows; ++r) {
            long double acc = 0, magnitude = 0;
            for (std::int64_t i = 0; i < length; ++i) {
                const std::int64_t k = r * length + i;
                const long double term = std::log(std::erfc(-v[k] / std::sqrt(2.0L)) / 2);
                acc += term, magnitude += std::fabs(term) + std::fabs(v[k] * v[k]);
                ASSERT_TRUE(std::isfinite(element(ref[0], k))) << dtype_name(t) << " row " << r << " step " << i;
                ASSERT_NEAR(element(ref[0], k), static_cast<double>(acc), 4 * eps * static_cast<double>(magnitude))
                    << dtype_name(t) << " row " << r << " step " << i;
            }
        }
        expect_cpu_follows(p, {in.view()}, ref[0]);
    }
}

// A running heading, the sum of turns wrapped to (-pi, pi] by atan2(sin(a + b), cos(a + b)) in
// the combine, of f64 turns atan(x) + erf(x) - erfc(x): the reference against a long double
// loop (modulo 2 pi, where each wraps on its own side of pi), and the CPU's ordered run with
// the reference's bits.
TEST(ErfAtan, RunningHeadingWrappedByAtan2FollowsASequentialLoop) {
    constexpr std::int64_t rows = 2, length = 3000;
    std::mt19937_64 rng(9);
    std::vector<double> v(rows * length);
    for (double& x : v) x = std::uniform_real_distribution<double>(-4.0, 4.0)(rng);
    dsl::ProgramBuilder pb("p");
    Expr x = pb.param("x", DType::F64, {pb.symbol("N"), pb.symbol("T")});
    auto heading = dsl::trace_combine("heading", 1, 0, [](const Exprs& l, const Exprs& r, const Exprs&) {
        return Exprs{atan2(sin(l[0] + r[0]), cos(l[0] + r[0]))};
    });
    ProgramRef p = pb.build({pb.scan(heading, {atan(x) + erf(x) - erfc(x)}, 1)[0]});
    Tensor in = tensor_of(DType::F64, {rows, length}, v);
    std::vector<Tensor> ref = run_on(p, {in.view()}, false);
    const long double pi = std::numbers::pi_v<long double>;
    for (std::int64_t r = 0; r < rows; ++r) {
        long double acc = 0;
        for (std::int64_t i = 0; i < length; ++i) {
            const long double a = v[r * length + i], turn = std::atan(a) + std::erf(a) - std::erfc(a);
            acc = i == 0 ? turn : std::atan2(std::sin(acc + turn), std::cos(acc + turn));
            const long double d = std::remainder(element(ref[0], r * length + i) - acc, 2 * pi);
            ASSERT_LE(std::fabs(d), 1e-12L * (i + 1)) << "row " << r << " step " << i;
        }
    }
    EXPECT_EQ(compare(ref[0], run_on(p, {in.view()}, true)[0], true, 0), "");
}

}  // namespace
}  // namespace scanc::cpu_test
