// The split fix-up path: a generic (non one-op) scan of one or a few long lines, whose outputs
// all store leaves unchanged along a contiguous dim, keeps each lane's local scan and combines
// it with the lane's carry over contiguous positions. Results against the reference executor
// (integers: exactly) for awkward lengths around the lanes, the superblocks and the fix-up
// width, both directions, captured values, flipped inputs, an unmaterialized leaf and several
// thread counts; floats: bit-identical run to run, and `ordered` bitwise equal to the reference.
#include <gtest/gtest.h>

#include "cpu_test_util.h"
#include "plan.h"

namespace scanc::cpu_test {
namespace {

using namespace scanc::dsl;

constexpr std::int64_t kLengths[] = {2048, 2049, 4097, 8191, 65537, 196613, (1 << 20) + 3};

// The reference's results against the CPU backend's for 1 to 4 threads; the reference's.
std::vector<Tensor> expect_reference(const ProgramRef& p, const Inputs& in, bool bitwise,
                                     const std::string& what) {
    return expect_matches(p, in, {1, 2, 3, 4}, bitwise, what);
}

TEST(CpuFixup, LongIntegerAffineLinesMatchTheReferenceExactlyInBothDirections) {
    std::mt19937_64 rng(41);
    for (std::int64_t n : kLengths)
        for (bool reverse : {false, true})
            for (Layout layout : {Layout::Contiguous, Layout::Flipped}) {
                Inputs in;
                in.add(DType::I32, {n}, Values::SmallInts, layout, rng);
                in.add(DType::I32, {n}, Values::SmallInts, Layout::Contiguous, rng);
                ProgramRef p = scan_program(affine_combine(), DType::I32, 1, 0, reverse);
                expect_reference(p, in, true, cat("n=", n, " reverse=", reverse,
                                                  " flipped=", layout == Layout::Flipped));
            }
}

TEST(CpuFixup, FewLongRowsAlongTheLastDimMatchTheReference) {
    std::mt19937_64 rng(42);
    for (auto sizes : {std::vector<std::int64_t>{3, 65537}, {2, 3, 4099}, {31, 2053}})
        for (bool reverse : {false, true}) {
            Inputs in;
            int rank = static_cast<int>(sizes.size());
            for (int i = 0; i < 2; ++i) in.add(DType::I64, sizes, Values::SmallInts, Layout::Contiguous, rng);
            ProgramRef p = scan_program(affine_combine(), DType::I64, rank, rank - 1, reverse);
            expect_reference(p, in, true, cat("rank=", rank, " reverse=", reverse));
        }
}

// A combine reading a captured value (per line: affine where it is positive, else a plain sum
// of the second leaf; associative on every line) and a program returning only the second leaf
// (the first one's local scan is still needed by the fix-up).
TEST(CpuFixup, CapturedValuesAndAnUnreturnedLeafMatchTheReference) {
    std::mt19937_64 rng(43);
    for (std::int64_t n : {4099, 196613})
        for (bool reverse : {false, true})
            expect_reference(captured_affine_or_sum(reverse), captured_affine_or_sum_inputs(n, rng),
                             true, cat("n=", n, " reverse=", reverse));
}

// An epilogue output is not a stored leaf: the plain rescan runs instead; results are the same.
TEST(CpuFixup, ScansWithAnEpilogueStillMatchTheReference) {
    std::mt19937_64 rng(44);
    for (std::int64_t n : {4097, 65537}) {
        Inputs in;
        for (int i = 0; i < 2; ++i) in.add(DType::I32, {n}, Values::SmallInts, Layout::Contiguous, rng);
        expect_reference(scan_program(affine_combine(), DType::I32, 1, 0, false, true), in, true,
                         cat("n=", n));
    }
}

// f32 affine over [N] returning only its second leaf, h.
ProgramRef affine_h_program(bool reverse) {
    ProgramBuilder pb("h");
    Shape shape{pb.symbol("N")};
    Exprs leaves = pb.scan(affine_combine(), {pb.param("a", DType::F32, shape), pb.param("b", DType::F32, shape)},
                           0, reverse);
    return pb.build({leaves[1]});
}

// Returning only h (as Mamba does), the fix-up computes h alone: phase 1 still scans both
// leaves (h's fix-up reads the running product's local scan), phase 3 drops the product.
TEST(CpuFixup, TheFixUpOfAScanReturningOnlyHComputesHAlone) {
    const cpu::StageCode h = cpu::make_plan(*affine_h_program(false)).stages.at(0).code;
    const cpu::StageCode both = cpu::make_plan(*scan_program(affine_combine(), DType::F32, 1, 0)).stages.at(0).code;
    EXPECT_EQ(h.combine.size(), 2u);  // a1 * a2, then a2 * b1 + b2 as one MulAdd
    EXPECT_EQ(h.combine_bcast.size(), 1u);
    EXPECT_EQ(h.combine_stream_bcast.size(), 1u);
    EXPECT_EQ(both.combine_bcast.size(), 2u);
    EXPECT_EQ(both.combine_stream_bcast.size(), 2u);
}

// a = +-1 and small integer b keep every value exact in any association, so h must equal the
// reference bitwise: short lines and lines long enough for the streaming fix-up, both
// directions. Random decays are close to the reference, and bitwise when ordered.
TEST(CpuFixup, AFloatAffineScanReturningOnlyHMatchesTheReference) {
    std::mt19937_64 rng(46);
    for (std::int64_t n : {8191, 65537, (1 << 22) + 3})  // the last: 16 MiB of h, streamed
        for (bool reverse : {false, true}) {
            ProgramRef p = affine_h_program(reverse);
            std::string what = cat("n=", n, " reverse=", reverse);
            Inputs exact;
            exact.add(DType::F32, {n}, Values::SmallInts, Layout::Contiguous, rng);
            exact.add(DType::F32, {n}, Values::SmallInts, Layout::Contiguous, rng);
            auto* a = static_cast<float*>(exact.storage[0].data());
            for (std::int64_t i = 0; i < n; ++i) a[i] = rng() & 1 ? 1.0f : -1.0f;
            expect_reference(p, exact, true, what + " exact");
            Inputs decay;
            decay.add(DType::F32, {n}, Values::Decay, Layout::Contiguous, rng);
            decay.add(DType::F32, {n}, Values::Unit, Layout::Contiguous, rng);
            auto expected = expect_reference(p, decay, false, what + " decay");
            for (int threads : {2, 3})
                EXPECT_EQ(compare(expected[0], run_cpu(p, decay, threads, true)[0], true, 0), "") << what;
        }
}

TEST(CpuFixup, FloatAffineIsDeterministicCloseToTheReferenceAndBitwiseWhenOrdered) {
    std::mt19937_64 rng(45);
    for (std::int64_t n : {8191, (1 << 20) + 3}) {
        Inputs in;
        in.add(DType::F32, {n}, Values::Decay, Layout::Contiguous, rng);
        in.add(DType::F32, {n}, Values::Unit, Layout::Contiguous, rng);
        ProgramRef p = scan_program(affine_combine(), DType::F32, 1, 0);
        auto expected = expect_reference(p, in, false, cat("n=", n));
        for (int threads : {2, 3}) {
            auto once = run_cpu(p, in, threads), again = run_cpu(p, in, threads);
            auto ordered = run_cpu(p, in, threads, true);
            for (std::size_t r = 0; r < once.size(); ++r) {
                EXPECT_EQ(compare(once[r], again[r], true, 0), "") << "n=" << n << " r=" << r;
                EXPECT_EQ(compare(expected[r], ordered[r], true, 0), "") << "n=" << n << " r=" << r;
            }
        }
    }
}

}  // namespace
}  // namespace scanc::cpu_test
