// Timing on the GPU for the benchmarks: each sample runs a spin kernel first, so the host has
// queued the measured work before the GPU reaches it, then times it between two events.
// The median of the samples is reported.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#define BENCH_CHECK(x)                                                                      \
    do {                                                                                    \
        cudaError_t e_ = (x);                                                               \
        if (e_ != cudaSuccess) {                                                            \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            std::exit(1);                                                                   \
        }                                                                                   \
    } while (0)

static __global__ void bench_spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {
    }
}

// Median seconds of `op` over `reps` samples (after `warmup` unmeasured calls).
inline double time_median(const std::function<void(cudaStream_t)>& op, cudaStream_t stream,
                          int reps = 15, int warmup = 3) {
    for (int i = 0; i < warmup; ++i) op(stream);
    BENCH_CHECK(cudaStreamSynchronize(stream));
    cudaEvent_t a, b;
    BENCH_CHECK(cudaEventCreate(&a));
    BENCH_CHECK(cudaEventCreate(&b));
    std::vector<double> samples;
    for (int i = 0; i < reps; ++i) {
        bench_spin<<<1, 1, 0, stream>>>(200000);  // ~100 us: the host queues `op` meanwhile
        BENCH_CHECK(cudaEventRecord(a, stream));
        op(stream);
        BENCH_CHECK(cudaEventRecord(b, stream));
        BENCH_CHECK(cudaEventSynchronize(b));
        float ms = 0;
        BENCH_CHECK(cudaEventElapsedTime(&ms, a, b));
        samples.push_back(ms * 1e-3);
    }
    BENCH_CHECK(cudaGetLastError());
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    std::sort(samples.begin(), samples.end());
    return samples[samples.size() / 2];
}

// The current device's name ("NVIDIA H200"), so that every copy line says which card it came
// from: a device call may run on another kind than it named.
inline const char* device_name() {
    static cudaDeviceProp prop{};
    int dev = 0;
    BENCH_CHECK(cudaGetDevice(&dev));
    BENCH_CHECK(cudaGetDeviceProperties(&prop, dev));
    return prop.name;
}

// Median seconds of a device-to-device copy of `bytes` from src to dst.
inline double device_copy_seconds(void* dst, const void* src, size_t bytes, cudaStream_t stream = 0) {
    return time_median([&](cudaStream_t s) { BENCH_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s)); }, stream);
}
