// CPU backend paths taken only by large outputs (streaming stores, >= 16 MiB of results) and by
// long contiguous lines (one lane scanned in reassociated blocks): results against the
// reference executor, for every layout that reaches them, and run-to-run determinism.
#include <gtest/gtest.h>

#include "cpu_test_util.h"

namespace scanc::cpu_test {
namespace {

using namespace scanc::dsl;

void expect_reference(const ProgramRef& p, const Inputs& in, const std::string& what,
                      std::initializer_list<int> thread_counts = {1, 2, 3}) {
    auto expected = run_reference(p, in);
    for (int threads : thread_counts) {
        auto actual = run_cpu(p, in, threads);
        ASSERT_EQ(expected.size(), actual.size());
        for (std::size_t r = 0; r < expected.size(); ++r)
            EXPECT_EQ(compare(expected[r], actual[r], true, 0), "")
                << what << " threads=" << threads << " result " << r;
    }
}

// 4099 x 1031 i32 = 16.9 MB per output: above the streaming threshold; primes everywhere so
// no row or tile is aligned. Each dim runs forward with one of (epilogue, none) and reversed
// with the other, on 1 and 3 threads (all 8 combinations on 1-3 threads took 35 s in the ASan
// stage of CI).
TEST(CpuStreaming, LargeIntegerScansMatchTheReferenceAlongEveryDimAndDirection) {
    std::mt19937_64 rng(21);
    for (int dim : {0, 1})
        for (bool reverse : {false, true}) {
            bool epilogue = reverse == (dim == 1);
            std::vector<std::int64_t> sizes = dim == 0 ? std::vector<std::int64_t>{4099, 1031}
                                                       : std::vector<std::int64_t>{1031, 4099};
            Inputs in;
            in.add(DType::I32, sizes, Values::SmallInts, Layout::Contiguous, rng);
            ProgramRef p = scan_program(sum_combine(), DType::I32, 2, dim, reverse, epilogue);
            expect_reference(p, in,
                             cat("sum dim=", dim, " reverse=", reverse, " epilogue=", epilogue),
                             {1, 3});
        }
}

// Two i32 outputs of 2^21 + 1 and 1031 x 2053 elements: just above the streaming threshold
// (16 MiB of outputs), every dim, inputs contiguous and transposed (1-D: strided); integer ops
// have no tee or broadcast variants, so carries go through staging rows and fills. One and
// three threads (the ASan stage of CI spent 47 s here at 2^22 + 1 and 2053 x 2053 with 1, 2
// and 3).
TEST(CpuStreaming, LargeTwoLeafScansMatchTheReferenceForEveryLayout) {
    std::mt19937_64 rng(22);
    for (auto sizes : {std::vector<std::int64_t>{(1 << 21) + 1}, {1031, 2053}})
        for (int dim = 0; dim < static_cast<int>(sizes.size()); ++dim)
            for (Layout layout : {Layout::Contiguous, Layout::Transposed}) {
                Inputs in;
                in.add(DType::I32, sizes, Values::SmallInts, layout, rng);
                in.add(DType::I32, sizes, Values::SmallInts, Layout::Contiguous, rng);
                int rank = static_cast<int>(sizes.size());
                ProgramRef p = scan_program(affine_combine(), DType::I32, rank, dim, false, false);
                expect_reference(p, in, cat("affine rank=", rank, " dim=", dim), {1, 3});
            }
}

// One long line: each thread's part runs as one lane in blocks (reduce, then rescan with the
// carry) for lengths around the block size and the superblocks.
TEST(CpuStreaming, OneLongLineScannedInBlocksMatchesTheReferenceForAwkwardLengths) {
    std::mt19937_64 rng(23);
    for (std::int64_t n : {511, 512, 513, 1023, 65537, 196613, (1 << 22) + 3}) {
        Inputs in;
        in.add(DType::I64, {n}, Values::SmallInts, Layout::Contiguous, rng);
        expect_reference(scan_program(sum_combine(), DType::I64, 1, 0, false, false), in,
                         cat("n=", n));
    }
}

TEST(CpuStreaming, LargeFloatScansAreCloseToTheReferenceAndBitIdenticalRunToRun) {
    std::mt19937_64 rng(24);
    for (auto sizes : {std::vector<std::int64_t>{(1 << 22) + 7}, {4099, 1031}, {1031, 4099}})
        for (int dim = 0; dim < static_cast<int>(sizes.size()); ++dim) {
            Inputs in;
            in.add(DType::F32, sizes, Values::Unit, Layout::Contiguous, rng);
            int rank = static_cast<int>(sizes.size());
            ProgramRef p = scan_program(sum_combine(), DType::F32, rank, dim, false, false);
            auto expected = run_reference(p, in);
            for (int threads : {1, 2}) {
                auto first = run_cpu(p, in, threads);
                EXPECT_EQ(compare(expected[0], first[0], false, tolerance(DType::F32)), "");
                auto again = run_cpu(p, in, threads);
                EXPECT_EQ(compare(first[0], again[0], true, 0), "") << "threads " << threads;
                auto ordered = run_cpu(p, in, threads, /*ordered=*/true);
                EXPECT_EQ(compare(expected[0], ordered[0], true, 0), "") << "ordered, dim " << dim;
            }
        }
}

}  // namespace
}  // namespace scanc::cpu_test
