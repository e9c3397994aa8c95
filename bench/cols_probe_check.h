// The cols probes' check (bench/cols_walk_probe.cu, bench/cols_wide_probe.cu): a result of
// layout [O][T][C] on the device against a host scan along T in the same order, with no
// contraction on either side. Sum (nin 1) of x, or the affine scan h = a h' + b of (x, y).
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

// Elements of z that differ from the host scan: bitwise where tol is 0, else by more than
// tol (1 + |h|).
inline size_t cols_scan_mismatches(const float* x, const float* y, const float* z, long long O, long long T, long long C,
                                   int nin, float tol) {
    const size_t n = (size_t)O * T * C;
    std::vector<float> a(n), b(n), h(n);
    for (auto [dst, src] : {std::pair{&a, x}, std::pair{&b, y}, std::pair{&h, z}})
        if (cudaMemcpy(dst->data(), src, n * 4, cudaMemcpyDeviceToHost) != cudaSuccess) {
            std::printf("cudaMemcpy failed in the check\n");
            std::exit(1);
        }
    size_t bad = 0;
    for (long long o = 0; o < O; ++o)
        for (long long col = 0; col < C; ++col) {
            float acc = 0;
            for (long long t = 0; t < T; ++t) {
                const size_t i = (o * T + t) * C + col;
                acc = nin == 1 ? (t ? acc + a[i] : a[i]) : a[i] * acc + b[i];
                bad += tol == 0 ? h[i] != acc : !(std::fabs(h[i] - acc) <= tol * (1 + std::fabs(acc)));
            }
        }
    return bad;
}
