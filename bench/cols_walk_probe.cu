// A measurement, not part of the backend (issue 5, twenty-sixth session;
// docs/history/cuda-sessions-21-37.md):
// what a cols scan reaches with no look-back at all, when each warp walks whole lines of L
// columns from the first step to the last (lane = column, one sequential scan per lane) and its
// inputs arrive through a ring of D shared-memory stages of S steps. f32 sum or the affine scan
// (h = a h' + b), layout [O][T][C], against a device-to-device copy of 2^28 floats. Feeds:
//   rows     one 1-D bulk copy (cp.async.bulk) per step and input, completing on an mbarrier
//   cpasync  16-byte cp.async per lane
//   tma      one bulk tensor copy (3-D tensor map) per stage and input
//   nostore  tma, but only the last step is stored (what the loads and the chain cost alone)
//   tmaout   tma, and each stage's results leave by a bulk tensor store from shared memory
//   split    tmaout, but a block of K warps walks each line, each warp a run of S / K steps of
//            every stage (the runs' maps folded in order: not bitwise the sequential scan)
// Every other feed stores each step with st.global. Built and run by `WALK_PROBE="[FEED...]"
// scripts/gpu.sh OUTDIR` (no feed named: all), or: nvcc -O3 -std=c++17 -arch=sm_90
// bench/cols_walk_probe.cu -o probe && ./probe [FEED...]. Checks its last configuration per
// case bitwise against a host scan.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cols_probe_check.h"
#include "cols_probe_tma.cuh"
#include "gpu_timing.cuh"

#define CK(x)                                                                          \
    do {                                                                               \
        cudaError_t e = (x);                                                           \
        if (e != cudaSuccess) {                                                        \
            std::printf("CUDA %s at line %d\n", cudaGetErrorString(e), __LINE__);     \
            std::exit(1);                                                              \
        }                                                                              \
    } while (0)
typedef long long i64;

enum Feed { kRows, kCpAsync, kTma, kNoStore, kTmaOut, kSplit };
static const char* kFeedNames[] = {"rows", "cpasync", "tma", "nostore", "tmaout", "split"};
constexpr int kFeeds = 6;

__device__ __forceinline__ void bulk_row(void* dst, const void* src, unsigned bytes, unsigned long long* b) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(smem_addr(dst)), "l"(src), "r"(bytes), "r"(smem_addr(b)) : "memory");
}
__device__ __forceinline__ void cp16(void* dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_addr(dst)), "l"(src) : "memory");
}
// cp.async.wait_group takes an immediate: wait until at most n of this thread's groups are pending.
__device__ __forceinline__ void cp_wait(int n) {
    switch (n < 7 ? n : 7) {
        case 0: asm volatile("cp.async.wait_group 0;" ::: "memory"); break;
        case 1: asm volatile("cp.async.wait_group 1;" ::: "memory"); break;
        case 2: asm volatile("cp.async.wait_group 2;" ::: "memory"); break;
        case 3: asm volatile("cp.async.wait_group 3;" ::: "memory"); break;
        case 4: asm volatile("cp.async.wait_group 4;" ::: "memory"); break;
        case 5: asm volatile("cp.async.wait_group 5;" ::: "memory"); break;
        case 6: asm volatile("cp.async.wait_group 6;" ::: "memory"); break;
        default: asm volatile("cp.async.wait_group 7;" ::: "memory"); break;
    }
}

struct Maps { CUtensorMap in[2], out; };  // [C, T, O], boxes of [L, S, 1]

// Shared memory per warp: D stages of S x L floats per input, D mbarriers, two output stages.
template <int NIN, int L, int S, int D>
__host__ __device__ constexpr size_t warp_smem() { return (size_t)D * S * L * 4 * NIN + 128 * D + 2 * S * L * 4; }

