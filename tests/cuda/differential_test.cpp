// The cuda backend against the reference executor on fresh random inputs: every layout (1-D,
// rows, strided dims, few long rows), both directions, several leaves, captured values, every
// dtype, awkward sizes (0, 1, primes, 2^k +- 1, more than one tile), strided device inputs.
// Integer-valued inputs make float sums exact, so most comparisons are bitwise.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "driver.h"
#include "gpu_test_util.h"
#include "random_programs.h"

namespace scanc {
namespace {

using cuda_test::close;
using cuda_test::expect_matches_reference;
using cuda_test::Fill;
using cuda_test::parse_program;
using cuda_test::random_tensor;

class CudaDifferential : public ::testing::Test {
protected:
    void SetUp() override {
        SKIP_WITHOUT_GPU();
        setenv("SCANC_CUDA_POISON", "1", 1);  // unwritten outputs show as NaN / all-ones bits
    }
    cuda_test::SeededRandom random;
    std::mt19937_64& rng = random.rng;

    // Program `text` over x, a, b: f32[M, N] (a: affine coefficients in [0.5, 1], b: offsets in
    // [-1, 1]) at each shape, against the reference.
    void expect_rows_match(const char* text, std::initializer_list<std::pair<int, int>> shapes) {
        auto program = parse_program(text);
        Fill coefficient{false, 0.5, 1.0}, offset{false, -1, 1};
        for (auto [m, n] : shapes) {
            SCOPED_TRACE(::testing::PrintToString(std::pair{m, n}));
            expect_matches_reference(program,
                                     {random_tensor(DType::F32, {m, n}, rng),
                                      random_tensor(DType::F32, {m, n}, rng, coefficient),
                                      random_tensor(DType::F32, {m, n}, rng, offset)},
                                     1e-4, 1e-5);
        }
    }

    // A reverse smooth max along the rows of x: f32[rows, n] whose temperature tau: f32[rows, 1]
    // is a captured value read per row, against the reference.
    void expect_captured_rows_match(std::initializer_list<std::pair<int, int>> shapes) {
        auto program = parse_program(R"(
combine smooth_max(x1 | x2; tau) { return tau * logaddexp(x1 / tau, x2 / tau) }
program p(x: f32[N, T], tau: f32[N, 1]) {
  y = scan smooth_max(x) dim=1 reverse with (tau)
  return y
}
)");
        Fill positive{false, 0.5, 2.0}, real{false, -3, 3};
        for (auto [rows, n] : shapes) {
            SCOPED_TRACE(::testing::PrintToString(std::pair{rows, n}));
            expect_matches_reference(program,
                                     {random_tensor(DType::F32, {rows, n}, rng, real),
                                      random_tensor(DType::F32, {rows, 1}, rng, positive)},
                                     1e-4, 1e-4);
        }
    }
};

// Sums both ways and the affine recurrence along the rows of x, a, b.
constexpr const char* kRowScans = R"(
combine add(a | b) { return a + b }
combine affine(a1, b1 | a2, b2) { return a1 * a2, a2 * b1 + b2 }
program p(x: f32[M, N], a: f32[M, N], b: f32[M, N]) {
  s = scan add(x) dim=1
  r = scan add(x) dim=1 reverse
  (pa, pb) = scan affine(a, b) dim=1
  return s, r, pb
}
)";

constexpr const char* kSum = R"(
combine add(a | b) { return a + b }
program p(x: f32[N]) {
  y = scan add(x) dim=0
  return y
}
)";

TEST_F(CudaDifferential, OneDimensionalSumsMatchAtAwkwardLengths) {
    auto program = parse_program(kSum);
    for (std::int64_t n : {0, 1, 2, 31, 32, 33, 97, 4095, 4096, 4097, 6143, 6145, 8191, 8193, 65537, 1048573,
                           (1 << 22) + 1}) {
        SCOPED_TRACE(n);
        expect_matches_reference(program, {random_tensor(DType::F32, {n}, rng)});
    }
}

TEST_F(CudaDifferential, ProgramsWithConstantExtentsMatchWithTheKernelsTheyKeep) {
    // Each program compiles only the kernels its constant extents can reach
    // (CudaCodegen.AProgramCompilesOnlyTheKernelsItsConstantExtentsCanReach); every size that
    // program accepts must still run, in both directions.
    struct Case {
        const char* type;
        int dim;
        std::vector<std::vector<std::int64_t>> shapes;
    } cases[] = {{"[N, 7]", 0, {{1, 7}, {2, 7}, {257, 7}, {4097, 7}}},                  // cols
                 {"[N, 130]", 1, {{1, 130}, {3, 130}, {1001, 130}}},                     // lane groups
                 {"[N, 700]", 1, {{1, 700}, {5, 700}, {301, 700}}},                      // whole warps
                 {"[N, 3000]", 1, {{1, 3000}, {7, 3000}, {65, 3000}}},                   // shared / vector
                 {"[N, 2999]", 1, {{1, 2999}, {7, 2999}}},                               // scalar rows
                 {"[N, 20001]", 1, {{2, 20001}}},                                        // look-back
                 {"[5, T]", 1, {{5, 1}, {5, 2}, {5, 31}, {5, 1025}, {5, 40961}}},       // no cols
                 {"[T, 1]", 0, {{0, 1}, {1, 1}, {97, 1}, {(1 << 20) + 1, 1}}}};          // no cols
    for (const Case& c : cases)
        for (const char* direction : {"", " reverse"}) {
            auto program = parse_program(cat("combine add(a | b) { return a + b }\nprogram p(x: f32", c.type,
                                             ") {\n  y = scan add(x) dim=", c.dim, direction, "\n  return y\n}\n"));
            for (const auto& shape : c.shapes) {
                SCOPED_TRACE(cat(c.type, " dim ", c.dim, direction, " at ", ::testing::PrintToString(shape)));
                expect_matches_reference(program, {random_tensor(DType::F32, shape, rng)});
            }
        }
}

