// A measurement, not part of the backend (issue 5, forty-first session; docs/benchmarks.md):
// cols lines walked by thread-block clusters, their carries passed through distributed shared
// memory, never through L2. Every cols design measured since the sixteenth session chains a
// line's tiles through tagged words in L2, and under the tiles' DRAM traffic a round trip there
// costs about 1.5 us (fortieth session), as long as a tile's load. Here a persistent grid of
// clusters of CL blocks walks lines of L = 32 V columns, one line at a time per cluster, in
// rounds of CL x WY x R steps: block k of the cluster takes the round's k-th run of WY x R
// steps, each of its WY warps R steps of it (lane l holding V adjacent columns). Each round the
// warps fold their runs and meet in shared memory (a barrier), the block's aggregate is stored
// into every block of the cluster (distributed shared memory), a cluster barrier, the ranks
// before this block's are folded onto the line's carry (the same order in every block, so every
// block agrees on the carry to the bit and the results are the same run to run), and every warp
// scans its run from its prefix and stores from registers. Inputs come through a ring of D
// shared-memory stages per warp filled by cp.async D - 1 rounds ahead, or (MODE 3, 4) into
// registers one round ahead. MODE 0 leaves out the exchange (results wrong: what the streaming
// reaches alone); 1 exchanges each round in turn (warp 0 sends and folds); 2 skews it, round
// i + 1's runs loading and folding while round i's cluster barrier is under way; 3 the same with
// no ring; 4 as 3 with every warp its share of the exchange and the stores after the next
// round's arrive; 5 as 4 through the ring. `diag` times each phase of cluster 0's rounds.
// f32 sum or the affine scan (h = a h' + b), layout [O][T][C], C a multiple of L. Timed as
// bench/gpu_bench.cu times (a spin kernel queued first), against a device-to-device copy of 2^28
// floats and one of the same bytes; every exchanging configuration is checked against a host
// scan (sums of small integers bitwise, the affine scan within 1e-4 (1 + |h|)).
// Built and run by `CLUSTER_PROBE=1|diag scripts/gpu.sh OUTDIR`, or: nvcc -O3 -std=c++20
// -arch=sm_90 bench/cols_cluster_probe.cu -o probe && ./probe [diag]
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "cols_probe_setup.cuh"

namespace cg = cooperative_groups;

template <int V> __device__ __forceinline__ void load_shared_v(const float* p, float (&v)[V]) {
    const typename Vec<V>::T t = *reinterpret_cast<const typename Vec<V>::T*>(p);
    std::memcpy(v, &t, sizeof t);
}

// `diag`: cluster 0's blocks note when each of their first kStampItems rounds passes each phase
// (thread 0, SM clock), kStampPhases words a round.
constexpr int kStampItems = 64, kStampPhases = 8;
__device__ long long* g_stamps = nullptr;

// Dynamic shared memory: the ring [D][NIN][WY][R][L] floats, then the warps' aggregates
// [3][WY][L] (by round mod 3), the cluster's blocks' aggregates [2][CL][L] (written by each block
// into every block) and this block's prefixes [2][L] (the line's carry and the ranks before it),
// both by round parity.
template <int V, int WY, int R, int D>
__host__ __device__ constexpr size_t ring_floats(int nin) { return (size_t)D * nin * WY * R * 32 * V; }
template <int V, int CL, int WY, int R, int D>
__host__ __device__ constexpr size_t smem_bytes(int nin) {
    return ring_floats<V, WY, R, D>(nin) * 4 + (size_t)(3 * WY + 2 * CL + 2) * 32 * V * 8;
}

__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }

