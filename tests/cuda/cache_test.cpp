// The kernel cache: one compilation per program whatever the sizes, binaries on disk under
// SCANC_CACHE_DIR, and the source beside them for reading.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "cache.h"
#include "codegen/codegen.h"
#include "gpu_test_util.h"

namespace scanc {
namespace {

namespace fs = std::filesystem;

using cuda_test::fresh_cache_dir;

TEST(CudaCache, DirectoryFollowsTheEnvironment) {
    setenv("SCANC_CACHE_DIR", "/tmp/somewhere-else", 1);
    EXPECT_EQ(cuda::cache_dir(), "/tmp/somewhere-else");
    unsetenv("SCANC_CACHE_DIR");
    setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
    EXPECT_EQ(cuda::cache_dir(), "/tmp/xdg/scanc");
    unsetenv("XDG_CACHE_HOME");
}

TEST(CudaCache, PackedBinariesComeBackWholeAndATornFileComesBackAsNone) {
    std::vector<cuda::NvrtcOutput> outs(3);
    outs[0].binary = {'a', 'b', 'c'};
    outs[2].binary = {'\0', 'x'};  // an empty entry between two others
    std::string packed = cuda::pack_binaries(outs);
    EXPECT_EQ(cuda::unpack_binaries(packed, 3), (std::vector<std::string>{"abc", "", std::string("\0x", 2)}));
    EXPECT_TRUE(cuda::unpack_binaries(packed, 2).empty());                   // another entry count
    EXPECT_TRUE(cuda::unpack_binaries(packed.substr(0, packed.size() - 1), 3).empty());  // torn
    EXPECT_TRUE(cuda::unpack_binaries(packed + "z", 3).empty());                // trailing bytes
    EXPECT_TRUE(cuda::unpack_binaries("", 3).empty());                          // missing
}

// The number of kernels a cached program's binaries hold, read back from the disk cache (its
// .cubins and the source beside it), or -1 unless the folder holds exactly one program.
int kernels_on_disk(const fs::path& dir) {
    std::vector<fs::path> cubins;
    for (auto& e : fs::directory_iterator(dir))
        if (e.path().extension() == ".cubins") cubins.push_back(e.path());
    if (cubins.size() != 1) return -1;
    auto read = [](const fs::path& p) {
        std::ifstream in(p, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(in), {});
    };
    fs::path source = cubins[0];
    source.replace_extension(".cu");
    const int entries = static_cast<int>(cuda::kernel_entry_names(read(source)).size());
    return static_cast<int>(cuda::unpack_binaries(read(cubins[0]), entries).size());
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
    auto reference = ReferenceBackend().compile(program);
    auto after_compile = cuda_cache_stats();
    EXPECT_EQ(after_compile.compiles - before.compiles, 1);
    // The shapes take rows and cols kernels alike: those the first run did not launch are still
    // compiling in the background when the next runs ask for them.
    std::mt19937_64 rng(7);
    for (int i = 0; i < 20; ++i) {
        std::int64_t b = 1 + i % 3, l = 1 + 397 * i, d = 1 + (i * 7) % 40;
        std::vector<Tensor> in = {cuda_test::random_tensor(DType::F32, {b, l, d}, rng, {false, 0.5, 1}),
                                  cuda_test::random_tensor(DType::F32, {b, l, d}, rng, {false, -1, 1})};
        auto got = exe->run(cuda_test::views(in));
        auto want = reference->run(cuda_test::views(in));
        EXPECT_TRUE(cuda_test::close(got[0], want[0], 1e-4, 1e-4)) << b << "x" << l << "x" << d;
    }
    cuda_finish_compiles();
    auto after_runs = cuda_cache_stats();
    EXPECT_EQ(after_runs.compiles, after_compile.compiles);
    EXPECT_EQ(after_runs.disk_hits, after_compile.disk_hits);
    // The compile's timing names one of its kernels, which took no longer than the whole compile.
    EXPECT_EQ(after_runs.slowest_kernel.rfind("scanc_", 0), 0u) << after_runs.slowest_kernel;
    EXPECT_GT(after_runs.slowest_kernel_seconds, 0);
    EXPECT_LE(after_runs.slowest_kernel_seconds, after_runs.last_compile_seconds);
    // One program on disk, every kernel of it, with its source beside it.
    EXPECT_GE(kernels_on_disk(dir), 4);
    // A second executable of the same program finds it loaded.
    CudaBackend().compile(program);
    EXPECT_EQ(cuda_cache_stats().compiles, after_compile.compiles);
    fs::remove_all(dir);
    unsetenv("SCANC_CACHE_DIR");
}

TEST(CudaCache, ABackgroundCompileWritesWhereTheCacheFolderWasWhenItBegan) {
    SKIP_WITHOUT_GPU();
    fs::path began = fresh_cache_dir();
    auto program = cuda_test::parse_program(R"(
combine add(a | b) { return a + b }
program moves_its_cache_folder(x: f32[N]) { y = scan add(x) dim=0
  return y }
)");  // a name no other test uses: its source is new to this process's module cache
    std::mt19937_64 rng(5);
    std::vector<Tensor> in = {cuda_test::random_tensor(DType::F32, {1000}, rng)};
    CudaBackend().compile(program)->run(cuda_test::views(in));  // the other kernels compile on
    fs::path later = began;
    later += "-later";
    fs::remove_all(later);
    setenv("SCANC_CACHE_DIR", later.c_str(), 1);
    cuda_finish_compiles();
    EXPECT_GE(kernels_on_disk(began), 4);
    EXPECT_FALSE(fs::exists(later));
    fs::remove_all(began);
    unsetenv("SCANC_CACHE_DIR");
}

TEST(CudaCache, AProcessThatExitsRightAfterItsFirstRunLeavesTheWholeProgramOnDisk) {
    // The first run waits for the kernel it launches only; the exit waits for the others, so the
    // next process finds the whole program on disk. The child (a new process running this test)
    // shares the parent's cache folder.
    SKIP_WITHOUT_GPU();
    const char* inherited = std::getenv("SCANC_TEST_SHARED_CACHE");
    fs::path dir = inherited ? fs::path(inherited) : fresh_cache_dir();
    setenv("SCANC_TEST_SHARED_CACHE", dir.c_str(), 1);
    setenv("SCANC_CACHE_DIR", dir.c_str(), 1);
    auto program = cuda_test::parse_program(R"(
combine add(a | b) { return a + b }
program exits_after_its_first_run(x: f32[N, T]) { y = scan add(x) dim=1
  return y }
)");  // a name no other test uses: the parent has not compiled it
    GTEST_FLAG_SET(death_test_style, "threadsafe");  // a new process: CUDA does not survive fork()
    EXPECT_EXIT(
        {
            std::mt19937_64 rng(3);
            std::vector<Tensor> in = {cuda_test::random_tensor(DType::F32, {3, 1000}, rng)};
            CudaBackend().compile(program)->run(cuda_test::views(in));
            std::exit(0);
        },
        ::testing::ExitedWithCode(0), "");
    auto plan = cuda::make_plan(program);
    const int kernels = static_cast<int>(
        cuda::kernel_entry_names(cuda::generate_source(plan, 90, cuda::contiguous_layout(plan))).size());
    EXPECT_GE(kernels, 4);
    EXPECT_EQ(kernels_on_disk(dir), kernels);
    auto before = cuda_cache_stats();
    CudaBackend().compile(program);
    EXPECT_EQ(cuda_cache_stats().disk_hits - before.disk_hits, 1);
    EXPECT_EQ(cuda_cache_stats().compiles, before.compiles);
    fs::remove_all(dir);
    unsetenv("SCANC_CACHE_DIR");
    unsetenv("SCANC_TEST_SHARED_CACHE");
}

TEST(CudaCache, RowsWithOtherStridesCompileOneMoreLayoutClassOnce) {
    // Contiguous rows run with their steps compiled in; rows read with strides that depend on the
    // sizes (a transposed view) need the class whose steps are kernel arguments: one more
    // compile, once, whatever the sizes; contiguous inputs go back to the first module.
    SKIP_WITHOUT_GPU();
    fs::path dir = fresh_cache_dir();
    auto program = cuda_test::parse_program(R"(
combine add(a | b) { return a + b }
program rows_in_two_layouts(x: f32[M, N]) { y = scan add(x) dim=1
  return y }
)");  // a name no other test uses: its source is new to this process's module cache
    std::mt19937_64 rng(11);
    const int first = cuda_cache_stats().compiles;
    auto exe = CudaBackend().compile(program);
    auto reference = ReferenceBackend().compile(program);
    auto expect_scan = [&](TensorView host_view, int compiles_since_first) {
        Tensor host = cuda_test::random_tensor(DType::F32, {host_view.sizes[0] * host_view.sizes[1]}, rng);
        host_view.data = host.data();
        cuda_test::DeviceCopy device(host);
        auto want = reference->run(std::vector<TensorView>{host_view});
        auto got = exe->run(std::vector<TensorView>{device.on_device(host_view)});
        EXPECT_TRUE(cuda_test::close(cuda_test::to_host(got[0]), want[0], 0, 0))
            << host_view.sizes[0] << "x" << host_view.sizes[1] << " with strides " << host_view.strides[0] << ", "
            << host_view.strides[1];
        EXPECT_EQ(cuda_cache_stats().compiles - first, compiles_since_first);
    };
    auto shaped = [](std::int64_t m, std::int64_t n, std::int64_t sm, std::int64_t sn) {
        TensorView v;
        v.dtype = DType::F32;
        v.sizes = {m, n};
        v.strides = {sm, sn};
        return v;
    };
    expect_scan(shaped(7, 5003, 5003, 1), 1);     // contiguous: the class compiled first
    expect_scan(shaped(300, 4099, 1, 300), 2);    // transposed: steps as arguments
    expect_scan(shaped(17, 20000, 1, 17), 2);     // another transposed size: the same class
    expect_scan(shaped(64, 131, 131, 1), 2);      // contiguous again: the first module
    fs::remove_all(dir);
    unsetenv("SCANC_CACHE_DIR");
}

}  // namespace
}  // namespace scanc
