// The C++ DSL's user mistakes: each is a CompileError that says what was wrong, thrown where it
// is made, never a crash or an "internal error (a bug in scanc)". The text front end cannot
// make most of them (its scopes keep a combine's values and a program's apart); the DSL can.
#include <gtest/gtest.h>

#include <string>

#include "scanc/dsl/expr.h"
#include "scanc/scanc.h"

namespace scanc {
namespace {

using namespace dsl;

CombineRef add() {
    return trace_combine("add", 1, 0, [](const Exprs& l, const Exprs& r, const Exprs&) { return Exprs{l[0] + r[0]}; });
}

// Runs `mistake`, which must throw a CompileError (not an InternalError) whose message holds `says`.
template <class F>
void expect_user_error(F mistake, const std::string& says) {
    try {
        mistake();
        ADD_FAILURE() << "no error; expected one saying: " << says;
    } catch (const InternalError& e) {
        ADD_FAILURE() << "an internal error for a user's mistake: " << e.what();
    } catch (const CompileError& e) {
        EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
}

TEST(DslErrors, ACombineOfNoLeavesOrANegativeCountOfCapturedValuesIsRefused) {
    auto none = [](const Exprs&, const Exprs&, const Exprs&) { return Exprs{}; };
    expect_user_error([&] { trace_combine("c", 0, 0, none); }, "at least one leaf");
    expect_user_error([&] { trace_combine("c", 1, -1, none); }, "got 1 and -1");
}

TEST(DslErrors, ACombineReturningTheWrongCountSaysHowManyItMustReturn) {
    expect_user_error([] {
        trace_combine("pair", 2, 0, [](const Exprs& l, const Exprs& r, const Exprs&) { return Exprs{l[0] + r[0]}; });
    }, "returns 1 value for 2 leaves; it must return one per leaf");
}

TEST(DslErrors, ACombineThatUsesAProgramValueIsToldToCaptureIt) {
    ProgramBuilder b("p");
    Expr x = b.param("x", DType::F32, {3});
    expect_user_error([&] {
        trace_combine("c", 1, 0, [&](const Exprs& l, const Exprs&, const Exprs&) { return Exprs{l[0] + x}; });
    }, "only as captured values");
    expect_user_error([&] {
        trace_combine("c", 1, 0, [&](const Exprs&, const Exprs&, const Exprs&) { return Exprs{x}; });
    }, "pass it as a captured value");
}

TEST(DslErrors, ProgramLevelOpsInsideACombineAreRefused) {
    expect_user_error([] {
        trace_combine("c", 1, 0, [](const Exprs& l, const Exprs& r, const Exprs&) { return Exprs{concat(0, {l[0], r[0]})}; });
    }, "concat takes tensors");
    expect_user_error([] {
        trace_combine("c", 1, 0, [](const Exprs& l, const Exprs&, const Exprs&) { return Exprs{slice(l[0], 0, 0, 1)}; });
    }, "slice takes tensors");
    expect_user_error([] {
        trace_combine("c", 1, 0, [](const Exprs& l, const Exprs& r, const Exprs&) { return Exprs{interleave(0, l[0], r[0])}; });
    }, "interleave takes tensors");
}

TEST(DslErrors, AScanOfACombinesValuesOrOfANullCombineIsRefused) {
    Exprs leaked;
    trace_combine("keep", 1, 0, [&](const Exprs& l, const Exprs& r, const Exprs&) {
        leaked = l;
        return Exprs{l[0] + r[0]};
    });
    ProgramBuilder b("p");
    Expr x = b.param("x", DType::F32, {b.symbol("N")});
    expect_user_error([&] { b.scan(add(), leaked, 0); }, "scan takes tensors");
    expect_user_error([&] { b.scan(nullptr, {x}, 0); }, "scan needs a combine");
}

TEST(DslErrors, AResultMustBeATensorOfTheBuildersOwnParameters) {
    ProgramBuilder b("p"), other("q");
    Expr x = b.param("x", DType::F32, {3});
    Expr y = other.param("y", DType::F32, {3});
    expect_user_error([&] { b.build({Expr(2.0)}); }, "result 0 of program `p` is not a tensor");
    expect_user_error([&] { b.build({x, x + y}); }, "uses `y`, a parameter of another ProgramBuilder");
    EXPECT_NO_THROW(b.build({x * 2.0}));
}

TEST(DslErrors, SizesAreNotNegativeAndSymbolsHaveNamesTheTextCanPrint) {
    ProgramBuilder b("p");
    expect_user_error([&] { b.param("x", DType::F32, {Size(-3)}); }, "size -3 is negative");
    expect_user_error([&] { b.symbol("N", -1); }, "bound -1 is negative");
    for (const char* bad : {"", "1N", "a b", "scan", "_"})
        expect_user_error([&] { b.symbol(bad); }, "expected a name of letters, digits and `_`");
}

TEST(DslErrors, ASymbolAskedForTwiceIsTheSameSizeAndItsBoundsMustAgree) {
    ProgramBuilder b("p");
    Size n = b.symbol("N", 8);
    EXPECT_TRUE(b.symbol("N").equals(n));
    EXPECT_TRUE(b.symbol("N", 8).equals(n));
    expect_user_error([&] { b.symbol("N", 9); }, "two different bounds: 9 and 8");
    // Two leaves of `N` are one shape, so they scan together.
    Expr x = b.param("x", DType::F32, {n}), y = b.param("y", DType::F32, {b.symbol("N")});
    EXPECT_NO_THROW(b.build({x + y}));
}

TEST(DslErrors, TwoSymbolsOfOneNameMadeOutsideTheBuilderAreRefusedAtBuild) {
    ProgramBuilder b("p");
    Expr x = b.param("x", DType::F32, {Size::symbol(Symbol::make("N"))});
    Expr y = b.param("y", DType::F32, {Size::symbol(Symbol::make("N"))});
    expect_user_error([&] { b.build({x * 2.0, y * 2.0}); }, "two different size symbols named `N`");
}

TEST(DslErrors, AParametersSizesAreConstantsOrSymbolsNotExpressions) {
    ProgramBuilder b("p");
    Size n = b.symbol("N"), m = b.symbol("M");
    for (const Size& size : {n * 2, n - 5, n + m, Size::min(n, m), Size::floordiv(n, 2)})
        expect_user_error([&] { b.param("x", DType::F32, {size}); }, "is an expression; a parameter's sizes");
}

TEST(DslErrors, ApplyBuildsElementwiseOpsOnlyAndEmptyExprsAreRefusedEverywhere) {
    ProgramBuilder b("p");
    Expr x = b.param("x", DType::F32, {b.symbol("N")}), empty{NodeRef{}};
    expect_user_error([&] { apply(Op::Cast, {x}); }, "a cast needs its dtype: use cast(dtype, x)");
    for (Op op : {Op::Scan, Op::Param, Op::Literal, Op::Slice, Op::Concat})
        expect_user_error([&] { apply(op, {x}); }, "is not an elementwise operation");
    expect_user_error([&] { x + empty; }, "an operand is an empty Expr");
    expect_user_error([&] { exp(empty); }, "an operand is an empty Expr");
    expect_user_error([&] { cast(DType::F64, empty); }, "cast: an operand is an empty Expr");
    expect_user_error([&] { slice(empty, 0, 0, 1); }, "slice: an operand is an empty Expr");
    expect_user_error([&] { concat(0, {x, empty}); }, "concat: an operand is an empty Expr");
    expect_user_error([&] { b.scan(add(), {empty}, 0); }, "scan: an operand is an empty Expr");
    expect_user_error([&] { b.build({x, empty}); }, "program `p`'s result 1: an operand is an empty Expr");
}

TEST(DslErrors, ACombineThatKeepsAValueOfAnotherTraceIsRefusedWhenTraced) {
    Expr kept{NodeRef{}};
    trace_combine("first", 1, 0, [&](const Exprs& l, const Exprs& r, const Exprs&) {
        kept = l[0];
        return Exprs{l[0] + r[0]};
    });
    expect_user_error([&] {
        trace_combine("second", 1, 0, [&](const Exprs& l, const Exprs& r, const Exprs&) {
            return Exprs{l[0] + r[0] + kept};
        });
    }, "combine `second` uses `x1`, a parameter of another combine");
}

TEST(DslErrors, ASliceBoundInASymbolOfAnotherBuilderIsRefusedAtBuild) {
    ProgramBuilder b("p"), other("q");
    Expr x = b.param("x", DType::F32, {b.symbol("N")});
    Size foreign = other.symbol("N");
    expect_user_error([&] { b.build({slice(x, 0, 0, foreign)}); },
                      "slices with the size `N`, which no parameter of this ProgramBuilder has");
    Size unused = b.symbol("K");  // this builder's, but no input gives it
    expect_user_error([&] { b.build({slice(x, 0, 0, unused)}); }, "slices with the size `K`");
    EXPECT_NO_THROW(b.build({slice(x, 0, 0, b.symbol("N") - 1)}));
}

TEST(DslErrors, CompilingANullProgramAndANegativeTensorAreUserErrors) {
    expect_user_error([] { compile(nullptr, "reference"); }, "null ProgramRef");
    expect_user_error([] { Tensor::empty(DType::F32, {2, -4}); }, "size -4 is negative");
}

}  // namespace
}  // namespace scanc