TEST_F(CudaDifferential, ReverseScansMatch) {
    auto program = parse_program(R"(
combine add(a | b) { return a + b }
program p(x: i32[M, N]) {
  y = scan add(x) dim=1 reverse
  z = scan add(x) dim=0 reverse
  return y, z
}
)");
    for (auto [m, n] : {std::pair{1, 1}, {3, 4097}, {5, 1500}, {130, 33}, {2, 1 << 20}, {5000, 3}}) {
        SCOPED_TRACE(::testing::PrintToString(std::pair{m, n}));
        expect_matches_reference(program, {random_tensor(DType::I32, {m, n}, rng)});
    }
}

TEST_F(CudaDifferential, EveryDimOfA3DTensorMatches) {
    auto program = parse_program(R"(
combine add(a | b) { return a + b }
program p(x: f32[A, B, C]) {
  y0 = scan add(x) dim=0
  y1 = scan add(x) dim=1
  y2 = scan add(x) dim=2
  return y0, y1, y2
}
)");
    for (auto s : {std::vector<std::int64_t>{2, 3, 129}, {7, 4097, 2}, {1, 1, 1}, {3, 0, 5}, {33, 65, 31}}) {
        SCOPED_TRACE(::testing::PrintToString(s));
        expect_matches_reference(program, {random_tensor(DType::F32, s, rng)});
    }
}

TEST_F(CudaDifferential, NonCommutativeCombinesKeepTheirOrder) {
    // first(a, b) = a and affine are associative but not commutative: any operand swap shows.
    auto program = parse_program(R"(
combine first(a | b) { return a }
combine affine(a1, b1 | a2, b2) { return a1 * a2, a2 * b1 + b2 }
program p(x: i32[M, N], a: f32[M, N], b: f32[M, N]) {
  (pa, pb) = scan affine(a, b) dim=1
  (ra, rb) = scan affine(a, b) dim=0 reverse
  f = scan first(x) dim=1
  g = scan first(x) dim=1 reverse
  return f, g, pb, rb
}
)");
    Fill coefficient{false, 0.5, 1.0}, offset{false, -1, 1};
    for (auto [m, n] : {std::pair{1, 5000}, {2, 12289}, {3, 1 << 20}, {257, 129}, {1, 2}}) {
        SCOPED_TRACE(::testing::PrintToString(std::pair{m, n}));
        expect_matches_reference(program,
                                 {random_tensor(DType::I32, {m, n}, rng), random_tensor(DType::F32, {m, n}, rng, coefficient),
                                  random_tensor(DType::F32, {m, n}, rng, offset)},
                                 1e-4, 1e-5);
    }
}

