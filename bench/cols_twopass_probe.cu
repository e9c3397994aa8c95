// A measurement, not part of the backend (issue 5, thirty-seventh session;
// docs/history/cuda-sessions-21-37.md):
// a cols scan in two passes of independent warps, so that no warp holds data while it waits.
// The thirty-second session's warp tiles (one warp, R steps x 32 V columns, no barrier) moved
// (2,4096,1024)'s bytes at 93% of the big copy with no look-back, and lost most of it to any
// chain; the thirty-third's two passes (`cols_reread_probe.cu`) re-read their inputs from L2 but
// their block tiles waited at barriers. Here every visit is one warp, V = 4 columns a lane (a
// line is 128 columns), a tile RC steps of its line:
// - R(t) walks tile t's steps in batches of B (loads of a batch in flight together), folds
//   them to the tile's aggregate and publishes it (plain words, then a released flag);
// - G(line, j) folds the GS aggregates of the line's chunk group j and publishes that;
// - S(t) waits for the group aggregates of the groups before its own and the aggregates of its
//   group's earlier tiles (at most chunks / GS + GS - 2 entries, folded in that order, so the
//   result is the same bits run to run), then walks its steps again (from L2, if the lag is
//   short enough) and stores the scan.
// Visits go in a list built on the host: the R visits chunk-major over the lines, each G right
// after the R it needs last, and S(t) right after R(t + lag); a block's warps take consecutive
// visits and a visit waits only on earlier ones, so blocks started in order never deadlock. f32
// sum or the affine scan (h = a h' + b), layout [O][T][C], C a multiple of 128. Timed as
// bench/gpu_bench.cu times; every configuration is checked against a host scan (sums of small
// integers bitwise, the affine scan within 1e-4 (1 + |h|)).
// "reads alone" and "one pass, no prefix" lines time the R visits alone and the S visits with
// no prefix (results wrong): what the two passes' parts reach by themselves.
// "strided" lines give a lane the columns lane + 32 q instead of 4 adjacent ones (four scalar
// accesses of a warp's 128 contiguous bytes each, against one 16-byte vector access): how a
// backend kernel built on the generic one-element loads would read (thirty-eighth session).
// Measured in the thirty-ninth session (docs/benchmarks.md): the two passes took about the sum of
// their parts, at best 45.2% of the copy on (2,4096,1024) against the table kernel's 68.4%.
// Built and run by `TWOPASS_PROBE=1 scripts/gpu.sh OUTDIR`, or: nvcc -O3 -std=c++20 -arch=sm_90
// bench/cols_twopass_probe.cu -o probe && ./probe
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "cols_probe_setup.cuh"

constexpr int V = 4, LC = 32 * V;  // columns a lane, columns a line
// ALONE: a scan visit with no prefix (results wrong), for the one-pass ceiling of these tiles.
enum Kind : u64 { REDUCE = 0, GROUP = 1, SCAN = 2, ALONE = 3 };
__host__ __device__ constexpr u64 visit(Kind k, i64 i) { return (u64)k << 60 | (u64)i; }

struct Plan {
    i64 lines, chunks, groups, rc;  // tiles of rc steps; groups of gs chunks
    int gs;
};

__device__ __forceinline__ void st_release(unsigned* p, unsigned v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
// L2 policies (HINT 1): the reduce pass keeps its lines (evict_last) for the scan pass, which
// lets them go (evict_first); HINT 0 plain loads.
template <int HINT> __device__ __forceinline__ void load4(const float* p, float (&v)[V], bool keep) {
    if constexpr (!HINT) {
        load_v<V>(p, v);
    } else {
        u64 pol;
        if (keep) asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
        else asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
        asm volatile("ld.global.nc.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
                     : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), "=f"(v[3]) : "l"(p), "l"(pol));
    }
}