// MODE 0: no exchange (results wrong); 1: each round's exchange in turn; 2: skewed, round i + 1's
// runs loaded and folded while round i's exchange is under way (its cluster barrier split into
// arrive and wait around them); 3: skewed with no ring, round i + 1's loads issued into
// registers before round i's exchange completes and its scan (D unused); 4: as 3, with the
// exchange spread over the warps and the stores after the next arrive (scan_regs below); 5: as
// 4, its items through the ring.
template <int NIN, int V, int CL, int WY, int R, int D, int MODE>
__global__ void __launch_bounds__(WY * 32, 1)
    cluster_cols(const float* __restrict__ in0, const float* __restrict__ in1, float* __restrict__ out, i64 O, i64 T,
                 i64 C, int nclusters) {
    typedef St<NIN> S;
    constexpr int L = 32 * V, BS = WY * R, RS = CL * BS;  // a line's columns; a block's and a cluster's steps a round
    static_assert(D >= 2, "a stage is refilled once its item is in registers");
    extern __shared__ float4 smem_raw[];
    float* const ring = reinterpret_cast<float*>(smem_raw);
    auto s_wagg = reinterpret_cast<S(*)[WY][L]>(ring + ring_floats<V, WY, R, D>(NIN));
    auto s_xagg = reinterpret_cast<S(*)[CL][L]>(s_wagg + 3);
    auto s_carry = reinterpret_cast<S(*)[L]>(s_xagg + 2);
    const cg::cluster_group cluster = cg::this_cluster();
    const int rank = (int)cluster.block_rank(), cid = (int)(blockIdx.x / CL);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const i64 groups = C / L, lines = O * groups, rounds = (T + RS - 1) / RS;
    const i64 items = cid < lines ? (lines - cid + nclusters - 1) / nclusters * rounds : 0;  // (line, round) pairs
    auto line_of = [&](i64 i) { return cid + i / rounds * nclusters; };
    auto step0 = [&](i64 i) { return i % rounds * RS + (i64)rank * BS + (i64)warp * R; };  // this warp's first step
    auto steps = [&](i64 i) { const i64 t0 = step0(i); return t0 >= T ? 0 : (T - t0 >= R ? R : (int)(T - t0)); };
    auto at = [&](i64 i) { const i64 line = line_of(i); return (line / groups * T + step0(i)) * C + line % groups * L + lane * V; };
    auto stage = [&](i64 i, int k) { return ring + ((size_t)((i % D) * NIN + k) * WY + warp) * R * L + lane * V; };
    // Item i's run of this warp into its stage (one commit group per item, empty past the end).
    auto fetch = [&](i64 i) {
        if (i < items) {
            const i64 base = at(i), t0 = step0(i);
#pragma unroll
            for (int k = 0; k < R; ++k) {
                const bool ok = t0 + k < T;
                copy_async<V>(stage(i, 0) + k * L, in0 + (ok ? base + k * C : 0), ok);
                if (NIN == 2) copy_async<V>(stage(i, 1) + k * L, in1 + (ok ? base + k * C : 0), ok);
            }
        }
        copy_commit();
    };
    // Item i's run folded into s_wagg.
    auto aggregate = [&](i64 i, const float (&va)[R][V], const float (&vb)[R][V]) {
        const int nv = steps(i);
#pragma unroll
        for (int q = 0; q < V; ++q) {
            S agg = S::identity();
#pragma unroll
            for (int k = 0; k < R; ++k)
                if (k < nv) agg = S::combine(agg, item<NIN>(va[k][q], vb[k][q]));
            s_wagg[i % 3][warp][lane * V + q] = agg;
        }
    };
    // Item i into registers (once its copies are in: each lane reads only what it copied), its
    // stage refilled D items on, and its run's aggregate into s_wagg.
    auto take = [&](i64 i, float (&va)[R][V], float (&vb)[R][V]) {
        copy_wait<D - 2>();
#pragma unroll
        for (int k = 0; k < R; ++k) {
            load_shared_v<V>(stage(i, 0) + k * L, va[k]);
            if (NIN == 2) load_shared_v<V>(stage(i, 1) + k * L, vb[k]);
        }
        fetch(i + D - 1);
        aggregate(i, va, vb);
    };
    // Once every warp's aggregate of item i is in: the block's, stored into ranks first,
    // first + stride, ... of the cluster.
    auto send = [&](i64 i, int first, int stride) {
#pragma unroll
        for (int q = 0; q < V; ++q) {
            const int c = lane * V + q;
            S b = s_wagg[i % 3][0][c];
#pragma unroll
            for (int w = 1; w < WY; ++w) b = S::combine(b, s_wagg[i % 3][w][c]);
            for (int r = first; r < CL; r += stride) *cluster.map_shared_rank(&s_xagg[i & 1][rank][c], r) = b;
        }
    };
    // Once every block's aggregate of item i is in: this block's prefix in column lane V + q (the
    // line's carry and the ranks before this one), the carry moved past the round (the same folds
    // in every block and warp).
    S line_carry[V];
#pragma unroll
    for (int q = 0; q < V; ++q) line_carry[q] = S::identity();
    auto rank_prefix = [&](i64 i, int q) {
        const int c = lane * V + q;
        S p = i % rounds == 0 ? S::identity() : line_carry[q], mine = p;
#pragma unroll
        for (int r = 0; r < CL; ++r) {
            if (r == rank) mine = p;
            p = S::combine(p, s_xagg[i & 1][r][c]);
        }
        line_carry[q] = p;
        return mine;
    };
    // Warp 0 (modes 1-3): this block's prefixes of item i for every warp.
    auto receive = [&](i64 i) {
#pragma unroll
        for (int q = 0; q < V; ++q) s_carry[i & 1][lane * V + q] = rank_prefix(i, q);
    };
    // Every warp, once this block's prefix of item i is in: its run scanned from its prefix.
    auto scan = [&](i64 i, const float (&va)[R][V], const float (&vb)[R][V]) {
        S run[V];
        bool has[V];
#pragma unroll
        for (int q = 0; q < V; ++q) {
            const int c = lane * V + q;
            run[q] = MODE > 0 ? s_carry[i & 1][c] : S::identity();
            for (int w = 0; w < warp; ++w) run[q] = S::combine(run[q], s_wagg[i % 3][w][c]);
            has[q] = true;
        }
        scan_store_run<NIN, V, R>(out + at(i), C, steps(i), va, vb, run, has);
    };
    // Modes 4 and 5: every warp its own share of the exchange. Warp w stores the block's aggregate
    // into ranks w, w + WY, ...; after the cluster barrier each warp folds its own prefix (its own
    // copy of the line's carry), then its run's scan into registers, stored only after the next
    // round's arrive (whose release would otherwise wait for the stores).
    auto scan_regs = [&](i64 i, const float (&va)[R][V], const float (&vb)[R][V], float (&h)[R][V]) {
        const int nv = steps(i);
#pragma unroll
        for (int q = 0; q < V; ++q) {
            const int c = lane * V + q;
            S run = rank_prefix(i, q);
            for (int w = 0; w < warp; ++w) run = S::combine(run, s_wagg[i % 3][w][c]);
#pragma unroll
            for (int k = 0; k < R; ++k)
                if (k < nv) run = S::combine(run, item<NIN>(va[k][q], vb[k][q])), h[k][q] = run.b;
        }
    };
    auto store_regs = [&](i64 i, const float (&h)[R][V]) {
        const int nv = steps(i);
        float* const o = out + at(i);
#pragma unroll
        for (int k = 0; k < R; ++k)
            if (k < nv) store_v<V>(o + k * C, h[k]);
    };
    long long* const stamps = cid == 0 && threadIdx.x == 0 ? g_stamps : nullptr;
    auto stamp = [&](i64 i, int phase) {
        if (stamps && i < kStampItems) stamps[((i64)rank * kStampItems + i) * kStampPhases + phase] = clock64();
    };
    cluster.sync();  // every block of the cluster runs before any writes into another's shared memory
    if (MODE != 3 && MODE != 4)
        for (int i = 0; i < D - 1; ++i) fetch(i);
    float va[R][V], vb[R][V];
    auto move = [&](float (&da)[R][V], float (&db)[R][V], const float (&sa)[R][V], const float (&sb)[R][V]) {
#pragma unroll
        for (int k = 0; k < R; ++k)
#pragma unroll
            for (int q = 0; q < V; ++q) da[k][q] = sa[k][q], db[k][q] = sb[k][q];
    };
    // Once this block's warps have folded item i: their barrier, the block's aggregate sent (by
    // every warp its share, or by warp 0), and this block's arrival at the cluster's barrier.
    auto publish = [&](i64 i, bool shared) {
        __syncthreads();
        if (shared) send(i, warp, WY);
        else if (warp == 0) send(i, 0, 1);
        cluster_arrive();
    };
    if (MODE >= 4 && items > 0) {
        // Item j into (a, b) with its aggregate in s_wagg: from the ring (MODE 5, its stage
        // refilled D items on) or from registers the loads went to one round earlier (MODE 4).
        float na[R][V], nb[R][V];
        auto ready = [&](i64 j, float (&a)[R][V], float (&b)[R][V]) {
            if (MODE == 5) take(j, a, b);
            else aggregate(j, a, b);
        };
        if (MODE == 4) load_run<NIN, V, R>(in0, in1, at(0), C, steps(0), va, vb);
        ready(0, va, vb);
        publish(0, true);
        if (MODE == 4 && items > 1) load_run<NIN, V, R>(in0, in1, at(1), C, steps(1), na, nb);
        for (i64 i = 0; i < items; ++i) {
            stamp(i, 0);
            cluster_wait();
            stamp(i, 1);
            float h[R][V];
            scan_regs(i, va, vb, h);
            stamp(i, 2);
            if (i + 1 < items) {
                ready(i + 1, na, nb);
                stamp(i, 3);
                publish(i + 1, true);
                stamp(i, 5);
            }
            store_regs(i, h);
            stamp(i, 6);
            move(va, vb, na, nb);
            if (MODE == 4 && i + 2 < items) load_run<NIN, V, R>(in0, in1, at(i + 2), C, steps(i + 2), na, nb);
            stamp(i, 7);
        }
    } else if (MODE == 3 && items > 0) {  // no ring: round i + 1 loads into registers while round i exchanges and scans
        load_run<NIN, V, R>(in0, in1, at(0), C, steps(0), va, vb);
        aggregate(0, va, vb);
        publish(0, false);
        for (i64 i = 0; i < items; ++i) {
            stamp(i, 0);
            float na[R][V], nb[R][V];
            if (i + 1 < items) load_run<NIN, V, R>(in0, in1, at(i + 1), C, steps(i + 1), na, nb);
            cluster_wait();
            stamp(i, 1);
            if (warp == 0) receive(i);
            __syncthreads();
            stamp(i, 2);
            scan(i, va, vb);
            stamp(i, 3);
            if (i + 1 < items) {
                aggregate(i + 1, na, nb);
                stamp(i, 4);
                publish(i + 1, false);
                move(va, vb, na, nb);
            }
            stamp(i, 7);
        }
    } else if (MODE < 2) {
        for (i64 i = 0; i < items; ++i) {
            stamp(i, 0);
            take(i, va, vb);
            stamp(i, 1);
            __syncthreads();
            stamp(i, 2);
            if (MODE == 1) {
                if (warp == 0) send(i, 0, 1);
                stamp(i, 3);
                cluster.sync();
                stamp(i, 4);
                if (warp == 0) receive(i);
                __syncthreads();
            }
            stamp(i, 5);
            scan(i, va, vb);
            stamp(i, 6);
        }
    } else if (items > 0) {
        take(0, va, vb);
        publish(0, false);
        for (i64 i = 0; i < items; ++i) {
            float na[R][V], nb[R][V];
            stamp(i, 0);
            if (i + 1 < items) take(i + 1, na, nb);
            stamp(i, 1);
            cluster_wait();  // round i's aggregates are in
            stamp(i, 2);
            if (warp == 0) receive(i);
            __syncthreads();  // this block's prefix of round i, and every warp's aggregate of round i + 1
            scan(i, va, vb);
            if (i + 1 < items) {
                if (warp == 0) send(i + 1, 0, 1);
                cluster_arrive();
                move(va, vb, na, nb);
            }
        }
    }
    copy_wait<0>();
    cluster.sync();  // no block leaves while another may still write into its shared memory
}