// NaN where the reference has NaN, a zero of the reference's sign, equal infinities, and
// other values within rtol.
::testing::AssertionResult same_specials(const Tensor& got, const Tensor& want, double rtol) {
    std::int64_t bad = 0, first = -1;
    for (std::int64_t i = 0; i < want.numel(); ++i) {
        const std::size_t elem = dtype_size(want.dtype());
        const double g = load_scalar(got.dtype(), static_cast<const char*>(got.data()) + i * elem).as_double();
        const double w = load_scalar(want.dtype(), static_cast<const char*>(want.data()) + i * elem).as_double();
        const bool ok = std::isnan(w)   ? std::isnan(g)
                        : w == 0        ? g == 0 && std::signbit(g) == std::signbit(w)
                        : std::isinf(w) ? g == w
                                        : std::abs(g - w) <= rtol * std::abs(w);
        if (!ok && bad++ == 0) first = i;
    }
    if (bad == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << bad << " of " << want.numel() << " differ, first at " << first;
}

TEST_F(CudaDifferential, MaxMinAndLogAddExpKeepTheReferencesNaNsInfinitiesAndSignedZeros) {
    // max and min take the first NaN and, on ties, the left operand, so a zero's sign shows any
    // operand swap; logaddexp of equal infinities is that infinity. Each line draws from its
    // own palette: zeros of both signs with -1 (max ties) or 1 (min ties), reals with rare
    // infinities and NaNs, or mostly infinities and NaNs. Along the rows (resident, one tile,
    // look-back tiles; rows of up to 4096 run logaddexp, a heavy combine, in the one-tile
    // kernel) and down the columns (cols tiles), f32 and f64.
    auto program = parse_program(R"(
combine mx(a | b) { return max(a, b) }
combine mn(a | b) { return min(a, b) }
combine lse(a | b) { return logaddexp(a, b) }
program p(x: f32[M, N], w: f64[M, N]) {
  a = scan mx(x) dim=1
  b = scan mn(x) dim=1 reverse
  c = scan lse(x) dim=1
  d = scan mx(w) dim=0
  e = scan mn(w) dim=0 reverse
  f = scan lse(w) dim=0
  return a, b, c, d, e, f
}
)");
    const double inf = INFINITY, nan = NAN;
    const std::vector<std::vector<double>> palettes = {
        {0.0, -0.0, -1}, {0.0, -0.0, 1}, {0.0, -0.0, -1, 1, 2.5}, {inf, -inf, nan, 0.0, -0.0, 1}};
    auto draw = [&](int line) {  // rare specials in the reals' palette
        const auto& p = palettes[line % 4];
        std::uniform_int_distribution<std::size_t> pick(0, p.size() - 1);
        std::uniform_int_distribution<int> rare(0, 999);
        const int r = rare(rng);
        return line % 4 == 2 && r < 3 ? (r == 0 ? nan : r == 1 ? inf : -inf) : p[pick(rng)];
    };
    for (auto [m, n] : {std::pair{1, 100003}, {3, 4099}, {5, 4096}, {7, 2500}, {333, 600}, {2, 40961}, {70, 17},
                        {4097, 9}}) {
        SCOPED_TRACE(::testing::PrintToString(std::pair{m, n}));
        Tensor x = Tensor::empty(DType::F32, {m, n}), w = Tensor::empty(DType::F64, {m, n});
        for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t j = 0; j < n; ++j) {
                x.view().ptr<float>()[i * n + j] = static_cast<float>(draw(static_cast<int>(i)));
                w.view().ptr<double>()[i * n + j] = draw(static_cast<int>(j));
            }
        const std::vector<TensorView> in = {x.view(), w.view()};
        auto want = ReferenceBackend().compile(program)->run(in);
        auto got = CudaBackend().compile(program)->run(in);
        for (std::size_t r = 0; r < want.size(); ++r)
            EXPECT_TRUE(same_specials(got[r], want[r], r % 3 == 2 ? 1e-3 : 0)) << "result " << r;  // 1e5 steps of log1p(exp(.))
    }
}

TEST_F(CudaDifferential, CapturedValuesAndExpressionsAreReadPerRowAndLane) {
    auto program = parse_program(R"(
combine smooth_max(x1 | x2; tau) { return tau * logaddexp(x1 / tau, x2 / tau) }
program p(x: f32[N, T], tau: f32[N, 1], u: f32[T, N], s: f32[N]) {
  y = scan smooth_max(x) dim=1 with (tau)
  z = scan smooth_max(u) dim=0 reverse with (s)
  w = scan smooth_max(x) dim=1 with (tau * tau + 0.25)   # an expression, computed per row
  return y, z, w
}
)");
    Fill positive{false, 0.5, 2.0}, real{false, -3, 3};
    for (auto [n, t] : {std::pair{3, 4099}, {70, 17}, {1, 70000}}) {
        expect_matches_reference(program,
                                 {random_tensor(DType::F32, {n, t}, rng, real), random_tensor(DType::F32, {n, 1}, rng, positive),
                                  random_tensor(DType::F32, {t, n}, rng, real), random_tensor(DType::F32, {n}, rng, positive)},
                                 1e-3, 1e-3);  // 70000 steps of log1p(exp(.)) round differently in any order
    }
}

TEST_F(CudaDifferential, EveryDtypeMatches) {
    for (DType t : kAllDTypes) {
        SCOPED_TRACE(dtype_name(t));
        std::string op = t == DType::Bool ? "a or b" : is_float(t) ? "a + b" : "a * b + a + b";
        auto program = parse_program(cat("combine f(a | b) { return ", op, " }\nprogram p(x: ", dtype_name(t),
                                         "[M, N]) {\n  y = scan f(x) dim=1\n  z = scan f(x) dim=0\n  return y, z\n}"));
        Fill fill = is_float(t) ? Fill{} : Fill{true, -2, 3};
        double rtol = (t == DType::F16 || t == DType::BF16) ? 1e-2 : 0;
        for (auto [m, n] : {std::pair{3, 5000}, {4100, 3}}) {
            expect_matches_reference(program, {random_tensor(t, {m, n}, rng, fill)}, rtol, rtol ? 0.5 : 0);
        }
    }
}

