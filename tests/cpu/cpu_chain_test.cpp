// Round 5 of issue 4: split lines of one-op stages run in one pass with a decoupled carry
// (run_chain.cpp: blocks of 256 KiB of input dealt round-robin to the threads, the first ones
// staggered), and f32 add/mul scan straight to memory with a vector carry (VecScan). Results
// against the reference executor: integer sums and products wrap exactly, f32 sums of small
// integers are exact in any association, so those compare bitwise; random floats compare
// within tolerance and bitwise run to run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "cpu_test_util.h"
#include "worker.h"

namespace scanc::cpu_test {
namespace {

using namespace scanc::dsl;

constexpr std::int64_t kBlock32 = 65536;  // elements of a 4-byte dtype per chain block

// One thread never chains; 3 and 5 deal block counts that rarely divide evenly.
void expect_chained(const ProgramRef& p, const Inputs& in, const std::string& what) {
    expect_bitwise(p, in, what, {2, 3, 4, 5});
}

ProgramRef one_op(DType t, const std::string& op, bool x_left, int rank, int dim,
                  bool reverse = false) {
    auto f = trace_combine(op, 1, 0, [&](auto& l, auto& r, auto&) {
        Expr a = x_left ? r[0] : l[0], b = x_left ? l[0] : r[0];
        return Exprs{op == "sum" ? a + b : op == "prod" ? a * b : max(a, b)};
    });
    ProgramBuilder pb("p");
    Shape shape;
    for (int k = 0; k < rank; ++k) shape.push_back(pb.symbol(cat("S", k)));
    return pb.build(pb.scan(f, {pb.param("x", t, shape)}, dim, reverse));
}

// Lengths around the block size, the staggered first blocks (block k < threads is
// (k + 1) / threads of a block), block counts not divisible by the thread count, primes. The
// thread count follows the work (one thread per kMinWorkPerThread elements), so the lengths
// around 2 and 3 x kMinWorkPerThread are where a second and a third thread join the chain; the
// shortest ones run on one thread (no chain).
constexpr std::int64_t kPerThread = scanc::cpu::kMinWorkPerThread;
constexpr std::int64_t kLengths[] = {2048, 32771, 2 * kPerThread - 1, 2 * kPerThread + 1,
                                     3 * kPerThread + 1, 5 * kBlock32 + 17, 1000003, (1 << 23) + 1};

TEST(CpuChain, OneLongIntegerLineMatchesTheReferenceForEveryLengthAndThreadCount) {
    std::mt19937_64 rng(61);
    for (std::int64_t n : kLengths)
        for (DType t : {DType::I32, DType::I64}) {
            Inputs in;
            in.add(t, {n}, Values::SmallInts, Layout::Contiguous, rng);
            expect_chained(one_op(t, "sum", false, 1, 0), in, cat("sum n=", n, " ", t));
        }
}

TEST(CpuChain, FloatSumsOfSmallIntegersAndProductsAlongOneLineAreExactWithEitherOperandOrder) {
    std::mt19937_64 rng(62);
    for (std::int64_t n : {std::int64_t{2049}, 4 * kBlock32 + 1, std::int64_t{1000003}})
        for (bool x_left : {false, true}) {
            Inputs in;
            in.add(DType::F32, {n}, Values::SmallInts, Layout::Contiguous, rng);
            expect_chained(one_op(DType::F32, "sum", x_left, 1, 0), in,
                           cat("sum n=", n, " x_left=", x_left));
            // Wrapping integer products and f32 max take the scalar block path.
            Inputs ints;
            ints.add(DType::I32, {n}, Values::SmallInts, Layout::Contiguous, rng);
            expect_chained(one_op(DType::I32, "prod", x_left, 1, 0), ints,
                           cat("prod n=", n, " x_left=", x_left));
            expect_chained(one_op(DType::F32, "max", x_left, 1, 0), in,
                           cat("max n=", n, " x_left=", x_left));
        }
}

// Fewer lines than kFewLines: every line is cut into blocks, and the chain restarts at each.
TEST(CpuChain, SeveralLongLinesChainInsideEachLineOnly) {
    std::mt19937_64 rng(63);
    for (auto sizes : {std::vector<std::int64_t>{3, 200003}, {5, kBlock32 + 1}, {2, 7, 4099}})
        for (DType t : {DType::I32, DType::F32}) {
            Inputs in;
            in.add(t, sizes, Values::SmallInts, Layout::Contiguous, rng);
            int rank = static_cast<int>(sizes.size());
            expect_chained(one_op(t, "sum", false, rank, rank - 1), in,
                           cat("sum ", sizes[0], "x..x", sizes.back(), " ", t));
        }
}

// A block's scan prefetches the thread's next block, on the same line or a later one; lines
// in reverse memory order put the next line's blocks below this one's. Exact either way.
TEST(CpuChain, LinesInReverseMemoryOrderChainInsideEachLineOnly) {
    std::mt19937_64 rng(66);
    for (auto sizes : {std::vector<std::int64_t>{3, 200003}, {5, kBlock32 + 1}, {4, 2 * kBlock32}})
        for (DType t : {DType::I32, DType::F32}) {
            Inputs in;
            in.add(t, sizes, Values::SmallInts, Layout::Flipped, rng);
            expect_chained(one_op(t, "sum", false, 2, 1), in,
                           cat("flipped sum ", sizes[0], "x", sizes[1], " ", t));
        }
}

// The paths the chain leaves to others (reverse, an epilogue, a transposed input, `ordered`)
// still match on lines of many blocks.
TEST(CpuChain, ReverseEpilogueAndStridedLinesFallBackAndMatch) {
    std::mt19937_64 rng(64);
    std::int64_t n = 3 * kBlock32 + 5;
    for (bool reverse : {false, true})
        for (bool epilogue : {false, true}) {
            Inputs in;
            in.add(DType::I32, {n}, Values::SmallInts, Layout::Contiguous, rng);
            expect_chained(scan_program(sum_combine(), DType::I32, 1, 0, reverse, epilogue), in,
                           cat("reverse=", reverse, " epilogue=", epilogue));
        }
    Inputs in;
    in.add(DType::I32, {3, n}, Values::SmallInts, Layout::Transposed, rng);
    expect_chained(scan_program(sum_combine(), DType::I32, 2, 1), in, "transposed");
}

// -0.0 + -0.0 is -0.0: the identity the vector scan shifts in must keep that sign, and a run
// of -0.0 must stay -0.0 through block carries, rows and unaligned row starts.
TEST(CpuChain, SumsOfNegativeZerosStayNegativeZero) {
    for (auto sizes : {std::vector<std::int64_t>{5 * kBlock32 + 3}, {37, 1029}, {3, 100003}}) {
        Tensor x = Tensor::empty(DType::F32, sizes);
        auto* p = static_cast<float*>(x.data());
        for (std::int64_t i = 0; i < x.numel(); ++i) p[i] = -0.0f;
        Inputs in;
        in.storage.push_back(x);
        in.views.push_back(x.view());
        int rank = static_cast<int>(sizes.size());
        for (int threads : {1, 2, 3}) {
            Tensor y = run_cpu(one_op(DType::F32, "sum", false, rank, rank - 1), in, threads)[0];
            const auto* q = static_cast<const std::uint32_t*>(y.data());
            std::int64_t positive = 0;
            for (std::int64_t i = 0; i < y.numel(); ++i) positive += q[i] != 0x80000000u;
            EXPECT_EQ(positive, 0) << "rank " << rank << " threads " << threads;
        }
    }
}

// A generic f32 stage along one or a few long lines: blocks scanned through the row scan
// (run_spans), or, where it cannot run, lanes scanned locally in registers, chained, then fixed
// up (run_fixed). Multipliers of +-1 and small integers are exact in any association, so both
// results (or h alone) equal the reference bit for bit:
// lengths around the staggered first blocks and the blocks, primes, 2^k + 1; several lines
// (CpuFixup's h-only test goes to 2^22 + 3).
TEST(CpuChain, GenericFloatLinesChainedAndFixedUpEqualTheReferenceBitwise) {
    std::mt19937_64 rng(67);
    for (auto sizes : {std::vector<std::int64_t>{4099}, {65537}, {196613}, {1000003}, {3, 200003}, {2, 7, 40961}})
        for (bool h_only : {false, true}) {
            Inputs in;
            in.add(DType::F32, sizes, Values::SmallInts, Layout::Contiguous, rng);
            in.add(DType::F32, sizes, Values::SmallInts, Layout::Contiguous, rng);
            auto* a = static_cast<float*>(in.storage[0].data());
            for (std::int64_t i = 0; i < in.storage[0].numel(); ++i) a[i] = rng() & 1 ? 1.0f : -1.0f;
            const int rank = static_cast<int>(sizes.size());
            ProgramRef p = scan_program(affine_combine(), DType::F32, rank, rank - 1, false, false, h_only ? 1 : -1);
            expect_chained(p, in, cat(sizes.front(), "x..x", sizes.back(), h_only ? " h" : " both"));
        }
}

// Round 31: the next block's lines are prefetched in kAheadWays interleaved parts, each line
// once; a pass over memory prefetches its own lines in order, kAheadBytes on.
TEST(CpuChain, TheNextBlockIsPrefetchedInInterleavedPartsEachLineOnceAndAPassInOrder) {
    std::vector<std::byte> block(4096 * 64);
    const std::byte* x = block.data();
    const std::byte* next = x + 1000 * 64;
    const scanc::cpu::AheadLines interleaved(x, next, 4096 * 64), pass(x, x + scanc::cpu::kAheadBytes, 4096 * 64);
    std::vector<int> seen(4096, 0);
    for (std::int64_t i = 0; i < 4096; ++i) ++seen.at((interleaved.line(i) - next) / 64);
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), 4096);
    EXPECT_EQ(interleaved.line(1) - interleaved.line(0), 4096 / scanc::cpu::kAheadWays * 64);
    for (std::int64_t i : {0, 1, 7, 8, 4095})
        EXPECT_EQ(pass.line(i), x + scanc::cpu::kAheadBytes + 64 * i);
}

