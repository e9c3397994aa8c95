// Round 14 of issue 4: strided groups of f32 stages (lanes are rows of memory, scanned whole
// along the last dim) run through the register kernel of fix-ups (SegLocal::run_rows): up to 32
// rows and 16 steps at a time, straight from the inputs into the outputs, the last steps % 16
// by Worker from its carries. Which groups take it, that it writes Worker's results bit for bit
// (NaN where Worker has NaN), and that whole scans through it equal the reference's.
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

// A [lines, steps] f32 scan along the last dim of `f` over fresh contiguous tensors.
struct Rows {
    cpu::Plan plan;
    std::vector<Tensor> ins, worker_out, seg_out;
    cpu::Layout L;

    Rows(const CombineRef& f, std::int64_t lines, std::int64_t steps, bool epilogue,
         std::mt19937_64& rng)
        : plan(cpu::make_plan(*scan_program(f, DType::F32, 2, 1, false, epilogue))) {
        const cpu::StageCode& code = plan.stages.at(0).code;
        for (int i = 0; i < f->num_leaves(); ++i) {
            ins.push_back(Tensor::empty(DType::F32, {lines, steps}));
            fill_special(ins.back(), rng);
        }
        for (std::size_t o = 0; o < plan.stages.at(0).outputs.size(); ++o) {
            worker_out.push_back(Tensor::empty(DType::F32, {lines, steps}));
            seg_out.push_back(Tensor::empty(DType::F32, {lines, steps}));
        }
        L.sizes = {lines, steps};
        L.d = 1;
        L.steps = steps;
        L.lines = lines;
        L.line_dims = {0};
        for (std::size_t i = 0; i < ins.size(); ++i) {
            L.in.push_back(cpu::make_slot(ins[i].view(), L, false));
            L.in.back().tiled = code.slot_tiled[i];
        }
        for (auto& o : worker_out) L.out.push_back(cpu::make_slot(o.view(), L, false));
    }
    const cpu::StageCode& code() const { return plan.stages.at(0).code; }

    // Lines first.. first + n - 1 through run_rows into seg_out (whether it took them), and by
    // Worker::run into worker_out.
    bool run(std::int64_t first, int n) {
        cpu::Worker w(code(), L, cpu::kSubLanes);
        w.set_lanes(n, [&](int l) { return first + l; }, [](int) { return 0; });
        w.run(L.steps, cpu::Mode::Scan);
        for (std::size_t o = 0; o < L.out.size(); ++o)
            L.out[o].base = static_cast<std::byte*>(seg_out[o].data());
        cpu::SegLocal seg(code(), L, 1);
        cpu::Worker tail(code(), L, cpu::kSubLanes);
        cpu::LaneValues totals;
        bool took = seg.run_rows(first, n, tail, totals);
        for (std::size_t o = 0; o < L.out.size(); ++o)
            L.out[o].base = static_cast<std::byte*>(worker_out[o].data());
        return took;
    }
    // Lines of the outputs whose values differ somewhere between the two runs.
    std::int64_t differing(std::int64_t first, int n) const {
        std::int64_t bad = 0;
        for (std::size_t o = 0; o < seg_out.size(); ++o) {
            const auto* x = static_cast<const std::uint32_t*>(worker_out[o].data());
            const auto* y = static_cast<const std::uint32_t*>(seg_out[o].data());
            for (std::int64_t i = first * L.steps; i < (first + n) * L.steps; ++i)
                bad += !same_value(x[i], y[i]);
        }
        return bad;
    }
};

TEST(CpuSegRows, GroupsOfWholeVectorsAndSixteenStepsTakeRegistersOthersKeepWorker) {
    if (!cpu::mem_fns().seg_local) GTEST_SKIP() << "no AVX2";
    std::mt19937_64 rng(141);
    EXPECT_TRUE(Rows(affine_combine(), 64, 4096, false, rng).run(0, 64));
    EXPECT_TRUE(Rows(affine_combine(), 40, 16, false, rng).run(8, 32));
    EXPECT_FALSE(Rows(affine_combine(), 64, 4096, false, rng).run(0, 12));  // not whole vectors
    EXPECT_FALSE(Rows(affine_combine(), 64, 15, false, rng).run(0, 64));    // under 16 steps
    EXPECT_FALSE(Rows(affine_combine(), 64, 512, true, rng).run(0, 64));    // an epilogue
}

TEST(CpuSegRows, RowsEqualWorkersBitForBitWithSpecialValues) {
    if (!cpu::mem_fns().seg_local) GTEST_SKIP() << "no AVX2";
    std::mt19937_64 rng(142);
    struct Case {
        std::int64_t lines, steps;
        std::int64_t first;
        int n;
    };
    // 64 lanes: two passes of 32; 56: 32, 16 and 8; 24: 16 and 8; tails of 0, 1 and 15 steps.
    for (Case c : {Case{64, 4096, 0, 64}, {72, 4095, 8, 56}, {30, 4097, 3, 24}, {16, 16, 0, 16},
                   {8, 31, 0, 8}, {64, 752, 0, 64}})
        for (const CombineRef& f : {affine_combine(), three_leaves_combine()}) {
            Rows r(f, c.lines, c.steps, false, rng);
            ASSERT_TRUE(r.run(c.first, c.n)) << c.lines << "x" << c.steps;
            EXPECT_EQ(r.differing(c.first, c.n), 0) << c.lines << "x" << c.steps << " from "
                                                     << c.first << ", " << c.n << " lines";
        }
}

// Multipliers of +-1 and small integers: exact in any association (few lines split among the
// threads), so whole scans equal the reference bit for bit; large outputs stream (rows 32-byte
// aligned or, at 4100 steps, not).
TEST(CpuSegRows, WholeScansAlongTheLastDimEqualTheReferenceBitwise) {
    std::mt19937_64 rng(143);
    for (auto sizes : {std::vector<std::int64_t>{64, 4096}, {72, 4095}, {33, 4097}, {96, 15},
                       {40, 16}, {2, 20, 515}, {1024, 4104}, {1024, 4100}})
        for (Layout layout : {Layout::Contiguous, Layout::Strided}) {
            if (sizes.front() == 1024 && layout == Layout::Strided) continue;  // time
            int rank = static_cast<int>(sizes.size());
            Inputs in;
            in.add(DType::F32, sizes, Values::SmallInts, layout, rng);
            in.add(DType::F32, sizes, Values::SmallInts, layout, rng);
            auto* a = static_cast<float*>(in.storage[0].data());
            for (std::int64_t j = 0; j < in.storage[0].numel(); ++j)
                a[j] = rng() & 1 ? 1.0f : -1.0f;
            expect_bitwise(scan_program(affine_combine(), DType::F32, rank, rank - 1), in,
                           cat(sizes.front(), "x", sizes.back(), " layout ", int(layout)),
                           {1, 2, 3});
        }
}

}  // namespace
}  // namespace scanc::cpu_test