TEST_F(CudaDifferential, ExamplesMatchOnRandomInputs) {
    std::vector<std::string> files;  // every example, in a fixed order
    for (auto& entry : std::filesystem::directory_iterator(std::filesystem::path(SCANC_SOURCE_DIR) / "examples"))
        if (entry.path().extension() == ".scan") files.push_back(entry.path().filename().string());
    std::sort(files.begin(), files.end());
    ASSERT_GE(files.size(), 11u);
    for (const std::string& file : files) {
        SCOPED_TRACE(file);
        Module m = load_module(std::string(SCANC_SOURCE_DIR) + "/examples/" + file);
        for (auto& program : m.programs) {
            std::vector<Tensor> inputs;
            std::map<const Symbol*, std::int64_t> sizes;
            std::int64_t next[] = {3, 1031, 37, 5};
            for (auto& param : program->params) {
                std::vector<std::int64_t> shape;
                for (auto& s : param->type().shape) {
                    if (auto c = s.constant()) { shape.push_back(*c); continue; }
                    auto sym = s.as_symbol();
                    auto [it, fresh] = sizes.emplace(sym.get(), next[sizes.size() % 4]);
                    if (sym->bound) it->second = std::min(it->second, *sym->bound);
                    shape.push_back(it->second);
                }
                DType t = param->type().dtype;
                // [0.25, 0.5]: products of 2x2 matrices stay bounded, so no run overflows. Mamba's
                // state decays, as in the model (dt >= 0, A <= 0): with dt A of both signs it
                // random-walks to e^9 and back within the 1031 steps, and the parallel scan's
                // rounding of the large values decides the small ones' last digits (one run in
                // many failed at 1e-3 so); all positive, it overflows.
                Fill fill{false, 0.25, 0.5};
                if (file == "mamba.scan") {
                    const std::string& name = param->as<ParamAttr>().name;
                    fill = name == "A" ? Fill{false, -0.5, 0} : name == "dt" ? Fill{false, 0, 0.5} : Fill{false, -0.5, 0.5};
                }
                inputs.push_back(random_tensor(t, shape, rng, is_float(t) ? fill : Fill{true, 0, 3}));
            }
            expect_matches_reference(program, inputs, 1e-3, 1e-4);
        }
    }
}

TEST_F(CudaDifferential, RandomProgramsMatchTheReference) {
    // The random programs the CPU backend is tested on (tests/common): every dtype, combines of
    // one to four leaves and of captured values, any dim and direction, prologues reading a
    // broadcast operand, epilogues reading an input, awkward extents (0, 1, primes, 2^k +- 1,
    // lines of 2^16 and more), host inputs seen transposed, strided and flipped. Each runs
    // twice: the same bits.
    test::for_each_random_program(20261201, 80, [](const test::RandomProgram& p, std::mt19937_64&) {
        auto exe = CudaBackend().compile(p.program);
        const std::vector<Tensor> actual = exe->run(p.inputs.views), again = exe->run(p.inputs.views);
        EXPECT_EQ(test::compare_results(p, test::run_reference(p.program, p.inputs), actual), "");
        EXPECT_EQ(test::compare_results(p, actual, again, true), "") << "run to run";
    });
}

TEST_F(CudaDifferential, SlicesConcatAndBroadcastingMatch) {
    auto program = parse_program(R"(
combine add(a | b) { return a + b }
program p(x: f32[N, T], w: f32[T]) {
  y = scan add(slice(x, 1, 1, -1, 2) * 2) dim=1
  z = concat(1, y, slice(x, 1, 0, 3))
  r = scan add(z + 1) dim=0 reverse
  return r, y * slice(w, 0, 1, -1, 2), x + w
}
)");
    for (auto [n, t] : {std::pair{5, 9}, {33, 4099}, {1, 3}}) {
        expect_matches_reference(program, {random_tensor(DType::F32, {n, t}, rng), random_tensor(DType::F32, {t}, rng)});
    }
}

TEST_F(CudaDifferential, InterleavesMatchAndLengthsApartByMoreThanOneAreRefusedBeforeAnyLaunch) {
    auto program = parse_program(R"(
combine add(a | b) { return a + b }
program p(x: f32[N], y: f32[M]) {
  z = scan add(interleave(0, x, y)) dim=0
  return z
}
)");
    for (auto [n, m] : {std::pair{5, 5}, {6, 5}, {1, 0}, {4099, 4098}})
        expect_matches_reference(program, {random_tensor(DType::F32, {n}, rng), random_tensor(DType::F32, {m}, rng)});
    const Tensor x = random_tensor(DType::F32, {3}, rng), y = random_tensor(DType::F32, {5}, rng);
    try {
        CudaBackend().compile(program)->run(std::vector<TensorView>{x.view(), y.view()});
        ADD_FAILURE() << "an interleave of 3 and 5 elements ran";
    } catch (const CompileError& e) {
        EXPECT_NE(std::string(e.what()).find("interleave needs the first tensor as long as the second or one "
                                              "longer along dim 0, got 3 and 5"),
                  std::string::npos)
            << e.what();
    }
}

// x[::2] and x[1::2] interleaved are as long as x (Size::same_value): they add to it, and the
// scan of the sum is twice x's.
TEST_F(CudaDifferential, TheEvensAndOddsOfXInterleavedAddToX) {
    auto program = parse_program(R"(
combine add(a | b) { return a + b }
program p(x: f32[N, T]) {
  w = interleave(1, slice(x, 1, 0, T, 2), slice(x, 1, 1, T, 2)) + x
  z = scan add(w) dim=1
  return w, z
}
)");
    for (auto [n, t] : {std::pair{3, 0}, {2, 1}, {4, 2}, {3, 7}, {5, 65}, {33, 4099}})
        expect_matches_reference(program, {random_tensor(DType::F32, {n, t}, rng)});
}

