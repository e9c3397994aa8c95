// Round 5 of issue 4: a Mul whose product only the next Add reads runs as one MulAdd/AddMul
// dispatch (plan_codegen.cpp), and fix-ups of large float outputs write them with the
// combine's streaming variant. Each op must still round on its own: `ordered` runs compare
// bitwise with the reference executor (a fused multiply-add would differ in the last bit), and
// wrapping integer arithmetic exactly.
#include <gtest/gtest.h>

#include "cpu_test_util.h"
#include "plan.h"

namespace scanc::cpu_test {
namespace {

using namespace scanc::dsl;

// affine with the product on the left of the add (a2 * b1 + b2) or on the right (b2 + a2 * b1);
// `twice`: the product is read twice (b2 + p + p), so it must not be fused away.
CombineRef affine(bool product_left, bool twice = false) {
    return trace_combine("affine", 2, 0, [=](auto& l, auto& r, auto&) {
        Expr p = r[0] * l[1];
        Expr b = twice ? r[1] + p + p : product_left ? p + r[1] : r[1] + p;
        return Exprs{l[0] * r[0], b};
    });
}

std::size_t combine_size(const CombineRef& f) {
    cpu::Plan plan = cpu::make_plan(*scan_program(f, DType::F32, 1, 0));
    return plan.stages.at(0).code.combine.size();
}

bool has_stream_combine(DType t) {
    cpu::Plan plan = cpu::make_plan(*scan_program(affine(true), t, 1, 0));
    return !plan.stages.at(0).code.combine_stream.empty();
}

TEST(CpuMulAdd, TheProductOfAffineIsFusedIntoTheAddOnEitherSideButNotWhenReadTwice) {
    EXPECT_EQ(combine_size(affine(true)), 2u);   // a1 * a2, then a2 * b1 + b2 as one
    EXPECT_EQ(combine_size(affine(false)), 2u);  // b2 + a2 * b1
    EXPECT_EQ(combine_size(affine(false, true)), 4u);  // mul, add, add, mul: nothing fused
}

TEST(CpuMulAdd, FloatCombinesGetAStreamingVariantAndIntegerOnesDoNot) {
    EXPECT_TRUE(has_stream_combine(DType::F32));
    EXPECT_TRUE(has_stream_combine(DType::F64));
    EXPECT_FALSE(has_stream_combine(DType::I32));  // staging row and streaming copy instead
}

TEST(CpuMulAdd, FusedCombinesMatchTheReferenceBitwiseWhenOrderedAndForIntegers) {
    std::mt19937_64 rng(71);
    struct Case {
        std::vector<std::int64_t> sizes;
        int dim;
    };
    for (const Case& c : {Case{{1}, 0}, Case{{65}, 0}, Case{{4097}, 0}, Case{{(1 << 20) + 3}, 0},
                          Case{{37, 1031}, 1}, Case{{1031, 67}, 0}})
        for (bool left : {true, false})
            for (DType t : {DType::F32, DType::F64, DType::F16, DType::I32}) {
                Inputs in;
                in.add(t, c.sizes, Values::Decay, Layout::Contiguous, rng);
                in.add(t, c.sizes, Values::Unit, Layout::Contiguous, rng);
                int rank = static_cast<int>(c.sizes.size());
                ProgramRef p = [&] {
                    ProgramBuilder pb("p");
                    Shape shape;
                    for (int k = 0; k < rank; ++k) shape.push_back(pb.symbol(cat("S", k)));
                    Expr a = pb.param("a", t, shape), b = pb.param("b", t, shape);
                    return pb.build(pb.scan(affine(left), {a, b}, c.dim));
                }();
                auto expected = run_reference(p, in);
                bool exact = !is_float(t);
                for (int threads : {1, 2}) {
                    auto ordered = run_cpu(p, in, threads, /*ordered=*/true);
                    auto plain = run_cpu(p, in, threads);
                    for (std::size_t r = 0; r < expected.size(); ++r) {
                        std::string what = cat(t, " n=", c.sizes.back(), " dim=", c.dim,
                                               " left=", left, " threads=", threads, " r=", r);
                        EXPECT_EQ(compare(expected[r], ordered[r], true, 0), "") << what;
                        EXPECT_EQ(compare(expected[r], plain[r], exact, tolerance(t)), "") << what;
                    }
                }
            }
}

// Split lines with outputs of >= 16 MiB are fixed up with the combine's streaming variant
// (StageCode::combine_stream): the fused MulAdd and the Mul write memory with streaming stores.
// a = +-1 and small integer b keep every value exact in any association, so the results must
// equal the reference bitwise, forward and reverse (where the pieces' alignments differ).
TEST(CpuMulAdd, StreamedFixUpsOfLargeFloatOutputsMatchTheReferenceBitwise) {
    std::mt19937_64 rng(72);
    for (DType t : {DType::F32, DType::F64})
        for (bool left : {true, false})
            for (bool reverse : {false, true}) {
                std::int64_t n = t == DType::F32 ? (1 << 21) + 3 : (1 << 20) + 7;
                Inputs in;
                in.add(t, {n}, Values::SmallInts, Layout::Contiguous, rng);
                in.add(t, {n}, Values::SmallInts, Layout::Contiguous, rng);
                Tensor& a = in.storage[0];
                for (std::int64_t i = 0; i < n; ++i) {
                    double v = rng() & 1 ? 1.0 : -1.0;
                    if (t == DType::F32) static_cast<float*>(a.data())[i] = static_cast<float>(v);
                    else static_cast<double*>(a.data())[i] = v;
                }
                ProgramBuilder pb("p");
                Size s = pb.symbol("N");
                Expr x = pb.param("a", t, {s}), y = pb.param("b", t, {s});
                ProgramRef p = pb.build(pb.scan(affine(left), {x, y}, 0, reverse));
                auto expected = run_reference(p, in);
                for (int threads : {1, 2, 3}) {
                    auto actual = run_cpu(p, in, threads);
                    for (std::size_t r = 0; r < expected.size(); ++r)
                        EXPECT_EQ(compare(expected[r], actual[r], true, 0), "")
                            << t << " left=" << left << " reverse=" << reverse
                            << " threads=" << threads << " r=" << r;
                }
            }
}

}  // namespace
}  // namespace scanc::cpu_test
