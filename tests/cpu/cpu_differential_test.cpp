// Differential tests: random programs (combines, leaves, captured values, prologues,
// epilogues, reverse), dtypes, shapes, dims and layouts, on the CPU backend against the
// reference executor.
#include <gtest/gtest.h>

#include "cpu_test_util.h"
#include "random_programs.h"

namespace scanc::cpu_test {
namespace {

TEST(CpuDifferential, RandomProgramsMatchTheReference) {
    // Each at a random thread count (1-3), then again at that count: the same bits; and ordered,
    // the reference's bits.
    test::for_each_random_program(20261129, 300, [](const test::RandomProgram& p, std::mt19937_64& rng) {
        const int threads = 1 + static_cast<int>(rng() % 3);
        SCOPED_TRACE(cat("threads=", threads));
        const auto want = run_reference(p.program, p.inputs), actual = run_cpu(p.program, p.inputs, threads);
        ASSERT_EQ(test::compare_results(p, want, actual), "");
        ASSERT_EQ(test::compare_results(p, actual, run_cpu(p.program, p.inputs, threads), true), "") << "rerun";
        // Ordered: every line combined strictly in order, so floats too give the reference's
        // bits, transcendental prologues and reassociating combines included.
        ASSERT_EQ(test::compare_results(p, want, run_cpu(p.program, p.inputs, threads, true), true), "") << "ordered";
    });
}

}  // namespace
}  // namespace scanc::cpu_test
