// check_lowered: a lowered program passes; a scan left in, a constant pad, or a kept pure sum
// (without allow_native_cumsum) is caught.
#include "lower_helpers.h"

namespace scanc::lower_test {
namespace {

ProgramRef scan_program(const CombineRef& c) {
    dsl::ProgramBuilder b("p");
    Expr x = b.param("x", DType::F32, {4, 9});
    return b.build(b.scan(c, {x}, 1));
}

TEST(CheckLowered, AcceptsWhatLowerScansProducesForEveryAlgorithm) {
    for (auto a : {ScanAlgorithm::HillisSteele, ScanAlgorithm::WorkEfficient}) {
        LowerOptions o;
        o.algorithm = a;
        EXPECT_NO_THROW(check_lowered(*lower_scans(*scan_program(sum()), o)));
    }
}

TEST(CheckLowered, CatchesAScanLeftIn) {
    EXPECT_THROW(check_lowered(*scan_program(sum())), CompileError);
}

TEST(CheckLowered, CatchesAOnesPadBuiltFromZeroTimesTheInput) {
    // The padding an identity-based scan would use: concat(ones_like(x[:1]), x[:-1]).
    dsl::ProgramBuilder b("pad");
    Expr x = b.param("x", DType::F32, {8});
    Expr ones = x * 0.0 + 1.0;
    auto p = b.build({dsl::concat(0, {dsl::slice(ones, 0, 0, 1), dsl::slice(x, 0, 0, -1)})});
    try {
        check_lowered(*p);
        FAIL() << "expected a CompileError";
    } catch (const CompileError& e) {
        EXPECT_NE(std::string(e.what()).find("pad"), std::string::npos) << e.what();
    }
}

TEST(CheckLowered, ConstantLeavesOfTheUsersOwnProgramAreNotPads) {
    // As in examples/matmul2x2.scan: `one = 0 * p + 1` is a scan leaf, so the lowered program
    // concatenates slices of it; that is the user's value, not padding added by lowering.
    dsl::ProgramBuilder b("leaves");
    Expr p = b.param("p", DType::F32, {8});
    Expr one = p * 0.0 + 1.0;
    auto original = b.build(b.scan(affine(), {one, p}, 0));
    ProgramRef lowered = lower_scans(*original);
    EXPECT_NO_THROW(check_lowered(*lowered, false, original.get()));
    EXPECT_THROW(check_lowered(*lowered, false), CompileError);
}

TEST(CheckLowered, AcceptsConcatOfComputedValues) {
    dsl::ProgramBuilder b("ok");
    Expr x = b.param("x", DType::F32, {8});
    auto p = b.build({dsl::concat(0, {dsl::slice(x * 2.0, 0, 0, 1), dsl::slice(x, 0, 1, 8)})});
    EXPECT_NO_THROW(check_lowered(*p));
}

TEST(CheckLowered, AllowsAKeptPureSumOnlyWhenNativeCumsumWasAsked) {
    LowerOptions o;
    o.native_cumsum = true;
    LoweringReport report;
    ProgramRef kept = lower_scans(*scan_program(sum()), o, &report);
    EXPECT_TRUE(report.scans.at(0).native_cumsum);
    EXPECT_EQ(op_census(*kept)["Scan"], 1);
    EXPECT_NO_THROW(check_lowered(*kept, true));
    EXPECT_THROW(check_lowered(*kept, false), CompileError);
    // A combine that is not a pure sum is lowered even when native CumSum is allowed.
    ProgramRef smooth = lower_scans(*scan_program(dsl::trace_combine(
                                        "mx", 1, 0, [](auto& l, auto& r, auto&) {
                                            return Exprs{dsl::max(l[0], r[0])};
                                        })),
                                    o);
    EXPECT_EQ(op_census(*smooth).count("Scan"), 0u);
}

}  // namespace
}  // namespace scanc::lower_test
