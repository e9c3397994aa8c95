// RunOptions::outputs on the CPU backend: results written into memory the caller owns, in any
// layout the option allows, with every byte of that memory outside the results' elements left
// as it was.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "cpu_test_util.h"
#include "scanc/error.h"
#include "scanc/runtime/backend.h"
#include "scanc/text/parser.h"

namespace scanc::cpu_test {
namespace {

// How a given output lies in its buffer: as the backend's own (contiguous, 64-byte aligned),
// contiguous one element past that alignment, one byte past it (unaligned for its elements:
// written through a copy), dims in reverse order, every other element, or the first dim walked
// backwards.
enum class Place { Aligned, Misaligned, Unaligned, Transposed, Gaps, Flipped };
constexpr Place kPlaces[] = {Place::Aligned,    Place::Misaligned, Place::Unaligned,
                             Place::Transposed, Place::Gaps,       Place::Flipped};
constexpr std::byte kUntouched{0xA5};
constexpr std::int64_t kGuard = 256;  // bytes before and after the elements

// A buffer holding one output of `dtype` and `sizes` placed as `place`, every byte kUntouched.
struct OutputBuffer {
    std::vector<std::byte> bytes;
    TensorView view;

    OutputBuffer(DType dtype, const std::vector<std::int64_t>& sizes, Place place) {
        const std::int64_t esize = static_cast<std::int64_t>(dtype_size(dtype));
        view.dtype = dtype;
        view.sizes = sizes;
        view.strides = contiguous_strides(sizes);
        const int rank = static_cast<int>(sizes.size());
        if (place == Place::Transposed) {
            std::int64_t stride = 1;
            for (int d = 0; d < rank; ++d) view.strides[d] = stride, stride *= std::max<std::int64_t>(sizes[d], 1);
        }
        if (place == Place::Gaps)
            for (auto& s : view.strides) s *= 2;
        std::int64_t span = 1;  // elements from the lowest to the highest, plus one
        for (int d = 0; d < rank; ++d) span += std::max<std::int64_t>(sizes[d] - 1, 0) * view.strides[d];
        bytes.assign(static_cast<std::size_t>(2 * kGuard + span * esize + 64), kUntouched);
        // 64-byte aligned at kGuard (a multiple of 64) from the first aligned byte.
        std::byte* base = bytes.data() + (64 - reinterpret_cast<std::uintptr_t>(bytes.data()) % 64) % 64 + kGuard;
        if (place == Place::Misaligned) base += esize;
        if (place == Place::Unaligned) base += 1;
        if (place == Place::Flipped && rank > 0) {
            base += (sizes[0] > 0 ? sizes[0] - 1 : 0) * view.strides[0] * esize;
            view.strides[0] = -view.strides[0];
        }
        view.data = base;
    }

