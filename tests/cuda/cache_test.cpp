// The kernel cache: one compilation per program whatever the sizes, binaries on disk under
// SCANC_CACHE_DIR, and the source beside them for reading.
#include <cstdlib>
#include <filesystem>

#include "cache.h"
#include "gpu_test_util.h"

namespace scanc {
namespace {

namespace fs = std::filesystem;

fs::path fresh_cache_dir() {
    fs::path dir = fs::temp_directory_path() / cat("scanc-cache-test-", getpid());
    fs::remove_all(dir);
    setenv("SCANC_CACHE_DIR", dir.c_str(), 1);
    return dir;
}

TEST(CudaCache, DirectoryFollowsTheEnvironment) {
    setenv("SCANC_CACHE_DIR", "/tmp/somewhere-else", 1);
    EXPECT_EQ(cuda::cache_dir(), "/tmp/somewhere-else");
    unsetenv("SCANC_CACHE_DIR");
    setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
    EXPECT_EQ(cuda::cache_dir(), "/tmp/xdg/scanc");
    unsetenv("XDG_CACHE_HOME");
}

TEST(CudaCache, OneProgramOverTwentyShapesCompilesOnce) {
    SKIP_WITHOUT_GPU();
    fs::path dir = fresh_cache_dir();
    auto program = cuda_test::parse_program(R"(
combine affine(a1, b1 | a2, b2) { return a1 * a2, a2 * b1 + b2 }
program p(a: f32[B, L, D], b: f32[B, L, D]) { (_, h) = scan affine(a, b) dim=1
  return h }
)");
    auto before = cuda_cache_stats();
    auto exe = CudaBackend().compile(program);
    auto after_compile = cuda_cache_stats();
    EXPECT_EQ(after_compile.compiles - before.compiles, 1);
    std::mt19937_64 rng(7);
    for (int i = 0; i < 20; ++i) {
        std::int64_t b = 1 + i % 3, l = 1 + 397 * i, d = 1 + (i * 7) % 40;
        std::vector<Tensor> in = {cuda_test::random_tensor(DType::F32, {b, l, d}, rng),
                                  cuda_test::random_tensor(DType::F32, {b, l, d}, rng)};
        exe->run(cuda_test::views(in));
    }
    auto after_runs = cuda_cache_stats();
    EXPECT_EQ(after_runs.compiles, after_compile.compiles);
    EXPECT_EQ(after_runs.disk_hits, after_compile.disk_hits);
    int cubins = 0, sources = 0;
    for (auto& e : fs::directory_iterator(dir)) {
        cubins += e.path().extension() == ".cubin";
        sources += e.path().extension() == ".cu";
    }
    EXPECT_EQ(cubins, 1);
    EXPECT_EQ(sources, 1);
    // A second executable of the same program finds the loaded module.
    CudaBackend().compile(program);
    EXPECT_EQ(cuda_cache_stats().compiles, after_compile.compiles);
    fs::remove_all(dir);
    unsetenv("SCANC_CACHE_DIR");
}

}  // namespace
}  // namespace scanc
