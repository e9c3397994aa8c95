// exp2, log2 and log10 in whole programs, on the reference executor and the CPU backend: each
// elementwise function is the one its name says (within 1 ulp of the C library's, exact where
// the result is representable, at every float dtype), and the base-2 logcumsumexp, the combine
// log2(exp2(a) + exp2(b)), follows a sequential loop in long double, with the reference's bits
// on the CPU when run `ordered`.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "cpu_test_util.h"
#include "scanc/ir/scalar_eval.h"

namespace scanc::cpu_test {
namespace {

using dsl::Expr;
using dsl::Exprs;

// Positive values of every binade (subnormals too), the powers of two and ten, integers, and
// the special values.
std::vector<double> sweep(DType t) {
    std::mt19937_64 rng(11);
    const int lowest = t == DType::F32 ? -149 : -1074, highest = t == DType::F32 ? 128 : 1024;
    std::vector<double> v = {0.0, -0.0, -1.0, INFINITY, -INFINITY, NAN, 1.0, 10.0, 1000.0, 0.1};
    for (int k = lowest; k < highest; ++k) v.push_back(std::ldexp(1.0, k));
    for (int k = 0; k < 4000; ++k) {
        const double unit = std::uniform_real_distribution<double>(0.5, 1.0)(rng);
        v.push_back(std::ldexp(unit, std::uniform_int_distribution<int>(lowest, highest)(rng)));
        v.push_back(std::uniform_real_distribution<double>(-1.5, 1.5)(rng) * (highest - lowest));
        v.push_back(std::round(v.back()));
    }
    if (t == DType::F32)
        for (double& x : v) x = static_cast<float>(x);
    return v;
}

TEST(BaseLogs, EachFunctionOnEachBackendIsWithinOneUlpOfTheCLibrarysAtF32AndF64) {
    for (DType t : {DType::F32, DType::F64}) {
        dsl::ProgramBuilder pb("p");
        Expr x = pb.param("x", t, {pb.symbol("N")});
        ProgramRef p = pb.build({exp2(x), log2(x), log10(x)});
        const std::vector<double> v = sweep(t);
        Tensor in = tensor_of(t, {static_cast<std::int64_t>(v.size())}, v);
        long double (*const truth[])(long double) = {[](long double y) { return std::exp2(y); },
                                                     [](long double y) { return std::log2(y); },
                                                     [](long double y) { return std::log10(y); }};
        for (bool cpu : {false, true}) {
            std::vector<Tensor> out = run_on(p, {in.view()}, cpu);
            for (int f = 0; f < 3; ++f) {
                double worst = 0, at = 0;
                for (std::size_t i = 0; i < v.size(); ++i) {
                    const double d = ulps_from(element(out[f], i), truth[f](v[i]), t);
                    if (d > worst) worst = d, at = v[i];
                }
                EXPECT_LE(worst, 1.0) << dtype_name(t) << (cpu ? " cpu" : " reference") << " function " << f << " at " << at;
            }
        }
    }
}

// f16 and bf16 compute in f32 and round: exact at powers of two (log2), small integers (exp2)
// and the powers of ten each dtype holds (log10), and the CPU gives the reference's bits.
TEST(BaseLogs, NarrowFloatsComputeInF32AndRoundExactlyWhereTheResultIsRepresentable) {
    for (DType t : {DType::F16, DType::BF16}) {
        const bool half = t == DType::F16;
        auto bits_of = [&](float f) { return half ? f16_bits(f) : bf16_bits(f); };
        auto value_of = [&](std::uint16_t b) { return half ? f16_from_bits(b) : bf16_from_bits(b); };
        // x and what log2, exp2 and log10 give there exactly (NaN: not checked).
        struct Case {
            float x, log2, exp2, log10;
        };
        std::vector<Case> cases;
        for (int k = -14; k <= 15; ++k) {
            cases.push_back({std::ldexp(1.0f, k), float(k), NAN, NAN});
            cases.push_back({float(k), NAN, std::ldexp(1.0f, k), NAN});
        }
        for (int k = 0; k <= 3; ++k) cases.push_back({std::pow(10.0f, float(k)), NAN, NAN, float(k)});
        const std::int64_t n = static_cast<std::int64_t>(cases.size());
        Tensor in = Tensor::empty(t, {n});
        for (std::int64_t i = 0; i < n; ++i) static_cast<std::uint16_t*>(in.data())[i] = bits_of(cases[i].x);
        dsl::ProgramBuilder pb("p");
        Expr x = pb.param("x", t, {pb.symbol("N")});
        ProgramRef p = pb.build({log2(x), exp2(x), log10(x)});
        std::vector<Tensor> ref = run_on(p, {in.view()}, false), cpu = run_on(p, {in.view()}, true);
        for (int f = 0; f < 3; ++f) {
            EXPECT_EQ(std::memcmp(ref[f].data(), cpu[f].data(), n * 2), 0) << dtype_name(t) << " function " << f;
            for (std::int64_t i = 0; i < n; ++i) {
                const Case& c = cases[i];
                const float want = f == 0 ? c.log2 : f == 1 ? c.exp2 : c.log10;
                if (!std::isnan(want)) {
                    EXPECT_EQ(value_of(static_cast<const std::uint16_t*>(ref[f].data())[i]), want)
                        << dtype_name(t) << " function " << f << " of " << c.x;
                }
            }
        }
    }
}

CombineRef base_two_lse() {
    return dsl::trace_combine("lse2", 1, 0, [](const Exprs& l, const Exprs& r, const Exprs&) {
        return Exprs{log2(exp2(l[0]) + exp2(r[0]))};
    });
}

// The base-2 logcumsumexp along rows of 1000: the reference and the CPU (ordered: the same bits;
// reassociated over 1 to 4 threads: within a tolerance) against a loop in long double.
TEST(BaseLogs, BaseTwoLogCumSumExpFollowsASequentialLoopOnTheReferenceAndTheCpu) {
    for (DType t : {DType::F32, DType::F64}) {
        constexpr std::int64_t rows = 3, length = 1000;
        std::mt19937_64 rng(5);
        std::vector<double> v(rows * length);
        for (double& x : v) x = std::uniform_real_distribution<double>(-20.0, 20.0)(rng);
        if (t == DType::F32)
            for (double& x : v) x = static_cast<float>(x);
        dsl::ProgramBuilder pb("p");
        Expr x = pb.param("x", t, {pb.symbol("N"), pb.symbol("T")});
        ProgramRef p = pb.build({pb.scan(base_two_lse(), {x}, 1)[0]});
        Tensor in = tensor_of(t, {rows, length}, v);
        std::vector<Tensor> ref = run_on(p, {in.view()}, false);
        // Each step rounds about once in the result's last place: the error grows with the steps.
        const double tol = (t == DType::F32 ? 0x1p-23 : 0x1p-52) * length;
        for (std::int64_t r = 0; r < rows; ++r) {
            long double acc = v[r * length];
            for (std::int64_t i = 0; i < length; ++i) {
                const std::int64_t k = r * length + i;
                if (i > 0) acc = std::log2(std::exp2(acc) + std::exp2(static_cast<long double>(v[k])));
                ASSERT_NEAR(element(ref[0], k), static_cast<double>(acc), tol * std::max(1.0L, std::fabs(acc)))
                    << dtype_name(t) << " row " << r << " step " << i;
            }
        }
        expect_cpu_follows(p, {in.view()}, ref[0]);
    }
}

}  // namespace
}  // namespace scanc::cpu_test