TEST_F(CudaDifferential, AResultReadingItsScanThroughASliceRunsAfterTheScan) {
    // `s + slice(s, ...)` reads the scan's output from memory: not the scan's epilogue but a
    // stage after it (it was fused into the epilogue and failed to plan).
    auto program = parse_program(R"(
combine add(a | b) { return a + b }
program p(x: f32[N, T]) {
  s = scan add(x) dim=1
  r = s + slice(s, 1, 0, T)
  q = s + concat(1, slice(s, 1, 0, 1), slice(s, 1, 0, -1))
  return r, q
}
)");
    for (auto [n, t] : {std::pair{5, 9}, {33, 4099}, {1, 1}, {3, 0}})
        expect_matches_reference(program, {random_tensor(DType::F32, {n, t}, rng)});
}

TEST_F(CudaDifferential, ResultsAreBitIdenticalRunToRun) {
    auto exe = CudaBackend().compile(parse_program(kSum));
    Tensor x = random_tensor(DType::F32, {(1 << 22) + 17}, rng, Fill{false, -1, 1});
    std::vector<TensorView> in = {x};
    auto a = exe->run(in), b = exe->run(in);
    EXPECT_TRUE(close(a[0], b[0], 0, 0));
}

TEST_F(CudaDifferential, StridedDeviceInputsAreReadInPlace) {
    auto program = parse_program(R"(
combine add(a | b) { return a + b }
program p(x: f32[M, N]) {
  y = scan add(x) dim=1
  return y
}
)");
    const std::int64_t m = 1000, n = 3001;
    Tensor host = random_tensor(DType::F32, {n, m}, rng);  // x is its transpose
    TensorView xt = host.view();
    xt.sizes = {m, n};
    xt.strides = {1, m};
    auto want = ReferenceBackend().compile(program)->run(std::vector<TensorView>{xt});
    cuda_test::DeviceCopy device(host);
    auto got = CudaBackend().compile(program)->run(std::vector<TensorView>{device.on_device(xt)});
    ASSERT_EQ(got[0].view().device.kind, DeviceKind::CUDA);
    EXPECT_TRUE(close(cuda_test::to_host(got[0]), want[0], 0, 0));
}

TEST_F(CudaDifferential, ScansOfMoreThan2To31ElementsIndexIn64Bits) {
    // u8 sums of all-ones inputs wrap mod 256, so every output is known without a reference
    // run: (position along the scan dim + 1) mod 256. One layout per kernel: a 1-D look-back
    // row, rows of 4096 (the resident kernel) and a strided dim (cols), each past 2^31.
    cuda::ContextGuard guard(0);
    std::size_t free_bytes = 0, total = 0;
    SCANC_CU(cuMemGetInfo, &free_bytes, &total);
    if (free_bytes < (std::size_t{5} << 30)) GTEST_SKIP() << "needs 5 GiB of free device memory";
    struct Layout {
        const char* text;
        std::vector<std::int64_t> shape;
        std::int64_t (*position)(std::int64_t flat);  // along the scan dim
    } layouts[] = {
        {"program p(x: u8[N]) {\n  y = scan add(x) dim=0\n  return y\n}\n", {(std::int64_t{1} << 31) + 97},
         [](std::int64_t i) { return i; }},
        {"program p(x: u8[M, N]) {\n  y = scan add(x) dim=1\n  return y\n}\n", {(1 << 19) + 1, 4096},
         [](std::int64_t i) { return i % 4096; }},
        {"program p(x: u8[M, N]) {\n  y = scan add(x) dim=0\n  return y\n}\n", {(1 << 25) + 3, 64},
         [](std::int64_t i) { return i / 64; }},
    };
    for (const Layout& layout : layouts) {
        SCOPED_TRACE(layout.text);
        std::int64_t n = 1;
        for (auto s : layout.shape) n *= s;
        CUdeviceptr dev;
        SCANC_CU(cuMemAlloc, &dev, static_cast<std::size_t>(n));
        SCANC_CU(cuMemsetD8Async, dev, 1, static_cast<std::size_t>(n), nullptr);
        TensorView x;
        x.data = reinterpret_cast<void*>(dev);
        x.dtype = DType::U8;
        x.sizes = layout.shape;
        x.strides = contiguous_strides(layout.shape);
        x.device = {DeviceKind::CUDA, 0};
        auto program = parse_program(std::string("combine add(a | b) { return a + b }\n") + layout.text);
        {
            auto got = CudaBackend().compile(program)->run(std::vector<TensorView>{x});
            auto y = reinterpret_cast<CUdeviceptr>(got[0].data());
            std::vector<std::int64_t> probes = {0, 1, 255, 256, 4095, 4096, (std::int64_t{1} << 31) - 1,
                                                std::int64_t{1} << 31, (std::int64_t{1} << 31) + 1, n - 1};
            for (int k = 0; k < 32; ++k) probes.push_back(static_cast<std::int64_t>(rng() % n));
            for (std::int64_t i : probes) {
                unsigned char v = 0;
                SCANC_CU(cuMemcpyDtoHAsync, &v, y + static_cast<CUdeviceptr>(i), 1, nullptr);
                SCANC_CU(cuStreamSynchronize, nullptr);
                EXPECT_EQ(int{v}, static_cast<int>((layout.position(i) + 1) % 256)) << "at flat index " << i;
            }
        }
        SCANC_CU(cuMemFree, dev);
    }
}