static bool g_diag = false;
static int g_clock_khz = 1;
static const char* kModeNames[] = {"no exchange", "exchange", "skewed", "skewed regs", "shared regs", "shared ring"};

// Seconds of one configuration, its clusters, and its mismatches against the host scan
// (exchanging runs only: the others' results are wrong by design).
template <int NIN, int V, int CL, int WY, int R, int D, int MODE>
static double run(const float* x, const float* y, float* z, const Case& c, int& nclusters, size_t& bad) {
    auto kernel = cluster_cols<NIN, V, CL, WY, R, D, MODE>;
    const size_t smem = smem_bytes<V, CL, WY, R, D>(NIN);
    BENCH_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    if (CL > 8) BENCH_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = CL, attr.val.clusterDim.y = 1, attr.val.clusterDim.z = 1;
    cudaLaunchConfig_t cfg{};
    cfg.blockDim = dim3(WY * 32), cfg.dynamicSmemBytes = smem, cfg.attrs = &attr, cfg.numAttrs = 1;
    cfg.gridDim = dim3(CL);
    int active = 0;
    BENCH_CHECK(cudaOccupancyMaxActiveClusters(&active, kernel, &cfg));
    const i64 lines = c.O * (c.C / (32 * V));
    nclusters = (int)std::min<i64>(lines, active);
    cfg.gridDim = dim3((unsigned)(nclusters * CL));
    const int ncl = nclusters;
    auto op = [&](cudaStream_t s) {
        cfg.stream = s;
        BENCH_CHECK(cudaLaunchKernelEx(&cfg, kernel, (const float*)x, (const float*)y, z, (i64)c.O, (i64)c.T, (i64)c.C, ncl));
    };
    const double t = time_and_check(op, x, y, z, c, MODE > 0, bad);
    if (g_diag) {  // one more launch, stamped: the median of each phase over rounds 1 .. 62, per rank
        long long* d = nullptr;
        const size_t n = (size_t)CL * kStampItems * kStampPhases;
        BENCH_CHECK(cudaMalloc(&d, n * 8));
        BENCH_CHECK(cudaMemset(d, 0, n * 8));
        BENCH_CHECK(cudaMemcpyToSymbol(g_stamps, &d, sizeof d));
        op(0);
        BENCH_CHECK(cudaDeviceSynchronize());
        std::vector<long long> h(n);
        BENCH_CHECK(cudaMemcpy(h.data(), d, n * 8, cudaMemcpyDeviceToHost));
        long long* none = nullptr;
        BENCH_CHECK(cudaMemcpyToSymbol(g_stamps, &none, sizeof none));
        BENCH_CHECK(cudaFree(d));
        std::printf("    phases (us, median over rounds 1-62; each from the stamp before; last: the whole round)\n");
        for (int r = 0; r < CL; r += CL - 1) {
            std::printf("    rank %d:", r);
            // Phase ph (1-7) ends at stamp ph, from the latest earlier stamp the mode records;
            // phase 8 is the round, stamp 0 to the next round's (w[8]).
            for (int ph = 1; ph <= kStampPhases; ++ph) {
                std::vector<double> v;
                for (int i = 1; i + 1 < kStampItems; ++i) {
                    const long long* w = &h[((size_t)r * kStampItems + i) * kStampPhases];
                    int from = ph == kStampPhases ? 0 : ph - 1;
                    while (from > 0 && w[from] == 0) --from;
                    if (w[ph] && w[from]) v.push_back((w[ph] - w[from]) / (g_clock_khz * 1e-3));
                }
                if (v.empty()) continue;
                std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
                std::printf(" %.2f", v[v.size() / 2]);
            }
            std::printf("\n");
        }
    }
    return t;
}

