// Helpers of the CUDA execution tests: random inputs, the reference executor's answer, and a
// comparison that is exact for integers (and integer-valued floats) and tolerant otherwise.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "driver.h"
#include "scanc/backends/cuda.h"
#include "scanc/backends/reference.h"
#include "scanc/ir/scalar_eval.h"
#include "scanc/text/parser.h"

namespace scanc::cuda_test {

// A fixture's random inputs: seeded from SCANC_TEST_SEED when set (to replay a failure), else
// afresh; every failure's trace names the seed.
class SeededRandom {
public:
    std::uint64_t seed = pick_seed();
    ::testing::ScopedTrace seed_trace{__FILE__, __LINE__, cat("seed ", seed, " (SCANC_TEST_SEED replays it)")};
    std::mt19937_64 rng{seed};

private:
    static std::uint64_t pick_seed() {
        const char* given = std::getenv("SCANC_TEST_SEED");
        return given && *given ? std::strtoull(given, nullptr, 10) : std::random_device{}();
    }
};

// An empty disk-cache folder of this process's, made SCANC_CACHE_DIR: programs compile here.
inline std::filesystem::path fresh_cache_dir() {
    std::filesystem::path dir = std::filesystem::temp_directory_path() / cat("scanc-cache-test-", getpid());
    std::filesystem::remove_all(dir);
    setenv("SCANC_CACHE_DIR", dir.c_str(), 1);
    return dir;
}

#define SKIP_WITHOUT_GPU() \
    if (!cuda_available()) GTEST_SKIP() << "no GPU: " << cuda_unavailable_reason()

// Small integers (exact sums in every dtype) or reals in [lo, hi].
struct Fill {
    bool integers = true;
    double lo = -8, hi = 8;
};

inline Tensor random_tensor(DType t, std::vector<std::int64_t> sizes, std::mt19937_64& rng,
                            Fill fill = {}) {
    Tensor out = Tensor::empty(t, std::move(sizes));
    std::uniform_real_distribution<double> real(fill.lo, fill.hi);
    std::uniform_int_distribution<int> small(t == DType::U8 ? 0 : static_cast<int>(fill.lo),
                                             static_cast<int>(fill.hi));
    std::size_t elem = dtype_size(t);
    auto* p = static_cast<char*>(out.data());
    for (std::int64_t i = 0; i < out.numel(); ++i) {
        Scalar v = t == DType::Bool ? Scalar::of_int(t, small(rng) > 0)
                   : (is_float(t) && !fill.integers) ? Scalar::of_double(t, real(rng))
                   : is_float(t) ? Scalar::of_double(t, small(rng))
                                 : Scalar::of_int(t, small(rng));
        store_scalar(v, p + i * static_cast<std::int64_t>(elem));
    }
    return out;
}

// Element-by-element comparison (views of any strides); `rtol` 0 means bitwise for values.
inline ::testing::AssertionResult close(const TensorView& got, const TensorView& want,
                                        double rtol, double atol) {
    if (got.dtype != want.dtype) return ::testing::AssertionFailure() << "dtype differs";
    if (got.sizes != want.sizes) return ::testing::AssertionFailure() << "sizes differ";
    Tensor g = contiguous_copy(got), w = contiguous_copy(want);
    std::size_t elem = dtype_size(g.dtype());
    std::int64_t bad = 0, first = -1;
    double gv0 = 0, wv0 = 0;
    for (std::int64_t i = 0; i < g.numel(); ++i) {
        double gv = load_scalar(g.dtype(), static_cast<char*>(g.data()) + i * elem).as_double();
        double wv = load_scalar(w.dtype(), static_cast<char*>(w.data()) + i * elem).as_double();
        bool ok = (std::isnan(gv) && std::isnan(wv)) || gv == wv ||
                  (std::isfinite(wv) && std::abs(gv - wv) <= atol + rtol * std::abs(wv));
        if (!ok && bad++ == 0) first = i, gv0 = gv, wv0 = wv;
    }
    if (bad == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << bad << " of " << g.numel() << " elements differ; first at "
                                         << first << ": got " << gv0 << ", want " << wv0;
}

inline std::vector<TensorView> views(const std::vector<Tensor>& ts) {
    return {ts.begin(), ts.end()};
}

// Runs `program` on the reference and the cuda backend and compares every result.
inline void expect_matches_reference(const ProgramRef& program, const std::vector<Tensor>& inputs,
                                     double rtol = 0, double atol = 0) {
    auto want = ReferenceBackend().compile(program)->run(views(inputs));
    auto got = CudaBackend().compile(program)->run(views(inputs));
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].view().device.kind, DeviceKind::CPU) << "host inputs give host outputs";
        EXPECT_TRUE(close(got[i], want[i], rtol, atol)) << "result " << i;
    }
}

// A host tensor's bytes copied to device 0 (freed with this object). on_device(v) is the view v
// of that host tensor moved onto the copy: the same offset from its start, sizes and strides.
class DeviceCopy {
public:
    explicit DeviceCopy(const Tensor& host)
        : host_(static_cast<const char*>(host.data())), bytes_(host.numel() * dtype_size(host.dtype())) {
        cuda::ContextGuard guard(0);
        SCANC_CU(cuMemAlloc, &ptr_, bytes_);
        SCANC_CU(cuMemcpyHtoDAsync, ptr_, host.data(), bytes_, nullptr);
        SCANC_CU(cuStreamSynchronize, nullptr);
    }
    DeviceCopy(const DeviceCopy&) = delete;
    DeviceCopy& operator=(const DeviceCopy&) = delete;
    ~DeviceCopy() {
        cuda::ContextGuard guard(0);
        cuda::driver().cuMemFree(ptr_);
    }
    // Copies `host` (as many bytes as the first tensor's) over the device bytes, on `stream`.
    void upload(const Tensor& host, CUstream stream = nullptr) const {
        cuda::ContextGuard guard(0);
        SCANC_CU(cuMemcpyHtoDAsync, ptr_, host.data(), bytes_, stream);
        SCANC_CU(cuStreamSynchronize, stream);
    }
    TensorView on_device(TensorView host_view) const {
        host_view.data = reinterpret_cast<char*>(ptr_) + (static_cast<const char*>(host_view.data) - host_);
        host_view.device = {DeviceKind::CUDA, 0};
        return host_view;
    }

private:
    const char* host_;
    std::size_t bytes_;
    CUdeviceptr ptr_ = 0;
};

// A contiguous device tensor (a cuda run's result) copied to the host.
inline Tensor to_host(const Tensor& device) {
    Tensor back = Tensor::empty(device.dtype(), device.view().sizes);
    cuda::ContextGuard guard(0);
    SCANC_CU(cuMemcpyDtoHAsync, back.data(), reinterpret_cast<CUdeviceptr>(device.data()),
             back.numel() * dtype_size(device.dtype()), nullptr);
    SCANC_CU(cuStreamSynchronize, nullptr);
    return back;
}

inline ProgramRef parse_program(const std::string& text) {
    return parse_module(text, "<test>").programs.back();
}

}  // namespace scanc::cuda_test
