// Round 13 of issue 4: phase 1 of chained fix-ups in SIMD registers (seg_local.h). Which stages
// take it (f32 leaves read in place going forward, combines of + - * /, min, max, multiply-adds,
// copies and constants, nothing captured), that it yields Worker's local scans and lane totals bit for bit
// (infinities, signed zeros, subnormals included; NaN where Worker has NaN; every group width
// of its lanes), and
// that whole scans through it are exact against the reference executor for awkward lengths,
// several lines and thread counts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "cpu_test_util.h"
#include "plan.h"
#include "seg_local.h"

namespace scanc::cpu_test {
namespace {

using namespace scanc::dsl;

ProgramRef program_of(const CombineRef& f, DType t, int rank, bool reverse = false) {
    ProgramBuilder pb("p");
    Shape shape;
    for (int k = 0; k < rank; ++k) shape.push_back(pb.symbol(cat("S", k)));
    Exprs leaves;
    for (int i = 0; i < f->num_leaves(); ++i) leaves.push_back(pb.param(cat("x", i), t, shape));
    return pb.build(pb.scan(f, leaves, rank - 1, reverse));
}

// One line of `n` steps over `tensors` (the stage's inputs, then its outputs).
cpu::Layout line_layout(const cpu::StageCode& code, const std::vector<Tensor>& ins,
                        const std::vector<Tensor>& outs, bool reverse) {
    cpu::Layout L;
    L.sizes = ins[0].sizes();
    L.d = static_cast<int>(L.sizes.size()) - 1;
    L.steps = L.sizes[L.d];
    L.lines = ins[0].numel() / L.steps;
    for (int k = 0; k < L.d; ++k) L.line_dims.push_back(k);
    for (std::size_t i = 0; i < ins.size(); ++i) {
        L.in.push_back(cpu::make_slot(ins[i].view(), L, reverse));
        L.in.back().tiled = code.slot_tiled[i];
    }
    for (auto& o : outs) L.out.push_back(cpu::make_slot(o.view(), L, reverse));
    return L;
}

// h = max(h * a, b), and a running max and min side by side (exact in any association).
CombineRef affine_max_combine() {
    return trace_combine("affine_max", 2, 0, [](auto& l, auto& r, auto&) {
        return Exprs{l[0] * r[0], max(l[1] * r[0], r[1])};
    });
}
CombineRef max_min_combine() {
    return trace_combine("max_min", 2, 0, [](auto& l, auto& r, auto&) { return Exprs{max(l[0], r[0]), min(l[1], r[1])}; });
}
// Weak integer literals in an f32 combine: h = (h * a) * 1 + (b - 0).
CombineRef integer_literals_combine() {
    return trace_combine("integer_literals", 2, 0, [](auto& l, auto& r, auto&) {
        return Exprs{l[0] * r[0], l[1] * r[0] * 1 + (r[1] - 0)};
    });
}

bool takes_registers(const CombineRef& f, DType t, bool reverse = false) {
    cpu::Plan plan = cpu::make_plan(*program_of(f, t, 1, reverse));
    const cpu::StageCode& code = plan.stages.at(0).code;
    std::vector<Tensor> ins, outs;
    for (int i = 0; i < f->num_leaves(); ++i) {
        ins.push_back(Tensor::empty(t, {64}));
        outs.push_back(Tensor::empty(t, {64}));
    }
    cpu::Layout L = line_layout(code, ins, outs, reverse);
    return cpu::SegLocal(code, L, cpu::fixup_dir(code, L)).active();
}

TEST(CpuSegLocal, FloatArithmeticCombinesTakeRegistersAndOtherStagesKeepWorker) {
    if (!cpu::mem_fns().seg_local) GTEST_SKIP() << "no AVX2";
    EXPECT_TRUE(takes_registers(affine_combine(), DType::F32));
    EXPECT_TRUE(takes_registers(three_leaves_combine(), DType::F32));
    EXPECT_FALSE(takes_registers(sum_combine(), DType::F32));  // one op: its own blocked path
    EXPECT_FALSE(takes_registers(affine_combine(), DType::F32, true));  // reversed
    EXPECT_FALSE(takes_registers(affine_combine(), DType::F64));
    EXPECT_FALSE(takes_registers(affine_combine(), DType::I32));
    EXPECT_FALSE(takes_registers(affine_combine(), DType::F16));  // converted on load
    EXPECT_TRUE(takes_registers(affine_max_combine(), DType::F32));
    EXPECT_TRUE(takes_registers(max_min_combine(), DType::F32));
    // Each integer literal becomes an f32 constant (plan_codegen); the i64 ones it came from
    // stay unread.
    EXPECT_TRUE(takes_registers(integer_literals_combine(), DType::F32));
    auto with_lse = trace_combine("affine_lse", 2, 0, [](auto& l, auto& r, auto&) {
        return Exprs{l[0] * r[0], logaddexp(l[1] * r[0], r[1])};
    });
    EXPECT_FALSE(takes_registers(with_lse, DType::F32));  // logaddexp: not one of its ops
}

// Phase 1 of one piece of `lanes` x `steps` by Worker::run(Mode::Local) and by SegLocal.
void expect_same_local_scans(const CombineRef& f, int lanes, int steps, std::mt19937_64& rng) {
    cpu::Plan plan = cpu::make_plan(*program_of(f, DType::F32, 1));
    const cpu::StageCode& code = plan.stages.at(0).code;
    std::int64_t n = std::int64_t{lanes} * steps;
    std::vector<Tensor> ins, outs;
    for (int i = 0; i < f->num_leaves(); ++i) {
        ins.push_back(Tensor::empty(DType::F32, {n}));
        fill_special(ins.back(), rng);
        outs.push_back(Tensor::empty(DType::F32, {n}));
    }
    cpu::Layout L = line_layout(code, ins, outs, false);
    L.width = lanes;
    cpu::Piece pc{lanes, 0, steps};
    cpu::LocalScans worker_local(code, L, 1), seg_local(code, L, 1);
    worker_local.cover(0, n);
    seg_local.cover(0, n);
    cpu::LaneValues worker_totals{f->num_leaves(), {}, {}}, seg_totals{f->num_leaves(), {}, {}};
    worker_totals.resize(lanes);
    seg_totals.resize(lanes);
    cpu::Worker w(code, L, lanes);
    w.set_lanes(lanes, [](int) { return 0; }, [&](int l) { return std::int64_t{l} * steps; });
    w.set_local(worker_local.bases(), worker_local.origin(), 1);
    w.run(steps, cpu::Mode::Local);
    for (int l = 0; l < lanes; ++l) w.read_carry(l, worker_totals.at(l));
    cpu::SegLocal seg(code, L, 1);
    ASSERT_TRUE(seg.usable(pc));
    seg.run(0, pc, seg_local, seg_totals, 0);
    std::string what = cat(f->name, " ", lanes, " lanes x ", steps, " steps");
    for (int k = 0; k < f->num_leaves(); ++k) {
        const auto* x = reinterpret_cast<const std::uint32_t*>(worker_local.bases()[k]);
        const auto* y = reinterpret_cast<const std::uint32_t*>(seg_local.bases()[k]);
        std::int64_t differ = 0;
        for (std::int64_t i = 0; i < n; ++i) differ += !same_value(x[i], y[i]);
        EXPECT_EQ(differ, 0) << what << " leaf " << k;
    }
    for (std::size_t i = 0; i < worker_totals.v.size(); ++i)
        EXPECT_TRUE(same_value(static_cast<std::uint32_t>(worker_totals.v[i]),
                               static_cast<std::uint32_t>(seg_totals.v[i])))
            << what << " total " << i;
}

TEST(CpuSegLocal, LocalScansAndTotalsEqualWorkersBitForBitWithSpecialValues) {
    if (!cpu::mem_fns().seg_local) GTEST_SKIP() << "no AVX2";
    std::mt19937_64 rng(131);
    // 8, 40 and 136 lanes: groups of 64, 32 and 8 lanes; 8 steps is one transpose.
    for (int lanes : {8, 40, 64, 136})
        for (int steps : {8, 16, 752}) {
            expect_same_local_scans(affine_combine(), lanes, steps, rng);
            expect_same_local_scans(three_leaves_combine(), lanes, steps, rng);
            expect_same_local_scans(affine_max_combine(), lanes, steps, rng);
            expect_same_local_scans(max_min_combine(), lanes, steps, rng);
            expect_same_local_scans(integer_literals_combine(), lanes, steps, rng);
        }
}

// Signs and small integers: exact in any association, so the whole scan (register phase 1 for
// pieces of 8k lanes x 8m steps, Worker for the others) equals the reference bitwise.
TEST(CpuSegLocal, ScansThroughRegistersAreExactForAwkwardLengthsLinesAndThreadCounts) {
    std::mt19937_64 rng(132);
    for (const CombineRef& f : {affine_combine(), three_leaves_combine(), max_min_combine()})
        for (auto sizes : {std::vector<std::int64_t>{1}, {97}, {4097}, {65537}, {131071},
                           {1000003}, {2, 300007}, {3, 65536}}) {
            int rank = static_cast<int>(sizes.size());
            Inputs in;
            for (int i = 0; i < f->num_leaves(); ++i)
                in.add(DType::F32, sizes, Values::SmallInts, Layout::Contiguous, rng);
            // Multipliers of +-1 keep every product exact.
            auto* a = static_cast<float*>(in.views[0].data);
            for (std::int64_t j = 0; j < in.storage[0].numel(); ++j)
                a[j] = rng() & 1 ? 1.0f : -1.0f;
            expect_bitwise(program_of(f, DType::F32, rank), in,
                           cat(f->name, " ", sizes.front(), "x", sizes.back()), {1, 2, 3, 5});
        }
}

}  // namespace
}  // namespace scanc::cpu_test