// Sets SCANC_CUDA_TUNING for a scope (the overrides apply to every state size).
struct TuningOverride {
    explicit TuningOverride(const char* t) { setenv("SCANC_CUDA_TUNING", t, 1); }
    ~TuningOverride() { unsetenv("SCANC_CUDA_TUNING"); }
};

TEST_F(CudaDifferential, LookBackFromTheNearestPublishedPrefixMatches) {
    // nondet=1, the instrument that measures what determinism costs: small tiles (64 x 4) and
    // windows (32 tiles) so that the nearest published prefix falls anywhere in a window.
    TuningOverride tuning("rows=64x4,window=32,nondet=1");
    expect_rows_match(kRowScans, {{1, 257}, {1, 1000003}, {3, 65537}, {129, 40961}});
}

TEST_F(CudaDifferential, TilesThatPrefetchLaterTilesInputsMatch) {
    // prefetch=D: each look-back tile prefetches the inputs of the tile D ahead into L2, forward
    // and reverse, up to past the last tile (D = 1, 3 and 4096 against tiles of 64 x 4), and
    // with a captured value that does not move along the scan dim (not prefetched).
    for (const char* tuning : {"rows=64x4,window=32,prefetch=1", "rows=64x4,window=32,prefetch=3",
                               "rows=64x4,window=32,prefetch=4096"}) {
        SCOPED_TRACE(tuning);
        TuningOverride override_tuning(tuning);
        expect_rows_match(kRowScans, {{1, 257}, {1, 1000003}, {3, 65537}});
        expect_captured_rows_match({{2, 4099}});
    }
}

TEST_F(CudaDifferential, PrefixesPublishedInSeveralCopiesMatch) {
    // pcopies=C: a window end's inclusive prefix is published in C copies, tile c reads copy
    // c % C (C = 1, the 2-word table's; 3, not a divisor of the window; 8, the 1-word table's).
    for (const char* tuning : {"rows=64x4,window=32,pcopies=1", "rows=64x4,window=32,pcopies=3",
                               "rows=64x4,window=32,pcopies=8"}) {
        SCOPED_TRACE(tuning);
        TuningOverride override_tuning(tuning);
        expect_rows_match(kRowScans, {{1, 257}, {1, 1000003}, {3, 65537}});
    }
}

TEST_F(CudaDifferential, WindowPrefixesMadeFromTheWindowBeforeCarryTheChainsBits) {
    // skip=1: a window's tiles may make the last window end's prefix from the one before it and
    // that window end's F, with the same combines, so the results are bitwise those of skip=0
    // (the affine scan of reals shows it; the sums of integers are exact either way). Tiles of
    // 64 x 4 and windows of 32 give rows of up to 122 windows.
    auto program = parse_program(kRowScans);
    Fill coefficient{false, 0.5, 1.0}, offset{false, -1, 1};
    for (auto [m, n] : {std::pair{1, 1000003}, {3, 65537}, {2, 300001}}) {
        SCOPED_TRACE(::testing::PrintToString(std::pair{m, n}));
        std::vector<Tensor> in = {random_tensor(DType::F32, {m, n}, rng),
                                  random_tensor(DType::F32, {m, n}, rng, coefficient),
                                  random_tensor(DType::F32, {m, n}, rng, offset)};
        auto want = ReferenceBackend().compile(program)->run(cuda_test::views(in));
        for (const char* copies : {"pcopies=1", "pcopies=8"}) {
            std::vector<Tensor> chain, skip;
            {
                TuningOverride tuning(cat("rows=64x4,window=32,skip=0,", copies).c_str());
                chain = CudaBackend().compile(program)->run(cuda_test::views(in));
            }
            {
                TuningOverride tuning(cat("rows=64x4,window=32,skip=1,", copies).c_str());
                skip = CudaBackend().compile(program)->run(cuda_test::views(in));
            }
            for (std::size_t r = 0; r < want.size(); ++r) {
                EXPECT_TRUE(close(skip[r], chain[r], 0, 0)) << copies << ", result " << r;
                EXPECT_TRUE(close(skip[r], want[r], 1e-4, 1e-5)) << copies << ", result " << r;
            }
        }
    }
}

TEST_F(CudaDifferential, RowsOfOneSharedTileAndLongerRowsRunInTilesOfTheirOwnSize) {
    // sitems=4: rows of up to 64 x 4 elements run in the shared kernel's tiles (two to a tile up
    // to 128, one from 129 to 256), longer ones in look-back tiles of 64 x 16; res=32x2 leaves
    // the resident kernel rows of up to 64. Rows of whole vectors take the vector kernels.
    TuningOverride tuning("rows=64x16,sitems=4,res=32x2,window=32");
    expect_rows_match(kRowScans, {{5, 65}, {7, 128}, {3, 129}, {4, 256}, {2, 257}, {3, 1024}, {2, 1025}, {2, 4100},
                                  {1, 40961}});
}

