// A scan from a carry makes only the leaves its outputs need (StageCode::scan_combine): which
// leaves a stage keeps, and that programs returning some of their leaves give the reference's
// results on every path the CPU backend runs scans by (lines, lines split across threads,
// fix-ups, chained blocks, columns), where a leaf left out must never be read.
#include <gtest/gtest.h>

#include "cpu_test_util.h"
#include "plan.h"

namespace scanc::cpu_test {
namespace {

// The composition of affine maps in the other order: b's combine reads a's carry, so a scan
// that returns b alone still needs a at every step.
CombineRef composed_combine() {
    using dsl::Exprs;
    return dsl::trace_combine("composed", 2, 0, [](auto& l, auto& r, auto&) {
        return Exprs{l[0] * r[0], l[1] + l[0] * r[1]};
    });
}

const cpu::StageCode& scan_code(const cpu::Plan& plan) {
    for (const cpu::Stage& s : plan.stages)
        if (s.has_scan) return s.code;
    ADD_FAILURE() << "no scan stage";
    return plan.stages.at(0).code;
}

TEST(CpuDeadLeaves, AnAffineScanReturningHAloneStopsMultiplyingTheRunningProduct) {
    cpu::Plan plan = cpu::make_plan(*scan_program(affine_combine(), DType::F32, 2, 1, false, false, 1));
    const cpu::StageCode& code = scan_code(plan);
    ASSERT_TRUE(code.scan_prunes);
    EXPECT_EQ(code.combine.size(), 2u);       // a1 * a2, and a2 * b1 + b2 as one multiply-add
    EXPECT_EQ(code.scan_combine.size(), 1u);  // the multiply-add alone
}

TEST(CpuDeadLeaves, ScansKeepEveryLeafTheirOutputsNeedStepAfterStep) {
    // Both leaves returned, and b returned by a combine whose b reads a's carry.
    for (auto [combine, only] : {std::pair{affine_combine(), -1}, std::pair{composed_combine(), 1}}) {
        cpu::Plan plan = cpu::make_plan(*scan_program(combine, DType::F32, 2, 1, false, false, only));
        EXPECT_FALSE(scan_code(plan).scan_prunes) << combine->name << " returning " << only;
    }
}

TEST(CpuDeadLeaves, ScansReturningOneLeafMatchTheReferenceOnEveryPath) {
    // Running products of [0.5, 1) decay through the subnormals to zero within a few hundred
    // steps, long before most of these lines end.
    struct Case {
        std::vector<std::int64_t> shape;
        int dim;
    };
    const Case cases[] = {{{0}, 0},          {{1}, 0},          {{1021}, 0},       {{65537}, 0},
                          {{400009}, 0},     {{3, 4093}, 1},    {{40, 2049}, 1},   {{2049, 3}, 0},
                          {{4097, 257}, 0},  {{4, 300, 256}, 1}, {{2, 65, 3001}, 1}, {{5, 2, 7}, 1}};
    std::mt19937_64 rng(33);
    for (auto [combine, only] : {std::pair{affine_combine(), 1}, std::pair{affine_combine(), 0},
                                 std::pair{composed_combine(), 1}})
        for (const Case& c : cases)
            for (bool reverse : {false, true}) {
                ProgramRef p = scan_program(combine, DType::F32, static_cast<int>(c.shape.size()), c.dim,
                                            reverse, false, only);
                Inputs in;
                in.add(DType::F32, c.shape, Values::Decay, Layout::Contiguous, rng);
                in.add(DType::F32, c.shape, Values::Unit, c.shape.size() > 1 ? Layout::Transposed : Layout::Strided,
                       rng);
                auto want = run_reference(p, in);
                for (int threads : {1, 2, 3, 4}) {
                    auto got = run_cpu(p, in, threads);
                    ASSERT_EQ(got.size(), 1u);
                    EXPECT_EQ(compare(want[0], got[0], false, tolerance(DType::F32)), "")
                        << combine->name << " leaf " << only << " of " << testing::PrintToString(c.shape)
                        << " along " << c.dim << (reverse ? " reversed" : "") << ", " << threads << " threads";
                }
            }
}

}  // namespace
}  // namespace scanc::cpu_test
