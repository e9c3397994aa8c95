// Rows whose scan has a prologue or epilogue, or narrow floats to convert, and plain one-op
// scans of rows grouped as lanes (fused_rows.h): which stages FusedRows takes, and that scans through it match the reference executor across block
// edges (kFusedLanes), vector tails, both directions, whole rows and chained long ones (few
// lines), each engine (a one-op loop of any dtype, the register kernels) and thread counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "cpu_test_util.h"
#include "fused_rows.h"
#include "plan.h"

namespace scanc::cpu_test {
namespace {

using namespace scanc::dsl;

// A program over x[N, T] (and w[N, 1] where it reads one) scanning along dim 1.
struct Case {
    std::string name;
    DType dtype;
    Values values;
    bool exact;  // every association gives the same bits
    // The results from the builder, x and w.
    std::function<Exprs(ProgramBuilder&, const Expr& x, const Expr& w, bool reverse)> body;
    bool reads_w = false;
};

ProgramRef build(const Case& c, bool reverse) {
    ProgramBuilder pb("p");
    Shape shape{pb.symbol("N"), pb.symbol("T")};
    Expr x = pb.param("x", c.dtype, shape);
    Expr w = c.reads_w ? pb.param("w", c.dtype, {shape[0], Size(1)}) : x;  // x: unread
    return pb.build(c.body(pb, x, w, reverse));
}

std::vector<Case> cases() {
    const CombineRef sum = sum_combine();
    const CombineRef max = trace_combine("max", 1, 0, [](auto& l, auto& r, auto&) { return Exprs{dsl::max(l[0], r[0])}; });
    const CombineRef affine = affine_combine();
    return {
        {"a sum of x times 2, returned plus 1 and as it is", DType::F32, Values::Unit, false,
         [=](ProgramBuilder& pb, const Expr& x, const Expr&, bool rev) {
             Expr y = pb.scan(sum, {x * 2.0}, 1, rev)[0];
             return Exprs{y + 1.0, y};
         }},
        {"an f16 sum", DType::F16, Values::Unit, false,
         [=](ProgramBuilder& pb, const Expr& x, const Expr&, bool rev) { return pb.scan(sum, {x}, 1, rev); }},
        {"a bf16 sum returned halved", DType::BF16, Values::Unit, false,
         [=](ProgramBuilder& pb, const Expr& x, const Expr&, bool rev) {
             return Exprs{pb.scan(sum, {x}, 1, rev)[0] * 0.5};
         }},
        {"an i32 sum of x times 3 returned plus x", DType::I32, Values::SmallInts, true,
         [=](ProgramBuilder& pb, const Expr& x, const Expr&, bool rev) {
             return Exprs{pb.scan(sum, {x * 3}, 1, rev)[0] + x};
         }},
        {"an exclusive i32 sum of x times 3 (the epilogue reads the prologue's value)", DType::I32, Values::SmallInts,
         true,
         [=](ProgramBuilder& pb, const Expr& x, const Expr&, bool rev) {
             Expr x3 = x * 3;
             return Exprs{pb.scan(sum, {x3}, 1, rev)[0] - x3};
         }},
        {"a u8 max of x plus 1", DType::U8, Values::SmallInts, true,
         [=](ProgramBuilder& pb, const Expr& x, const Expr&, bool rev) { return pb.scan(max, {x + 1}, 1, rev); }},
        {"an affine scan of exp(-x * x) and x returning h and a * h", DType::F32, Values::Unit, false,
         [=](ProgramBuilder& pb, const Expr& x, const Expr&, bool rev) {
             Exprs ah = pb.scan(affine, {exp(-(x * x)), x}, 1, rev);
             return Exprs{ah[1], ah[0] * ah[1]};
         }},
        {"a plain i32 sum (rows grouped as lanes)", DType::I32, Values::SmallInts, true,
         [=](ProgramBuilder& pb, const Expr& x, const Expr&, bool rev) { return pb.scan(sum, {x}, 1, rev); }},
        {"a plain f32 max (rows grouped as lanes)", DType::F32, Values::Unit, true,
         [=](ProgramBuilder& pb, const Expr& x, const Expr&, bool rev) { return pb.scan(max, {x}, 1, rev); }},
        {"a sum of x times a per-row weight broadcast along the scan", DType::F32, Values::Unit, false,
         [=](ProgramBuilder& pb, const Expr& x, const Expr& w, bool rev) { return pb.scan(sum, {x * w}, 1, rev); },
         true},
        {"an i32 sum of x times a per-row weight, returned minus it", DType::I32, Values::SmallInts, true,
         [=](ProgramBuilder& pb, const Expr& x, const Expr& w, bool rev) {
             return Exprs{pb.scan(sum, {x * w}, 1, rev)[0] - w};
         },
         true},
    };
}

Inputs inputs_for(const Case& c, std::int64_t lines, std::int64_t steps, std::mt19937_64& rng) {
    Inputs in;
    in.add(c.dtype, {lines, steps}, c.values, test::Layout::Contiguous, rng);
    if (c.reads_w) in.add(c.dtype, {lines, 1}, c.values, test::Layout::Contiguous, rng);
    return in;
}

// Whether FusedRows takes the scan's stage of `c` over contiguous [lines, steps] tensors (its
// inputs are the program's params).
bool fused_takes(const Case& c, std::int64_t lines, std::int64_t steps, bool reverse, bool ordered,
                 int width = cpu::kSubLanes) {
    const cpu::Plan plan = cpu::make_plan(*build(c, reverse));
    const cpu::Stage& stage = *std::find_if(plan.stages.begin(), plan.stages.end(), [](auto& s) { return s.has_scan; });
    std::mt19937_64 rng(1);
    Inputs in = inputs_for(c, lines, steps, rng);
    std::vector<Tensor> outs;
    for (std::size_t o = 0; o < stage.outputs.size(); ++o) outs.push_back(Tensor::empty(c.dtype, {lines, steps}));
    cpu::Layout L;
    L.sizes = {lines, steps};
    L.d = 1, L.steps = steps, L.lines = lines, L.line_dims = {0};
    L.reassociate = !ordered;
    L.width = width;
    for (std::size_t i = 0; i < stage.inputs.size(); ++i) {
        L.in.push_back(cpu::make_slot(in.views.at(stage.inputs[i]), L, reverse));
        L.in.back().tiled = stage.code.slot_tiled[i];
    }
    for (auto& o : outs) L.out.push_back(cpu::make_slot(o.view(), L, reverse));
    return cpu::FusedRows(stage.code, L).active();
}

TEST(CpuFusedRows, TakesRowsWithAPrologueOrEpilogueOrNarrowFloatsOfEveryCase) {
    for (const Case& c : cases())
        for (bool reverse : {false, true})
            EXPECT_TRUE(fused_takes(c, 4, cpu::kFusedMinSteps, reverse, false)) << c.name << (reverse ? ", reversed" : "");
}

TEST(CpuFusedRows, LeavesOrderedRunsShortRowsAndPlainScansToTheOtherPaths) {
    const Case fused = cases().front();
    EXPECT_FALSE(fused_takes(fused, 4, 4096, false, true)) << "ordered: combined in order by Worker";
    EXPECT_FALSE(fused_takes(fused, 4, cpu::kFusedMinSteps - 1, false, false)) << "short rows";
    auto plain = [](const CombineRef& f) {
        return Case{"a plain f32 scan", DType::F32, Values::Unit, false,
                    [f](ProgramBuilder& pb, const Expr& x, const Expr&, bool rev) { return pb.scan(f, {x}, 1, rev); }};
    };
    // A one-op scan: rows a lane each keep their row loop in place; rows grouped as lanes
    // (shorter than kMinSplitSteps, run_stage.cpp) come here.
    EXPECT_FALSE(fused_takes(plain(sum_combine()), 4, 4096, false, false, 1)) << "rows a lane each";
    EXPECT_TRUE(fused_takes(plain(sum_combine()), 4, 1024, false, false)) << "rows grouped as lanes";
    // Other combines keep the register kernels' rows (seg_local.h): a sum written with two ops.
    const CombineRef two_ops = trace_combine("sum_generic", 1, 0, [](auto& l, auto& r, auto&) {
        return Exprs{l[0] - (0.0 - r[0])};
    });
    EXPECT_FALSE(fused_takes(plain(two_ops), 4, 1024, false, false)) << "rows of the register kernels";
}

// Steps around a block's edge and a vector's, both sides of kFusedMinSteps; many lines, and
// few, chained once the elements make work for several threads (kMinGenericWorkPerThread):
// blocks of a line shorter than kFusedLanes (31 x 3001 on 3 threads: 333, 666, 1000 steps,
// whose totals pair up some vectors and not the rest) and longer.
TEST(CpuFusedRows, ScansMatchTheReferenceAcrossBlockEdgesDirectionsAndThreads) {
    std::mt19937_64 rng(48);
    const std::int64_t B = cpu::kFusedLanes;
    const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {
        {1, cpu::kFusedMinSteps}, {3, cpu::kFusedMinSteps + 1}, {2, B - 1}, {1, B}, {3, B + 1},
        {2, 2 * B + 17}, {1, 4099}, {3, 16411}, {33, 1031}, {40, 257}, {31, 3001}, {2, 40009}};
    for (const Case& c : cases())
        for (bool reverse : {false, true}) {
            const ProgramRef p = build(c, reverse);
            for (auto [lines, steps] : shapes) {
                const Inputs in = inputs_for(c, lines, steps, rng);
                const std::vector<Tensor> want = run_reference(p, in);
                for (int threads : {1, 2, 3}) {
                    const std::vector<Tensor> got = run_cpu(p, in, threads);
                    ASSERT_EQ(got.size(), want.size());
                    for (std::size_t r = 0; r < got.size(); ++r)
                        ASSERT_EQ(test::compare(want[r], got[r], c.exact, test::tolerance(c.dtype)), "")
                            << c.name << (reverse ? ", reversed" : "") << ", " << lines << "x" << steps << ", "
                            << threads << " threads, result " << r;
                }
            }
        }
}

// Chained blocks of a line (kChainBlockBytes of input each) pass their prefixes in order: two
// rows of several blocks each, on three threads, give the reference's integers exactly and the
// same floats run after run.
TEST(CpuFusedRows, LongRowsChainedInBlocksGiveTheSameResultsRunAfterRun) {
    std::mt19937_64 rng(7);
    for (const Case& c : cases()) {
        if (c.dtype != DType::I32 && c.dtype != DType::F32) continue;
        const ProgramRef p = build(c, false);
        const Inputs in = inputs_for(c, 2, 300007, rng);
        const std::vector<Tensor> want = run_reference(p, in), got = run_cpu(p, in, 3), again = run_cpu(p, in, 3);
        for (std::size_t r = 0; r < got.size(); ++r) {
            ASSERT_EQ(test::compare(want[r], got[r], c.exact, test::tolerance(c.dtype)), "") << c.name << ", result " << r;
            ASSERT_EQ(test::compare(got[r], again[r], true, 0), "") << c.name << ", result " << r << ", rerun";
        }
    }
}

}  // namespace
}  // namespace scanc::cpu_test