// A published state of a line's 128 columns: NW planes (a, then b) of 128 floats, a lane's 4
// adjacent; the flag carries the launch's epoch once the planes are written.
template <int NIN> struct Slot {
    float* planes;
    unsigned* flag;
    __device__ void publish(const St<NIN> (&s)[V], int lane, unsigned epoch) const {
        float a[V], b[V];
#pragma unroll
        for (int q = 0; q < V; ++q) a[q] = s[q].a, b[q] = s[q].b;
        if (NIN == 2) store_v<V>(planes + lane * V, a);
        store_v<V>(planes + (NIN - 1) * LC + lane * V, b);
        __threadfence();
        __syncwarp();
        if (lane == 0) st_release(flag, epoch);
    }
    __device__ void read(St<NIN> (&s)[V], int lane) const {
        float a[V] = {}, b[V];
        const float4 vb = __ldcg(reinterpret_cast<const float4*>(planes + (NIN - 1) * LC + lane * V));
        if (NIN == 2) {
            const float4 va = __ldcg(reinterpret_cast<const float4*>(planes + lane * V));
            a[0] = va.x, a[1] = va.y, a[2] = va.z, a[3] = va.w;
        }
        b[0] = vb.x, b[1] = vb.y, b[2] = vb.z, b[3] = vb.w;
#pragma unroll
        for (int q = 0; q < V; ++q) s[q] = St<NIN>{a[q], b[q]};
    }
};

template <int NIN, int B, int WARPS, int MINB, int HINT, bool STRIDED>
__global__ void __launch_bounds__(WARPS * 32, MINB)
    twopass_cols(const float* __restrict__ in0, const float* __restrict__ in1, float* __restrict__ out, i64 T, i64 C,
                 const u64* __restrict__ visits, i64 nvisits, Plan plan, float* planes, unsigned* flags, unsigned epoch) {
    typedef St<NIN> S;
    const int lane = threadIdx.x % 32;
    const i64 v = (i64)blockIdx.x * WARPS + threadIdx.x / 32;
    if (v >= nvisits) return;
    const u64 code = visits[v];
    const Kind kind = (Kind)(code >> 60);
    const i64 idx = (i64)(code & ((1ull << 60) - 1));
    const i64 col_groups = C / LC, agg_slots = plan.lines * plan.chunks;
    auto agg = [&](i64 line, i64 chunk) {  // a tile's aggregate
        const i64 s = line * plan.chunks + chunk;
        return Slot<NIN>{planes + s * NIN * LC, flags + s};
    };
    auto grp = [&](i64 line, i64 j) {  // a chunk group's aggregate
        const i64 s = agg_slots + line * plan.groups + j;
        return Slot<NIN>{planes + s * NIN * LC, flags + s};
    };
    auto wait = [&](const Slot<NIN>& s) {
        for (int ns = 32; ld_acquire(s.flag) != epoch; ns = ns < 256 ? 2 * ns : ns) __nanosleep(ns);
    };
    if (kind == GROUP) {
        const i64 line = idx / plan.groups, j = idx % plan.groups;
        S acc[V], e[V];
        for (int c = 0; c < plan.gs; ++c) {
            const Slot<NIN> s = agg(line, j * plan.gs + c);
            wait(s);
            s.read(e, lane);
#pragma unroll
            for (int q = 0; q < V; ++q) acc[q] = c ? S::combine(acc[q], e[q]) : e[q];
        }
        grp(line, j).publish(acc, lane, epoch);
        return;
    }
    const i64 chunk = idx / plan.lines, line = idx % plan.lines, o = line / col_groups, g = line % col_groups;
    const i64 t0 = chunk * plan.rc;
    const i64 nv = T - t0 < plan.rc ? T - t0 : plan.rc;
    // A lane's V columns: adjacent (one vector access), or STRIDED 32 apart (lane + 32 q: V
    // scalar accesses, each a warp's 128 contiguous bytes), as a backend kernel whose loads
    // are one element a lane would take them.
    const i64 at0 = (o * T + t0) * C + g * LC + (STRIDED ? lane : lane * V);
    S run[V];
    bool has = false;
    if (kind == SCAN && chunk > 0) {
        // The prefix: the groups before this tile's, then its group's earlier tiles, in order.
        // Lane e waits on entry e's flag (__syncwarp orders the planes' reads after every lane's
        // acquire), then the entries are read E at a time, so their round trips overlap.
        constexpr int E = 4;
        const i64 j = chunk / plan.gs, ne = j + chunk - j * plan.gs;
        auto entry = [&](i64 e) { return e < j ? grp(line, e) : agg(line, j * plan.gs + e - j); };
        for (i64 e = lane; e < ne; e += 32) wait(entry(e));
        __syncwarp();
        for (i64 e0 = 0; e0 < ne; e0 += E) {
            S e[E][V];
#pragma unroll
            for (int k = 0; k < E; ++k)
                if (e0 + k < ne) entry(e0 + k).read(e[k], lane);
#pragma unroll
            for (int k = 0; k < E; ++k)
                if (e0 + k < ne) {
#pragma unroll
                    for (int q = 0; q < V; ++q) run[q] = has ? S::combine(run[q], e[k][q]) : e[k][q];
                    has = true;
                }
        }
    }
    for (i64 k0 = 0; k0 < nv; k0 += B) {
        float va[B][V], vb[B][V];
#pragma unroll
        for (int k = 0; k < B; ++k)
            if (k0 + k < nv) {
                if constexpr (STRIDED) {
#pragma unroll
                    for (int q = 0; q < V; ++q) {
                        va[k][q] = __ldg(in0 + at0 + (k0 + k) * C + 32 * q);
                        if (NIN == 2) vb[k][q] = __ldg(in1 + at0 + (k0 + k) * C + 32 * q);
                    }
                } else {
                    load4<HINT>(in0 + at0 + (k0 + k) * C, va[k], kind == REDUCE);
                    if (NIN == 2) load4<HINT>(in1 + at0 + (k0 + k) * C, vb[k], kind == REDUCE);
                }
            }
#pragma unroll
        for (int k = 0; k < B; ++k)
            if (k0 + k < nv) {
                float h[V];
#pragma unroll
                for (int q = 0; q < V; ++q) {
                    const S x = item<NIN>(va[k][q], vb[k][q]);
                    run[q] = has ? S::combine(run[q], x) : x;
                    h[q] = run[q].b;
                }
                has = true;
                if (kind != REDUCE) {
                    if constexpr (STRIDED) {
#pragma unroll
                        for (int q = 0; q < V; ++q) out[at0 + (k0 + k) * C + 32 * q] = h[q];
                    } else {
                        store_v<V>(out + at0 + (k0 + k) * C, h);
                    }
                }
            }
    }
    if (kind == REDUCE) agg(line, chunk).publish(run, lane, epoch);
}

