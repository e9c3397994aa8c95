// Strided groups of f32 stages (lanes are rows of memory, scanned whole along the last dim) in
// SIMD registers (SegLocal::run_rows), straight from the inputs into the outputs, the last
// steps by Worker from the carries. Round 14 of issue 4: `ordered` runs, up to 32 rows and 16
// steps at a time in Worker's order, so Worker's bits (NaN where Worker has NaN). Round 24:
// other runs, each row's vectors through a log-step scan in registers (RowScanArgs), whose
// machine code gives the interpreter's bits; and lanes side by side whose steps are rows
// apart (SegLocal::run_cols), chunks of them through a few steps at a time, Worker's bits.
// Which groups take which, those bits, and that whole scans through them match the reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "cpu_test_util.h"
#include "plan.h"
#include "seg_jit.h"
#include "seg_local.h"

namespace scanc::cpu_test {
namespace {

using namespace scanc::dsl;

// A [lines, steps] f32 scan along the last dim of `f` (or, `across`, a [steps, lines] one
// along dim 0) over fresh contiguous tensors of special values (`finite`: of values in [0.9,
// 1.1], whose long combines stay finite), and two sets of outputs to compare.
struct Rows {
    cpu::Plan plan;
    std::vector<Tensor> ins, outs[2];
    cpu::Layout L;

    Rows(const CombineRef& f, std::int64_t lines, std::int64_t steps, bool epilogue, bool ordered,
         std::mt19937_64& rng, bool across = false, bool finite = false)
        : plan(cpu::make_plan(*scan_program(f, DType::F32, 2, across ? 0 : 1, false, epilogue))) {
        const cpu::StageCode& code = plan.stages.at(0).code;
        const std::vector<std::int64_t> sizes = across ? std::vector{steps, lines} : std::vector{lines, steps};
        for (int i = 0; i < f->num_leaves(); ++i) {
            ins.push_back(Tensor::empty(DType::F32, sizes));
            if (!finite) {
                fill_special(ins.back(), rng);
                continue;
            }
            std::uniform_real_distribution<float> near_one(0.9f, 1.1f);
            auto* v = static_cast<float*>(ins.back().data());
            for (std::int64_t i = 0; i < ins.back().numel(); ++i) v[i] = near_one(rng);
        }
        for (std::size_t o = 0; o < plan.stages.at(0).outputs.size(); ++o)
            for (auto& set : outs) set.push_back(Tensor::empty(DType::F32, sizes));
        L.sizes = sizes;
        L.d = across ? 0 : 1;
        L.steps = steps;
        L.lines = lines;
        L.line_dims = {across ? 1 : 0};
        L.width = static_cast<int>(lines);
        L.reassociate = !ordered;
        for (std::size_t i = 0; i < ins.size(); ++i) {
            L.in.push_back(cpu::make_slot(ins[i].view(), L, false));
            L.in.back().tiled = code.slot_tiled[i];
        }
        for (auto& o : outs[0]) L.out.push_back(cpu::make_slot(o.view(), L, false));
    }
    const cpu::StageCode& code() const { return plan.stages.at(0).code; }
    void write_to(int set) {
        for (std::size_t o = 0; o < L.out.size(); ++o) L.out[o].base = static_cast<std::byte*>(outs[set][o].data());
    }