TEST_F(CudaDifferential, TileStampsRecordEveryTileOfALaunchInPhaseOrder) {
    // stamps=1 (the instrument behind bench/lookback_stamps.py): the results still match, and
    // the file holds one record per tile whose times run forwards.
    const std::string path = ::testing::TempDir() + "scanc_stamps.bin";
    setenv("SCANC_CUDA_STAMPS", path.c_str(), 1);
    {
        TuningOverride tuning("rows=64x4,window=32,stamps=1");
        expect_rows_match(kRowScans, {{3, 65537}});
    }
    unsetenv("SCANC_CUDA_STAMPS");
    std::ifstream in(path, std::ios::binary);
    std::vector<std::uint64_t> w(8);
    ASSERT_TRUE(in.read(reinterpret_cast<char*>(w.data()), 64));
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(w.data()), 8), "SCSTAMP1");
    const std::uint64_t tiles = w[1], chunks = w[2];
    EXPECT_EQ(chunks, (65537u + 255) / 256);  // 64 x 4 elements per tile
    EXPECT_EQ(tiles, 3 * chunks);
    std::vector<std::uint64_t> rec(tiles * 8);
    ASSERT_TRUE(in.read(reinterpret_cast<char*>(rec.data()), static_cast<std::streamsize>(rec.size() * 8)));
    for (std::uint64_t t = 0; t < tiles; ++t) {
        const std::uint64_t* r = &rec[t * 8];
        EXPECT_LE(r[0], r[2]) << "tile " << t << " ends after its dispatch";
        EXPECT_EQ(r[7] & 0xffffffffu, t / 3) << "tile " << t;  // chunk-major: 3 rows per chunk
        const std::uint64_t stored = r[6] >> 32, loaded = r[3] >> 32;
        EXPECT_LE(loaded, stored) << "tile " << t;
        if (t < 3) {
            EXPECT_EQ(r[7] >> 48, 0u) << "tile " << t << " has no look-back, so it polls nothing";
        }
    }
    std::remove(path.c_str());
}

TEST_F(CudaDifferential, RowTilesBeyondStaticSharedMemoryMatch) {
    // 256 x 32 items of a 2-word state: a 67 KB transpose, past the 48 KB static limit, so the
    // launch opts in to dynamic shared memory, in the look-back rows kernel (8191, 8193, 40961)
    // and the resident one (1000: rows of up to 32 x 32 go one per warp).
    TuningOverride tuning("rows=256x32,mb=2,res=256x32,rmb=1");
    auto program = parse_program(R"(
combine affine(a1, b1 | a2, b2) { return a1 * a2, a2 * b1 + b2 }
combine add(a | b) { return a + b }
program p(a: f32[M, N], b: f32[M, N], x: i64[M, N]) {
  (pa, pb) = scan affine(a, b) dim=1
  s = scan add(x) dim=1 reverse
  return pb, s
}
)");
    Fill coefficient{false, 0.5, 1.0}, offset{false, -1, 1};
    for (auto [m, n] : {std::pair{1, 1}, {5, 1000}, {2, 8191}, {3, 8193}, {2, 40961}}) {
        SCOPED_TRACE(::testing::PrintToString(std::pair{m, n}));
        expect_matches_reference(program,
                                 {random_tensor(DType::F32, {m, n}, rng, coefficient),
                                  random_tensor(DType::F32, {m, n}, rng, offset),
                                  random_tensor(DType::I64, {m, n}, rng)},
                                 1e-4, 1e-5);
    }
}

TEST_F(CudaDifferential, ManyShortRowsMatchAcrossResidentGridIterations) {
    // More rows than the resident grid holds at once, so each warp scans several rows and
    // prefetches the next: rows of at most 32 x items go one per warp (33, 512, 1000 and 1024 in
    // the 1-word table, 33 and 512 in the 2-word one); longer ones go to the look-back kernel,
    // several to a tile while they need at most half of it (513, 1000, 1024 and 1025 in the
    // 2-word table, 1025 in the 1-word one) or one each (4096); both directions.
    expect_rows_match(R"(
combine add(a | b) { return a + b }
combine affine(a1, b1 | a2, b2) { return a1 * a2, a2 * b1 + b2 }
program p(x: f32[M, N], a: f32[M, N], b: f32[M, N]) {
  s = scan add(x) dim=1
  r = scan add(x) dim=1 reverse
  (pa, pb) = scan affine(a, b) dim=1 reverse
  return s, r, pb
}
)",
                      {{70001, 33}, {20011, 512}, {3001, 513}, {2003, 1000}, {2001, 1024}, {1999, 1025},
                       {1031, 4096}});
}

TEST_F(CudaDifferential, RowsOfAFewSegmentsShareALookBackTile) {
    // Tiles of 128 x 32 (4 warps of 1024-element segments): rows longer than a warp's resident
    // segment that need 1 or 2 warps go 4 or 2 to a tile (lengths around 512, 1024 and 2048),
    // longer ones one to a tile; row counts that leave the last tile's rows partly idle; a
    // captured value per row.
    TuningOverride tuning("rows=128x32,res=256x16");
    for (int n : {513, 700, 1023, 1024, 1025, 1500, 2047, 2048, 2049, 4096}) {
        SCOPED_TRACE(n);
        expect_rows_match(kRowScans, {{1, n}, {3, n}, {1029, n}});
    }
    expect_captured_rows_match({{333, 600}, {65, 1500}});
}

