// Round 7 of issue 4: generic stages with large outputs run kWideLanes (128) lanes per dispatch
// (chained fix-ups; strided groups too until round 11, now 64 rows), the fix-up's combine
// reads each run's carry as a broadcast value (StageCode::combine_bcast), a scan whose lanes
// are contiguous writes each step's carry row and streams its output in one op
// (StageCode::combine_tee), and scratch buffers start 64-byte aligned at varied page offsets.
//
// Multipliers of +-1 and small integer addends keep every value exact in any association, so
// the results must equal the reference executor's bitwise whatever the lanes and blocks.
#include <gtest/gtest.h>

#include <cstdint>

#include "cpu_test_util.h"
#include "plan.h"
#include "scratch.h"

namespace scanc::cpu_test {
namespace {

using namespace scanc::dsl;

// (a1 * a2, b1 + a1 * b2): affine composed the other way round. The carry is both operands of
// the multiply-add's product side and its addend (broadcast mask a | c).
CombineRef affine_reversed() {
    return trace_combine("affine_reversed", 2, 0, [](auto& l, auto& r, auto&) {
        return Exprs{l[0] * r[0], l[1] + l[0] * r[1]};
    });
}

// A plain sum whose carry is read by a negation first: no broadcast variant for that.
CombineRef sum_through_negation() {
    return trace_combine("sum_neg", 1, 0, [](auto& l, auto& r, auto&) {
        return Exprs{-(-l[0]) + r[0]};
    });
}

const cpu::StageCode& code_of(const cpu::Plan& plan) { return plan.stages.at(0).code; }

// Sets every element of the float tensor `t` to +1 or -1 at random.
void random_signs(Tensor& t, std::mt19937_64& rng) {
    std::int64_t n = t.numel();
    for (std::int64_t i = 0; i < n; ++i) {
        double v = rng() & 1 ? 1.0 : -1.0;
        if (t.dtype() == DType::F32) static_cast<float*>(t.data())[i] = static_cast<float>(v);
        else static_cast<double*>(t.data())[i] = v;
    }
}

// Two leaves (signs, small integers) of `sizes`, scanned by `f` along `dim`.
void expect_exact_two_leaf_scan(const CombineRef& f, DType t, std::vector<std::int64_t> sizes,
                                int dim, bool reverse, bool epilogue, std::mt19937_64& rng,
                                std::initializer_list<int> thread_counts = {1, 2, 3, 4}) {
    Inputs in;
    in.add(t, sizes, Values::SmallInts, Layout::Contiguous, rng);
    in.add(t, sizes, Values::SmallInts, Layout::Contiguous, rng);
    random_signs(in.storage[0], rng);
    ProgramRef p = scan_program(f, t, static_cast<int>(sizes.size()), dim, reverse, epilogue);
    expect_bitwise(p, in,
                   cat(f->name, " ", t, " ", sizes.front(), "x", sizes.back(), " dim=", dim,
                       " reverse=", reverse, " epilogue=", epilogue),
                   thread_counts);
}

TEST(CpuWideLanes, FixUpCombinesReadTheCarryAsABroadcastValueWhenEveryOpReadingItCan) {
    for (DType t : {DType::F32, DType::F64}) {
        cpu::Plan affine = cpu::make_plan(*scan_program(affine_combine(), t, 1, 0));
        EXPECT_FALSE(code_of(affine).combine_bcast.empty()) << t;
        EXPECT_FALSE(code_of(affine).combine_stream_bcast.empty()) << t;
        cpu::Plan reversed = cpu::make_plan(*scan_program(affine_reversed(), t, 1, 0));
        EXPECT_FALSE(code_of(reversed).combine_bcast.empty()) << t;
    }
    // Integer ops and a negation of the carry have no broadcast variant: the carry is filled.
    cpu::Plan ints = cpu::make_plan(*scan_program(affine_combine(), DType::I32, 1, 0));
    EXPECT_TRUE(code_of(ints).combine_bcast.empty());
    cpu::Plan neg = cpu::make_plan(*scan_program(sum_through_negation(), DType::F32, 1, 0));
    EXPECT_TRUE(code_of(neg).combine_bcast.empty());
    EXPECT_TRUE(code_of(neg).combine_stream_bcast.empty());
}

TEST(CpuWideLanes, FloatCombinesWriteTheCarryRowAndTheOutputInOneOpAndIntegerOnesDoNot) {
    auto has_tee = [](const CombineRef& f, DType t) {
        return !code_of(cpu::make_plan(*scan_program(f, t, 2, 0))).combine_tee.empty();
    };
    for (DType t : {DType::F32, DType::F64}) {
        EXPECT_TRUE(has_tee(sum_combine(), t)) << t;
        EXPECT_TRUE(has_tee(affine_combine(), t)) << t;
    }
    EXPECT_FALSE(has_tee(affine_combine(), DType::I32));  // staging row and streaming copy
}

// Lines too short for streaming run the broadcast combine without streaming stores; the longer
// ones (>= 16 MiB of outputs: 2^21 f32 steps and more with two outputs) are chained fix-ups of
// 128 lanes with more than one block per thread (about 96K steps per block). The large sizes
// run once per combine order and direction at 2^21 + 3 (the smallest streaming size class, 22
// blocks), and once each at 2^22 - 1 and in f64: every path and size class, not every product
// of them (the ASan stage of CI spent 47 s here).
TEST(CpuWideLanes, OneDimensionalLinesAreExactForAwkwardLengthsBothCombineOrdersAndDirections) {
    std::mt19937_64 rng(81);
    for (std::int64_t n : {0, 1, 2, 97, 65535, 65537})
        for (bool reverse : {false, true})
            for (const CombineRef& f : {affine_combine(), affine_reversed()})
                expect_exact_two_leaf_scan(f, DType::F32, {n}, 0, reverse, false, rng);
    for (bool reverse : {false, true})
        for (const CombineRef& f : {affine_combine(), affine_reversed()})
            expect_exact_two_leaf_scan(f, DType::F32, {(1 << 21) + 3}, 0, reverse, false, rng,
                                       {1, 3});
    expect_exact_two_leaf_scan(affine_combine(), DType::F32, {(1 << 22) - 1}, 0, true, false, rng,
                               {2});
    expect_exact_two_leaf_scan(affine_reversed(), DType::F64, {(1 << 20) + 1}, 0, true, false, rng,
                               {2});
}

// Along dim 1 the lanes are strided rows in groups of 64 (128 before round 11); along dim 0
// they are contiguous and the combine's tee writes carry and output, next to an epilogue's
// output that still goes through a staging row. Each case is just above the streaming
// threshold (16 MiB of outputs): 2053 x 2053 f32 with an epilogue (one output), 1031 x 2053
// without (two). Each dim runs forward with one of (epilogue, no epilogue) and reversed with
// the other, so every dim meets both directions and both kinds of output (the ASan stage of CI
// spent 77 s on all 8 combinations at 2053 x 2053 with 3 thread counts).
TEST(CpuWideLanes, LargeTwoDimensionalScansAreExactAlongEitherDimWithAndWithoutAnEpilogue) {
    std::mt19937_64 rng(82);
    for (int dim : {0, 1})
        for (bool reverse : {false, true}) {
            bool epilogue = reverse == (dim == 1);
            std::vector<std::int64_t> sizes{epilogue ? 2053 : 1031, 2053};
            if (dim == 1) std::swap(sizes[0], sizes[1]);
            expect_exact_two_leaf_scan(affine_combine(), DType::F32, sizes, dim, reverse, epilogue,
                                       rng, {1, 3});
        }
    expect_exact_two_leaf_scan(affine_reversed(), DType::F64, {1031, 1031}, 0, false, false, rng,
                               {2});
}

// Captured values in a broadcast fix-up: two long lines, affine on one and a sum on the other
// (captured_affine_or_sum, in f32 here; its `where` has no tee variant, so no tee either).
TEST(CpuWideLanes, CapturedValuesReachTheBroadcastFixUp) {
    auto f = trace_combine("affine_or_sum", 2, 1, [](auto& l, auto& r, auto& c) {
        return Exprs{l[0] * r[0], where(c[0] > 0, r[0] * l[1] + r[1], l[1] + r[1])};
    });
    std::mt19937_64 rng(83);
    for (std::int64_t n : {4099, (1 << 21) + 5}) {
        ProgramBuilder pb("p");
        Shape shape{pb.symbol("L"), pb.symbol("N")};
        Expr a = pb.param("a", DType::F32, shape), b = pb.param("b", DType::F32, shape);
        Expr c = pb.param("c", DType::F32, {shape[0], Size(1)});
        ProgramRef p = pb.build({pb.scan(f, {a, b}, 1, false, {c})[1]});
        Inputs in;
        in.add(DType::F32, {2, n}, Values::SmallInts, Layout::Contiguous, rng);
        in.add(DType::F32, {2, n}, Values::SmallInts, Layout::Contiguous, rng);
        in.add(DType::F32, {2, 1}, Values::SmallInts, Layout::Contiguous, rng);
        random_signs(in.storage[0], rng);
        auto* cap = static_cast<float*>(in.views.back().data);
        cap[0] = 1.0f;
        cap[1] = -1.0f;
        expect_bitwise(p, in, cat("captured n=", n), {1, 2, 3});
    }
}

TEST(CpuWideLanes, ScratchBuffersAreLineAlignedAtDifferentPageOffsetsAndKeepTheirContents) {
    // Large buffers (their own mapped pages) and small ones (from the heap, at any offset).
    cpu::Scratch a(300000), b(300000), small_a(1000), small_b(1000);
    auto at = [](const cpu::Scratch& s) { return reinterpret_cast<std::uintptr_t>(s.data()); };
    for (const cpu::Scratch* s : {&a, &b, &small_a, &small_b}) EXPECT_EQ(at(*s) % 64, 0u);
    EXPECT_NE(at(a) % 4096, at(b) % 4096);
    EXPECT_NE(at(small_a) % 4096, at(small_b) % 4096);
    EXPECT_NE(at(b) % 4096, at(small_a) % 4096);
    for (int i = 0; i < 1000; ++i) a.data()[i] = static_cast<std::byte>(i * 7);
    a.resize(900000);
    EXPECT_EQ(at(a) % 64, 0u);
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(a.data()[i], static_cast<std::byte>(i * 7)) << i;
}

}  // namespace
}  // namespace scanc::cpu_test