// Warp w of the block walks line blockIdx.x * warps + w: columns g L .. g L + L - 1 of batch o
// (C a multiple of L, T of S).
template <int NIN, int L, int S, int D, int FEED>
__global__ void walk(const float* __restrict__ in0, const float* __restrict__ in1, float* __restrict__ out, i64 O,
                     i64 T, i64 C, int warps, const __grid_constant__ Maps maps) {
    extern __shared__ unsigned char smem_raw[];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, col = lane < L ? lane : L - 1;
    const i64 groups = C / L, line = (i64)blockIdx.x * warps + warp;
    if (line >= O * groups) return;
    const i64 o = line / groups, g = line % groups, line0 = o * T * C + g * L;
    unsigned char* base = aligned_smem(smem_raw) + warp * warp_smem<NIN, L, S, D>();
    const size_t in_bytes = (size_t)D * S * L * 4 * NIN;  // the input stages, then the layout of warp_smem
    unsigned long long* bar = (unsigned long long*)(base + in_bytes);
    float* ostage = (float*)(base + in_bytes + 128 * D);
    auto stage = [&](int k, int slot) { return (float*)(base + ((size_t)k * D + slot) * S * L * 4); };
    const float* src[2] = {in0, in1};
    if (lane == 0)
        for (int d = 0; d < D; ++d) mbar_init(&bar[d]);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    __syncwarp();
    const i64 stages = T / S;
    auto issue = [&](i64 s) {  // stage s into slot s % D
        const int slot = (int)(s % D);
        const i64 t0 = s * S;
        if (FEED == kCpAsync) {
            for (int k = 0; k < NIN; ++k)
                for (int q = lane; q < S * (L / 4); q += 32)
                    cp16(stage(k, slot) + q / (L / 4) * L + 4 * (q % (L / 4)), src[k] + line0 + (t0 + q / (L / 4)) * C + 4 * (q % (L / 4)));
            asm volatile("cp.async.commit_group;" ::: "memory");
        } else if (FEED == kRows) {
            if (lane == 0) mbar_expect(&bar[slot], S * L * 4 * NIN);
            __syncwarp();
            for (int k = 0; k < NIN; ++k)
                for (int r = lane; r < S; r += 32) bulk_row(stage(k, slot) + r * L, src[k] + line0 + (t0 + r) * C, L * 4, &bar[slot]);
        } else if (lane == 0) {
            mbar_expect(&bar[slot], S * L * 4 * NIN);
            for (int k = 0; k < NIN; ++k) tma_load(stage(k, slot), &maps.in[k], (int)(g * L), (int)t0, (int)o, &bar[slot]);
        }
    };
    for (i64 s = 0; s < D && s < stages; ++s) issue(s);
    float h = 0.f;
    float* op = out + line0 + lane;
    for (i64 s = 0; s < stages; ++s) {
        const int slot = (int)(s % D);
        if (FEED == kCpAsync) {
            cp_wait((int)(min((i64)D, stages - s) - 1));
            __syncwarp();
        } else {
            mbar_wait(&bar[slot], (unsigned)((s / D) & 1));
        }
        const float* a = stage(0, slot) + col;
        const float* b = stage(NIN - 1, slot) + col;
        const i64 t0 = s * S;
        float* os = ostage + (s & 1) * S * L;
        if (FEED == kTmaOut && s >= 2) {  // this output stage's store from two stages ago has read it
            if (lane == 0) asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
            __syncwarp();
        }
        constexpr int P = S < 32 ? S : 32;  // steps read into registers at a time
#pragma unroll
        for (int r0 = 0; r0 < S; r0 += P) {
            float va[P], vb[P];
#pragma unroll
            for (int r = 0; r < P; ++r) va[r] = a[(r0 + r) * L], vb[r] = b[(r0 + r) * L];
#pragma unroll
            for (int r = 0; r < P; ++r) {
                if (NIN == 1) h = (s == 0 && r0 + r == 0) ? va[r] : __fadd_rn(h, va[r]);
                else h = __fadd_rn(__fmul_rn(va[r], h), vb[r]);
                if (FEED == kTmaOut) os[(r0 + r) * L + col] = h;
                else if (FEED != kNoStore && lane < L) op[(t0 + r0 + r) * C] = h;
            }
        }
        if (FEED == kTmaOut) {
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            __syncwarp();
            if (lane == 0) {
                tma_store(&maps.out, (int)(g * L), (int)t0, (int)o, os);
                asm volatile("cp.async.bulk.commit_group;" ::: "memory");
            }
        }
        __syncwarp();
        if (FEED != kCpAsync) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        if (s + D < stages) issue(s + D);
    }
    if (FEED == kNoStore && lane < L) op[(T - 1) * C] = h;
    if (FEED == kTmaOut && lane == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

// Feed `split`: block b walks line b with K warps. Stage s (S steps, in shared memory by one
// bulk tensor copy per input) is cut into K runs of R = S / K steps. Warp 0 scans run 0 from
// the line's carry while warps 1..K-1 each reduce their run to one map (affine: h -> A h + B;
// sum: h -> h + B); after a barrier every warp folds the maps in order onto run 0's last value,
// so warp k knows its run's carry and rescans the run from it, and the fold's end is the next
// stage's carry. A line's chain per stage is then about 2 R steps instead of S.
template <int NIN, int L, int S, int D, int K>
__host__ __device__ constexpr size_t split_smem() { return warp_smem<NIN, L, S, D>() + (2 * K + 1) * 32 * 4; }

template <int NIN, int L, int S, int D, int K>
__global__ void walk_split(i64 T, i64 C, const __grid_constant__ Maps maps) {
    extern __shared__ unsigned char smem_raw[];
    constexpr int R = S / K;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, col = lane < L ? lane : L - 1;
    const i64 groups = C / L, o = blockIdx.x / groups, g = blockIdx.x % groups;
    unsigned char* base = aligned_smem(smem_raw);
    const size_t in_bytes = (size_t)D * S * L * 4 * NIN;
    unsigned long long* bar = (unsigned long long*)(base + in_bytes);
    float* ostage = (float*)(base + in_bytes + 128 * D);
    float* map_a = ostage + 2 * S * L;  // [K][32]
    float* map_b = map_a + K * 32;      // [K][32]
    float* run0_end = map_b + K * 32;   // [32]
    auto stage = [&](int k, int slot) { return (float*)(base + ((size_t)k * D + slot) * S * L * 4); };
    const i64 stages = T / S;
    auto issue = [&](i64 s) {  // by thread 0: stage s into slot s % D
        const int slot = (int)(s % D);
        mbar_expect(&bar[slot], S * L * 4 * NIN);
        for (int k = 0; k < NIN; ++k) tma_load(stage(k, slot), &maps.in[k], (int)(g * L), (int)(s * S), (int)o, &bar[slot]);
    };
    if (threadIdx.x == 0) {
        for (int d = 0; d < D; ++d) mbar_init(&bar[d]);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        for (i64 s = 0; s < D && s < stages; ++s) issue(s);
    }
    __syncthreads();
    float carry = 0.f;
    for (i64 s = 0; s < stages; ++s) {
        const int slot = (int)(s % D);
        mbar_wait(&bar[slot], (unsigned)((s / D) & 1));
        const float* a = stage(0, slot) + col + warp * R * L;
        const float* b = stage(NIN - 1, slot) + col + warp * R * L;
        float* os = ostage + (s & 1) * S * L + col + warp * R * L;
        auto rescan = [&](float h) {
#pragma unroll 8
            for (int r = 0; r < R; ++r) {
                h = NIN == 1 ? __fadd_rn(h, a[r * L]) : __fadd_rn(__fmul_rn(a[r * L], h), b[r * L]);
                os[r * L] = h;
            }
            return h;
        };
        if (warp == 0) {
            run0_end[lane] = rescan(carry);
        } else {
            float A = 1.f, B = 0.f;  // this run's map, composed step by step: (a, b) after (A, B)
#pragma unroll 8
            for (int r = 0; r < R; ++r) {
                if (NIN == 1) B = __fadd_rn(B, a[r * L]);
                else A = __fmul_rn(a[r * L], A), B = __fadd_rn(__fmul_rn(a[r * L], B), b[r * L]);
            }
            map_a[warp * 32 + lane] = A, map_b[warp * 32 + lane] = B;
        }
        __syncthreads();
        float c = run0_end[lane];
        for (int k = 1; k < K; ++k) {
            if (k == warp) rescan(c);
            c = NIN == 1 ? __fadd_rn(c, map_b[k * 32 + lane]) : __fadd_rn(__fmul_rn(map_a[k * 32 + lane], c), map_b[k * 32 + lane]);
        }
        carry = c;
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncthreads();
        if (threadIdx.x == 0) {
            tma_store(&maps.out, (int)(g * L), (int)(s * S), (int)o, ostage + (s & 1) * S * L);
            asm volatile("cp.async.bulk.commit_group;" ::: "memory");
            if (s + D < stages) issue(s + D);
            // The other output stage is written next: the store that read it (stage s - 1) is done.
            asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
        }
        __syncwarp();  // warp 0 writes that stage first, before the next barrier
    }
    if (threadIdx.x == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

struct Case {
    const char* name;
    int nin;
    i64 O, T, C;
};

template <class F>
static float median_ms(F launch) {
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    std::vector<float> ms;
    for (int it = 0; it < 17; ++it) {
        CK(cudaEventRecord(e0));
        launch();
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float t;
        CK(cudaEventElapsedTime(&t, e0, e1));
        if (it >= 2) ms.push_back(t);
    }
    CK(cudaGetLastError());
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

template <int NIN, int L, int S, int D, int FEED>
static float time_walk(const float* a, const float* b, float* o, const Case& c, int warps) {
    const i64 lines = c.O * (c.C / L);
    const int blocks = (int)((lines + warps - 1) / warps);
    const size_t smem = warps * warp_smem<NIN, L, S, D>() + 1024;
    auto k = walk<NIN, L, S, D, FEED>;
    CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    Maps maps{};
    const float* ins[2] = {a, b};
    for (int j = 0; j < NIN; ++j) make_map(&maps.in[j], ins[j], c.O, c.T, c.C, L, S);
    make_map(&maps.out, o, c.O, c.T, c.C, L, S);
    return median_ms([&] { k<<<blocks, 32 * warps, smem>>>(a, b, o, c.O, c.T, c.C, warps, maps); });
}

template <int NIN, int L, int S, int D, int K>
static float time_split(const float* a, const float* b, float* o, const Case& c) {
    const size_t smem = split_smem<NIN, L, S, D, K>() + 1024;
    auto k = walk_split<NIN, L, S, D, K>;
    CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    Maps maps{};
    const float* ins[2] = {a, b};
    for (int j = 0; j < NIN; ++j) make_map(&maps.in[j], ins[j], c.O, c.T, c.C, L, S);
    make_map(&maps.out, o, c.O, c.T, c.C, L, S);
    return median_ms([&] { k<<<(int)(c.O * (c.C / L)), 32 * K, smem>>>(c.T, c.C, maps); });
}

static float time_copy(void* dst, const void* src, size_t bytes) {
    return median_ms([&] { CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice)); });
}

static size_t mismatches(const float* x, const float* y, const float* z, const Case& c, float tol) {
    return cols_scan_mismatches(x, y, z, c.O, c.T, c.C, c.nin, tol);
}

int main(int argc, char** argv) {
    std::vector<int> feeds;
    for (int i = 1; i < argc; ++i)
        for (int f = 0; f < kFeeds; ++f)
            if (!std::strcmp(argv[i], kFeedNames[f])) feeds.push_back(f);
    if (feeds.empty()) feeds = {kRows, kCpAsync, kTma, kNoStore, kTmaOut, kSplit};
    const size_t big = (size_t)1 << 28;
    const auto [x, y, ints, z] = cols_probe_inputs(big);  // the walks sum x itself: each lane in order
    const double copy_bw = 2.0 * big * 4 / (time_copy(z, x, big * 4) * 1e-3);
    std::printf("copy of 2^28 f32: %.0f GB/s, %s\n", copy_bw / 1e9, device_name());
    const Case cases[] = {{"affine (2,4096,1024) dim 1", 2, 2, 4096, 1024}, {"sum 4096x8192 dim 0", 1, 1, 4096, 8192},
                          {"affine 4096x8192 dim 0", 2, 1, 4096, 8192}, {"affine (4,2048,1024) dim 1", 2, 4, 2048, 1024}};
    for (const Case& c : cases) {
        const double bytes = (double)(c.nin + 1) * c.O * c.T * c.C * 4;
        std::printf("%s: a copy of the same bytes %.1f%% of the big copy\n", c.name,
                    100.0 * bytes / (time_copy(z, x, (size_t)(bytes / 2)) * 1e-3) / copy_bw);
        for (int f : feeds) {
#define TRY(FEED, L, S, D, W)                                                                                 \
    if (f == FEED) {                                                                                          \
        float t = c.nin == 1 ? time_walk<1, L, S, D, FEED>(x, y, z, c, W) : time_walk<2, L, S, D, FEED>(x, y, z, c, W); \
        std::printf("  %-8s L=%-2d S=%-3d D=%d warps=%d: %7.1f us, %5.1f%% of copy\n", kFeedNames[FEED], L, S, D, W, \
                    t * 1e3, 100.0 * bytes / (t * 1e-3) / copy_bw);                                          \
    }
            TRY(kRows, 32, 64, 4, 1) TRY(kRows, 16, 64, 8, 1)
            TRY(kCpAsync, 32, 64, 4, 1) TRY(kCpAsync, 16, 64, 4, 2)
            TRY(kTma, 32, 64, 4, 1) TRY(kTma, 32, 128, 4, 1) TRY(kTma, 16, 128, 4, 1)
            TRY(kNoStore, 32, 64, 4, 1) TRY(kNoStore, 16, 64, 4, 1)
            TRY(kTmaOut, 32, 32, 4, 1) TRY(kTmaOut, 32, 64, 3, 1) TRY(kTmaOut, 16, 32, 8, 1) TRY(kTmaOut, 16, 128, 3, 1)
            TRY(kTmaOut, 8, 128, 4, 1)
#undef TRY
            if (f == kTmaOut) std::printf("  tmaout L=8 S=128: %zu elements differ from the host scan\n", mismatches(x, y, z, c, 0));
#define TRY(L, S, D, K)                                                                                          \
    if (f == kSplit) {                                                                                           \
        float t = c.nin == 1 ? time_split<1, L, S, D, K>(x, y, z, c) : time_split<2, L, S, D, K>(x, y, z, c);   \
        std::printf("  split    L=%-2d S=%-3d D=%d warps=%d: %7.1f us, %5.1f%% of copy, %zu differ by > 1e-4\n", L, S, \
                    D, K, t * 1e3, 100.0 * bytes / (t * 1e-3) / copy_bw, mismatches(x, y, z, c, 1e-4f));           \
    }
            TRY(32, 64, 4, 2) TRY(32, 64, 4, 4) TRY(32, 64, 4, 8) TRY(32, 128, 3, 4) TRY(32, 128, 3, 8)
            TRY(32, 32, 8, 4) TRY(16, 128, 4, 4) TRY(16, 128, 4, 8) TRY(16, 64, 6, 4)
#undef TRY
        }
    }
    return 0;
}
