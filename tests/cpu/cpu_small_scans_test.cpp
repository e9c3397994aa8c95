// Small and mid-size scans (issue 4, "every shape"): few lines of a generic stage are split into
// lanes from 64 steps on (not scanned as one lane each), a line that fits in one block gets
// about sqrt(n / 4) lanes (a multiple of 8) plus one for the remainder, few one-op rows are
// scanned a row per lane from 64 steps on (not through the interpreter), a generic line that fits
// in one block is shared among the threads from 8192 elements on, and an executable keeps
// its layouts, workers and bindings from one run to the next (stage_cache.h). Results against
// the reference executor: integer affine scans wrap exactly, so they compare bitwise; floats
// within tolerance, bit-identical run to run, and bitwise equal to the reference when ordered.
#include <gtest/gtest.h>

#include <thread>

#include "cpu_test_util.h"

namespace scanc::cpu_test {
namespace {

using namespace scanc::dsl;

// Around every threshold: one lane (< 64 steps), the split from 64 steps, lane counts that step
// to the next multiple of 8 (4 * 8^2 = 256, 4 * 16^2 = 1024, 4 * 24^2 = 2304), a remainder
// lane or none, 2^k +- 1, primes, and the one-block limit of a 1-D f32 or i32 affine scan
// (48128 steps: 768 KiB of traffic at 16 bytes per step, in odd multiples of 1024).
constexpr std::int64_t kLengths[] = {0,    1,    2,    3,    31,   63,   64,   65,    127,
                                     128,  129,  255,  256,  257,  1021, 1023, 1024,  1025,
                                     2047, 2048, 2049, 2303, 2304, 4093, 4096, 16383, 48127,
                                     48128, 48129};

// The reference's results against the CPU backend's, bitwise, for 1 to 3 threads; each
// executable runs twice (the second run reuses the first run's workers).
void expect_exact(const ProgramRef& p, const Inputs& in, const std::string& what) {
    auto expected = run_reference(p, in);
    for (int threads : {1, 2, 3}) {
        RunOptions o;
        o.num_threads = threads;
        auto exe = CpuBackend().compile(p);
        for (int run = 0; run < 2; ++run) {
            auto actual = exe->run(in.views, o);
            ASSERT_EQ(expected.size(), actual.size());
            for (std::size_t r = 0; r < expected.size(); ++r)
                EXPECT_EQ(compare(expected[r], actual[r], true, 0), "")
                    << what << " threads=" << threads << " run=" << run << " result " << r;
        }
    }
}

TEST(CpuSmallScans, OneIntegerAffineLineMatchesTheReferenceAtEveryLengthInBothDirections) {
    std::mt19937_64 rng(71);
    for (std::int64_t n : kLengths)
        for (bool reverse : {false, true}) {
            Inputs in;
            in.add(DType::I32, {n}, Values::SmallInts, Layout::Contiguous, rng);
            in.add(DType::I32, {n}, Values::SmallInts, Layout::Strided, rng);
            expect_exact(scan_program(affine_combine(), DType::I32, 1, 0, reverse), in,
                         cat("n=", n, " reverse=", reverse));
        }
}

// Few short rows along the last dim, and along dim 0 (lanes read in place, never split).
TEST(CpuSmallScans, FewShortRowsMatchTheReferenceAlongEitherDim) {
    std::mt19937_64 rng(72);
    for (auto sizes : {std::vector<std::int64_t>{2, 65}, {3, 1023}, {31, 257}, {5, 2049},
                       {32, 32}, {64, 64}, {7, 1, 129}})
        for (int dim : {0, static_cast<int>(sizes.size()) - 1})
            for (bool reverse : {false, true}) {
                Inputs in;
                int rank = static_cast<int>(sizes.size());
                for (int i = 0; i < 2; ++i)
                    in.add(DType::I64, sizes, Values::SmallInts,
                           i ? Layout::Transposed : Layout::Contiguous, rng);
                expect_exact(scan_program(affine_combine(), DType::I64, rank, dim, reverse), in,
                             cat("sizes ", sizes[0], "x..x", sizes.back(), " dim=", dim,
                                 " reverse=", reverse));
            }
}

// One-op rows, fewer than kFewLines of them, from 64 steps on: a row per lane in reassociated
// blocks (sums of small integers are exact in any association, f32 included).
TEST(CpuSmallScans, FewShortOneOpRowsMatchTheReferenceExactly) {
    std::mt19937_64 rng(78);
    for (std::int64_t rows : {2, 5, 31, 32})
        for (std::int64_t n : {63, 64, 65, 300, 2047})
            for (DType t : {DType::I32, DType::F32})
                for (bool reverse : {false, true})
                    for (Layout layout : {Layout::Contiguous, Layout::Strided}) {
                        Inputs in;
                        in.add(t, {rows, n}, Values::SmallInts, layout, rng);
                        expect_exact(scan_program(sum_combine(), t, 2, 1, reverse), in,
                                     cat(rows, "x", n, " ", t, " reverse=", reverse,
                                         " strided=", layout == Layout::Strided));
                    }
}

// An epilogue output is not a stored leaf: short lines then take the superblock split (reduce,
// chain, rescan) instead of the fix-up.
TEST(CpuSmallScans, ShortLinesWithAnEpilogueMatchTheReference) {
    std::mt19937_64 rng(73);
    for (std::int64_t n : {63, 64, 65, 257, 1024, 2049, 48129}) {
        Inputs in;
        for (int i = 0; i < 2; ++i)
            in.add(DType::I32, {3, n}, Values::SmallInts, Layout::Contiguous, rng);
        expect_exact(scan_program(affine_combine(), DType::I32, 2, 1, n % 2 == 0, true), in,
                     cat("n=", n));
    }
}

// A captured value per line (affine where it is positive, else a sum of the second leaf).
TEST(CpuSmallScans, ShortLinesReadTheirOwnCapturedValues) {
    std::mt19937_64 rng(74);
    for (std::int64_t n : {64, 129, 1025, 4093})
        for (bool reverse : {false, true})
            expect_exact(captured_affine_or_sum(reverse), captured_affine_or_sum_inputs(n, rng),
                         cat("n=", n, " reverse=", reverse));
}

TEST(CpuSmallScans, FloatAffineIsCloseToTheReferenceBitIdenticalRunToRunAndBitwiseWhenOrdered) {
    std::mt19937_64 rng(75);
    ProgramRef p = scan_program(affine_combine(), DType::F32, 1, 0);
    for (std::int64_t n : {65, 1024, 2049, 16383, 48129}) {
        Inputs in;
        in.add(DType::F32, {n}, Values::Decay, Layout::Contiguous, rng);
        in.add(DType::F32, {n}, Values::Unit, Layout::Contiguous, rng);
        auto expected = run_reference(p, in);
        for (int threads : {1, 2, 3}) {
            auto once = run_cpu(p, in, threads), again = run_cpu(p, in, threads);
            auto ordered = run_cpu(p, in, threads, true);
            for (std::size_t r = 0; r < once.size(); ++r) {
                EXPECT_EQ(compare(expected[r], once[r], false, tolerance(DType::F32)), "")
                    << "n=" << n << " threads=" << threads << " r=" << r;
                EXPECT_EQ(compare(once[r], again[r], true, 0), "") << "n=" << n << " r=" << r;
                EXPECT_EQ(compare(expected[r], ordered[r], true, 0), "") << "n=" << n << " r=" << r;
            }
        }
    }
}

// One executable run on changing shapes, layouts, thread counts and `ordered`, in an order that
// returns to earlier geometries: each run must match a fresh executable's results bitwise (the
// kept workers and bindings never leak from one geometry into another).
TEST(CpuSmallScans, OneExecutableRunOnChangingInputsMatchesFreshExecutables) {
    std::mt19937_64 rng(76);
    ProgramRef p = scan_program(affine_combine(), DType::F32, 2, 1);
    auto exe = CpuBackend().compile(p);
    struct Case {
        std::vector<std::int64_t> sizes;
        Layout layout;
        int threads;
        bool ordered;
    };
    const Case cases[] = {{{3, 1024}, Layout::Contiguous, 1, false},
                          {{3, 1024}, Layout::Contiguous, 1, true},
                          {{3, 1024}, Layout::Transposed, 1, false},
                          {{1, 70001}, Layout::Contiguous, 2, false},
                          {{3, 1024}, Layout::Contiguous, 1, false},
                          {{40, 33}, Layout::Contiguous, 3, false},
                          {{1, 70001}, Layout::Contiguous, 3, false},
                          {{0, 5}, Layout::Contiguous, 1, false},
                          {{3, 1024}, Layout::Contiguous, 1, false}};
    for (const Case& c : cases) {
        // Two runs on other memory of the same geometry, the first one's results still held.
        Inputs in[2];
        std::vector<Tensor> kept[2];
        RunOptions o;
        o.num_threads = c.threads;
        o.ordered = c.ordered;
        for (int k = 0; k < 2; ++k) {
            in[k].add(DType::F32, c.sizes, Values::Decay, c.layout, rng);
            in[k].add(DType::F32, c.sizes, Values::Unit, c.layout, rng);
            kept[k] = exe->run(in[k].views, o);
        }
        for (int k = 0; k < 2; ++k) {
            auto fresh = CpuBackend().compile(p)->run(in[k].views, o);
            for (std::size_t r = 0; r < fresh.size(); ++r)
                EXPECT_EQ(compare(fresh[r], kept[k][r], true, 0), "")
                    << c.sizes[0] << "x" << c.sizes[1] << " threads=" << c.threads
                    << " ordered=" << c.ordered << " run=" << k << " r=" << r;
        }
    }
}

// Two threads running one executable at once: one of them finds the cache taken and builds its
// own state; both results are right.
TEST(CpuSmallScans, ConcurrentRunsOfOneExecutableAreIndependent) {
    std::mt19937_64 rng(77);
    ProgramRef p = scan_program(affine_combine(), DType::I32, 1, 0);
    auto exe = CpuBackend().compile(p);
    Inputs small, large;
    for (int i = 0; i < 2; ++i) {
        small.add(DType::I32, {1021}, Values::SmallInts, Layout::Contiguous, rng);
        large.add(DType::I32, {70001}, Values::SmallInts, Layout::Contiguous, rng);
    }
    auto want_small = run_reference(p, small), want_large = run_reference(p, large);
    std::vector<std::string> errors(2);
    auto work = [&](int k) {
        const Inputs& in = k ? large : small;
        const auto& want = k ? want_large : want_small;
        RunOptions o;
        o.num_threads = 1;
        for (int run = 0; run < 20 && errors[k].empty(); ++run) {
            auto got = exe->run(in.views, o);
            for (std::size_t r = 0; r < got.size() && errors[k].empty(); ++r)
                errors[k] = compare(want[r], got[r], true, 0);
        }
    };
    std::thread other(work, 1);
    work(0);
    other.join();
    EXPECT_EQ(errors[0], "");
    EXPECT_EQ(errors[1], "");
}

}  // namespace
}  // namespace scanc::cpu_test
