// The CUDA backend's math functions against the reference executor, within the bounds
// docs/semantics.md states: CUDA's own (exp2, log2, log10, erf, erfc, atan, atan2), and scanc's
// f32 logaddexp and softplus against the true value of their formula.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "gpu_test_util.h"

namespace scanc {
namespace {

using cuda_test::parse_program;

class CudaMathFunctions : public ::testing::Test {
protected:
    void SetUp() override { SKIP_WITHOUT_GPU(); }
    cuda_test::SeededRandom random;
    std::mt19937_64& rng = random.rng;
};

// Units in the last place of float or double between a and b (0 when both are NaN or equal).
template <typename T>
double ulps_between(T a, T b) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : INFINITY;
    if (a == b) return 0;
    if (std::isinf(a) || std::isinf(b)) return INFINITY;
    const T m = std::max(std::fabs(a), std::fabs(b));
    return std::fabs(static_cast<double>(a) - static_cast<double>(b)) / static_cast<double>(std::nextafter(m, T(INFINITY)) - m);
}

// The CUDA backend's results of `program` on `in` within bound[r] ulps of the reference's, at
// each result's dtype (f32 or f64).
void expect_within_ulps_of_the_reference(const ProgramRef& program, const std::vector<TensorView>& in,
                                         const std::vector<double>& bound) {
    auto want = ReferenceBackend().compile(program)->run(in);
    auto got = CudaBackend().compile(program)->run(in);
    for (std::size_t r = 0; r < bound.size(); ++r) {
        double worst = 0;
        const bool f32 = got[r].dtype() == DType::F32;
        for (std::int64_t i = 0; i < got[r].numel(); ++i)
            worst = std::max(worst, f32 ? ulps_between(got[r].view().ptr<float>()[i], want[r].view().ptr<float>()[i])
                                        : ulps_between(got[r].view().ptr<double>()[i], want[r].view().ptr<double>()[i]));
        EXPECT_LE(worst, bound[r]) << "result " << r;
    }
}

TEST_F(CudaMathFunctions, Exp2Log2AndLog10StayWithinCudasBoundsOfTheReference) {
    // CUDA's exp2f, log2f and log10f are within 2, 1 and 2 ulps, its f64 forms within 1, and the
    // reference within 1: their distance is at most the sum. Inputs of every binade, the
    // powers of two and integers, past exp2's ends, and the special values.
    auto program = parse_program(R"(
program p(x: f32[N], w: f64[N]) {
  return exp2(x), log2(x), log10(x), exp2(w), log2(w), log10(w)
}
)");
    std::vector<double> v = {0.0, -0.0, -1.0, INFINITY, -INFINITY, NAN};
    for (int k = -1074; k < 1024; ++k) v.push_back(std::ldexp(1.0, k)), v.push_back(k);
    std::uniform_real_distribution<double> unit(0.5, 1.0), wide(-1100, 1100);
    std::uniform_int_distribution<int> binade(-1074, 1024);
    for (int i = 0; i < 20000; ++i) v.push_back(std::ldexp(unit(rng), binade(rng))), v.push_back(wide(rng));
    const std::int64_t n = static_cast<std::int64_t>(v.size());
    Tensor x = Tensor::empty(DType::F32, {n}), w = Tensor::empty(DType::F64, {n});
    for (std::int64_t i = 0; i < n; ++i) x.view().ptr<float>()[i] = static_cast<float>(v[i]), w.view().ptr<double>()[i] = v[i];
    expect_within_ulps_of_the_reference(program, {x.view(), w.view()}, {3, 2, 3, 2, 2, 2});
}

TEST_F(CudaMathFunctions, ErfErfcAtanAndAtan2StayWithinCudasBoundsOfTheReference) {
    // CUDA's erff, erfcf, atanf and atan2f are within 2, 4, 2 and 3 ulps, its erf, erfc, atan
    // and atan2 within 2, 5, 2 and 2, and the reference within 1: their distance is at most the
    // sum. Inputs of every binade and sign, erfc's tail into the subnormals, and the special
    // values (atan2 against a second draw of the same kinds).
    auto program = parse_program(R"(
program p(x: f32[N], y: f32[N], w: f64[N], v: f64[N]) {
  return erf(x), erfc(x), atan(x), atan2(y, x), erf(w), erfc(w), atan(w), atan2(v, w)
}
)");
    std::vector<double> a = {0.0, -0.0, 1.0, -1.0, INFINITY, -INFINITY, NAN, 9.5, 10.0, 26.6, 27.0};
    std::uniform_real_distribution<double> unit(0.5, 1.0), wide(-30, 30);
    std::uniform_int_distribution<int> binade(-1074, 1024);
    for (int i = 0; i < 20000; ++i) a.push_back(std::ldexp(unit(rng), binade(rng)) * (i % 2 ? 1 : -1)), a.push_back(wide(rng));
    std::vector<double> b(a.rbegin(), a.rend());
    const std::int64_t n = static_cast<std::int64_t>(a.size());
    Tensor x = Tensor::empty(DType::F32, {n}), y = Tensor::empty(DType::F32, {n});
    Tensor w = Tensor::empty(DType::F64, {n}), v = Tensor::empty(DType::F64, {n});
    for (std::int64_t i = 0; i < n; ++i) {
        x.view().ptr<float>()[i] = static_cast<float>(a[i]), y.view().ptr<float>()[i] = static_cast<float>(b[i]);
        w.view().ptr<double>()[i] = a[i], v.view().ptr<double>()[i] = b[i];
    }
    expect_within_ulps_of_the_reference(program, {x.view(), y.view(), w.view(), v.view()}, {3, 5, 3, 4, 3, 6, 3, 3});
}
// The spacing of f32 values at |x|: 2^(e - 23) in [2^e, 2^(e+1)), 2^-149 among the subnormals.
double f32_ulp(double x) {
    int e = 0;
    std::frexp(std::max(std::fabs(x), 0x1p-126), &e);
    return std::ldexp(1.0, e - 24);
}

TEST_F(CudaMathFunctions, F32LogAddExpAndSoftplusStayWithinSevenUlpsOfTheirLargerTerm) {
    // f32 logaddexp(a, b) is m + log1p(exp(d)) with m = max(a, b) and d = -|a - b| rounded to
    // f32, as the reference rounds it too; softplus(x) the same with b = 0. Errors count against
    // the true value of that formula, in ulps of the larger of |m| and log1p(exp(d)): where the
    // two cancel, no formula of m and d does better. Pairs: d from 0 to past exp's underflow
    // (at m = 0 the result is log1p(exp(d)) alone), operands of every binade and sign, nearly
    // equal ones. A third result, the same formula through CUDA's expf and log1pf, is printed
    // beside it. Pairs with an infinity or a NaN give the reference's value.
    auto program = parse_program(R"(
program p(x: f32[N], y: f32[N]) {
  return logaddexp(x, y), softplus(x), max(x, y) + log1p(exp(-abs(x - y)))
}
)");
    const float inf = INFINITY, nan = NAN;
    std::vector<std::pair<float, float>> pairs;
    for (float a : {inf, -inf, nan, 0.0f, -0.0f, 2.0f, -3.5f})
        for (float b : {inf, -inf, nan, 0.0f, -0.0f, 2.0f, -3.5f}) pairs.emplace_back(a, b);
    std::uniform_real_distribution<double> unit(0.5, 1.0), gap(0, 110);
    std::uniform_int_distribution<int> binade(-149, 7), sign(0, 1), nudge(-64, 64);
    auto any = [&] { return static_cast<float>(std::ldexp(unit(rng), binade(rng)) * (sign(rng) ? 1 : -1)); };
    for (int i = 0; i < (1 << 20); ++i) {
        const float a = any();
        switch (i % 4) {
            case 0: pairs.emplace_back(a, static_cast<float>(a - gap(rng))); break;
            case 1: pairs.emplace_back(a, any()); break;
            case 2: pairs.emplace_back(0.0f, static_cast<float>(-gap(rng) * unit(rng))); break;
            default: pairs.emplace_back(a, a + nudge(rng) * std::ldexp(1.0f, binade(rng) / 4)); break;
        }
    }
    const std::int64_t n = static_cast<std::int64_t>(pairs.size());
    Tensor x = Tensor::empty(DType::F32, {n}), y = Tensor::empty(DType::F32, {n});
    for (std::int64_t i = 0; i < n; ++i) x.view().ptr<float>()[i] = pairs[i].first, y.view().ptr<float>()[i] = pairs[i].second;
    const std::vector<TensorView> in = {x.view(), y.view()};
    auto want = ReferenceBackend().compile(program)->run(in);
    auto got = CudaBackend().compile(program)->run(in);
    // The error of result r at pair i, the formula's operands being m and d.
    auto error = [&](int r, std::int64_t i, float m, float d) {
        const long double term = log1pl(expl(static_cast<long double>(d)));
        const double g = got[r].view().ptr<float>()[i];
        return static_cast<double>(std::fabs(g - (m + term))) / f32_ulp(std::max(std::fabs(static_cast<double>(m)), static_cast<double>(term)));
    };
    double worst[3] = {0, 0, 0};
    std::int64_t specials_apart = 0;
    for (std::int64_t i = 0; i < n; ++i) {
        const auto [a, b] = pairs[i];
        if (!std::isfinite(a) || !std::isfinite(b)) {
            for (int r = 0; r < 2; ++r) {
                const float g = got[r].view().ptr<float>()[i], w = want[r].view().ptr<float>()[i];
                specials_apart += !(g == w || (std::isnan(g) && std::isnan(w)));
            }
            continue;
        }
        const float d = -std::fabs(a - b);
        for (int r : {0, 2}) worst[r] = std::max(worst[r], error(r, i, std::max(a, b), d));
        worst[1] = std::max(worst[1], error(1, i, std::max(a, 0.0f), -std::fabs(a)));
    }
    std::printf("worst ulps of the larger term: logaddexp %.2f, softplus %.2f; through expf and log1pf %.2f\n",
                worst[0], worst[1], worst[2]);
    EXPECT_EQ(specials_apart, 0);
    EXPECT_LE(worst[0], 7.0);
    EXPECT_LE(worst[1], 7.0);
}

}  // namespace
}  // namespace scanc
