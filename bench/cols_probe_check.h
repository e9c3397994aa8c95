// The cols probes' inputs and check (bench/cols_walk_probe.cu, bench/cols_wide_probe.cu,
// bench/cols_pipe_probe.cu): the device arrays they scan, and a result of layout [O][T][C] on
// the device against a host scan along T in the same order, with no contraction on either
// side. Sum (nin 1) of x, or the affine scan h = a h' + b of (x, y).
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

// n floats each on the device: x (the affine scan's a, in [0.5, 1)), y (its b, in [-1, 1)),
// ints (the sum's input: integers 0 .. 3, so that every association gives the same bits) and z
// (the result), all from one fixed generator.
struct ColsProbeInputs { float *x, *y, *ints, *z; };
inline ColsProbeInputs cols_probe_inputs(size_t n) {
    ColsProbeInputs in{};
    std::vector<float> h(n);
    unsigned s = 1;
    for (float** p : {&in.x, &in.y, &in.ints, &in.z}) {
        if (cudaMalloc(p, n * 4) != cudaSuccess) {
            std::printf("cudaMalloc failed for the probe's inputs\n");
            std::exit(1);
        }
        if (p == &in.z) break;
        for (size_t i = 0; i < n; ++i) {
            s = s * 1664525u + 1013904223u;
            h[i] = p == &in.x ? 0.5f + (s >> 9) * (0.5f / (1 << 23)) : p == &in.y ? -1.f + (s >> 9) * (2.f / (1 << 23)) : (float)(s >> 30);
        }
        cudaMemcpy(*p, h.data(), n * 4, cudaMemcpyHostToDevice);
    }
    return in;
}