    // Lines first.. first + n - 1 by Worker::run into output set `set`.
    void run_worker(int set, std::int64_t first, int n) {
        write_to(set);
        cpu::Worker w(code(), L, L.width);
        w.set_lanes(n, [&](int l) { return first + l; }, [](int) { return 0; });
        w.run(L.steps, cpu::Mode::Scan);
    }
    // The same lines through run_rows (whether it took them), the combine compiled (where it
    // can be: `compiled` tells) or not.
    bool run_rows(int set, std::int64_t first, int n, bool compile = true, bool* compiled = nullptr) {
        write_to(set);
        cpu::SegLocal seg(code(), L, 1, compile);
        if (compiled) *compiled = seg.rows_compiled();
        cpu::Worker tail(code(), L, L.width);
        cpu::LaneValues totals;
        return seg.run_rows(first, n, tail, totals);
    }
    // The same lines through run_cols (whether it took them).
    bool run_cols(int set, std::int64_t first, int n) {
        write_to(set);
        cpu::SegLocal seg(code(), L, 1);
        cpu::Worker rest(code(), L, L.width);
        return seg.run_cols(first, n, rest);
    }
    // Values of those lines that differ between the two sets.
    std::int64_t differing(std::int64_t first, int n) const {
        std::int64_t bad = 0;
        const bool across = L.d == 0;
        for (std::size_t o = 0; o < outs[0].size(); ++o) {
            const auto* x = static_cast<const std::uint32_t*>(outs[0][o].data());
            const auto* y = static_cast<const std::uint32_t*>(outs[1][o].data());
            for (std::int64_t l = first; l < first + n; ++l)
                for (std::int64_t t = 0; t < L.steps; ++t) {
                    std::int64_t i = across ? t * L.lines + l : l * L.steps + t;
                    bad += !same_value(x[i], y[i]);
                }
        }
        return bad;
    }
};

bool takes_rows(const CombineRef& f, std::int64_t steps, std::int64_t first, int n, bool epilogue,
                bool ordered) {
    std::mt19937_64 rng(140);
    return Rows(f, 64, steps, epilogue, ordered, rng).run_rows(0, first, n);
}

TEST(CpuSegRows, OrderedGroupsOfWholeVectorsAndSixteenStepsTakeRegistersOthersKeepWorker) {
    if (!cpu::mem_fns().seg_local) GTEST_SKIP() << "no AVX2";
    EXPECT_TRUE(takes_rows(affine_combine(), 4096, 0, 64, false, true));
    EXPECT_TRUE(takes_rows(affine_combine(), 16, 8, 32, false, true));
    EXPECT_FALSE(takes_rows(affine_combine(), 4096, 0, 12, false, true));  // not whole vectors
    EXPECT_FALSE(takes_rows(affine_combine(), 15, 0, 64, false, true));    // under 16 steps
    EXPECT_FALSE(takes_rows(affine_combine(), 512, 0, 64, true, true));    // an epilogue
}

TEST(CpuSegRows, ReassociatedRowsOfAVectorOrMoreTakeTheRowScanAnyNumberOfThem) {
    if (!cpu::mem_fns().row_scan) GTEST_SKIP() << "no AVX2";
    const int W = cpu::mem_fns().row_lanes;
    EXPECT_TRUE(takes_rows(affine_combine(), 4096, 0, 64, false, false));
    EXPECT_TRUE(takes_rows(affine_combine(), 4096, 5, 3, false, false));
    EXPECT_TRUE(takes_rows(every_op_combine(), W, 0, 1, false, false));  // a leaf passed through
    EXPECT_FALSE(takes_rows(affine_combine(), W - 1, 0, 64, false, false));  // under a vector
    EXPECT_FALSE(takes_rows(affine_combine(), 512, 0, 64, true, false));     // an epilogue
}

TEST(CpuSegRows, OrderedRowsEqualWorkersBitForBitWithSpecialValues) {
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
            Rows r(f, c.lines, c.steps, false, true, rng);
            r.run_worker(0, c.first, c.n);
            ASSERT_TRUE(r.run_rows(1, c.first, c.n)) << c.lines << "x" << c.steps;
            EXPECT_EQ(r.differing(c.first, c.n), 0) << c.lines << "x" << c.steps << " from "
                                                     << c.first << ", " << c.n << " lines";
        }
}

// Where the build has Xbyak, the row scan's machine code gives the interpreter's bits (4 rows
// at a time there, and one; 9 rows in one call of the code): every op, infinities, NaN, signed
// zeros, subnormals; one vector, tails of 1 and W - 1 steps, many vectors.
TEST(CpuSegRows, CompiledRowScansGiveTheInterpretersBits) {
    if (!cpu::mem_fns().row_scan) GTEST_SKIP() << "no AVX2";
    if (!cpu::seg_jit_built()) GTEST_SKIP() << "built without Xbyak";
    const int W = cpu::mem_fns().row_lanes;
    std::mt19937_64 rng(144);
    for (std::int64_t steps : {std::int64_t{W}, std::int64_t{W} + 1, 3 * std::int64_t{W} - 1, std::int64_t{1031}})
        for (const CombineRef& f : {affine_combine(), three_leaves_combine(), affine_max_combine(),
                                    max_min_combine(), integer_literals_combine(), every_op_combine()}) {
            Rows r(f, 9, steps, false, false, rng);
            bool compiled = false, interpreted = true;
            ASSERT_TRUE(r.run_rows(0, 0, 9, /*compile=*/true, &compiled)) << f->name;
            ASSERT_TRUE(r.run_rows(1, 0, 9, /*compile=*/false, &interpreted)) << f->name;
            // AVX2's 16 registers hold the row scan of two leaves, not of three or four.
            ASSERT_TRUE(compiled || (W == 8 && f->num_leaves() > 2)) << f->name;
            ASSERT_FALSE(interpreted);
            EXPECT_EQ(r.differing(0, 9), 0) << f->name << ", " << steps << " steps";
        }
}

// A chained line's spans (SegLocal::scan_span): a span's total, its vectors paired up
// (kSpanFold levels with 16 lanes, then the rest scanned), and its scan from a carry into the
// outputs give the interpreter's bits in machine code: every op, values near 1 (special ones
// would make every total NaN); spans of a vector, of a pairing's 16 vectors and one more, of
// 16 + 15 and of 77 vectors.
TEST(CpuSegRows, CompiledSpanTotalsAndScansFromACarryGiveTheInterpretersBits) {
    if (!cpu::mem_fns().row_scan) GTEST_SKIP() << "no AVX2";
    if (!cpu::seg_jit_built()) GTEST_SKIP() << "built without Xbyak";
    const int W = cpu::mem_fns().row_lanes;
    std::mt19937_64 rng(146);
    for (std::int64_t vectors : {1, 16, 17, 31, 77})
        for (const CombineRef& f : {affine_combine(), three_leaves_combine(), affine_max_combine(),
                                    max_min_combine(), integer_literals_combine(), every_op_combine()}) {
            Rows r(f, 2, vectors * W, false, false, rng, false, /*finite=*/true);
            const cpu::SegLocal compiled(r.code(), r.L, 1, true), interpreted(r.code(), r.L, 1, false);
            ASSERT_TRUE(compiled.spans() && interpreted.spans()) << f->name;
            // AVX2's 16 registers hold the row scan of two leaves, not of three or four.
            ASSERT_TRUE(compiled.spans_compiled() || (W == 8 && f->num_leaves() > 2)) << f->name;
            ASSERT_FALSE(interpreted.spans_compiled());
            const std::string what = cat(f->name, ", ", vectors, " vectors");
            std::uint64_t total[2][cpu::kSegMaxLeaves] = {}, last[2][cpu::kSegMaxLeaves] = {};
            for (int set = 0; set < 2; ++set) {
                const cpu::SegLocal& seg = set == 0 ? compiled : interpreted;
                r.write_to(set);
                seg.scan_span(0, 0, vectors, nullptr, false, 0, 0, total[set]);
                seg.scan_span(1, 0, vectors, total[set], true, 0, 0, last[set]);
            }
            for (int k = 0; k < f->num_leaves(); ++k) {
                EXPECT_TRUE(same_value(static_cast<std::uint32_t>(total[0][k]), static_cast<std::uint32_t>(total[1][k])))
                    << what << ", leaf " << k << "'s total";
                EXPECT_TRUE(same_value(static_cast<std::uint32_t>(last[0][k]), static_cast<std::uint32_t>(last[1][k])))
                    << what << ", leaf " << k << "'s last value";
            }
            EXPECT_EQ(r.differing(1, 1), 0) << what;
        }
}

// Whole scans along the last dim of random values through the row scan (every length class:
// under a vector, one, a vector and one, primes, 2^k +- 1; 1 to 130 lines; contiguous and
// strided) match the reference within rounding, and are bit-identical run to run.
TEST(CpuSegRows, ReassociatedWholeScansMatchTheReference) {
    std::mt19937_64 rng(145);
    for (auto sizes : {std::vector<std::int64_t>{64, 4096}, {130, 1000}, {7, 33}, {3, 16}, {5, 15},
                       {1, 17}, {9, 257}, {2, 20, 4099}, {1, 1}})
        for (Layout layout : {Layout::Contiguous, Layout::Strided})
            for (const CombineRef& f : {affine_combine(), affine_max_combine()}) {
                int rank = static_cast<int>(sizes.size());
                Inputs in;
                in.add(DType::F32, sizes, Values::Decay, layout, rng);  // the multipliers
                in.add(DType::F32, sizes, Values::Unit, layout, rng);
                ProgramRef p = scan_program(f, DType::F32, rank, rank - 1);
                std::string what = cat(f->name, " ", sizes.front(), "x", sizes.back(), " layout ", int(layout));
                std::vector<Tensor> want = run_reference(p, in);
                std::vector<Tensor> got = run_cpu(p, in, 2);
                for (std::size_t i = 0; i < want.size(); ++i)
                    EXPECT_EQ(compare(want[i], got[i], false, tolerance(DType::F32)), "") << what << " result " << i;
                std::vector<Tensor> again = run_cpu(p, in, 2);
                for (std::size_t i = 0; i < got.size(); ++i)
                    EXPECT_EQ(std::memcmp(got[i].data(), again[i].data(), got[i].numel() * 4), 0) << what;
            }
}

// Columns (lanes side by side, steps a row apart) through run_cols give Worker's bits, ordered
// or not: every op, special values; whole chunks of lanes and a rest for Worker, from 2 steps
// (the first is each lane's own) to 4 steps per pass and a shorter last pass.
TEST(CpuSegRows, ColumnsEqualWorkersBitForBitWithSpecialValues) {
    if (!cpu::mem_fns().seg_local || !cpu::seg_jit_built()) GTEST_SKIP() << "no machine code";
    std::mt19937_64 rng(146);
    for (std::int64_t lines : {128, 300, 1000})
        for (std::int64_t steps : {2, 5, 33})
            for (bool ordered : {false, true})
                for (const CombineRef& f : {affine_combine(), three_leaves_combine(), affine_max_combine(),
                                            max_min_combine(), integer_literals_combine(), every_op_combine()}) {
                    Rows r(f, lines, steps, false, ordered, rng, /*across=*/true);
                    std::string what = cat(f->name, " ", steps, "x", lines, ordered ? " ordered" : "");
                    r.run_worker(0, 0, static_cast<int>(lines));
                    // AVX2's 16 registers do not hold four leaves' program: Worker runs it.
                    const bool fits = cpu::mem_fns().row_lanes == 16 || f->num_leaves() < 4;
                    ASSERT_EQ(r.run_cols(1, 0, static_cast<int>(lines)), fits) << what;
                    if (fits) {
                        EXPECT_EQ(r.differing(0, static_cast<int>(lines)), 0) << what;
                    }
                }
}

TEST(CpuSegRows, ColumnsTakeMachineCodeFromOneChunkAndTwoStepsWithoutAnEpilogue) {
    if (!cpu::mem_fns().seg_local || !cpu::seg_jit_built()) GTEST_SKIP() << "no machine code";
    std::mt19937_64 rng(147);
    EXPECT_TRUE(Rows(affine_combine(), 128, 2, false, false, rng, true).run_cols(0, 0, 128));
    EXPECT_FALSE(Rows(affine_combine(), 128, 1, false, false, rng, true).run_cols(0, 0, 128));  // one step
    EXPECT_FALSE(Rows(affine_combine(), 7, 64, false, false, rng, true).run_cols(0, 0, 7));     // under a chunk
    EXPECT_FALSE(Rows(affine_combine(), 128, 64, true, false, rng, true).run_cols(0, 0, 128));  // an epilogue
    EXPECT_FALSE(Rows(affine_combine(), 128, 64, false, false, rng).run_cols(0, 0, 128));  // rows
}

// Multipliers of +-1 and small integers: exact in any association, so whole scans equal the
// reference bit for bit, ordered or not, for any thread count; large outputs stream (rows
// 32-byte aligned or, at 4100 steps, not).
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

// The same across rows: along dim 0 and a middle dim, chunks of columns and rests, large
// outputs (rows on whole vectors or, at 4100 columns, not; streamed, with AVX2 through staging
// blocks whose last one is partly filled at 1104 columns), an odd number of steps, strided
// inputs.
TEST(CpuSegRows, WholeScansAcrossRowsEqualTheReferenceBitwise) {
    std::mt19937_64 rng(148);
    for (auto [sizes, dim] : {std::pair{std::vector<std::int64_t>{4099, 1104}, 0}, {{33, 1000}, 0}, {{2, 131}, 0},
                              {{1, 4099}, 0}, {{3, 17, 515}, 1}, {{1000, 4100}, 0}, {{257, 4104}, 0}})
        for (Layout layout : {Layout::Contiguous, Layout::Strided})
            for (bool h_only : {false, true}) {
                if (h_only && layout == Layout::Strided) continue;  // time (ASan)
                int rank = static_cast<int>(sizes.size());
                Inputs in;
                in.add(DType::F32, sizes, Values::SmallInts, layout, rng);
                in.add(DType::F32, sizes, Values::SmallInts, layout, rng);
                auto* a = static_cast<float*>(in.storage[0].data());
                for (std::int64_t j = 0; j < in.storage[0].numel(); ++j) a[j] = rng() & 1 ? 1.0f : -1.0f;
                expect_bitwise(scan_program(affine_combine(), DType::F32, rank, dim, false, false, h_only ? 1 : -1), in,
                               cat(sizes.front(), "x", sizes.back(), " dim ", dim, " layout ", int(layout),
                                   h_only ? " h" : " both"),
                               {1, 2, 3});
            }
}

}  // namespace
}  // namespace scanc::cpu_test
