#include <gtest/gtest.h>

#include "scanc/dsl/expr.h"
#include "scanc/ir/combine_types.h"
#include "small_stack.h"

namespace scanc {
namespace {

using namespace dsl;

CombineRef affine() {
    return trace_combine("affine", 2, 0, [](const Exprs& l, const Exprs& r, const Exprs&) {
        return Exprs{l[0] * r[0], r[0] * l[1] + r[1]};
    });
}

TEST(Builder, BroadcastsSymbolicShapesLikeNumPy) {
    ProgramBuilder p("mamba");
    Size b = p.symbol("B"), l = p.symbol("L"), d = p.symbol("D");
    Expr dt = p.param("dt", DType::F32, {b, l, d});
    Expr a = p.param("A", DType::F32, {d});
    Expr prod = exp(dt * a) * 2;
    EXPECT_EQ(prod.type().str(), "f32[B, L, D]");
    auto outs = p.scan(affine(), {prod, dt}, 1);
    EXPECT_EQ(outs[1].type().str(), "f32[B, L, D]");
    ProgramRef prog = p.build({outs[1]});
    EXPECT_EQ(prog->symbols.size(), 3u);
}

// A program of the longest chain (kMaxNodeDepth operations, each on the last's result) is freed
// one node after another: nested destructors took a frame a node (a 256 KiB stack overflowed).
TEST(Builder, TheLongestChainIsBuiltAndFreedOnASmallStack) {
    int depth = 0;
    on_a_stack_of(256 << 10, [&] {
        ProgramBuilder p("chain");
        Expr y = p.param("x", DType::F32, {p.symbol("N")});
        for (int i = 1; i < kMaxNodeDepth; ++i) y = y * 2;
        ProgramRef program = p.build({y});
        depth = program->results[0]->depth;
    });
    EXPECT_EQ(depth, kMaxNodeDepth);
}

TEST(Builder, ShapeMismatchNamesBothSizes) {
    ProgramBuilder p("bad");
    Expr x = p.param("x", DType::F32, {p.symbol("L")});
    Expr y = p.param("y", DType::F32, {p.symbol("D")});
    try {
        (void)(x + y);
        FAIL() << "no error";
    } catch (const CompileError& e) {
        EXPECT_NE(std::string(e.what()).find("size L against D"), std::string::npos) << e.what();
    }
}

TEST(Builder, FloatLiteralWithIntegerTensorIsADtypeError) {
    ProgramBuilder p("bad");
    Expr x = p.param("x", DType::I32, {4});
    EXPECT_EQ((x * 2).type().dtype, DType::I32);
    EXPECT_THROW((void)(x * 2.5), CompileError);
}

TEST(Builder, CapturedValueThatVariesAlongTheScanDimIsRejected) {
    auto scaled = trace_combine("scaled", 1, 1, [](const Exprs& l, const Exprs& r, const Exprs& c) {
        return Exprs{l[0] + c[0] * r[0]};
    });
    ProgramBuilder p("bad");
    Size n = p.symbol("N"), t = p.symbol("T");
    Expr x = p.param("x", DType::F32, {n, t});
    Expr ok = p.param("ok", DType::F32, {n, 1});
    Expr varying = p.param("varying", DType::F32, {n, t});
    EXPECT_NO_THROW(p.scan(scaled, {x}, 1, false, {ok}));
    EXPECT_THROW(p.scan(scaled, {x}, 1, false, {varying}), CompileError);
}

TEST(Builder, SliceAndConcatComputeSymbolicSizes) {
    ProgramBuilder p("slices");
    Size l = p.symbol("L");
    Expr x = p.param("x", DType::F32, {l});
    Expr head = slice(x, 0, 0, 4);
    Expr tail = slice(x, 0, 4, l);
    Expr whole = concat(0, {head, tail});
    EXPECT_EQ(head.type().shape[0].str(), "min(L, 4)");
    auto sym = l.as_symbol();
    EXPECT_EQ(whole.type().shape[0].evaluate({{sym.get(), 10}}), 10);
    EXPECT_EQ(whole.type().shape[0].evaluate({{sym.get(), 2}}), 2);
}

// One length in two forms, shown equal by value: the sum keeps the shorter spelling, on either
// side of the operator, and a slice to the other spelling takes it.
TEST(Builder, ALengthShownEqualByValueKeepsItsShorterForm) {
    ProgramBuilder p("woven");
    Size t = p.symbol("T");
    Expr y = slice(p.param("x", DType::F32, {t}), 0, 1, t);
    Expr woven = interleave(0, slice(y, 0, 0, t, 2), slice(y, 0, 1, t, 2));
    ASSERT_FALSE(woven.type().shape[0].equals(y.type().shape[0]));
    EXPECT_EQ((woven + y).type().str(), "f32[T - min(T, 1)]");
    EXPECT_EQ((y + woven).type().str(), "f32[T - min(T, 1)]");
    // Sliced to its length spelled the short way, it takes that spelling.
    EXPECT_EQ(slice(woven, 0, 0, t - Size::min(t, 1)).type().str(), "f32[T - min(T, 1)]");
}

TEST(Builder, CombineResultOfTheWrongDtypeIsRejectedAtTheScan) {
    auto to_int = trace_combine("bad", 1, 0, [](const Exprs& l, const Exprs& r, const Exprs&) {
        return Exprs{cast(DType::I32, l[0] + r[0])};
    });
    ProgramBuilder p("bad");
    Expr x = p.param("x", DType::F32, {8});
    EXPECT_THROW(p.scan(to_int, {x}, 0), CompileError);
}

TEST(Builder, CombineIsGenericInDtype) {
    auto c = affine();
    std::vector<DType> f64s{DType::F64, DType::F64}, i32s{DType::I32, DType::I32};
    auto t = instantiate_combine(*c, f64s, {}, {});
    EXPECT_EQ(t[c->results[1].get()].dtype, DType::F64);
    auto u = instantiate_combine(*c, i32s, {}, {});
    EXPECT_EQ(u[c->results[0].get()].dtype, DType::I32);
}

}  // namespace
}  // namespace scanc