// The visit list: R chunk-major, each G after the last R it folds, S(t) after R(t + lag).
// Measurements only: `only` 1 lists the R visits alone (a read of the inputs), 2 ALONE visits
// (one pass, no prefix).
static std::vector<u64> visit_list(const Plan& p, i64 lag, int only) {
    std::vector<u64> out;
    const i64 n = p.lines * p.chunks;
    if (only)
        for (i64 i = 0; i < n; ++i) out.push_back(visit(only == 1 ? REDUCE : ALONE, i));
    if (only) return out;
    for (i64 i = 0; i < n + lag; ++i) {
        if (i < n) {
            out.push_back(visit(REDUCE, i));
            const i64 chunk = i / p.lines, line = i % p.lines, j = chunk / p.gs;
            // a group is read only by tiles past it
            if (chunk % p.gs == p.gs - 1 && (j + 1) * p.gs < p.chunks) out.push_back(visit(GROUP, line * p.groups + j));
        }
        if (i >= lag) out.push_back(visit(SCAN, i - lag));
    }
    return out;
}

static unsigned g_epoch = 0;

template <int NIN, int B, int WARPS, int MINB, int HINT, bool STRIDED>
static double run(const float* x, const float* y, float* z, const Case& c, i64 rc, int gs, i64 lag, int only,
                  float* planes, unsigned* flags, u64* d_visits, int& per_sm, size_t& bad) {
    const i64 lines = c.O * (c.C / LC), chunks = (c.T + rc - 1) / rc;
    const Plan plan{lines, chunks, (chunks + gs - 1) / gs, rc, gs};
    const std::vector<u64> list = visit_list(plan, std::min(lag, lines * chunks), only);
    BENCH_CHECK(cudaMemcpy(d_visits, list.data(), list.size() * 8, cudaMemcpyHostToDevice));
    auto kernel = twopass_cols<NIN, B, WARPS, MINB, HINT, STRIDED>;
    BENCH_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, WARPS * 32, 0));
    const i64 nvis = (i64)list.size();
    const unsigned grid = (unsigned)((nvis + WARPS - 1) / WARPS);
    auto op = [&](cudaStream_t s) {
        kernel<<<grid, WARPS * 32, 0, s>>>(x, y, z, c.T, c.C, d_visits, nvis, plan, planes, flags, ++g_epoch);
    };
    return time_and_check(op, x, y, z, c, only == 0, bad);
}

