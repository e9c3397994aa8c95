// Quick builds (cache.h: QuickBuilds): a first run launches kernels NVRTC built with less
// optimisation while their full builds compile in the background, and later runs take the full
// builds. Both builds must give the same bits, or results would depend on when a run came.
#include <cstdlib>
#include <filesystem>

#include "cache.h"
#include "gpu_test_util.h"
#include "random_programs.h"

namespace scanc {
namespace {

// Sets SCANC_CUDA_QUICK for the life of the object.
class QuickSetting {
public:
    explicit QuickSetting(const char* value) { setenv("SCANC_CUDA_QUICK", value, 1); }
    ~QuickSetting() { unsetenv("SCANC_CUDA_QUICK"); }
};

// An empty disk cache for the life of the object, so that programs compile here.
class FreshCache {
public:
    FreshCache() : dir_(cuda_test::fresh_cache_dir()) {}
    ~FreshCache() {
        cuda_finish_compiles();
        std::filesystem::remove_all(dir_);
        unsetenv("SCANC_CACHE_DIR");
    }

private:
    std::filesystem::path dir_;
};

// An affine scan along a middle dim (the cols kernel) with an epilogue of its own, so that its
// kernels are new to this process whichever tests ran before.
ProgramRef affine_program(const std::string& name) {
    return cuda_test::parse_program(cat(R"(
combine affine(a1, b1 | a2, b2) { return a1 * a2, a2 * b1 + b2 }
program )", name, R"((a: f32[B, L, D], b: f32[B, L, D]) {
  (_, h) = scan affine(a, b) dim=1
  return h * 0.5 - b
}
)"));
}

std::vector<Tensor> affine_inputs(std::mt19937_64& rng) {
    return {cuda_test::random_tensor(DType::F32, {3, 1009, 7}, rng, {false, 0.5, 1}),
            cuda_test::random_tensor(DType::F32, {3, 1009, 7}, rng, {false, -1, 1})};
}

TEST(CudaQuickBuilds, TheSettingReadsOneZeroOrAlwaysAndRefusesAnythingElse) {
    {
        QuickSetting s("");
        EXPECT_EQ(cuda::quick_builds(), cuda::QuickBuilds::first);
    }
    {
        QuickSetting s("0");
        EXPECT_EQ(cuda::quick_builds(), cuda::QuickBuilds::off);
    }
    {
        QuickSetting s("always");
        EXPECT_EQ(cuda::quick_builds(), cuda::QuickBuilds::always);
    }
    {
        QuickSetting s("1");
        EXPECT_EQ(cuda::quick_builds(), cuda::QuickBuilds::first);
    }
    QuickSetting s("sometimes");
    try {
        cuda::quick_builds();
        ADD_FAILURE() << "no error";
    } catch (const RuntimeError& e) {
        EXPECT_NE(std::string(e.what()).find("SCANC_CUDA_QUICK=sometimes: expected 1, 0 or always"),
                  std::string::npos) << e.what();
    }
}

TEST(CudaQuickBuilds, QuickBuildsGiveTheFullBuildsBitsOnRandomPrograms) {
    SKIP_WITHOUT_GPU();
    // Every dtype, combine, prologue (transcendental ones included) and layout of the random
    // programs: the quick build's results must be the full build's, bit for bit.
    test::for_each_random_program(20261202, 40, [](const test::RandomProgram& p, std::mt19937_64&) {
        std::vector<Tensor> quick, full;
        {
            QuickSetting s("always");
            quick = CudaBackend().compile(p.program)->run(p.inputs.views);
        }
        {
            QuickSetting s("0");
            full = CudaBackend().compile(p.program)->run(p.inputs.views);
        }
        EXPECT_EQ(test::compare_results(p, full, quick, /*bitwise=*/true), "") << "quick against full";
        EXPECT_EQ(test::compare_results(p, test::run_reference(p.program, p.inputs), full), "");
    });
}

TEST(CudaQuickBuilds, AFirstRunLaunchesQuickBuildsAndRunsAfterTheFullBuildsAreDoneLaunchThose) {
    SKIP_WITHOUT_GPU();
    FreshCache cache;
    std::mt19937_64 rng(31);
    const std::vector<Tensor> in = affine_inputs(rng);
    const ProgramRef program = affine_program("quick_first");
    const CudaCacheStats before = cuda_cache_stats();
    auto exe = CudaBackend().compile(program);
    const std::vector<Tensor> first = exe->run(cuda_test::views(in));
    const CudaCacheStats after_first = cuda_cache_stats();
    const int quick = after_first.quick_builds - before.quick_builds;
    EXPECT_GE(quick, 1) << "the cols kernel";
    EXPECT_EQ(after_first.upgrades, before.upgrades);
    cuda_finish_compiles();
    const std::vector<Tensor> later = exe->run(cuda_test::views(in));
    const CudaCacheStats after_later = cuda_cache_stats();
    EXPECT_EQ(after_later.upgrades - before.upgrades, quick);
    EXPECT_EQ(after_later.quick_builds, after_first.quick_builds);
    EXPECT_EQ(after_later.compiles - before.compiles, 1) << "one compilation, quick builds aside";
    EXPECT_TRUE(cuda_test::close(later[0], first[0], 0, 0)) << "the same bits from either build";
    const std::vector<Tensor> want = ReferenceBackend().compile(program)->run(cuda_test::views(in));
    EXPECT_TRUE(cuda_test::close(later[0], want[0], 1e-5, 1e-5));
}

TEST(CudaQuickBuilds, WithQuickBuildsOffAFirstRunWaitsForTheFullBuilds) {
    SKIP_WITHOUT_GPU();
    FreshCache cache;
    QuickSetting off("0");
    std::mt19937_64 rng(32);
    const std::vector<Tensor> in = affine_inputs(rng);
    const CudaCacheStats before = cuda_cache_stats();
    CudaBackend().compile(affine_program("quick_off"))->run(cuda_test::views(in));
    const CudaCacheStats after = cuda_cache_stats();
    EXPECT_EQ(after.quick_builds, before.quick_builds);
    EXPECT_EQ(after.compiles - before.compiles, 1);
}

}  // namespace
}  // namespace scanc
