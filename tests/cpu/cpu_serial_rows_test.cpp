// One-op scans along a strided dim with many lanes contiguous in memory (dim 0 of a matrix, a
// middle dim): SerialFn reads kRowsAtOnce rows per pass, each lane scanned in order from its
// carry, so every dtype and op gives the reference's bits, floats included, for any thread count
// and step count (whole passes, a shorter last one, a single step).
#include <gtest/gtest.h>

#include <cmath>

#include "cpu_test_util.h"

namespace scanc::cpu_test {
namespace {

using namespace scanc::dsl;

enum class OneOp { Sum, Prod, Min, Max, Xor };

// One leaf of `dtype` combined by `op`, the earlier element on the left unless `x_left`.
ProgramRef one_op_scan(OneOp op, DType dtype, int rank, int dim, bool reverse, bool x_left = false) {
    auto f = trace_combine("one_op", 1, 0, [&](auto& l, auto& r, auto&) {
        Expr a = x_left ? r[0] : l[0], b = x_left ? l[0] : r[0];
        switch (op) {
            case OneOp::Sum: return Exprs{a + b};
            case OneOp::Prod: return Exprs{a * b};
            case OneOp::Min: return Exprs{min(a, b)};
            case OneOp::Max: return Exprs{max(a, b)};
            case OneOp::Xor: return Exprs{a ^ b};
        }
        return Exprs{};
    });
    ProgramBuilder pb("p");
    Shape shape;
    for (int k = 0; k < rank; ++k) shape.push_back(pb.symbol(cat("S", k)));
    return pb.build(pb.scan(f, {pb.param("x", dtype, shape)}, dim, reverse));
}

constexpr std::int64_t kSteps[] = {1, 2, 3, 4, 5, 7, 8, 9, 257};
constexpr std::int64_t kLanes[] = {64, 65, 127, 129, 1000, 2048, 2049, 4099};

TEST(CpuSerialRows, FloatSumsAlongDimZeroGiveTheReferencesBitsForAnyStepAndLaneCount) {
    std::mt19937_64 rng(71);
    for (std::int64_t steps : kSteps)
        for (std::int64_t lanes : kLanes)
            for (bool reverse : {false, true}) {
                Inputs in;
                in.add(DType::F32, {steps, lanes}, Values::Unit, Layout::Contiguous, rng);
                expect_bitwise(one_op_scan(OneOp::Sum, DType::F32, 2, 0, reverse), in,
                               cat(steps, "x", lanes, " reverse=", reverse), {1, 2, 3});
            }
}

TEST(CpuSerialRows, EveryOpAndDtypeAlongDimZeroGivesTheReferencesBitsEitherOperandOrder) {
    std::mt19937_64 rng(72);
    const OneOp ops[] = {OneOp::Sum, OneOp::Prod, OneOp::Min, OneOp::Max, OneOp::Xor};
    for (OneOp op : ops)
        for (DType t : {DType::F32, DType::F64, DType::I32, DType::I64, DType::U8})
            for (bool x_left : {false, true}) {
                if (op == OneOp::Xor && (t == DType::F32 || t == DType::F64)) continue;  // ints only
                Inputs in;
                // Decay keeps long float products finite and away from zero.
                Values v = op == OneOp::Prod && (t == DType::F32 || t == DType::F64) ? Values::Decay : Values::SmallInts;
                in.add(t, {37, 1000}, v, Layout::Contiguous, rng);
                expect_bitwise(one_op_scan(op, t, 2, 0, false, x_left), in,
                               cat("op ", static_cast<int>(op), " ", dtype_name(t), " x_left=", x_left),
                               {1, 2});
            }
}

// Signed zeros show any reordering of ties; infinities and NaN, the first NaN kept.
TEST(CpuSerialRows, FloatMinAndMaxAlongDimZeroKeepTheReferencesTiesInfinitiesAndNaNs) {
    std::mt19937_64 rng(73);
    const float palette[] = {0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN};
    for (OneOp op : {OneOp::Min, OneOp::Max}) {
        Inputs in;
        in.add(DType::F32, {129, 515}, Values::SmallInts, Layout::Contiguous, rng);
        auto* p = static_cast<float*>(in.storage.back().data());
        for (std::int64_t i = 0; i < in.storage.back().numel(); ++i) p[i] = palette[rng() % 7];
        expect_bitwise(one_op_scan(op, DType::F32, 2, 0, false), in, cat("op ", static_cast<int>(op)), {1, 2});
    }
}

// A middle dim: each outer index is a run of contiguous lanes; a transposed or strided view's
// lanes are not contiguous and take the other paths, with the same results.
TEST(CpuSerialRows, MiddleDimsAndNonContiguousViewsGiveTheReferencesBits) {
    std::mt19937_64 rng(74);
    for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Strided, Layout::Flipped})
        for (bool reverse : {false, true}) {
            Inputs in;
            in.add(DType::F32, {3, 67, 300}, Values::Unit, layout, rng);
            expect_bitwise(one_op_scan(OneOp::Sum, DType::F32, 3, 1, reverse), in,
                           cat("layout ", static_cast<int>(layout), " reverse=", reverse), {1, 3});
        }
}

// Outputs of 16 MiB and more go out with streaming stores: rows of 4096 lanes start on whole
// lines, rows of 4099 lanes do not.
TEST(CpuSerialRows, LargeOutputsStreamedFromAlignedAndUnalignedRowsGiveTheReferencesBits) {
    std::mt19937_64 rng(75);
    for (std::int64_t lanes : {4096, 4099}) {
        Inputs in;
        in.add(DType::F32, {1031, lanes}, Values::Unit, Layout::Contiguous, rng);
        expect_bitwise(one_op_scan(OneOp::Sum, DType::F32, 2, 0, false), in, cat("lanes ", lanes), {1, 2, 3});
    }
}

// Few groups of long lines split their steps among the threads, and the later parts start from
// carries: small integers keep float sums exact in any association.
TEST(CpuSerialRows, LongLinesSplitAmongThreadsStartTheirLaterPartsFromTheCarries) {
    std::mt19937_64 rng(76);
    for (bool reverse : {false, true}) {
        Inputs in;
        in.add(DType::F32, {65537, 64}, Values::SmallInts, Layout::Contiguous, rng);
        expect_bitwise(one_op_scan(OneOp::Sum, DType::F32, 2, 0, reverse), in,
                       cat("reverse=", reverse), {1, 2, 3});
    }
}

// Narrow matrices along dim 0: few lines side by side in memory, their steps split among the
// threads (each thread reading whole rows), rows of 2 to 100 lanes staged back to back.
// Small integers and min / max are exact in any association.
TEST(CpuSerialRows, NarrowMatricesAlongDimZeroSplitTheirStepsAmongThreadsAndMatchTheReference) {
    std::mt19937_64 rng(77);
    for (auto [steps, lanes] : {std::pair<std::int64_t, std::int64_t>{65537, 16}, {100003, 3}, {70001, 2},
                                {4099, 100}, {262147, 31}})
        for (OneOp op : {OneOp::Sum, OneOp::Max})
            for (bool reverse : {false, true}) {
                Inputs in;
                in.add(DType::F32, {steps, lanes}, Values::SmallInts, Layout::Contiguous, rng);
                expect_bitwise(one_op_scan(op, DType::F32, 2, 0, reverse), in,
                               cat(steps, "x", lanes, " op ", static_cast<int>(op), " reverse=", reverse),
                               {1, 2, 3});
            }
}

}  // namespace
}  // namespace scanc::cpu_test
