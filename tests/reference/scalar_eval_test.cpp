#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "scanc/dsl/expr.h"
#include "scanc/ir/scalar_eval.h"

namespace scanc {
namespace {

Scalar op2(Op op, DType t, Scalar a, Scalar b) {
    ScalarType types[2] = {{a.dtype, a.dtype != t}, {b.dtype, b.dtype != t}};
    ScalarType result{is_comparison(op) ? DType::Bool : t, false};
    Scalar args[2] = {a, b};
    return eval_op(op, args, result, types);
}

Scalar op1(Op op, Scalar a, std::optional<DType> to = std::nullopt) {
    ScalarType type{a.dtype, false};
    return eval_op(op, std::span<const Scalar>(&a, 1), {to.value_or(a.dtype), false},
                   std::span<const ScalarType>(&type, 1));
}

Scalar i(DType t, std::int64_t v) { return Scalar::of_int(t, v); }
Scalar f(DType t, double v) { return Scalar::of_double(t, v); }

TEST(ScalarEval, IntegerArithmeticWrapsLikeTwosComplement) {
    EXPECT_EQ(op2(Op::Add, DType::I8, i(DType::I8, 100), i(DType::I8, 100)).i, 200 - 256);
    EXPECT_EQ(op2(Op::Add, DType::U8, i(DType::U8, 200), i(DType::U8, 100)).i, 300 - 256);
    EXPECT_EQ(op2(Op::Sub, DType::U8, i(DType::U8, 1), i(DType::U8, 2)).i, 255);
    EXPECT_EQ(op2(Op::Mul, DType::I16, i(DType::I16, 300), i(DType::I16, 300)).i,
              static_cast<std::int16_t>(90000 - 65536));
    std::int64_t max32 = std::numeric_limits<std::int32_t>::max();
    EXPECT_EQ(op2(Op::Add, DType::I32, i(DType::I32, max32), i(DType::I32, 1)).i, -max32 - 1);
    std::int64_t max64 = std::numeric_limits<std::int64_t>::max();
    EXPECT_EQ(op2(Op::Add, DType::I64, i(DType::I64, max64), i(DType::I64, 1)).i,
              std::numeric_limits<std::int64_t>::min());
    EXPECT_EQ(op2(Op::Mul, DType::I64, i(DType::I64, max64), i(DType::I64, 3)).i, max64 - 2);
    EXPECT_EQ(op1(Op::Neg, i(DType::I8, -128)).i, -128);
    EXPECT_EQ(op1(Op::Abs, i(DType::I8, -128)).i, -128);
}

TEST(ScalarEval, DivisionTruncatesAndDefinesTheCasesCLeavesUndefined) {
    EXPECT_EQ(op2(Op::Div, DType::I32, i(DType::I32, -7), i(DType::I32, 2)).i, -3);
    EXPECT_EQ(op2(Op::Mod, DType::I32, i(DType::I32, -7), i(DType::I32, 2)).i, -1);
    EXPECT_EQ(op2(Op::Div, DType::I32, i(DType::I32, 5), i(DType::I32, 0)).i, 0);
    EXPECT_EQ(op2(Op::Mod, DType::I32, i(DType::I32, 5), i(DType::I32, 0)).i, 5);
    std::int64_t min32 = std::numeric_limits<std::int32_t>::min();
    EXPECT_EQ(op2(Op::Div, DType::I32, i(DType::I32, min32), i(DType::I32, -1)).i, min32);
    EXPECT_EQ(op2(Op::Mod, DType::I32, i(DType::I32, min32), i(DType::I32, -1)).i, 0);
    std::int64_t min64 = std::numeric_limits<std::int64_t>::min();
    EXPECT_EQ(op2(Op::Div, DType::I64, i(DType::I64, min64), i(DType::I64, -1)).i, min64);
    EXPECT_EQ(op2(Op::Div, DType::U8, i(DType::U8, 255), i(DType::U8, 2)).i, 127);
}

TEST(ScalarEval, ShiftCountsAreTakenModuloTheWidth) {
    EXPECT_EQ(op2(Op::Shl, DType::I32, i(DType::I32, 1), i(DType::I32, 33)).i, 2);
    EXPECT_EQ(op2(Op::Shl, DType::I8, i(DType::I8, 1), i(DType::I8, 7)).i, -128);
    EXPECT_EQ(op2(Op::Shr, DType::I32, i(DType::I32, -8), i(DType::I32, 1)).i, -4);
    EXPECT_EQ(op2(Op::Shr, DType::U8, i(DType::U8, 0x80), i(DType::U8, 7)).i, 1);
    EXPECT_EQ(op2(Op::Shr, DType::I64, i(DType::I64, 256), i(DType::I64, -1)).i, 0);  // -1 % 64 = 63
}

TEST(ScalarEval, FloatToIntegerCastsSaturateAndNanIsZero) {
    EXPECT_EQ(op1(Op::Cast, f(DType::F32, 3e9), DType::I32).i, std::numeric_limits<std::int32_t>::max());
    EXPECT_EQ(op1(Op::Cast, f(DType::F32, -INFINITY), DType::I32).i,
              std::numeric_limits<std::int32_t>::min());
    EXPECT_EQ(op1(Op::Cast, f(DType::F64, NAN), DType::I64).i, 0);
    EXPECT_EQ(op1(Op::Cast, f(DType::F64, 1e300), DType::I64).i,
              std::numeric_limits<std::int64_t>::max());
    EXPECT_EQ(op1(Op::Cast, f(DType::F64, -2.7), DType::I8).i, -2);
    EXPECT_EQ(op1(Op::Cast, f(DType::F64, 2.7), DType::U8).i, 2);
    EXPECT_EQ(op1(Op::Cast, f(DType::F64, -5), DType::U8).i, 0);
    EXPECT_EQ(op1(Op::Cast, f(DType::F64, 300), DType::U8).i, 255);
    EXPECT_EQ(op1(Op::Cast, i(DType::I32, 300), DType::U8).i, 300 - 256);  // ints wrap
    EXPECT_EQ(op1(Op::Cast, f(DType::F32, 0.5), DType::Bool).i, 1);
    EXPECT_EQ(op1(Op::Cast, i(DType::Bool, 1), DType::F32).f, 1.0);
}

TEST(ScalarEval, WeakLiteralsTakeTheOtherOperandsDtype) {
    Scalar big = Scalar::of_int(DType::I64, (std::int64_t{1} << 32) + 5);  // a literal
    EXPECT_EQ(op2(Op::Add, DType::I32, i(DType::I32, 1), big).i, 6);
    Scalar tenth = Scalar::of_double(DType::F64, 0.1);
    Scalar r = op2(Op::Mul, DType::F32, f(DType::F32, 3), tenth);
    EXPECT_EQ(r.dtype, DType::F32);
    EXPECT_EQ(r.f, static_cast<double>(3.0f * 0.1f));
    // Comparing with a literal happens in the tensor's dtype: 0.1 as f32 is not 0.1 as f64.
    EXPECT_EQ(op2(Op::Eq, DType::F32, f(DType::F32, 0.1), tenth).i, 1);
}

TEST(ScalarEval, MinAndMaxPropagateNan) {
    for (DType t : {DType::F32, DType::F64, DType::F16}) {
        EXPECT_TRUE(std::isnan(op2(Op::Max, t, f(t, NAN), f(t, 1)).f));
        EXPECT_TRUE(std::isnan(op2(Op::Max, t, f(t, 1), f(t, NAN)).f));
        EXPECT_TRUE(std::isnan(op2(Op::Min, t, f(t, -INFINITY), f(t, NAN)).f));
        EXPECT_EQ(op2(Op::Max, t, f(t, -INFINITY), f(t, 2)).f, 2);
    }
}

TEST(ScalarEval, LogAddExpHandlesInfinitiesAndNan) {
    DType t = DType::F64;
    EXPECT_EQ(op2(Op::LogAddExp, t, f(t, -INFINITY), f(t, -INFINITY)).f, -INFINITY);
    EXPECT_EQ(op2(Op::LogAddExp, t, f(t, INFINITY), f(t, INFINITY)).f, INFINITY);
    EXPECT_EQ(op2(Op::LogAddExp, t, f(t, INFINITY), f(t, -INFINITY)).f, INFINITY);
    EXPECT_EQ(op2(Op::LogAddExp, t, f(t, -INFINITY), f(t, 3)).f, 3);
    EXPECT_TRUE(std::isnan(op2(Op::LogAddExp, t, f(t, NAN), f(t, 3)).f));
    EXPECT_NEAR(op2(Op::LogAddExp, t, f(t, 1000), f(t, 1000)).f, 1000 + std::log(2.0), 1e-12);
    EXPECT_NEAR(op2(Op::LogAddExp, t, f(t, 0.5), f(t, -1.5)).f,
                std::log(std::exp(0.5) + std::exp(-1.5)), 1e-15);
}

TEST(ScalarEval, F16ArithmeticKeepsF32PrecisionUntilStored) {
    Scalar a = f(DType::F16, 1.0), b = f(DType::F16, std::ldexp(1.0, -12));
    Scalar sum = op2(Op::Add, DType::F16, a, b);
    EXPECT_EQ(sum.dtype, DType::F16);
    EXPECT_EQ(sum.f, 1.0 + std::ldexp(1.0, -12));  // exact in f32, not an f16 value
    std::uint16_t stored = 0;
    store_scalar(sum, &stored);
    EXPECT_EQ(f16_from_bits(stored), 1.0f);  // rounds on store
}

TEST(ScalarEval, LoadAndStoreRoundTripEveryDtype) {
    for (DType t : kAllDTypes) {
        Scalar v = is_float(t) ? Scalar::of_double(t, -2.5) : Scalar::of_int(t, t == DType::Bool ? 1 : 77);
        alignas(8) unsigned char buf[8] = {};
        store_scalar(v, buf);
        EXPECT_EQ(load_scalar(t, buf), v) << dtype_name(t);
    }
}

TEST(ScalarEval, CombineEvaluatorMatchesTheAffineRecurrence) {
    using namespace dsl;
    auto affine = trace_combine("affine", 2, 0, [](const Exprs& l, const Exprs& r, const Exprs&) {
        return Exprs{l[0] * r[0], r[0] * l[1] + r[1] + 0};
    });
    DType leaves[2] = {DType::F64, DType::F64};
    CombineTypes types = instantiate_combine(*affine, leaves, {}, {});
    CombineEvaluator eval(*affine, types);
    std::vector<Scalar> l = {f(DType::F64, 2), f(DType::F64, 3)};
    std::vector<Scalar> r = {f(DType::F64, 5), f(DType::F64, 7)};
    std::vector<Scalar> out(2);
    eval.eval(l, r, {}, out);
    EXPECT_EQ(out[0].f, 2.0 * 5.0);
    EXPECT_EQ(out[1].f, 5.0 * 3.0 + 7.0);
    EXPECT_EQ(eval_combine(*affine, types, l, r, {}), out);
}

TEST(ScalarEval, AWeakCombineResultIsConvertedToTheLeafDtype) {
    using namespace dsl;
    auto first = trace_combine("zero", 1, 0, [](const Exprs&, const Exprs&, const Exprs&) {
        return Exprs{Expr(3)};
    });
    DType leaves[1] = {DType::F32};
    CombineTypes types = instantiate_combine(*first, leaves, {}, {});
    auto out = eval_combine(*first, types, std::vector<Scalar>{f(DType::F32, 1)},
                            std::vector<Scalar>{f(DType::F32, 2)}, {});
    EXPECT_EQ(out[0].dtype, DType::F32);
    EXPECT_EQ(out[0].f, 3.0);
}

}  // namespace
}  // namespace scanc
