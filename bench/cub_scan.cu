// CUB peers for bench/gpu_bench.cu: DeviceScan::InclusiveSum, InclusiveScan with a custom max,
// and the affine combine on float2, on device buffers the caller owns. Returns seconds.
#include <cub/cub.cuh>

#include "gpu_timing.cuh"

struct CubMax {
    __device__ float operator()(float a, float b) const { return a < b ? b : a; }
};
struct CubAffine {  // (a1, b1) o (a2, b2) = (a1 a2, a2 b1 + b2)
    __device__ float2 operator()(float2 l, float2 r) const {
        return make_float2(l.x * r.x, r.x * l.y + r.y);
    }
};

template <class Run>
static double with_temp(Run run, cudaStream_t stream) {
    size_t bytes = 0;
    run(nullptr, bytes, stream);
    void* temp = nullptr;
    BENCH_CHECK(cudaMalloc(&temp, bytes));
    double t = time_median([&](cudaStream_t s) { run(temp, bytes, s); }, stream);
    BENCH_CHECK(cudaFree(temp));
    return t;
}

double cub_sum(const float* in, float* out, long long n, cudaStream_t stream) {
    return with_temp([&](void* t, size_t& b, cudaStream_t s) {
        cub::DeviceScan::InclusiveSum(t, b, in, out, n, s);
    }, stream);
}

double cub_max(const float* in, float* out, long long n, cudaStream_t stream) {
    return with_temp([&](void* t, size_t& b, cudaStream_t s) {
        cub::DeviceScan::InclusiveScan(t, b, in, out, CubMax{}, n, s);
    }, stream);
}

double cub_affine(const float2* in, float2* out, long long n, cudaStream_t stream) {
    return with_temp([&](void* t, size_t& b, cudaStream_t s) {
        cub::DeviceScan::InclusiveScan(t, b, in, out, CubAffine{}, n, s);
    }, stream);
}
