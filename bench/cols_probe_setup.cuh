// What the timed cols probes (bench/cols_wide_probe.cu, cols_pipe_probe.cu, cols_reread_probe.cu)
// share around their kernels: a case, the inputs, the SM count, and the copy ceiling that every
// figure divides by.
#pragma once

#include <cstdio>
#include <functional>

#include "cols_probe_check.h"
#include "cols_probe_state.cuh"
#include "gpu_timing.cuh"

// A scan along T of layout [O][T][C]: the sum (nin 1) or the affine scan (nin 2).
struct Case {
    const char* name;
    int nin;
    i64 O, T, C;
    double bytes() const { return (double)(nin + 1) * O * T * C * 4; }  // inputs read once, h written once
};

struct ColsProbe {
    ColsProbeInputs in;
    int sms = 0;
    double copy_bw = 0;  // a device-to-device copy of 2^28 floats, bytes read + written a second
    double copy_seconds(size_t bytes) const { return device_copy_seconds(in.z, in.x, bytes); }
    double percent(const Case& c, double seconds) const { return 100.0 * c.bytes() / seconds / copy_bw; }
    // Prints the case's name and a copy of its bytes against the big copy.
    void print_case(const Case& c) const {
        std::printf("%s: a copy of the same bytes %.1f%% of the big copy\n", c.name,
                    percent(c, copy_seconds((size_t)(c.bytes() / 2))));
    }
};

// The inputs (2^28 floats each), the SM count, and the copy ceiling, printed.
inline ColsProbe cols_probe_setup() {
    const size_t big = (size_t)1 << 28;
    ColsProbe p{cols_probe_inputs(big)};
    BENCH_CHECK(cudaDeviceGetAttribute(&p.sms, cudaDevAttrMultiProcessorCount, 0));
    p.copy_bw = 2.0 * big * 4 / p.copy_seconds(big * 4);
    std::printf("copy of 2^28 f32: %.0f GB/s, %d SMs, %s\n", p.copy_bw / 1e9, p.sms, device_name());
    return p;
}

// Median seconds of `op`, and with `check` how many of its results in z differ from the host
// scan of (x, y): sums of small integers bitwise, the affine scan within 1e-4 (1 + |h|).
inline double time_and_check(const std::function<void(cudaStream_t)>& op, const float* x, const float* y,
                             const float* z, const Case& c, bool check, size_t& bad) {
    const double t = time_median(op, 0);
    BENCH_CHECK(cudaDeviceSynchronize());
    bad = check ? cols_scan_mismatches(x, y, z, c.O, c.T, c.C, c.nin, c.nin == 1 ? 0.f : 1e-4f) : 0;
    return t;
}
