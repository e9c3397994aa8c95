// The split fix-up path: a generic (non one-op) scan of one or a few long lines, whose outputs
// all store leaves unchanged along a contiguous dim, keeps each lane's local scan and combines
// it with the lane's carry over contiguous positions. Results against the reference executor
// (integers: exactly) for awkward lengths around the lanes, the superblocks and the fix-up
// width, both directions, captured values, flipped inputs, an unmaterialized leaf and several
// thread counts; floats: bit-identical run to run, and `ordered` bitwise equal to the reference.
#include <gtest/gtest.h>

#include "cpu_test_util.h"

namespace scanc::cpu_test {
namespace {

using namespace scanc::dsl;

constexpr std::int64_t kLengths[] = {2048, 2049, 4097, 8191, 65537, 196613, (1 << 20) + 3};

// The reference's results against the CPU backend's for 1 to 4 threads.
void expect_reference(const ProgramRef& p, const Inputs& in, bool bitwise, const std::string& what) {
    auto expected = run_reference(p, in);
    for (int threads : {1, 2, 3, 4}) {
        auto actual = run_cpu(p, in, threads);
        ASSERT_EQ(expected.size(), actual.size());
        for (std::size_t r = 0; r < expected.size(); ++r)
            EXPECT_EQ(compare(expected[r], actual[r], bitwise, tolerance(expected[r].dtype())), "")
                << what << " threads=" << threads << " result " << r;
    }
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

TEST(CpuFixup, FloatAffineIsDeterministicCloseToTheReferenceAndBitwiseWhenOrdered) {
    std::mt19937_64 rng(45);
    for (std::int64_t n : {8191, (1 << 20) + 3}) {
        Inputs in;
        in.add(DType::F32, {n}, Values::Decay, Layout::Contiguous, rng);
        in.add(DType::F32, {n}, Values::Unit, Layout::Contiguous, rng);
        ProgramRef p = scan_program(affine_combine(), DType::F32, 1, 0);
        expect_reference(p, in, false, cat("n=", n));
        auto expected = run_reference(p, in);
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