    // "" when every byte outside the view's elements is still kUntouched, else where one is not.
    std::string stray_write() const {
        std::vector<char> mine(bytes.size(), 0);
        const std::int64_t n = view.numel(), esize = static_cast<std::int64_t>(dtype_size(view.dtype));
        const std::int64_t base = static_cast<const std::byte*>(view.data) - bytes.data();
        std::vector<std::int64_t> index(view.sizes.size(), 0);
        for (std::int64_t i = 0; i < n; ++i) {
            std::int64_t offset = 0;
            for (std::size_t d = 0; d < index.size(); ++d) offset += index[d] * view.strides[d];
            std::fill_n(mine.begin() + base + offset * esize, esize, 1);
            for (std::size_t d = index.size(); d-- > 0;) {
                if (++index[d] < view.sizes[d]) break;
                index[d] = 0;
            }
        }
        for (std::size_t b = 0; b < bytes.size(); ++b)
            if (bytes[b] != kUntouched && !mine[b])
                return cat("byte ", b, " of the buffer (the view starts at byte ", base, ") was written");
        return "";
    }
};

// Runs `p` with its results given as `place` and checks them against the reference, that each
// returned tensor views its given memory, and that nothing else in the buffers changed.
void expect_given_results(const ProgramRef& p, const test::Inputs& in, const std::vector<Tensor>& want, Place place,
                          int threads, const std::function<std::string(const std::vector<Tensor>&)>& compare_to_want) {
    SCOPED_TRACE(cat("place ", static_cast<int>(place), ", threads ", threads));
    std::vector<OutputBuffer> buffers;
    std::vector<TensorView> views;
    for (const Tensor& w : want) buffers.emplace_back(w.dtype(), w.sizes(), place);
    for (const OutputBuffer& b : buffers) views.push_back(b.view);
    RunOptions options;
    options.num_threads = threads;
    options.outputs = views;
    const std::vector<Tensor> got = CpuBackend().compile(p)->run(in.views, options);
    ASSERT_EQ(got.size(), want.size());
    std::vector<Tensor> seen;
    for (std::size_t r = 0; r < got.size(); ++r) {
        EXPECT_EQ(got[r].data(), views[r].data) << "result " << r << " views its given memory";
        EXPECT_EQ(got[r].view().strides, views[r].strides) << "result " << r;
        seen.push_back(contiguous_copy(views[r]));
        EXPECT_EQ(buffers[r].stray_write(), "") << "result " << r;
    }
    EXPECT_EQ(compare_to_want(seen), "");
}

TEST(CpuGivenOutputs, RandomProgramsWriteTheirResultsIntoGivenOutputsOfEveryPlaceAndNothingBeside) {
    test::for_each_random_program(20261206, 60, [](const test::RandomProgram& p, std::mt19937_64& rng) {
        const int threads = 1 + static_cast<int>(rng() % 3);
        const std::vector<Tensor> want = run_reference(p.program, p.inputs);
        for (Place place : kPlaces)
            expect_given_results(p.program, p.inputs, want, place, threads,
                                 [&](const std::vector<Tensor>& got) { return test::compare_results(p, want, got); });
    });
}

TEST(CpuGivenOutputs, LongScansOfEachKernelWriteIntoGivenOutputsOfEveryPlace) {
    // Shapes that take the row, column, chained, fused and streaming paths (outputs of 16 MiB
    // and more stream), where the random programs are small.
    auto module = parse_module(R"(
combine add(a | b) { return a + b }
combine affine(a1, b1 | a2, b2) { return a1 * a2, a2 * b1 + b2 }
program rows(x: f32[M, N]) { y = scan add(x) dim=1
  return y }
program cols(x: f32[M, N]) { y = scan add(x) dim=0
  return y }
program fused(x: f32[M, N]) { y = scan add(x * 2.0) dim=1
  return y + 1.0 }
program halves(x: f16[M, N]) { y = scan add(x) dim=1
  return y }
program both(a: f32[M, N], b: f32[M, N]) { (p, h) = scan affine(a, b) dim=1 reverse
  return p, h }
)", "<test>");
    struct Case {
        const char* program;
        std::int64_t m, n;
        DType dtype;
    };
    const Case cases[] = {{"rows", 5, (1 << 20) + 1, DType::F32}, {"rows", 1, (1 << 22) + 3, DType::F32},
                          {"cols", 4099, 1031, DType::F32},       {"fused", 64, 4099, DType::F32},
                          {"fused", 2, (1 << 21) + 5, DType::F32}, {"halves", 8, 4097, DType::F16},
                          {"both", 3, 65537, DType::F32}};
    std::mt19937_64 rng(63);
    for (const Case& c : cases) {
        SCOPED_TRACE(cat(c.program, " ", c.m, "x", c.n));
        ProgramRef p = module.program(c.program);
        test::Inputs in;
        for (std::size_t i = 0; i < p->params.size(); ++i)
            in.add(c.dtype, {c.m, c.n}, i == 0 && p->params.size() > 1 ? Values::Decay : Values::Unit, Layout::Contiguous, rng);
        const std::vector<Tensor> want = run_reference(p, in);
        for (Place place : kPlaces)
            expect_given_results(p, in, want, place, 3, [&](const std::vector<Tensor>& got) {
                std::string first;
                for (std::size_t r = 0; r < want.size() && first.empty(); ++r)
                    first = test::compare(want[r], got[r], false, tolerance(c.dtype));
                return first;
            });
    }
}

TEST(CpuGivenOutputs, AnInputAViewAndAValueReturnedTwiceAreCopiedIntoTheirOutputs) {
    // Results the stages do not make in place: the input itself, the scan twice, a slice of
    // it and a concat; the scan and its square as the stages make them.
    ProgramRef p = parse_module(R"(
combine add(a | b) { return a + b }
program many(x: f32[M, N]) {
  y = scan add(x) dim=1
  return x, y, y, slice(y, 1, 1, N), concat(1, y, x), y * y
}
)", "<test>").programs.back();
    std::mt19937_64 rng(61);
    for (auto [m, n] : {std::pair<std::int64_t, std::int64_t>{0, 3}, {1, 1}, {3, 7}, {5, 17}, {2, 4099}, {31, 257}})
        for (Place place : kPlaces) {
            SCOPED_TRACE(cat(m, "x", n));
            test::Inputs in;
            in.add(DType::F32, {m, n}, Values::Unit, Layout::Contiguous, rng);
            const std::vector<Tensor> want = run_reference(p, in);
            for (int threads : {1, 3})
                expect_given_results(p, in, want, place, threads, [&](const std::vector<Tensor>& got) {
                    std::string first;
                    for (std::size_t r = 0; r < want.size() && first.empty(); ++r)
                        first = test::compare(want[r], got[r], false, tolerance(DType::F32));
                    return first;
                });
        }
}

TEST(CpuGivenOutputs, TheChecksOfTheOptionApply) {
    ProgramRef p = scan_program(sum_combine(), DType::F32, 1, 0);
    std::mt19937_64 rng(62);
    test::Inputs in, other;
    in.add(DType::F32, {5}, Values::Unit, Layout::Contiguous, rng);
    other.add(DType::F32, {6}, Values::Unit, Layout::Contiguous, rng);
    auto refusal = [&](std::vector<TensorView> outputs) -> std::string {
        RunOptions options;
        options.outputs = outputs;
        try {
            CpuBackend().compile(p)->run(in.views, options);
        } catch (const CompileError& e) {
            return e.what();
        }
        return "";
    };
    EXPECT_NE(refusal({in.views[0]}).find("overlaps the memory of input"), std::string::npos);
    EXPECT_NE(refusal({other.views[0]}).find("shape mismatch: output 0"), std::string::npos);
    TensorView on_gpu = other.views[0];
    on_gpu.sizes = {5};
    on_gpu.device = {DeviceKind::CUDA, 0};
    EXPECT_NE(refusal({on_gpu}).find("is not on the device the program runs on"), std::string::npos);
    TensorView fine = other.views[0];
    fine.sizes = {5};
    EXPECT_EQ(refusal({fine}), "");
}

}  // namespace
}  // namespace scanc::cpu_test
