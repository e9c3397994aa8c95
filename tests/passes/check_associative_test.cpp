#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <regex>

#include "combines.h"
#include "scanc/passes/passes.h"

namespace scanc {
namespace {

using namespace dsl;
using test::binary;

struct Case {
    std::string label;
    CombineRef combine;
    std::vector<DType> leaves;
    std::vector<DType> captured = {};
};

std::vector<Case> associative_cases() {
    auto sum = binary("sum", [](Expr x, Expr y) { return x + y; });
    auto prod = binary("prod", [](Expr x, Expr y) { return x * y; });
    auto mx = binary("max", [](Expr x, Expr y) { return max(x, y); });
    auto mn = binary("min", [](Expr x, Expr y) { return min(y, x); });
    auto select_max = binary("select_max", [](Expr x, Expr y) { return where(x > y, x, y); });
    auto lse = binary("lse", [](Expr x, Expr y) { return logaddexp(x, y); });
    auto band = binary("band", [](Expr x, Expr y) { return x & y; });
    auto bor = binary("bor", [](Expr x, Expr y) { return x | y; });
    auto bxor = binary("bxor", [](Expr x, Expr y) { return x ^ y; });
    auto lor = binary("lor", [](Expr x, Expr y) { return x || y; });
    auto land = binary("land", [](Expr x, Expr y) { return x && y; });
    // The reversed composition of affine maps: associative, just not h = a*h_prev + b.
    auto reversed_affine = test::pair("reversed_affine", [](Expr a1, Expr b1, Expr a2, Expr b2) {
        return Exprs{a1 * a2, a1 * b2 + b1};
    });
    // A running mean whose count is an integer leaf (torch users write counts as int64).
    auto mean_int_count = test::pair("mean_int_count", [](Expr n1, Expr m1, Expr n2, Expr m2) {
        Expr n = n1 + n2;
        return Exprs{n, m1 + (m2 - m1) * cast(DType::F64, n2) / cast(DType::F64, n)};
    });
    // The same with its weight computed in f32, as torch traces `n2 / n` of integer counts (true
    // division in its default dtype): associative to f32's rounding, not f64's.
    auto mean_f32_weight = test::pair("mean_f32_weight", [](Expr n1, Expr m1, Expr n2, Expr m2) {
        Expr n = n1 + n2;
        return Exprs{n, m1 + (m2 - m1) * cast(DType::F64, cast(DType::F32, n2) / cast(DType::F32, n))};
    });
    using enum DType;
    std::vector<Case> cases = {
        {"sum f32", sum, {F32}},       {"sum f64", sum, {F64}},
        {"sum f16", sum, {F16}},       {"sum bf16", sum, {BF16}},
        {"sum i32 wraps", sum, {I32}}, {"sum i8 wraps", sum, {I8}},
        {"sum u8 wraps", sum, {U8}},   {"sum i64 wraps", sum, {I64}},
        {"prod f32", prod, {F32}},     {"prod f64", prod, {F64}},
        {"prod f16", prod, {F16}},     {"prod i32 wraps", prod, {I32}},
        {"prod i64 wraps", prod, {I64}},
        {"max f32", mx, {F32}},        {"max i32", mx, {I32}},
        {"max u8", mx, {U8}},          {"max bf16", mx, {BF16}},
        {"min f64", mn, {F64}},        {"min i16", mn, {I16}},
        {"where-max f32", select_max, {F32}},
        {"logaddexp f32", lse, {F32}}, {"logaddexp f64", lse, {F64}},
        {"logaddexp f16", lse, {F16}},
        {"affine f32", test::affine(), {F32, F32}},
        {"affine f64", test::affine(), {F64, F64}},
        {"affine bf16", test::affine(), {BF16, BF16}},
        {"reversed affine f32", reversed_affine, {F32, F32}},
        {"matmul f32", test::matmul2x2(), {F32, F32, F32, F32}},
        {"matmul f64", test::matmul2x2(), {F64, F64, F64, F64}},
        {"matmul bf16", test::matmul2x2(), {BF16, BF16, BF16, BF16}},
        {"matmul i32 wraps", test::matmul2x2(), {I32, I32, I32, I32}},
        {"mean with an i64 count", mean_int_count, {I64, F64}},
        {"mean with an i32 count", mean_int_count, {I32, F64}},
        {"mean of f64 values weighted in f32", mean_f32_weight, {I64, F64}},
        {"welford f32", test::welford(), {F32, F32, F32}},
        {"welford f64", test::welford(), {F64, F64, F64}},
        {"segmented sum f32", test::segmented_sum(), {F32, Bool}},
        {"segmented sum i32", test::segmented_sum(), {I32, Bool}},
        {"smooth max f32", test::smooth_max(), {F32}, {F32}},
        {"smooth max f64", test::smooth_max(), {F64}, {F64}},
        {"bitwise and i32", band, {I32}}, {"bitwise or u8", bor, {U8}},
        {"bitwise xor i64", bxor, {I64}}, {"bitwise xor bool", bxor, {Bool}},
        {"logical or bool", lor, {Bool}}, {"logical and bool", land, {Bool}},
    };
    return cases;
}

TEST(CheckAssociative, AcceptsEveryAssociativeCombineAUserWouldWriteUnderManySeeds) {
    for (const Case& c : associative_cases()) {
        int skipped = 0;
        for (std::uint64_t seed = 0; seed < 8; ++seed) {
            AssociativityReport r = check_associative(*c.combine, c.leaves, c.captured, 256,
                                                      seed == 0 ? 0x5ca9c : seed);
            EXPECT_TRUE(r.associative) << c.label << " seed " << seed << ": " << r.counterexample;
            EXPECT_EQ(r.trials, 256) << c.label;
            skipped += r.skipped;
        }
        EXPECT_LT(skipped, 8 * 256 / 4) << c.label << ": too many skipped trials to mean much";
    }
}

// A rejected combine with its own scalar definition, to recompute the counterexample.
struct Rejected {
    std::string label;
    CombineRef combine;
    DType dtype;
    std::function<double(double, double)> f;  // in the dtype's arithmetic
};

std::vector<Rejected> rejected_cases() {
    auto f32 = [](auto fn) {
        return [fn](double x, double y) {
            return static_cast<double>(fn(static_cast<float>(x), static_cast<float>(y)));
        };
    };
    auto i32 = [](auto fn) {
        return [fn](double x, double y) {
            auto narrow = [](double v) { return static_cast<std::int32_t>(v); };
            return static_cast<double>(fn(narrow(x), narrow(y)));
        };
    };
    using enum DType;
    return {
        {"sub", binary("sub", [](Expr x, Expr y) { return x - y; }), F32,
         f32([](float x, float y) { return x - y; })},
        {"div", binary("div", [](Expr x, Expr y) { return x / y; }), F32,
         f32([](float x, float y) { return x / y; })},
        {"avg", binary("avg", [](Expr x, Expr y) { return (x + y) / 2; }), F32,
         f32([](float x, float y) { return (x + y) / 2; })},
        {"mul_add_one", binary("mul_add_one", [](Expr x, Expr y) { return x * y + 1; }), F32,
         f32([](float x, float y) { return x * y + 1; })},
        {"int sub", binary("isub", [](Expr x, Expr y) { return x - y; }), I32,
         i32([](std::int32_t x, std::int32_t y) { return x - y; })},
        {"max_plus_one", binary("max_plus_one", [](Expr x, Expr y) { return max(x, y) + 1; }),
         F32, f32([](float x, float y) { return std::max(x, y) + 1; })},
        {"int max_plus_one", binary("imax1", [](Expr x, Expr y) { return max(x, y) + 1; }), I32,
         i32([](std::int32_t x, std::int32_t y) { return std::max(x, y) + 1; })},
    };
}

TEST(CheckAssociative, RejectsNonAssociativeCombinesWithACounterexampleWhoseValuesAreRight) {
    // a = A, b = B, c = C: (a∘b)∘c = X (a∘b = AB) but a∘(b∘c) = Y (b∘c = BC)
    const std::regex shape(R"(^a = (\S+), b = (\S+), c = (\S+): )"
                           R"(\(a∘b\)∘c = (\S+) \(a∘b = (\S+)\) )"
                           R"(but a∘\(b∘c\) = (\S+) \(b∘c = (\S+)\)$)");
    for (const Rejected& c : rejected_cases()) {
        DType dt[] = {c.dtype};
        AssociativityReport r = check_associative(*c.combine, dt, {});
        ASSERT_FALSE(r.associative) << c.label;
        std::smatch m;
        ASSERT_TRUE(std::regex_match(r.counterexample, m, shape))
            << c.label << ": " << r.counterexample;
        double a = std::stod(m[1]), b = std::stod(m[2]), cc = std::stod(m[3]);
        double ab = c.f(a, b), bc = c.f(b, cc);
        EXPECT_EQ(std::stod(m[5]), ab) << c.label << ": " << r.counterexample;
        EXPECT_EQ(std::stod(m[7]), bc) << c.label << ": " << r.counterexample;
        EXPECT_EQ(std::stod(m[4]), c.f(ab, cc)) << c.label << ": " << r.counterexample;
        EXPECT_EQ(std::stod(m[6]), c.f(a, bc)) << c.label << ": " << r.counterexample;
        EXPECT_NE(c.f(ab, cc), c.f(a, bc)) << c.label;
    }
}

TEST(CheckAssociative, IntegerLeavesBesideFloatsStillExposeANonAssociativeFloatPart) {
    // Full-range integers skip only float differences they alone could cause.
    auto count_and_sub = test::pair("count_and_sub", [](Expr n1, Expr x1, Expr n2, Expr x2) {
        return Exprs{n1 + n2, x1 - x2 * cast(DType::F64, n2)};
    });
    DType leaves[] = {DType::I64, DType::F64};
    for (std::uint64_t seed = 0; seed < 8; ++seed)
        EXPECT_FALSE(check_associative(*count_and_sub, leaves, {}, 256, seed).associative) << seed;
    // Nor does an f32 step inside (f32's looser tolerance then) hide it.
    auto count_and_sub_f32 = test::pair("count_and_sub_f32", [](Expr n1, Expr x1, Expr n2, Expr x2) {
        return Exprs{n1 + n2, x1 - x2 * cast(DType::F64, cast(DType::F32, n2))};
    });
    for (std::uint64_t seed = 0; seed < 8; ++seed)
        EXPECT_FALSE(check_associative(*count_and_sub_f32, leaves, {}, 256, seed).associative) << seed;
}

TEST(CheckAssociative, CounterexampleNamesCapturedValuesAndTuples) {
    // (a1 + a2 * c, b1 - b2): both leaves non-associative, one captured value.
    auto bad = trace_combine(
        "bad", 2, 1,
        [](const Exprs& l, const Exprs& r, const Exprs& c) {
            return Exprs{l[0] + r[0] * c[0], l[1] - r[1]};
        },
        {"a1", "b1", "a2", "b2", "scale"});
    DType leaves[] = {DType::F64, DType::I32}, captured[] = {DType::F64};
    AssociativityReport r = check_associative(*bad, leaves, captured);
    ASSERT_FALSE(r.associative);
    const std::regex shape(R"(^a = \(\S+, \S+\), b = \(\S+, \S+\), c = \(\S+, \S+\), )"
                           R"(with scale = \S+: )");
    EXPECT_TRUE(std::regex_search(r.counterexample, shape)) << r.counterexample;
}

TEST(CheckAssociative, IsDeterministicForASeed) {
    auto avg = binary("avg", [](Expr x, Expr y) { return (x + y) / 2; });
    DType dt[] = {DType::F64};
    AssociativityReport first = check_associative(*avg, dt, {}, 64, 42);
    AssociativityReport again = check_associative(*avg, dt, {}, 64, 42);
    ASSERT_FALSE(first.associative);
    EXPECT_EQ(first.counterexample, again.counterexample);
    EXPECT_EQ(first.trials, again.trials);
}

TEST(CheckAssociative, SkipsTrialsThatOverflowToInfinityAndCountsThem) {
    // Associative (both groupings are 1e6 * a * b * c) but f16 tops out at 65504: one grouping
    // overflows where the other does not, or inf meets a zero and gives nan.
    auto scaled = binary("scaled_prod", [](Expr x, Expr y) { return x * y * 1000; });
    DType dt[] = {DType::F16};
    AssociativityReport r = check_associative(*scaled, dt, {}, 1000);
    EXPECT_TRUE(r.associative) << r.counterexample;
    EXPECT_EQ(r.trials, 1000);
    EXPECT_GT(r.skipped, 0);
    EXPECT_LT(r.skipped, 1000);
}

TEST(CheckAssociative, ZeroTrialsProveNothingAndReportNothing) {
    auto sub = binary("sub", [](Expr x, Expr y) { return x - y; });
    DType dt[] = {DType::F32};
    AssociativityReport r = check_associative(*sub, dt, {}, 0);
    EXPECT_TRUE(r.associative);
    EXPECT_EQ(r.trials, 0);
    AssociativityReport one = check_associative(*sub, dt, {}, 1);
    EXPECT_EQ(one.trials, 1);
}

TEST(CheckAssociative, CombineThatDoesNotTypeCheckAtTheDtypesIsACompileError) {
    auto shift = binary("shift", [](Expr x, Expr y) { return x << y; });
    DType dt[] = {DType::F32};
    EXPECT_THROW(check_associative(*shift, dt, {}), CompileError);
}

ProgramRef program_scanning(const CombineRef& combine, SourceLoc loc) {
    auto x = make_param(ParamRole::Program, 0, "x", Type{DType::F32, {Size(7), Size(5)}, false});
    NodeRef scan = make_scan(combine, {x}, {}, 1, false, loc);
    auto program = std::make_shared<Program>();
    program->name = "p";
    program->params = {x};
    program->results = {make_project(scan, 0, loc)};
    return program;
}

TEST(CheckProgramAssociative, NonAssociativeScanIsACompileErrorAtTheScan) {
    auto avg = binary("avg", [](Expr x, Expr y) { return (x + y) / 2; });
    SourceLoc loc{"avg.scan", 4, 11};
    try {
        check_program_associative(*program_scanning(avg, loc));
        FAIL() << "no error";
    } catch (const CompileError& e) {
        EXPECT_EQ(e.loc().str(), "avg.scan:4:11");
        EXPECT_EQ(e.message().rfind("combine `avg` is not associative: a = ", 0), 0u) << e.what();
        EXPECT_NE(e.message().find("but a∘(b∘c) = "), std::string::npos) << e.what();
    }
}

TEST(CheckProgramAssociative, AcceptsProgramsWhoseScansAreAssociative) {
    ProgramBuilder p("mixed");
    Size n = p.symbol("N"), t = p.symbol("T");
    Expr x = p.param("x", DType::F32, {n, t});
    Expr tau = p.param("tau", DType::F32, {n, 1});
    Exprs h = p.scan(test::affine(), {exp(x), x}, 1);
    Exprs m = p.scan(test::smooth_max(), {x}, 1, true, {tau});
    Exprs w = p.scan(test::welford(), {x, x, x}, 0);
    EXPECT_NO_THROW(check_program_associative(*p.build({h[1], m[0], w[2]})));
}

}  // namespace
}  // namespace scanc