// Round 31: a generic f32 line chains whole vectors through the row scan (run_spans: each
// block's total paired up, then its scan from the previous prefix), the line's last steps by
// Worker. Random affine lines (lengths under a vector, around the pairing's 16 vectors, the
// blocks, primes) match the reference within rounding and are bit-identical run to run.
TEST(CpuChain, RandomGenericFloatLinesThroughTheRowScanAreCloseAndBitIdenticalRunToRun) {
    std::mt19937_64 rng(66);
    for (std::int64_t n : {std::int64_t{15}, std::int64_t{257}, std::int64_t{4099}, kBlock32 - 1,
                           3 * kBlock32 + 255, std::int64_t{1000003}}) {
        Inputs in;
        in.add(DType::F32, {n}, Values::Decay, Layout::Contiguous, rng);
        in.add(DType::F32, {n}, Values::Unit, Layout::Contiguous, rng);
        ProgramRef p = scan_program(affine_combine(), DType::F32, 1, 0);
        auto expected = run_reference(p, in);
        for (int threads : {1, 2, 3}) {
            auto first = run_cpu(p, in, threads);
            for (std::size_t i = 0; i < first.size(); ++i)
                EXPECT_EQ(compare(expected[i], first[i], false, tolerance(DType::F32)), "")
                    << "n " << n << " threads " << threads << " result " << i;
            auto again = run_cpu(p, in, threads);
            for (std::size_t i = 0; i < first.size(); ++i)
                EXPECT_EQ(compare(first[i], again[i], true, 0), "") << "n " << n << " threads " << threads;
        }
    }
}

TEST(CpuChain, RandomFloatLinesAreCloseToTheReferenceAndBitIdenticalRunToRun) {
    std::mt19937_64 rng(65);
    for (std::int64_t n : {std::int64_t{1000003}, 9 * kBlock32 + 7}) {
        Inputs in;
        in.add(DType::F32, {n}, Values::Unit, Layout::Contiguous, rng);
        ProgramRef p = one_op(DType::F32, "sum", false, 1, 0);
        auto expected = run_reference(p, in);
        for (int threads : {2, 3, 4}) {
            auto first = run_cpu(p, in, threads);
            EXPECT_EQ(compare(expected[0], first[0], false, tolerance(DType::F32)), "");
            for (int again = 0; again < 3; ++again)
                EXPECT_EQ(compare(first[0], run_cpu(p, in, threads)[0], true, 0), "")
                    << "n " << n << " threads " << threads;
            EXPECT_EQ(compare(expected[0], run_cpu(p, in, threads, true)[0], true, 0), "")
                << "ordered, n " << n << " threads " << threads;
        }
    }
}

}  // namespace
}  // namespace scanc::cpu_test
