// lower_scans with a dynamic length: one lowered program, built for a bound M, is right for
// every length 1..M; without a bound the error names the dim and the symbol.
#include "lower_helpers.h"
#include "scanc/text/parser.h"
#include "scanc/text/printer.h"

namespace scanc::lower_test {
namespace {

ProgramRef dynamic_affine(std::optional<std::int64_t> bound, bool reverse) {
    dsl::ProgramBuilder b("dyn");
    Size l = b.symbol("L", bound);
    Expr a = b.param("a", DType::F64, {2, l});
    Expr x = b.param("x", DType::F64, {2, l});
    return b.build(b.scan(affine(), {a, x}, 1, reverse));
}

TEST(LowerDynamic, OneBoundedHillisSteeleProgramIsRightForEveryLengthUpToTheBound) {
    std::mt19937_64 rng(7);
    for (bool reverse : {false, true}) {
        ProgramRef p = dynamic_affine(37, reverse);
        LowerOptions o;
        o.algorithm = ScanAlgorithm::HillisSteele;
        LoweringReport report;
        ProgramRef lowered = lower_scans(*p, o, &report);
        EXPECT_EQ(report.scans.at(0).levels, levels_for(37));
        // The lowered program keeps the symbolic length: its result is [2, L].
        EXPECT_TRUE(lowered->results[0]->type().shape[1].equals(p->results[0]->type().shape[1]));
        for (std::int64_t s = 1; s <= 37; ++s) {
            SCOPED_TRACE(cat("S = ", s, reverse ? " reverse" : ""));
            expect_same_results(p, lowered,
                                {random_tensor(DType::F64, {2, s}, rng, 0.9, 1.1),
                                 random_tensor(DType::F64, {2, s}, rng)});
        }
    }
}

// One leaf is x, the other x's evens and odds woven back: one length spelled two ways (T and
// floordiv(T + 1, 2) + floordiv(T - min(T, 1) + 1, 2)). Each level slices and combines the
// two; without one spelling, the lowering refused at the level of k = 16384 ("cannot be
// shown equal", found by tests/python/test_random_whole_programs.py).
TEST(LowerDynamic, LeavesOfOneLengthSpelledTwoWaysLowerForEveryLengthUpToTheBound) {
    for (bool reverse : {false, true}) {
        dsl::ProgramBuilder b("woven");
        Size t = b.symbol("T", 200000);
        Expr a = b.param("a", DType::F64, {2, t});
        Expr x = b.param("x", DType::F64, {2, t});
        Expr woven = dsl::interleave(1, dsl::slice(x, 1, 0, t, 2), dsl::slice(x, 1, 1, t, 2));
        ProgramRef p = b.build(b.scan(affine(), {a, woven}, 1, reverse));
        LowerOptions o;
        o.algorithm = ScanAlgorithm::HillisSteele;
        LoweringReport report;
        ProgramRef lowered = lower_scans(*p, o, &report);
        EXPECT_EQ(report.scans.at(0).levels, levels_for(200000));
        std::mt19937_64 rng(11);
        for (std::int64_t s : {0, 1, 2, 3, 7, 8, 9, 64, 65, 257}) {
            SCOPED_TRACE(cat("T = ", s, reverse ? " reverse" : ""));
            expect_same_results(p, lowered,
                                {random_tensor(DType::F64, {2, s}, rng, 0.9, 1.1),
                                 random_tensor(DType::F64, {2, s}, rng)});
        }
    }
}

// A reversed scan's lowered result spells its length by the levels' slices and concats; a
// second scan of it beside its own input refused ("cannot be shown equal", found by
// tests/python/test_random_whole_programs.py) until the result took the input's spelling back.
TEST(LowerDynamic, AScanOfALoweredScanBesideItsInputLowersForEveryLengthUpToTheBound) {
    const char* text = R"(
combine mat(a1, b1, c1, d1 | a2, b2, c2, d2) {
  return a2 * a1 + b2 * c1, a2 * b1 + b2 * d1, c2 * a1 + d2 * c1, c2 * b1 + d2 * d1
}
combine mn(a | b) { return min(a, b) }
program p(x: i32[D]) {
  y = slice(x, 0, 1, 1099511627776, 1)
  least = scan mn(y) dim=0 reverse
  (_, _, _, product) = scan mat(least % 3, least % 3, least % 3, y % 3) dim=0 reverse
  return product
}
)";
    ProgramRef p = parse_module(text, "chained.scan").program("p");
    LowerOptions o;
    o.algorithm = ScanAlgorithm::HillisSteele;
    o.bounds = {{"D", 23}};
    ProgramRef lowered = lower_scans(*p, o);
    std::mt19937_64 rng(12);
    for (std::int64_t s = 0; s <= 23; ++s) {
        SCOPED_TRACE(cat("D = ", s));
        expect_same_results(p, lowered, {random_tensor(DType::I32, {s}, rng)});
    }
}

TEST(LowerDynamic, TheLoweredTextParsesBackToAProgramWithTheSameResults) {
    // `scanc lower --emit scan`: the canonical text of the lowered program is a valid program.
    std::mt19937_64 rng(10);
    for (auto a : {ScanAlgorithm::HillisSteele, ScanAlgorithm::WorkEfficient}) {
        LowerOptions o;
        o.algorithm = a;
        if (a == ScanAlgorithm::WorkEfficient) o.sizes = {{"L", 11}};
        ProgramRef lowered = lower_scans(*dynamic_affine(16, true), o);
        Module m;
        m.programs.push_back(lowered);
        std::string text = print_module(m);
        ProgramRef reparsed = parse_module(text, "lowered.scan").program("");
        EXPECT_EQ(print_program(*reparsed), print_program(*lowered));
        for (std::int64_t s : {11}) {
            expect_same_results(lowered, reparsed,
                                {random_tensor(DType::F64, {2, s}, rng, 0.9, 1.1),
                                 random_tensor(DType::F64, {2, s}, rng)});
        }
    }
}

TEST(LowerDynamic, AutoChoosesHillisSteeleForADynamicLengthAndSaysWhy) {
    LoweringReport report;
    lower_scans(*dynamic_affine(4096, false), {}, &report);
    EXPECT_EQ(report.scans.at(0).algorithm, ScanAlgorithm::HillisSteele);
    EXPECT_NE(report.scans.at(0).reason.find("dynamic"), std::string::npos);
    EXPECT_EQ(report.scans.at(0).max_length, 4096);
}

TEST(LowerDynamic, AnUnboundedLengthIsAnErrorNamingTheDimAndTheSymbol) {
    ProgramRef p = dynamic_affine(std::nullopt, false);
    try {
        lower_scans(*p);
        FAIL() << "expected a CompileError";
    } catch (const CompileError& e) {
        std::string m = e.what();
        EXPECT_NE(m.find("dim 1"), std::string::npos) << m;
        EXPECT_NE(m.find("--bound L="), std::string::npos) << m;
    }
}

TEST(LowerDynamic, ABoundFromTheOptionsMakesAnUnboundedProgramLowerable) {
    std::mt19937_64 rng(8);
    ProgramRef p = dynamic_affine(std::nullopt, true);
    LowerOptions o;
    o.bounds = {{"L", 20}};
    LoweringReport report;
    ProgramRef lowered = lower_scans(*p, o, &report);
    EXPECT_EQ(report.scans.at(0).levels, levels_for(20));
    EXPECT_EQ(lowered->symbols.at(0)->bound, 20);
    for (std::int64_t s : {1, 2, 5, 16, 17, 20}) {
        SCOPED_TRACE(cat("S = ", s));
        expect_same_results(p, lowered,
                            {random_tensor(DType::F64, {2, s}, rng, 0.9, 1.1),
                             random_tensor(DType::F64, {2, s}, rng)});
    }
}

TEST(LowerDynamic, ABoundOnAnUnknownSizeIsAnErrorListingTheSizes) {
    LowerOptions o;
    o.bounds = {{"T", 8}};
    try {
        lower_scans(*dynamic_affine(std::nullopt, false), o);
        FAIL() << "expected a CompileError";
    } catch (const CompileError& e) {
        EXPECT_NE(std::string(e.what()).find("its sizes: L"), std::string::npos) << e.what();
    }
}

TEST(LowerDynamic, WorkEfficientRefusesADynamicLengthAndPointsToHillisSteele) {
    LowerOptions o;
    o.algorithm = ScanAlgorithm::WorkEfficient;
    try {
        lower_scans(*dynamic_affine(64, false), o);
        FAIL() << "expected a CompileError";
    } catch (const CompileError& e) {
        EXPECT_NE(std::string(e.what()).find("hillis-steele"), std::string::npos) << e.what();
    }
}

TEST(LowerDynamic, AFixedSizeMakesTheLengthStaticSoWorkEfficientApplies) {
    std::mt19937_64 rng(9);
    ProgramRef p = dynamic_affine(std::nullopt, true);
    LowerOptions o;
    o.algorithm = ScanAlgorithm::WorkEfficient;
    o.sizes = {{"L", 13}};
    ProgramRef lowered = lower_scans(*p, o);
    EXPECT_EQ(lowered->params[0]->type().shape[1].constant(), 13);
    EXPECT_TRUE(lowered->symbols.empty());
    expect_same_results(p, lowered,
                        {random_tensor(DType::F64, {2, 13}, rng, 0.9, 1.1),
                         random_tensor(DType::F64, {2, 13}, rng)});
}

TEST(LowerDynamic, AFixedSizeOrANewBoundReachesTheSliceBoundsThatNameIt) {
    // Slices no scan feeds are rebuilt over the rewritten params; their bounds must name the
    // rewritten size too, or the lowered text mentions a size its program does not have. L - 12
    // is negative at L = 9, so it clamps to 0, where a constant -3 would count from the end.
    const char* text =
        "combine add(a | b) {\n  return a + b\n}\n"
        "program p(x: f64[2, L]) {\n  y = slice(x, 1, 1, L - 1)\n  z = scan add(y) dim=1\n"
        "  return z, slice(x, 1, -L, floordiv(L, 2), 2), slice(x, 1, L - 12, L)\n}\n";
    ProgramRef p = parse_module(text, "t.scan").program("");
    std::mt19937_64 rng(11);
    for (bool fixed : {true, false}) {
        LowerOptions o;
        (fixed ? o.sizes : o.bounds) = {{"L", 9}};
        ProgramRef lowered = lower_scans(*p, o);
        Module m;
        m.programs.push_back(lowered);
        std::string printed = print_module(m);
        if (fixed) {
            EXPECT_EQ(printed.find('L'), std::string::npos) << printed;
        }
        ProgramRef reparsed = parse_module(printed, "lowered.scan").program("");
        Tensor x = random_tensor(DType::F64, {2, 9}, rng);
        expect_same_results(p, lowered, {x});
        expect_same_results(p, reparsed, {x});
    }
}

TEST(LowerDynamic, AFixedSizeAboveTheDeclaredBoundIsAnError) {
    LowerOptions o;
    o.sizes = {{"L", 65}};
    EXPECT_THROW(lower_scans(*dynamic_affine(64, false), o), CompileError);
}

}  // namespace
}  // namespace scanc::lower_test
