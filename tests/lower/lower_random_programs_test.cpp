// lower_scans on random programs (tests/common: every dtype, combines of one to four leaves and
// of captured values, prologues, epilogues, reverse, awkward extents): Hillis-Steele to a bound
// at or above each extent, and work-efficient at the extents given. Each lowered program passes
// check_lowered, and the reference executor runs it to the original's results.
#include "lower_helpers.h"
#include "random_programs.h"

namespace scanc::lower_test {
namespace {

TEST(LowerRandomPrograms, BothAlgorithmsGiveTheScansResults) {
    test::for_each_random_program(20261201, 150, [](const test::RandomProgram& p, std::mt19937_64& rng) {
        const auto want = test::run_reference(p.program, p.inputs);
        LowerOptions bounded, fixed;
        bounded.algorithm = ScanAlgorithm::HillisSteele;
        for (const auto& [name, n] : p.sizes)
            bounded.bounds.emplace_back(name, std::max<std::int64_t>(n, 1) + static_cast<std::int64_t>(rng() % 3));
        fixed.algorithm = ScanAlgorithm::WorkEfficient;
        fixed.sizes = p.sizes;
        for (const LowerOptions& o : {bounded, fixed}) {
            SCOPED_TRACE(algorithm_name(o.algorithm));
            const ProgramRef lowered = lower_scans(*p.program, o);
            check_lowered(*lowered, false, p.program.get());  // no scan, no constant pad
            EXPECT_EQ(test::compare_results(p, want, test::run_reference(lowered, p.inputs)), "");
        }
    });
}

}  // namespace
}  // namespace scanc::lower_test