int main() {
    const ColsProbe probe = cols_probe_setup();
    const auto [x, y, ints, z] = probe.in;
    float* planes = nullptr;
    unsigned* flags = nullptr;
    u64* d_visits = nullptr;
    BENCH_CHECK(cudaMalloc(&planes, (size_t)256 << 20));
    BENCH_CHECK(cudaMalloc(&flags, (size_t)16 << 20));
    BENCH_CHECK(cudaMemset(flags, 0, (size_t)16 << 20));
    BENCH_CHECK(cudaMalloc(&d_visits, (size_t)64 << 20));
    const Case cases[] = {{"affine (2,4096,1024) dim 1", 2, 2, 4096, 1024}, {"affine (4,4096,256) dim 1", 2, 4, 4096, 256},
                          {"sum 4096x8192 dim 0", 1, 1, 4096, 8192}, {"affine (2,4099,1024) dim 1", 2, 2, 4099, 1024}};
    for (const Case& c : cases) {
        probe.print_case(c);
// SD 1: a lane's columns 32 apart (scalar accesses), as a backend kernel would read them.
#define TRY(B, WARPS, MINB, HINT, RC, GS, LAG, ONLY, SD)                                                             \
    {                                                                                                                \
        size_t bad = 0;                                                                                              \
        int per_sm = 0;                                                                                              \
        const double t = c.nin == 1 ? run<1, B, WARPS, MINB, HINT, SD>(ints, y, z, c, RC, GS, LAG, ONLY, planes,      \
                                                                        flags, d_visits, per_sm, bad)                \
                                    : run<2, B, WARPS, MINB, HINT, SD>(x, y, z, c, RC, GS, LAG, ONLY, planes, flags,  \
                                                                        d_visits, per_sm, bad);                      \
        std::printf("  RC=%-3d B=%d GS=%-2d lag=%-5d warps=%d %d/SM %-7s %-8s %-19s %7.1f us %5.1f%% of copy  %zu "  \
                    "differ\n",                                                                                      \
                    RC, B, GS, LAG, WARPS, per_sm, HINT ? "L2 hint" : "", SD ? "strided" : "",                       \
                    ONLY == 1 ? "reads alone" : ONLY == 2 ? "one pass, no prefix" : "two passes", t * 1e6,           \
                    probe.percent(c, t), bad);                                                                       \
    }
        TRY(4, 8, 4, 0, 64, 8, 0, 1, 0) TRY(4, 8, 4, 0, 64, 8, 0, 2, 0) TRY(8, 8, 2, 0, 64, 8, 0, 2, 0)
        TRY(4, 8, 4, 0, 16, 8, 0, 2, 0) TRY(4, 8, 4, 0, 64, 8, 0, 0, 0) TRY(4, 8, 4, 0, 64, 8, 512, 0, 0)
        TRY(4, 8, 4, 1, 64, 8, 512, 0, 0) TRY(8, 8, 2, 0, 64, 8, 512, 0, 0) TRY(8, 8, 2, 1, 64, 8, 512, 0, 0)
        TRY(4, 8, 4, 1, 32, 8, 1024, 0, 0) TRY(4, 8, 4, 1, 128, 4, 256, 0, 0) TRY(8, 8, 2, 1, 128, 4, 256, 0, 0)
        TRY(4, 8, 4, 1, 64, 8, 2048, 0, 0) TRY(4, 8, 4, 1, 64, 8, 128, 0, 0) TRY(4, 4, 8, 1, 64, 8, 512, 0, 0)
        TRY(4, 8, 3, 1, 64, 8, 512, 0, 0)
        TRY(4, 8, 4, 0, 64, 8, 0, 2, 1) TRY(4, 8, 4, 0, 64, 8, 512, 0, 1) TRY(8, 8, 2, 0, 64, 8, 512, 0, 1)
        TRY(4, 8, 4, 0, 64, 8, 256, 0, 1)
#undef TRY
    }
    return 0;
}
