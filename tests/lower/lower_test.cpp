// lower_scans with static lengths: the lowered program, run by the reference executor, equals the
// scan for every algorithm, direction, leaf count, captured value and dim; level and combine
// application counts are the promised ones.
#include "lower_helpers.h"
#include "scanc/text/parser.h"
#include "scanc/text/printer.h"

namespace scanc::lower_test {
namespace {

const std::int64_t kLengths[] = {1, 2, 3, 7, 8, 9, 100, 1000, 4097};
const ScanAlgorithm kAlgorithms[] = {ScanAlgorithm::HillisSteele, ScanAlgorithm::WorkEfficient,
                                     ScanAlgorithm::Auto};

struct Case {
    ScanAlgorithm algorithm;
    bool reverse;
};

void PrintTo(const Case& c, std::ostream* out) {
    *out << algorithm_name(c.algorithm) << (c.reverse ? " reverse" : " forward");
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
    std::string a(algorithm_name(info.param.algorithm));
    for (auto& c : a)
        if (c == '-') c = '_';
    return a + (info.param.reverse ? "_reverse" : "_forward");
}

class LowerEveryLength : public ::testing::TestWithParam<Case> {
protected:
    LowerOptions options() const {
        LowerOptions o;
        o.algorithm = GetParam().algorithm;
        return o;
    }
};

TEST_P(LowerEveryLength, SumOfI64MatchesTheScanExactly) {
    std::mt19937_64 rng(1);
    for (std::int64_t s : kLengths) {
        dsl::ProgramBuilder b("cumsum");
        Expr x = b.param("x", DType::I64, {s});
        auto p = b.build(b.scan(sum(), {x}, 0, GetParam().reverse));
        SCOPED_TRACE(cat("S = ", s));
        expect_same_results(p, lower_scans(*p, options()), {random_tensor(DType::I64, {s}, rng)});
    }
}

TEST_P(LowerEveryLength, AffineWithTwoLeavesMatchesTheScan) {
    std::mt19937_64 rng(2);
    for (std::int64_t s : kLengths) {
        dsl::ProgramBuilder b("affine");
        Expr a = b.param("a", DType::F64, {2, s});
        Expr x = b.param("x", DType::F64, {2, s});
        auto outs = b.scan(affine(), {a, x}, 1, GetParam().reverse);
        auto p = b.build(outs);
        SCOPED_TRACE(cat("S = ", s));
        // Multipliers near 1 keep long products from vanishing, so errors would show.
        expect_same_results(p, lower_scans(*p, options()),
                            {random_tensor(DType::F64, {2, s}, rng, 0.9, 1.1),
                             random_tensor(DType::F64, {2, s}, rng)},
                            1e-9);
    }
}

TEST_P(LowerEveryLength, CapturedValuesBroadcastIntoTheInlinedCombine) {
    std::mt19937_64 rng(3);
    for (std::int64_t s : {1, 2, 7, 9, 100}) {
        dsl::ProgramBuilder b("smooth");
        Expr x = b.param("x", DType::F64, {3, s});
        Expr tau = b.param("tau", DType::F64, {3, 1});
        auto p = b.build(b.scan(smooth_max(), {x}, 1, GetParam().reverse, {tau}));
        SCOPED_TRACE(cat("S = ", s));
        expect_same_results(p, lower_scans(*p, options()),
                            {random_tensor(DType::F64, {3, s}, rng),
                             random_tensor(DType::F64, {3, 1}, rng, 0.5, 2)},
                            1e-9);
    }
}

TEST_P(LowerEveryLength, ScansAlongTheFirstMiddleAndLastDimOfA3DTensor) {
    std::mt19937_64 rng(4);
    for (int dim = 0; dim < 3; ++dim) {
        for (std::int64_t s : {1, 3, 8, 9, 33}) {
            std::vector<std::int64_t> sizes{2, 3, 4};
            sizes[dim] = s;
            Shape shape(sizes.begin(), sizes.end());
            dsl::ProgramBuilder b("nd");
            Expr a = b.param("a", DType::F64, shape);
            Expr x = b.param("x", DType::F64, shape);
            auto p = b.build(b.scan(affine(), {a, x}, dim, GetParam().reverse));
            SCOPED_TRACE(cat("dim = ", dim, ", S = ", s));
            expect_same_results(p, lower_scans(*p, options()),
                                {random_tensor(DType::F64, sizes, rng, 0.9, 1.1),
                                 random_tensor(DType::F64, sizes, rng)});
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Algorithms, LowerEveryLength,
                         ::testing::Values(Case{ScanAlgorithm::HillisSteele, false},
                                           Case{ScanAlgorithm::HillisSteele, true},
                                           Case{ScanAlgorithm::WorkEfficient, false},
                                           Case{ScanAlgorithm::WorkEfficient, true},
                                           Case{ScanAlgorithm::Auto, false},
                                           Case{ScanAlgorithm::Auto, true}),
                         case_name);

ProgramRef cumsum_program(std::int64_t s, bool reverse = false) {
    dsl::ProgramBuilder b("cumsum");
    Expr x = b.param("x", DType::F32, {s});
    return b.build(b.scan(sum(), {x}, 0, reverse));
}

LoweredScan lower_one(const ProgramRef& p, ScanAlgorithm a, ProgramRef* lowered = nullptr) {
    LowerOptions o;
    o.algorithm = a;
    LoweringReport report;
    ProgramRef out = lower_scans(*p, o, &report);
    if (lowered) *lowered = out;
    EXPECT_EQ(report.scans.size(), 1u);
    return report.scans.at(0);
}

TEST(LowerCounts, HillisSteeleTakesCeilLog2LevelsAndCombinesAllButTheFirstKEachLevel) {
    for (std::int64_t s : kLengths) {
        ProgramRef lowered;
        LoweredScan info = lower_one(cumsum_program(s), ScanAlgorithm::HillisSteele, &lowered);
        std::int64_t applications = 0;
        for (std::int64_t k = 1; k < s; k *= 2) applications += s - k;
        EXPECT_EQ(info.levels, levels_for(s)) << "S = " << s;
        EXPECT_EQ(info.combine_instances, levels_for(s)) << "S = " << s;
        EXPECT_EQ(info.applications, applications) << "S = " << s;
        // One Add per inlined sum, one Concat per level, and nothing else computes.
        auto census = op_census(*lowered);
        EXPECT_EQ(census["Add"], levels_for(s)) << "S = " << s;
        EXPECT_EQ(census["Concat"], levels_for(s)) << "S = " << s;
        EXPECT_EQ(census.count("Scan"), 0u);
    }
}

// The odd/even recursion combines floor(S/2) pairs, recurses on them, then fills the
// ceil(S/2) - 1 evens after the first: counted here by simulating the index sets.
std::int64_t odd_even_applications(std::int64_t s) {
    std::int64_t total = 0;
    for (std::int64_t n = s; n >= 2; n /= 2) total += n / 2 + (n + 1) / 2 - 1;
    return total;
}

TEST(LowerCounts, WorkEfficientStaysWithinTwiceSCombinesAndTwiceLog2Levels) {
    for (std::int64_t s : kLengths) {
        LoweredScan info = lower_one(cumsum_program(s), ScanAlgorithm::WorkEfficient);
        EXPECT_EQ(info.applications, odd_even_applications(s)) << "S = " << s;
        EXPECT_LE(info.applications, 2 * s) << "S = " << s;
        EXPECT_LE(info.levels, 2 * levels_for(s)) << "S = " << s;
        EXPECT_EQ(info.algorithm, ScanAlgorithm::WorkEfficient);
    }
    // A power of two: levels are exactly 2*log2(S) - 1 (the last pair needs no even step).
    EXPECT_EQ(lower_one(cumsum_program(1024), ScanAlgorithm::WorkEfficient).levels, 19);
}

TEST(LowerCounts, AutoPicksWorkEfficientForLongStaticScansAndSaysWhy) {
    LoweredScan small = lower_one(cumsum_program(8), ScanAlgorithm::Auto);
    LoweredScan large = lower_one(cumsum_program(4097), ScanAlgorithm::Auto);
    EXPECT_EQ(small.algorithm, ScanAlgorithm::HillisSteele);
    EXPECT_EQ(large.algorithm, ScanAlgorithm::WorkEfficient);
    EXPECT_FALSE(small.reason.empty());
    EXPECT_FALSE(large.reason.empty());
}

TEST(LowerProgram, OpsAroundTheScanAreKeptAndResultsKeepTheirOrder) {
    std::mt19937_64 rng(5);
    dsl::ProgramBuilder b("around");
    Expr x = b.param("x", DType::F64, {5, 17});
    Expr y = b.param("y", DType::F64, {17});
    Expr scaled = x * 2.0 + y;
    auto s = b.scan(sum(), {scaled}, 1, true);
    auto p = b.build({dsl::exp(s[0]) - y, x, s[0]});
    for (auto a : kAlgorithms) {
        LowerOptions o;
        o.algorithm = a;
        ProgramRef lowered = lower_scans(*p, o);
        EXPECT_EQ(lowered->params.size(), 2u);
        EXPECT_EQ(lowered->params[0]->name, "x");
        expect_same_results(p, lowered,
                            {random_tensor(DType::F64, {5, 17}, rng),
                             random_tensor(DType::F64, {17}, rng)});
    }
}

TEST(LowerProgram, HalfPrecisionScansComputeInF32AndRoundOnlyTheirOutputs) {
    // A bf16 sum of 1 + 1/128 (exact in bf16) over 600 steps: the scan adds in f32 and rounds
    // each output once, so its partial sums above 256 are not what bf16 additions would give.
    // Both algorithms and an f16 scan (whose sums pass 2048) give the scan's bits.
    for (DType t : {DType::BF16, DType::F16}) {
        dsl::ProgramBuilder b("half");
        Expr x = b.param("x", t, {600});
        ProgramRef p = b.build(b.scan(sum(), {x}, 0));
        Tensor ones = Tensor::empty(t, {600});
        for (std::int64_t i = 0; i < 600; ++i)
            store_scalar(Scalar::of_double(t, t == DType::BF16 ? 1 + 1.0 / 128 : 4 + 1.0 / 256), static_cast<char*>(ones.data()) + i * 2);
        for (auto a : {ScanAlgorithm::HillisSteele, ScanAlgorithm::WorkEfficient}) {
            LowerOptions o;
            o.algorithm = a;
            SCOPED_TRACE(cat(dtype_name(t), " ", algorithm_name(a)));
            expect_same_results(p, lower_scans(*p, o), {ones}, 0);
        }
    }
}

TEST(LowerProgram, CastsToHalfPrecisionInsideACombineRoundThereAndTheCombineGoesOnInF32) {
    // f16(c) * 1000 is 100000 in f32 and inf in f16; max(a, f16(b)) takes an f16 operand beside
    // the f32 that a's f16 leaf computes in; bf16(c) beside bf16 leaves. (Each exact in any
    // association, so the lowered scans' bits are the reference's.)
    Module m = parse_module(
        "combine clamp(a | b; c) { return min(max(a, b), f32(f16(c) * 1000) / 1000) }\n"
        "combine add(a | b) { return max(a, f16(b)) + f16(0) }\n"
        "combine pick(a | b; c) { return min(max(a, b), bf16(c)) }\n"
        "program p(x: f32[T, N], c: f32[1, N], h: f16[T, N], g: bf16[T, N]) {\n"
        "  y = scan clamp(x) dim=0 with (c)\n  z = scan add(h) dim=0\n"
        "  w = scan pick(g) dim=0 with (c)\n  return y, z, w\n}\n");
    const ProgramRef p = m.programs.back();
    std::mt19937_64 rng(11);
    auto narrow = [&](DType dtype, std::int64_t t) {  // uniform in [-1, 1), rounded to dtype
        Tensor f = random_tensor(DType::F64, {t, 5}, rng), out = Tensor::empty(dtype, {t, 5});
        for (std::int64_t i = 0; i < 5 * t; ++i)
            store_scalar(Scalar::of_double(dtype, static_cast<const double*>(f.data())[i]),
                         static_cast<char*>(out.data()) + i * 2);
        return out;
    };
    for (std::int64_t t : {1, 2, 7, 17}) {
        std::vector<Tensor> inputs = {random_tensor(DType::F32, {t, 5}, rng, 150, 300),
                                      random_tensor(DType::F32, {1, 5}, rng, 99, 101),
                                      narrow(DType::F16, t), narrow(DType::BF16, t)};
        for (auto a : kAlgorithms) {
            LowerOptions o;
            o.algorithm = a;
            o.sizes = {{"T", t}, {"N", 5}};
            SCOPED_TRACE(cat("T = ", t, " ", algorithm_name(a)));
            expect_same_results(p, lower_scans(*p, o), inputs, 0);
        }
    }
}

TEST(LowerProgram, AScanOfAtMostOneStepKeepsItsResultsNameAndLeavesTheProgramAsItWas) {
    // Such a scan lowers to its leaf, a node of the program: the result is named as the scan
    // was, and the program's own nodes keep their names.
    Module m = parse_module("combine add(a | b) { return a + b }\n"
                            "program p(x: f32[T<=1]) {\n  v = x * 2\n  y = scan add(v) dim=0\n"
                            "  z = scan add(x * 3) dim=0\n  w = scan add(x) dim=0\n  return y, v, z, w\n}\n");
    const ProgramRef p = m.programs.back();
    const std::string before = print_program(*p);
    for (auto a : kAlgorithms) {
        LowerOptions o;
        o.algorithm = a;
        if (a == ScanAlgorithm::WorkEfficient) o.sizes = {{"T", 1}};
        ProgramRef lowered = lower_scans(*p, o);
        std::vector<std::string> names;
        for (const NodeRef& r : lowered->results) names.push_back(r->name);
        EXPECT_EQ(names, (std::vector<std::string>{"y", "v", "z", "w"})) << algorithm_name(a);
        EXPECT_EQ(print_program(*p), before);
    }
}

TEST(LowerProgram, EmptyScanGivesAnEmptyResult) {
    ProgramRef p = cumsum_program(0);
    ProgramRef lowered = lower_scans(*p);
    auto out = run_reference(lowered, {Tensor::empty(DType::F32, {0})});
    EXPECT_EQ(out.at(0).sizes(), std::vector<std::int64_t>{0});
}

// Random combines: tuples of independent associative parts (integer ops wrap, so every
// grouping is exact) with random directions, dims and lengths.
CombineRef random_combine(std::mt19937_64& rng, int leaves) {
    std::vector<int> kinds;
    for (int i = 0; i < leaves; ++i) kinds.push_back(static_cast<int>(rng() % 7));
    return dsl::trace_combine("random", leaves, 0, [kinds](auto& l, auto& r, auto&) {
        Exprs out;
        for (std::size_t i = 0; i < kinds.size(); ++i) {
            const Expr &a = l[i], &b = r[i];
            switch (kinds[i]) {
                case 0: out.push_back(a + b); break;
                case 1: out.push_back(a * b); break;
                case 2: out.push_back(dsl::max(a, b)); break;
                case 3: out.push_back(dsl::min(a, b)); break;
                case 4: out.push_back(a ^ b); break;
                case 5: out.push_back(b); break;  // keep the later: not commutative
                default: out.push_back(a + b + a * b); break;  // (1+a)(1+b) - 1
            }
        }
        return out;
    });
}

TEST(LowerRandomCombines, EveryAlgorithmMatchesTheScanExactlyOnIntegers) {
    std::mt19937_64 rng(6);
    for (int trial = 0; trial < 24; ++trial) {
        int leaves = 1 + static_cast<int>(rng() % 3);
        CombineRef c = random_combine(rng, leaves);
        std::int64_t s = kLengths[rng() % std::size(kLengths)];
        int dim = static_cast<int>(rng() % 2);
        bool reverse = rng() % 2;
        std::vector<std::int64_t> sizes{3, 3};
        sizes[dim] = s;
        dsl::ProgramBuilder b("random");
        Exprs xs;
        std::vector<Tensor> inputs;
        for (int i = 0; i < leaves; ++i) {
            xs.push_back(b.param(cat("x", i), DType::I32, Shape(sizes.begin(), sizes.end())));
            inputs.push_back(random_tensor(DType::I32, sizes, rng));
        }
        auto p = b.build(b.scan(c, xs, dim, reverse));
        for (auto a : kAlgorithms) {
            LowerOptions o;
            o.algorithm = a;
            SCOPED_TRACE(cat("trial ", trial, ": ", algorithm_name(a), ", S = ", s, ", dim ",
                             dim, reverse ? ", reverse" : ""));
            expect_same_results(p, lower_scans(*p, o), inputs);
        }
    }
}

}  // namespace
}  // namespace scanc::lower_test
