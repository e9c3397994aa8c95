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
    std::mt19937_64 rng(20261129);
    for (int i = 0; i < 300; ++i) {
        const test::RandomProgram p = test::random_program(rng);
        const int threads = 1 + static_cast<int>(rng() % 3);
        SCOPED_TRACE(cat("case ", i, ": ", p.what, " threads=", threads));
        const auto want = run_reference(p.program, p.inputs), actual = run_cpu(p.program, p.inputs, threads);
        ASSERT_EQ(test::compare_results(p, want, actual), "");
        const auto again = run_cpu(p.program, p.inputs, threads);
        for (std::size_t r = 0; r < actual.size(); ++r) ASSERT_EQ(compare(actual[r], again[r], true, 0), "") << "rerun, result " << r;
        // Ordered: every line combined strictly in order, so floats too give the reference's
        // bits, transcendental prologues and reassociating combines included.
        const auto ordered = run_cpu(p.program, p.inputs, threads, true);
        ASSERT_EQ(test::compare_results(p, want, ordered, true), "") << "ordered";
    }
}

}  // namespace
}  // namespace scanc::cpu_test
