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
#include <memory>

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

// One piece of `lanes` x `steps` of one line of f32 special values, and two places for its
// local scans and lane totals.
struct OnePiece {
    OnePiece(const CombineRef& f, int lanes, int steps, std::mt19937_64& rng)
        : leaves(f->num_leaves()), lanes(lanes), n(std::int64_t{lanes} * steps),
          plan(cpu::make_plan(*program_of(f, DType::F32, 1))), code(plan.stages.at(0).code),
          pc{lanes, 0, steps}, what(cat(f->name, " ", lanes, " lanes x ", steps, " steps")) {
        for (int i = 0; i < leaves; ++i) {
            ins.push_back(Tensor::empty(DType::F32, {n}));
            fill_special(ins.back(), rng);
            outs.push_back(Tensor::empty(DType::F32, {n}));
        }
        L = line_layout(code, ins, outs, false);
        L.width = lanes;
        for (int s = 0; s < 2; ++s) {
            scans.push_back(std::make_unique<cpu::LocalScans>(code, L, 1));
            scans.back()->cover(0, n);
            totals[s] = cpu::LaneValues{leaves, {}, {}};
            totals[s].resize(lanes);
        }
    }
    // Local scans and totals 0 and 1 equal bit for bit (NaN where the other has NaN).
    void expect_same() const {
        for (int k = 0; k < leaves; ++k) {
            const auto* x = reinterpret_cast<const std::uint32_t*>(scans[0]->bases()[k]);
            const auto* y = reinterpret_cast<const std::uint32_t*>(scans[1]->bases()[k]);
            std::int64_t differ = 0;
            for (std::int64_t i = 0; i < n; ++i) differ += !same_value(x[i], y[i]);
            EXPECT_EQ(differ, 0) << what << " leaf " << k;
        }
        for (std::size_t i = 0; i < totals[0].v.size(); ++i)
            EXPECT_TRUE(same_value(static_cast<std::uint32_t>(totals[0].v[i]),
                                   static_cast<std::uint32_t>(totals[1].v[i])))
                << what << " total " << i;
    }

    int leaves, lanes;
    std::int64_t n;
    cpu::Plan plan;
    const cpu::StageCode& code;
    cpu::Piece pc;
    std::string what;
    std::vector<Tensor> ins, outs;
    cpu::Layout L;
    std::vector<std::unique_ptr<cpu::LocalScans>> scans;
    cpu::LaneValues totals[2];
};

// Phase 1 of one piece by Worker::run(Mode::Local) and by SegLocal.
void expect_same_local_scans(const CombineRef& f, int lanes, int steps, std::mt19937_64& rng) {
    OnePiece p(f, lanes, steps, rng);
    cpu::Worker w(p.code, p.L, lanes);
    w.set_lanes(lanes, [](int) { return 0; }, [&](int l) { return std::int64_t{l} * steps; });
    w.set_local(p.scans[0]->bases(), p.scans[0]->origin(), 1);
    w.run(steps, cpu::Mode::Local);
    for (int l = 0; l < lanes; ++l) w.read_carry(l, p.totals[0].at(l));
    cpu::SegLocal seg(p.code, p.L, 1);
    ASSERT_TRUE(seg.usable(p.pc));
    seg.run(0, p.pc, *p.scans[1], p.totals[1], 0);
    p.expect_same();
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


// Phase 1 of one piece through the combine compiled to machine code and interpreted.
void expect_compiled_like_interpreted(const CombineRef& f, int lanes, int steps, std::mt19937_64& rng) {
    OnePiece p(f, lanes, steps, rng);
    cpu::SegLocal compiled(p.code, p.L, 1, /*compile=*/true), interpreted(p.code, p.L, 1, /*compile=*/false);
    ASSERT_TRUE(compiled.compiled()) << f->name;
    ASSERT_FALSE(interpreted.compiled());
    compiled.run(0, p.pc, *p.scans[0], p.totals[0], 0);
    interpreted.run(0, p.pc, *p.scans[1], p.totals[1], 0);
    p.expect_same();
}

// Where the build has Xbyak (scripts/setup.sh installs it), every combine the register kernels
// take compiles, and its machine code gives the interpreter's bits: 64, 32 and 8 lanes a pass,
// 8 and 16 steps (the AVX2 and AVX-512 kernels), infinities, NaN, signed zeros, subnormals.
TEST(CpuSegLocal, CombinesCompiledToMachineCodeGiveTheInterpretersBits) {
    if (!cpu::mem_fns().seg_local) GTEST_SKIP() << "no AVX2";
    if (!cpu::seg_jit_built()) GTEST_SKIP() << "built without Xbyak";
    std::mt19937_64 rng(133);
    for (int lanes : {8, 40, 64, 136})
        for (int steps : {8, 16, 752})
            for (const CombineRef& f : {affine_combine(), three_leaves_combine(), affine_max_combine(),
                                        max_min_combine(), integer_literals_combine(), every_op_combine()})
                expect_compiled_like_interpreted(f, lanes, steps, rng);
}

}  // namespace
}  // namespace scanc::cpu_test