int main(int argc, char** argv) {
    const ColsProbe probe = cols_probe_setup();
    g_diag = argc > 1 && std::strcmp(argv[1], "diag") == 0;
    BENCH_CHECK(cudaDeviceGetAttribute(&g_clock_khz, cudaDevAttrClockRate, 0));
    const auto [x, y, ints, z] = probe.in;
    const Case cases[] = {{"affine (2,4096,1024) dim 1", 2, 2, 4096, 1024}, {"sum 4096x8192 dim 0", 1, 1, 4096, 8192},
                          {"affine (4,4096,256) dim 1", 2, 4, 4096, 256}, {"affine 4096x8192 dim 0", 2, 1, 4096, 8192},
                          {"affine (2,4099,1024) dim 1", 2, 2, 4099, 1024}};
    for (const Case& c : cases) {
        probe.print_case(c);
#define TRY(V, CL, WY, R, D, MODE)                                                                                     \
    {                                                                                                                  \
        size_t bad = 0;                                                                                                \
        int ncl = 0;                                                                                                   \
        const double t = c.nin == 1 ? run<1, V, CL, WY, R, D, MODE>(ints, y, z, c, ncl, bad)                           \
                                    : run<2, V, CL, WY, R, D, MODE>(x, y, z, c, ncl, bad);                             \
        std::printf("  V=%d CL=%-2d WY=%-2d R=%-2d D=%d %3d clusters %-11s %7.1f us %5.1f%% of copy  %zu differ\n", V, CL, \
                    WY, R, D, ncl, kModeNames[MODE], t * 1e6, probe.percent(c, t), bad);             \
    }
        if (g_diag) {  // where a round's time goes
            if (c.T != 4096 || (c.nin == 2 && c.O == 4)) continue;
            TRY(1, 8, 16, 16, 2, 4) TRY(1, 2, 16, 16, 2, 4) TRY(1, 2, 16, 16, 2, 3) TRY(1, 2, 16, 16, 3, 5)
            continue;
        }
        // Rings of up to 196 KB a block (with the exchange's arrays, within an SM's 227 KB). The
        // three calls' lists together (docs/benchmarks.md has the best of each mode).
        TRY(4, 8, 4, 8, 4, 0) TRY(4, 8, 4, 8, 4, 1) TRY(4, 4, 4, 8, 4, 1) TRY(4, 8, 8, 4, 4, 2) TRY(4, 2, 4, 8, 4, 2)
        TRY(2, 8, 8, 8, 4, 0) TRY(2, 8, 8, 8, 4, 2) TRY(2, 4, 8, 8, 4, 2)
        TRY(1, 8, 16, 16, 2, 3) TRY(1, 4, 16, 16, 2, 3) TRY(1, 2, 16, 16, 2, 3) TRY(4, 4, 8, 8, 2, 3)
        TRY(1, 8, 16, 16, 2, 4) TRY(1, 2, 16, 16, 2, 4) TRY(1, 2, 8, 16, 2, 4) TRY(2, 2, 16, 8, 2, 4)
        TRY(1, 2, 16, 16, 3, 5) TRY(2, 2, 16, 8, 3, 5) TRY(4, 2, 8, 8, 3, 5)
#undef TRY
    }
    return 0;
}
