// Whole programs through the reference executor: elementwise broadcasting and literals, slice,
// concat, interleave, strided inputs, narrow and integer dtypes, and the errors of binding inputs.
#include <gtest/gtest.h>

#include <limits>

#include "scanc/backends/reference.h"
#include "scanc/dsl/expr.h"
#include "scanc/ir/scalar_eval.h"
#include "test_tensors.h"

namespace scanc {
namespace {

using namespace dsl;
using testing::tensor_of;
using testing::values_of;

std::vector<Tensor> run(const ProgramRef& prog, const std::vector<TensorView>& inputs) {
    return ReferenceBackend().compile(prog)->run(inputs);
}

// The message of the CompileError `fn` throws ("" if none).
template <typename Fn>
std::string compile_error(Fn&& fn) {
    try {
        fn();
    } catch (const CompileError& e) {
        return e.what();
    }
    return "";
}

CombineRef sum_combine() {
    return trace_combine("sum", 1, 0, [](const Exprs& l, const Exprs& r, const Exprs&) {
        return Exprs{l[0] + r[0]};
    });
}

CombineRef max_combine() {
    return trace_combine("max", 1, 0, [](const Exprs& l, const Exprs& r, const Exprs&) {
        return Exprs{max(l[0], r[0])};
    });
}

std::vector<double> iota(std::int64_t n, double start = 0) {
    std::vector<double> v(n);
    for (std::int64_t i = 0; i < n; ++i) v[i] = start + static_cast<double>(i);
    return v;
}

TEST(ReferenceProgram, LiteralsAndSmallerTensorsBroadcastLikeNumPy) {
    ProgramBuilder p("bcast");
    Size n = p.symbol("N"), d = p.symbol("D");
    Expr x = p.param("x", DType::I32, {n, 1});
    Expr y = p.param("y", DType::I32, {d});
    ProgramRef prog = p.build({x * 2 + y - 1, x * 0 + 7});
    std::vector<std::int32_t> xv = {1, 2, 3}, yv = {10, 20, 30, 40, 50};
    Tensor xt = tensor_of(DType::I32, {3, 1}, xv), yt = tensor_of(DType::I32, {5}, yv);
    auto out = run(prog, {xt, yt});
    ASSERT_EQ(out[0].sizes(), (std::vector<std::int64_t>{3, 5}));
    auto got = values_of<std::int32_t>(out[0]);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 5; ++j) EXPECT_EQ(got[i * 5 + j], xv[i] * 2 + yv[j] - 1);
    EXPECT_EQ(values_of<std::int32_t>(out[1]), (std::vector<std::int32_t>{7, 7, 7}));
}

TEST(ReferenceProgram, FloatLiteralsAndTranscendentalsComputeInTheTensorsDtype) {
    ProgramBuilder p("f32");
    Expr x = p.param("x", DType::F32, {p.symbol("N")});
    ProgramRef prog = p.build({exp(x) * 0.1f + sigmoid(x)});
    std::vector<float> xv = {-3.0f, 0.0f, 0.5f, 2.0f};
    auto out = run(prog, {tensor_of(DType::F32, {4}, xv)});
    auto got = values_of<float>(out[0]);
    for (int i = 0; i < 4; ++i)
        EXPECT_NEAR(got[i], std::exp(xv[i]) * 0.1 + 1 / (1 + std::exp(-xv[i])), 1e-6);
}

TEST(ReferenceProgram, IntegerCumsumWrapsAround) {
    ProgramBuilder p("wrap");
    Expr x = p.param("x", DType::I8, {p.symbol("N")});
    ProgramRef prog = p.build(p.scan(sum_combine(), {x}, 0));
    std::vector<std::int8_t> xv = {100, 100, 100, -128, -128, 7};
    auto got = values_of<std::int8_t>(run(prog, {tensor_of(DType::I8, {6}, xv)})[0]);
    int acc = 0;
    for (int i = 0; i < 6; ++i) {
        acc = (acc + xv[i]) & 0xff;  // exact mod-256 arithmetic
        EXPECT_EQ(got[i], static_cast<std::int8_t>(acc >= 128 ? acc - 256 : acc)) << i;
    }
}

TEST(ReferenceProgram, F16CumsumCarriesInF32AndRoundsEachStore) {
    ProgramBuilder p("half");
    Expr x = p.param("x", DType::F16, {p.symbol("N")});
    ProgramRef prog = p.build(p.scan(sum_combine(), {x}, 0));
    // 1 + 300 * 2^-12: each step is below half an f16 ulp of the carry, so an f16 carry would
    // stay at 1 forever; an f32 carry accumulates.
    std::vector<std::uint16_t> bits(301, f16_bits(std::ldexp(1.0f, -12)));
    bits[0] = f16_bits(1.0f);
    auto out = run(prog, {tensor_of(DType::F16, {301}, bits)});
    auto got = values_of<std::uint16_t>(out[0]);
    float carry = 0;
    for (std::size_t i = 0; i < bits.size(); ++i) {
        carry += i == 0 ? 1.0f : std::ldexp(1.0f, -12);
        EXPECT_EQ(static_cast<double>(f16_from_bits(got[i])), testing::nearest_f16(carry)) << i;
    }
    EXPECT_GT(f16_from_bits(got.back()), 1.05f);
}

TEST(ReferenceProgram, NanAndInfPropagateThroughMaxAndLogAddExp) {
    auto lse = trace_combine("lse", 1, 0, [](const Exprs& l, const Exprs& r, const Exprs&) {
        return Exprs{logaddexp(l[0], r[0])};
    });
    ProgramBuilder p("special");
    Expr x = p.param("x", DType::F32, {p.symbol("N")});
    ProgramRef prog = p.build({p.scan(max_combine(), {x}, 0)[0], p.scan(lse, {x}, 0)[0]});
    const float inf = INFINITY, nan = NAN;
    auto check = [&](std::vector<float> xv, std::vector<float> want_max, std::vector<float> want_lse) {
        auto out = run(prog, {tensor_of(DType::F32, {static_cast<std::int64_t>(xv.size())}, xv)});
        auto m = values_of<float>(out[0]), l = values_of<float>(out[1]);
        for (std::size_t i = 0; i < xv.size(); ++i) {
            EXPECT_TRUE(testing::close(m[i], want_max[i])) << "max " << i << ": " << m[i];
            EXPECT_TRUE(testing::close(l[i], want_lse[i], 1e-6)) << "lse " << i << ": " << l[i];
        }
    };
    check({-inf, -inf, 0.0f}, {-inf, -inf, 0}, {-inf, -inf, 0});
    check({1, inf, 2}, {1, inf, inf}, {1, inf, inf});
    check({1, nan, 5}, {1, nan, nan}, {1, nan, nan});
    check({-inf, inf, -inf}, {-inf, inf, inf}, {-inf, inf, inf});
}

TEST(ReferenceProgram, InputsWithAnyStridesReadTheirLogicalElements) {
    ProgramBuilder p("strided");
    Size r = p.symbol("R"), c = p.symbol("C");
    Expr x = p.param("x", DType::F64, {r, c});
    ProgramRef prog = p.build(p.scan(sum_combine(), {x}, 1));
    std::vector<double> storage = iota(40, 1);  // a 5x8 row-major buffer
    auto check = [&](TensorView v, auto logical) {
        auto got = values_of<double>(run(prog, {v})[0]);
        for (std::int64_t i = 0; i < v.sizes[0]; ++i) {
            double acc = 0;
            for (std::int64_t j = 0; j < v.sizes[1]; ++j) {
                acc += logical(i, j);
                EXPECT_EQ(got[i * v.sizes[1] + j], acc) << i << "," << j;
            }
        }
    };
    TensorView transposed{storage.data(), DType::F64, {8, 5}, {1, 8}, {}};
    check(transposed, [&](std::int64_t i, std::int64_t j) { return storage[j * 8 + i]; });
    TensorView flipped{storage.data() + 39, DType::F64, {5, 8}, {-8, -1}, {}};
    check(flipped, [&](std::int64_t i, std::int64_t j) { return storage[39 - i * 8 - j]; });
    TensorView broadcast{storage.data(), DType::F64, {4, 6}, {0, 1}, {}};
    check(broadcast, [&](std::int64_t, std::int64_t j) { return storage[j]; });
    TensorView every_other{storage.data() + 1, DType::F64, {3, 4}, {16, 2}, {}};
    check(every_other, [&](std::int64_t i, std::int64_t j) { return storage[1 + 16 * i + 2 * j]; });
}

TEST(ReferenceProgram, SlicesFollowPythonSemantics) {
    ProgramBuilder p("slices");
    Size n = p.symbol("N");
    Expr x = p.param("x", DType::F64, {n});
    ProgramRef prog = p.build({slice(x, 0, -3, n), slice(x, 0, 1, n - 1, 2), slice(x, 0, 5, 2),
                               slice(x, 0, 0, 100, 3), slice(x, 0, -100, 2)});
    for (std::int64_t len : {0, 1, 2, 3, 7, 10}) {
        auto xv = iota(len, 10);
        auto out = run(prog, {tensor_of(DType::F64, {len}, xv)});
        // Python's own rules, written out: negative counts from the end, clamp, step.
        auto py = [&](std::int64_t start, std::int64_t stop, std::int64_t step) {
            auto norm = [&](std::int64_t v) {
                if (v < 0) v += len;
                return std::clamp<std::int64_t>(v, 0, len);
            };
            std::vector<double> r;
            for (std::int64_t i = norm(start); i < norm(stop); i += step) r.push_back(xv[i]);
            return r;
        };
        EXPECT_EQ(values_of<double>(out[0]), py(-3, len, 1)) << len;
        EXPECT_EQ(values_of<double>(out[1]), py(1, std::max<std::int64_t>(len - 1, 0), 2)) << len;
        EXPECT_EQ(values_of<double>(out[2]), py(5, 2, 1)) << len;
        EXPECT_EQ(values_of<double>(out[3]), py(0, 100, 3)) << len;
        EXPECT_EQ(values_of<double>(out[4]), py(-100, 2, 1)) << len;
    }
}

TEST(ReferenceProgram, SlicesWithAHugeStepOrBoundStillFollowPythonSemantics) {
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
    ProgramBuilder p("slices");
    Size n = p.symbol("N");
    Expr x = p.param("x", DType::F64, {n});
    Expr five = p.param("five", DType::F64, {5});
    ProgramRef prog = p.build({slice(x, 0, 0, n, kMax), slice(five, 0, 1, 5, kMax),
                               slice(x, 0, -kMax - 1, n), slice(x, 0, -kMax, 2)});
    for (std::int64_t len : {0, 1, 3}) {
        auto out = run(prog, {tensor_of(DType::F64, {len}, iota(len, 10)),
                              tensor_of(DType::F64, {5}, iota(5))});
        // x[0:N:huge] is x[0] alone, x[-2^63:N] all of x, x[-huge:2] its first two.
        EXPECT_EQ(values_of<double>(out[0]), iota(std::min<std::int64_t>(len, 1), 10)) << len;
        EXPECT_EQ(values_of<double>(out[1]), iota(1, 1)) << len;
        EXPECT_EQ(values_of<double>(out[2]), iota(len, 10)) << len;
        EXPECT_EQ(values_of<double>(out[3]), iota(std::min<std::int64_t>(len, 2), 10)) << len;
    }
}

TEST(ReferenceProgram, ConcatJoinsAlongTheGivenDim) {
    ProgramBuilder p("concat");
    Size a = p.symbol("A"), b = p.symbol("B");
    Expr x = p.param("x", DType::I64, {2, a});
    Expr y = p.param("y", DType::I64, {2, b});
    ProgramRef prog = p.build({concat(1, {x, y, x})});
    std::vector<std::int64_t> xv = {1, 2, 3, 4, 5, 6}, yv = {7, 8};
    auto out = run(prog, {tensor_of(DType::I64, {2, 3}, xv), tensor_of(DType::I64, {2, 1}, yv)});
    ASSERT_EQ(out[0].sizes(), (std::vector<std::int64_t>{2, 7}));
    EXPECT_EQ(values_of<std::int64_t>(out[0]),
              (std::vector<std::int64_t>{1, 2, 3, 7, 1, 2, 3, 4, 5, 6, 8, 4, 5, 6}));
}

TEST(ReferenceProgram, InterleavePutsEvenAtEvenPositionsAndOddAtOdd) {
    ProgramBuilder p("interleave");
    Size e = p.symbol("E"), o = p.symbol("O");
    Expr even = p.param("even", DType::F64, {3, e});
    Expr odd = p.param("odd", DType::F64, {3, o});
    ProgramRef prog = p.build({interleave(1, even, odd)});
    for (auto [ne, no] : {std::pair{0, 0}, {1, 0}, {1, 1}, {4, 3}, {17, 17}}) {
        auto ev = iota(3 * ne, 0), ov = iota(3 * no, 1000);
        auto out = run(prog, {tensor_of(DType::F64, {3, ne}, ev), tensor_of(DType::F64, {3, no}, ov)});
        ASSERT_EQ(out[0].sizes(), (std::vector<std::int64_t>{3, ne + no}));
        auto got = values_of<double>(out[0]);
        for (int r = 0; r < 3; ++r)
            for (int k = 0; k < ne + no; ++k)
                EXPECT_EQ(got[r * (ne + no) + k], k % 2 == 0 ? ev[r * ne + k / 2] : ov[r * no + k / 2]);
    }
    std::string msg = compile_error([&] {
        run(prog, {tensor_of(DType::F64, {3, 3}, iota(9)), tensor_of(DType::F64, {3, 1}, iota(3))});
    });
    EXPECT_NE(msg.find("one longer along dim 1, got 3 and 1"), std::string::npos) << msg;
}

// x[::2] and x[1::2] interleaved are as long as x (floordiv(T + 1, 2) + floordiv(T, 2) is T,
// shown by value: size_periodic.cpp), so they add to x elementwise, at every length.
TEST(ReferenceProgram, TheEvensAndOddsOfXInterleavedAddToX) {
    ProgramBuilder p("evens_and_odds");
    Size t = p.symbol("T");
    Expr x = p.param("x", DType::F64, {2, t});
    ProgramRef prog = p.build({interleave(1, slice(x, 1, 0, t, 2), slice(x, 1, 1, t, 2)) + x});
    for (std::int64_t n : {0, 1, 2, 3, 7, 8, 9, 31, 33}) {
        auto xv = iota(2 * n, 5);
        auto out = run(prog, {tensor_of(DType::F64, {2, n}, xv)});
        ASSERT_EQ(out[0].sizes(), (std::vector<std::int64_t>{2, n}));
        auto got = values_of<double>(out[0]);
        for (std::size_t i = 0; i < xv.size(); ++i) EXPECT_EQ(got[i], 2 * xv[i]) << "T = " << n;
    }
}

TEST(ReferenceProgram, ScanOfLengthZeroGivesAnEmptyOutputAndLengthOneTheInput) {
    ProgramBuilder p("edges");
    Size n = p.symbol("N"), t = p.symbol("T");
    Expr x = p.param("x", DType::F32, {n, t});
    ProgramRef prog = p.build(p.scan(max_combine(), {x}, 1, true));
    auto empty = run(prog, {tensor_of(DType::F32, {4, 0}, std::vector<float>{})});
    EXPECT_EQ(empty[0].sizes(), (std::vector<std::int64_t>{4, 0}));
    std::vector<float> xv = {3, -1, 2};
    auto one = run(prog, {tensor_of(DType::F32, {3, 1}, xv)});
    EXPECT_EQ(values_of<float>(one[0]), xv);
}

TEST(ReferenceProgram, ResultsComeInReturnOrderAndNeverShareMemory) {
    ProgramBuilder p("twice");
    Expr x = p.param("x", DType::F64, {p.symbol("N")});
    Expr y = x + 1;
    ProgramRef prog = p.build({y, x, y});
    auto out = run(prog, {tensor_of(DType::F64, {2}, std::vector<double>{1, 2})});
    ASSERT_EQ(out.size(), 3u);
    EXPECT_EQ(values_of<double>(out[0]), (std::vector<double>{2, 3}));
    EXPECT_EQ(values_of<double>(out[1]), (std::vector<double>{1, 2}));
    EXPECT_EQ(values_of<double>(out[2]), (std::vector<double>{2, 3}));
    EXPECT_NE(out[0].data(), out[2].data());
}

class BindErrors : public ::testing::Test {
protected:
    void SetUp() override {
        ProgramBuilder p("bound");
        Size l = p.symbol("L", 8), d = p.symbol("D");
        Expr x = p.param("x", DType::F32, {l, d});
        Expr y = p.param("y", DType::F32, {d});
        prog = p.build({x + y});
    }
    std::string error_for(const std::vector<TensorView>& inputs) {
        return compile_error([&] { run(prog, inputs); });
    }
    Tensor f32(std::vector<std::int64_t> sizes) {
        std::int64_t n = 1;
        for (auto s : sizes) n *= s;
        return tensor_of(DType::F32, sizes, std::vector<float>(n, 1.0f));
    }
    ProgramRef prog;
};

TEST_F(BindErrors, WrongInputCountIsReported) {
    EXPECT_NE(error_for({f32({2, 3})}).find("takes 2 inputs, got 1"), std::string::npos);
}

TEST_F(BindErrors, WrongDtypeNamesTheInputAndBothDtypes) {
    Tensor i = tensor_of(DType::I32, {3}, std::vector<std::int32_t>{1, 2, 3});
    std::string msg = error_for({f32({2, 3}), i});
    EXPECT_NE(msg.find("input `y` must be f32, got i32"), std::string::npos) << msg;
}

TEST_F(BindErrors, WrongRankIsReported) {
    std::string msg = error_for({f32({2, 3}), f32({1, 3})});
    EXPECT_NE(msg.find("input `y` must have 1 dims"), std::string::npos) << msg;
}

TEST_F(BindErrors, SymbolDisagreementNamesWhereItWasBound) {
    std::string msg = error_for({f32({2, 3}), f32({4})});
    EXPECT_NE(msg.find("D = 3 from input `x` dim 1"), std::string::npos) << msg;
}

TEST_F(BindErrors, ExceedingABoundIsReported) {
    std::string msg = error_for({f32({9, 3}), f32({3})});
    EXPECT_NE(msg.find("bound exceeded"), std::string::npos) << msg;
    EXPECT_NE(msg.find("L<=8"), std::string::npos) << msg;
    EXPECT_EQ(error_for({f32({8, 3}), f32({3})}), "");  // the bound itself is allowed
}

}  // namespace
}  // namespace scanc
