// The vector rows kernels (K::VEC): rows whose length is a multiple of four, aligned to four
// elements, read and written four elements per access. Against the reference executor in every
// dtype, both directions, one-tile rows that share a tile, rows of several tiles with a partial
// last one, values broadcast along the row, epilogues that read inputs, and the scalar kernels
// that take over where a row is not aligned.
#include "gpu_test_util.h"

namespace scanc {
namespace {

using cuda_test::expect_matches_reference;
using cuda_test::Fill;
using cuda_test::parse_program;
using cuda_test::random_tensor;

class CudaVectorRows : public ::testing::Test {
protected:
    void SetUp() override {
        SKIP_WITHOUT_GPU();
        setenv("SCANC_CUDA_POISON", "1", 1);  // unwritten outputs show as NaN / all-ones bits
        setenv("SCANC_CUDA_TUNING", "vec=1", 1);  // the table's choice on sm_90, asked for on any GPU
    }
    void TearDown() override { unsetenv("SCANC_CUDA_TUNING"); }
    cuda_test::SeededRandom random;
    std::mt19937_64& rng = random.rng;
};

// Rows of 4 to 4096 (at most one tile: shared tiles, or the resident kernel where it takes
// them), several look-back tiles with a partial last one, and 4099 (not whole vectors: the
// scalar kernel).
const std::pair<int, int> kShapes[] = {{3, 4}, {9, 1024}, {5, 2048}, {4, 4096}, {2, 3 * 4096 + 4 * 37}, {3, 4099}};

TEST_F(CudaVectorRows, SumsMatchInEveryDtypeAndBothDirections) {
    for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64, DType::U8}) {
        SCOPED_TRACE(dtype_name(t));
        auto program = parse_program(cat("combine add(a | b) { return a + b }\nprogram p(x: ", dtype_name(t),
                                         "[M, N]) {\n  y = scan add(x) dim=1\n  z = scan add(x) dim=1 reverse\n",
                                         "  return y, z\n}"));
        // small integers: every partial sum is exact in the compute type, so any order agrees
        Fill fill{true, 0, 3};
        for (auto [m, n] : kShapes) {
            SCOPED_TRACE(::testing::PrintToString(std::pair{m, n}));
            expect_matches_reference(program, {random_tensor(t, {m, n}, rng, fill)});
        }
    }
}

TEST_F(CudaVectorRows, BroadcastCoefficientsAndEpiloguesThatReadInputsMatch) {
    // g is constant along each row (read once per vector), x and the epilogue's x are vectors.
    auto program = parse_program(R"(
combine affine(a1, b1 | a2, b2) { return a1 * a2, a2 * b1 + b2 }
program p(x: f32[M, N], g: f32[M, 1]) {
  (_, h) = scan affine(g * sigmoid(x), x) dim=1
  (_, r) = scan affine(g * sigmoid(x), x) dim=1 reverse
  return h * x + g, r
}
)");
    for (auto [m, n] : kShapes) {
        SCOPED_TRACE(::testing::PrintToString(std::pair{m, n}));
        expect_matches_reference(program,
                                 {random_tensor(DType::F32, {m, n}, rng, Fill{false, -1, 1}),
                                  random_tensor(DType::F32, {m, 1}, rng, Fill{false, 0.5, 1})},
                                 1e-4, 1e-5);
    }
}

TEST_F(CudaVectorRows, RowsThatStartOffAVectorBoundaryTakeTheScalarKernel) {
    // A device view one element into its buffer: rows of 4096 that start 4 bytes past 16.
    auto program = parse_program(R"(
combine add(a | b) { return a + b }
program p(x: f32[M, N]) { y = scan add(x) dim=1
  return y }
)");
    const std::int64_t m = 3, n = 4096;
    Tensor host = random_tensor(DType::F32, {m * n + 1}, rng);
    TensorView rows = host.view();
    rows.data = static_cast<float*>(host.data()) + 1;
    rows.sizes = {m, n};
    rows.strides = {n, 1};
    auto want = ReferenceBackend().compile(program)->run(std::vector<TensorView>{rows});
    cuda_test::DeviceCopy device(host);
    auto got = CudaBackend().compile(program)->run(std::vector<TensorView>{device.on_device(rows)});
    EXPECT_TRUE(cuda_test::close(cuda_test::to_host(got[0]), want[0], 0, 0));
}

}  // namespace
}  // namespace scanc
