// CPU backend paths taken only by large outputs (streaming stores, >= 16 MiB of results) and by
// long contiguous lines (one lane scanned in reassociated blocks): results against the
// reference executor, for every layout that reaches them, and run-to-run determinism.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "bytecode.h"
#include "cpu_test_util.h"

namespace scanc::cpu_test {
namespace {

using namespace scanc::dsl;

void expect_reference(const ProgramRef& p, const Inputs& in, const std::string& what,
                      std::initializer_list<int> thread_counts = {1, 2, 3}) {
    expect_bitwise(p, in, what, thread_counts);
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

// The streaming scatter of 8 lanes (round 10: rows a multiple of 4 KiB apart, or nearly, go out
// as a wavefront whose skew depends on the row stride): for row strides that take each skew
// (and none), descending and irregular rows, unaligned rows, and lengths around its 16-step
// pieces and the 256-step tile, every row holds exactly its lane and nothing else is written.
TEST(CpuStreaming, StreamingScatterWritesEachLaneToItsRowWhateverTheRowStride) {
    auto scatter = cpu::mem_fns().scatter8_f32;
    if (!scatter) GTEST_SKIP() << "no AVX2";
    constexpr std::int64_t kTs = 13;  // the tile's floats per step (a few lanes past the 8)
    std::vector<float> tile(256 * kTs);
    std::iota(tile.begin(), tile.end(), 1.0f);
    const float kGuard = -7.0f;
    // Row strides in floats: 4 KiB multiples (skew 1), 16 KiB +- a few floats (skews 1 and 2),
    // + 64 B and + 256 B (none), 2 KiB, primes; negative: rows in descending order.
    for (std::int64_t stride : {256, 257, 263, 512, 1024, 1028, 2053, 4092, 4096, 4097, 4108,
                                4112, 4160, 5120, -4096, -4160})
        for (int len : {0, 1, 15, 16, 17, 31, 127, 128, 129, 255, 256})
            for (int shift : {0, 1, 3, 7, 8, 9, 15}) {  // floats past a 64-byte line
                std::int64_t span = std::abs(stride) * 8 + 64;
                std::vector<float> mem(span, kGuard);
                float* base = mem.data() + 16 + shift + (stride < 0 ? -7 * stride : 0);
                float* rows[8];
                for (int c = 0; c < 8; ++c) rows[c] = base + c * stride;
                scatter(tile.data(), kTs, rows, len);
                std::vector<float> want(span, kGuard);
                float* wbase = want.data() + (base - mem.data());
                for (int c = 0; c < 8; ++c)
                    for (int r = 0; r < len; ++r) wbase[c * stride + r] = tile[r * kTs + c];
                ASSERT_EQ(std::memcmp(mem.data(), want.data(), span * 4), 0)
                    << "stride " << stride << " len " << len << " shift " << shift;
            }
    // Rows in no arithmetic order (the stride of the first two decides only the store order).
    std::vector<float> mem(8 * 4096 + 64, kGuard), want(mem);
    const int order[8] = {3, 0, 7, 1, 6, 2, 5, 4};
    float* rows[8];
    for (int c = 0; c < 8; ++c) rows[c] = mem.data() + order[c] * 4096;
    scatter(tile.data(), kTs, rows, 200);
    for (int c = 0; c < 8; ++c)
        for (int r = 0; r < 200; ++r) want[order[c] * 4096 + r] = tile[r * kTs + c];
    EXPECT_EQ(std::memcmp(mem.data(), want.data(), mem.size() * 4), 0);
}

// Two-leaf scans along rows whose starts are 16 KiB apart (4096 x 4-byte values: the scatter's
// wavefront) or near it (4095, 4097), with outputs above the streaming threshold: i32 exact
// against the reference (forward and reversed, with an epilogue), f32 close to it and
// bit-identical run to run, f64 rows of 16 KiB (2048 values, the transposing scatter).
TEST(CpuStreaming, TwoLeafScansAlongRowsAPowerOfTwoApartMatchTheReference) {
    std::mt19937_64 rng(25);
    for (auto sizes : {std::vector<std::int64_t>{512, 4096}, {521, 4095}, {509, 4097}}) {
        bool reverse = sizes[1] == 4095, epilogue = sizes[1] != 4097;
        Inputs in;
        in.add(DType::I32, sizes, Values::SmallInts, Layout::Contiguous, rng);
        in.add(DType::I32, sizes, Values::SmallInts, Layout::Contiguous, rng);
        ProgramRef p = scan_program(affine_combine(), DType::I32, 2, 1, reverse, epilogue);
        expect_reference(p, in, cat("i32 affine ", sizes[0], "x", sizes[1]), {1, 2});
    }
    for (DType t : {DType::F32, DType::F64}) {
        std::vector<std::int64_t> sizes{512, t == DType::F32 ? 4096 : 2048};
        Inputs in;
        in.add(t, sizes, Values::Decay, Layout::Contiguous, rng);
        in.add(t, sizes, Values::Unit, Layout::Contiguous, rng);
        ProgramRef p = scan_program(affine_combine(), t, 2, 1, false, false);
        auto expected = run_reference(p, in);
        for (int threads : {1, 3}) {
            auto first = run_cpu(p, in, threads), again = run_cpu(p, in, threads);
            for (std::size_t r = 0; r < expected.size(); ++r) {
                EXPECT_EQ(compare(expected[r], first[r], false, tolerance(t)), "") << r;
                EXPECT_EQ(compare(first[r], again[r], true, 0), "") << "threads " << threads;
            }
        }
    }
}

}  // namespace
}  // namespace scanc::cpu_test
