// Paths added in round 4 of issue 4: f32 add/mul one-op scans (min/max since the nineteenth
// session) scanned 8 elements at a time in SIMD registers (with prefetching ahead and, for split
// lines, of the next superblock), the
// streaming scatter of strided tiles straight from registers, and split 1-D fix-ups whose
// superblocks are whole numbers of lanes. Float sums of small integers and products of signs
// are exact in any association, so those compare bitwise with the reference executor.
#include <gtest/gtest.h>

#include <cmath>

#include "cpu_test_util.h"

namespace scanc::cpu_test {
namespace {

using namespace scanc::dsl;

// One leaf, combine `op` with the earlier element on the left, or on the right (`x_left`:
// the new element is the left operand).
ProgramRef one_op_program(bool mul, bool x_left, int rank, int dim, bool reverse = false) {
    auto f = trace_combine(mul ? "prod" : "sum", 1, 0, [&](auto& l, auto& r, auto&) {
        Expr a = x_left ? r[0] : l[0], b = x_left ? l[0] : r[0];
        return Exprs{mul ? a * b : a + b};
    });
    ProgramBuilder pb("p");
    Shape shape;
    for (int k = 0; k < rank; ++k) shape.push_back(pb.symbol(cat("S", k)));
    return pb.build(pb.scan(f, {pb.param("x", DType::F32, shape)}, dim, reverse));
}

// Every element of the last input replaced by +1 or -1.
void make_signs(Inputs& in, std::mt19937_64& rng) {
    Tensor& t = in.storage.back();
    auto* p = static_cast<float*>(t.data());
    for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = rng() & 1 ? 1.0f : -1.0f;
}

constexpr std::int64_t kLengths[] = {1, 2, 7, 8, 9, 511, 512, 513, 4095, 4097, 8191, 65537,
                                     196613, (1 << 20) + 3};

TEST(CpuVectorPaths, FloatSumsOfSmallIntegersAndProductsOfSignsAlongOneLineAreExact) {
    std::mt19937_64 rng(51);
    for (bool mul : {false, true})
        for (std::int64_t n : kLengths)
            for (bool x_left : {false, true}) {
                Inputs in;
                in.add(DType::F32, {n}, Values::SmallInts, Layout::Contiguous, rng);
                if (mul) make_signs(in, rng);
                expect_bitwise(one_op_program(mul, x_left, 1, 0), in,
                               cat("mul=", mul, " n=", n, " x_left=", x_left));
            }
}

// One leaf, min or max, the earlier element on the left or (x_left) on the right.
ProgramRef min_max_program(bool use_max, bool x_left, int rank, int dim, bool reverse = false) {
    auto f = trace_combine(use_max ? "max" : "min", 1, 0, [&](auto& l, auto& r, auto&) {
        Expr a = x_left ? r[0] : l[0], b = x_left ? l[0] : r[0];
        return Exprs{use_max ? max(a, b) : min(a, b)};
    });
    ProgramBuilder pb("p");
    Shape shape;
    for (int k = 0; k < rank; ++k) shape.push_back(pb.symbol(cat("S", k)));
    return pb.build(pb.scan(f, {pb.param("x", DType::F32, shape)}, dim, reverse));
}

// The last input drawn from `palette`, with one in 500 an infinity or a NaN when `rare`.
void fill_from(Inputs& in, const std::vector<float>& palette, bool rare, std::mt19937_64& rng) {
    Tensor& t = in.storage.back();
    auto* p = static_cast<float*>(t.data());
    const float specials[] = {INFINITY, -INFINITY, NAN};
    for (std::int64_t i = 0; i < t.numel(); ++i)
        p[i] = rare && rng() % 500 == 0 ? specials[rng() % 3] : palette[rng() % palette.size()];
}

// Min and max are exactly associative (the first NaN, else the first of the smallest or
// largest), so their reassociated scans (vector one-op scans with +inf or -inf shifted in, the
// chained reduce) give the reference's bits; a zero's sign shows any reordering of ties.
TEST(CpuVectorPaths, FloatMinAndMaxScansGiveTheReferencesBitsWithSignedZerosInfinitiesAndNaNs) {
    std::mt19937_64 rng(57);
    const std::vector<std::vector<float>> palettes = {{0.0f, -0.0f, -1.0f}, {0.0f, -0.0f, 1.0f},
                                                      {0.0f, -0.0f, -1.0f, 1.0f, 0.5f}};
    for (bool use_max : {false, true})
        for (std::size_t k = 0; k < palettes.size(); ++k) {
            for (std::int64_t n : kLengths)
                for (bool x_left : {false, true}) {
                    Inputs in;
                    in.add(DType::F32, {n}, Values::SmallInts, Layout::Contiguous, rng);
                    fill_from(in, palettes[k], k == 2, rng);
                    expect_bitwise(min_max_program(use_max, x_left, 1, 0), in,
                                   cat(use_max ? "max" : "min", " palette ", k, " n=", n, " x_left=", x_left));
                }
            for (auto [sizes, dim] : {std::pair{std::vector<std::int64_t>{33, 4097}, 1}, {{3, 65537}, 1}, {{4097, 33}, 0}})
                for (bool reverse : {false, true}) {
                    Inputs in;
                    in.add(DType::F32, sizes, Values::SmallInts, Layout::Contiguous, rng);
                    fill_from(in, palettes[k], k == 2, rng);
                    expect_bitwise(min_max_program(use_max, false, 2, dim, reverse), in,
                                   cat(use_max ? "max" : "min", " palette ", k, " ", sizes[0], "x", sizes[1],
                                       " dim ", dim, " reverse=", reverse), {1, 2, 3});
                }
        }
}

// Rows scanned whole (one lane each) and few long rows split across threads, both directions
// (reverse rows take the scalar path: the comparison still holds).
TEST(CpuVectorPaths, FloatSumsOfSmallIntegersAlongRowsAreExact) {
    std::mt19937_64 rng(53);
    for (auto sizes : {std::vector<std::int64_t>{33, 4097}, {64, 2048}, {3, 65537}, {2, 1 << 20}})
        for (bool reverse : {false, true}) {
            Inputs in;
            in.add(DType::F32, sizes, Values::SmallInts, Layout::Contiguous, rng);
            expect_bitwise(one_op_program(false, false, 2, 1, reverse), in,
                           cat(sizes[0], "x", sizes[1], " reverse=", reverse), {1, 2, 3});
        }
}

TEST(CpuVectorPaths, FloatSumsAreBitIdenticalRunToRunCloseToTheReferenceAndBitwiseWhenOrdered) {
    std::mt19937_64 rng(54);
    for (auto sizes : {std::vector<std::int64_t>{(1 << 22) + 1}, {1024, 4099}}) {
        Inputs in;
        in.add(DType::F32, sizes, Values::Unit, Layout::Contiguous, rng);
        int rank = static_cast<int>(sizes.size());
        ProgramRef p = one_op_program(false, false, rank, rank - 1);
        auto expected = run_reference(p, in);
        for (int threads : {1, 2, 3}) {
            auto once = run_cpu(p, in, threads), again = run_cpu(p, in, threads);
            EXPECT_EQ(compare(expected[0], once[0], false, tolerance(DType::F32)), "") << threads;
            EXPECT_EQ(compare(once[0], again[0], true, 0), "") << "threads " << threads;
            auto ordered = run_cpu(p, in, threads, /*ordered=*/true);
            EXPECT_EQ(compare(expected[0], ordered[0], true, 0), "") << "ordered " << threads;
        }
    }
}

// Outputs of >= 16 MiB along the last dim leave strided tiles through the streaming scatter:
// rows whose starts are 32-byte aligned (4096, 4104: a last tile of 8 steps) take streaming
// stores, others (4100) ordinary ones. Integers: exact. 512 rows (8 groups of 64) put two
// outputs at or just above the 16 MiB threshold (1024 rows and 1-3 threads took 35 s in the
// ASan stage of CI; 1 and 3 threads split the 8 groups evenly and unevenly).
TEST(CpuVectorPaths, LargeTwoLeafRowScansMatchTheReferenceForAlignedAndUnalignedRows) {
    std::mt19937_64 rng(55);
    for (std::int64_t cols : {4096, 4104, 4100})
        for (DType t : {DType::I32, DType::F32}) {
            Inputs in;  // a: signs for floats (products stay exact), b: small integers
            in.add(t, {512, cols}, Values::SmallInts, Layout::Contiguous, rng);
            if (t == DType::F32) make_signs(in, rng);
            in.add(t, {512, cols}, Values::SmallInts, Layout::Contiguous, rng);
            ProgramRef p = scan_program(affine_combine(), t, 2, 1);
            expect_bitwise(p, in, cat("cols=", cols, " ", t), {1, 3});
        }
}

// Split 1-D fix-ups: lengths that are whole superblocks for 1 to 4 threads at the current
// tuning (48128 steps per thread part for a two-leaf 4-byte stage), and one more or less.
TEST(CpuVectorPaths, OneDimensionalAffineOverWholeSuperblocksMatchesTheReferenceExactly) {
    std::mt19937_64 rng(56);
    constexpr std::int64_t kPart = 48128;
    for (std::int64_t n : {2 * kPart, 6 * kPart + 1, 12 * kPart - 1, 8 * kPart})
        for (bool reverse : {false, true}) {
            Inputs in;
            in.add(DType::I32, {n}, Values::SmallInts, Layout::Contiguous, rng);
            in.add(DType::I32, {n}, Values::SmallInts, Layout::Contiguous, rng);
            expect_bitwise(scan_program(affine_combine(), DType::I32, 1, 0, reverse), in,
                           cat("n=", n, " reverse=", reverse));
        }
}

}  // namespace
}  // namespace scanc::cpu_test