TEST_F(CudaDifferential, RowsOfSeveralTilesMatchInEveryTileOrder) {
    // Tiles of 64 x 4 and windows of 32, so that rows of 1000 and more span several tiles and
    // windows: chunk-major order (the default: the rows' chains side by side), row-major, and
    // chunk-major within bands of 2 or 4 rows (3 and 129 rows end on a shorter band).
    for (const char* tuning : {"rows=64x4,window=32,cmajor=1", "rows=64x4,window=32,cmajor=0",
                               "rows=64x4,window=32,rband=2", "rows=64x4,window=32,rband=4"}) {
        SCOPED_TRACE(tuning);
        TuningOverride override_tuning(tuning);
        expect_rows_match(kRowScans, {{1000, 1000}, {3, 65537}, {129, 40961}, {1, 12289}});
    }
}

TEST_F(CudaDifferential, ShortRowsShareWarpsInLaneGroupsOfEveryWidth) {
    // Rows of at most 16 x items share a warp, one per group of 2^lw lanes (1 to 16 lanes):
    // lengths at and around every group's capacity (32 items a lane in the 1-word table, 16 in
    // the 2-word one), row counts that leave a warp's last groups idle, both directions, a
    // non-commutative combine, and captured values read per row.
    for (int n : {1, 2, 3, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 255, 256, 257, 511, 512, 513}) {
        SCOPED_TRACE(n);
        expect_rows_match(kRowScans, {{1, n}, {7, n}, {4099, n}});
    }
    expect_captured_rows_match({{1000, 5}, {333, 40}, {65, 128}});
}

TEST_F(CudaDifferential, TicketedTilesMatch) {
    // Tile ids from the atomic ticket instead of the block index, in the look-back rows and the
    // cols kernels.
    TuningOverride tuning("tickets=1");
    auto program = parse_program(R"(
combine add(a | b) { return a + b }
program p(x: f32[M, N]) {
  r = scan add(x) dim=1
  c = scan add(x) dim=0 reverse
  return r, c
}
)");
    for (auto [m, n] : {std::pair{1, (1 << 20) + 3}, {3, 65537}, {4097, 67}}) {
        SCOPED_TRACE(::testing::PrintToString(std::pair{m, n}));
        expect_matches_reference(program, {random_tensor(DType::F32, {m, n}, rng)});
    }
}

TEST_F(CudaDifferential, ColsLinesOfEightSixteenOrThirtyTwoColumnsMatch) {
    // A cols line is L columns, and each warp holds 32 / L runs of steps of them. clanes=L with
    // flanes=0 gives every launch lines of L; clanes=32 with flanes=L gives launches of few lines
    // lines of L (on a GPU of 132 SMs, every case but N = 1000). Tiles of 2 warps x 4 steps and windows of 4, so
    // that thousands of steps span many tiles and windows; column counts around L; both
    // directions; the affine scan (not commutative) along a middle dim; a captured value per
    // column.
    auto program = parse_program(R"(
combine add(a | b) { return a + b }
combine affine(a1, b1 | a2, b2) { return a1 * a2, a2 * b1 + b2 }
combine smooth_max(x1 | x2; tau) { return tau * logaddexp(x1 / tau, x2 / tau) }
program p(x: f32[T, N], a: f32[B, T, N], b: f32[B, T, N], s: f32[N]) {
  y = scan add(x) dim=0
  r = scan add(x) dim=0 reverse
  (pa, pb) = scan affine(a, b) dim=1
  z = scan smooth_max(x) dim=0 reverse with (s)
  return y, r, pb, z
}
)");
    Fill coefficient{false, 0.5, 1.0}, offset{false, -1, 1}, positive{false, 0.5, 2.0};
    for (const char* lanes : {"clanes=8,flanes=0", "clanes=16,flanes=0", "clanes=32,flanes=0", "clanes=32,flanes=8",
                              "clanes=32,flanes=16"}) {
        TuningOverride tuning(cat("cols=2x4,cwin=4,", lanes).c_str());
        for (auto [t, n, b] : {std::tuple{1, 1, 1}, {2, 7, 2}, {65, 8, 1}, {257, 9, 3}, {4099, 17, 2}, {1000, 33, 1},
                               {31, 1000, 2}, {5, 1000, 80}}) {
            SCOPED_TRACE(cat(lanes, " T=", t, " N=", n, " B=", b));
            expect_matches_reference(program,
                                     {random_tensor(DType::F32, {t, n}, rng),
                                      random_tensor(DType::F32, {b, t, n}, rng, coefficient),
                                      random_tensor(DType::F32, {b, t, n}, rng, offset),
                                      random_tensor(DType::F32, {n}, rng, positive)},
                                     1e-3, 1e-3);
        }
    }
}

TEST_F(CudaDifferential, MismatchedInputsAreTheUsersError) {
    auto exe = CudaBackend().compile(parse_program(kSum));
    Tensor x = random_tensor(DType::I32, {10}, rng);
    std::vector<TensorView> in = {x};
    EXPECT_THROW(exe->run(in), CompileError);
}

}  // namespace
}  // namespace scanc
