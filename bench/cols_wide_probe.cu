// A measurement, not part of the backend (issue 5, thirty-second session;
// docs/history/cuda-sessions-21-37.md):
// cols tiles of one warp each, V columns a lane. The backend's cols tile stacks a block's warps
// along the scan dim, so a block reads 32 columns (128 bytes) per step, rows C floats apart, and
// folds its warps through shared memory behind two barriers. Here a tile is one warp: R steps x
// 32 V columns, lane l holding V adjacent columns (one V-wide access per step), scanned serially
// per lane. A block's warps take adjacent column groups at the same chunk, so a block reads
// 32 V x warps contiguous floats per step, and each lane chains its own columns across tiles by
// a deterministic windowed look-back (prefix of chunk c = P(ws - 1) o A(ws) o .. o A(c - 1),
// ws = c rounded down to W; only window ends publish P) on tagged 64-bit words (value | epoch),
// so no barrier, fence or shared memory anywhere. f32 sum or the affine scan (h = a h' + b),
// layout [O][T][C], C a multiple of 32 V. Timed as bench/gpu_bench.cu times (a spin kernel
// queued first), against a device-to-device copy of 2^28 floats and one of the same bytes;
// every configuration is checked bitwise against a host scan in the same order. The stacked
// tiles may stage their inputs in shared memory instead of registers (forty-first session).
// Built and run by `WIDE_PROBE=1 scripts/gpu.sh OUTDIR`, or: nvcc -O3 -std=c++20 -arch=sm_90
// bench/cols_wide_probe.cu -o probe && ./probe
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "cols_probe_setup.cuh"

// MODE: 0 no look-back (the results are wrong: what the tiles reach alone), 1 the look-back.
template <int NIN, int V, int R, int W, int WARPS, int MINB, int MODE>
__global__ void __launch_bounds__(WARPS * 32, MINB)
    wide_cols(const float* __restrict__ in0, const float* __restrict__ in1, float* __restrict__ out, i64 O, i64 T, i64 C,
              u64* __restrict__ status, unsigned epoch) {
    typedef St<NIN> S;
    constexpr int NW = words(NIN), LW = V * NW;  // tagged words a lane publishes per state kind
    const int lane = threadIdx.x % 32;
    const i64 groups = C / (32 * V), lines = O * groups, chunks = (T + R - 1) / R;
    const i64 tile = (i64)blockIdx.x * WARPS + threadIdx.x / 32;
    if (tile >= lines * chunks) return;
    const i64 chunk = tile / lines, line = tile % lines, o = line / groups, g = line % groups;
    const i64 t0 = chunk * R;
    const int nv = T - t0 >= R ? R : (int)(T - t0);
    const i64 at0 = (o * T + t0) * C + g * 32 * V + lane * V;
    float va[R][V], vb[R][V];
    load_run<NIN, V, R>(in0, in1, at0, C, nv, va, vb);
    auto item_at = [&](int k, int q) { return item<NIN>(va[k][q], vb[k][q]); };
    S pre[V];
    bool has_pre = false;
    if (MODE > 0 && chunks > 1) {
        S agg[V];
#pragma unroll
        for (int q = 0; q < V; ++q) {
            agg[q] = item_at(0, q);
#pragma unroll
            for (int k = 1; k < R; ++k)
                if (k < nv) agg[q] = S::combine(agg[q], item_at(k, q));
        }
        // A words: lines x chunks x 32 lanes x LW; then P words, the same.
        u64* const a_words = status;
        u64* const p_words = status + (u64)lines * chunks * 32 * LW;
        auto word_at = [&](u64* base, i64 c, int q, int j) { return base + ((u64)(line * chunks + c) * 32 + lane) * LW + q * NW + j; };
        auto publish_all = [&](u64* base, i64 c, const S (&s)[V]) {
#pragma unroll
            for (int q = 0; q < V; ++q) publish<NIN>([&](int j) { return word_at(base, c, q, j); }, s[q], epoch);
        };
        if (chunk + 1 < chunks && chunk % W != W - 1) publish_all(a_words, chunk, agg);  // a window end's A is never read
        if (chunk > 0) {
            const i64 ws = chunk / W * W;
            const int n = (int)(chunk - ws);  // aggregates to fold after P(ws - 1)
            // word i = (j V + q) NW + w: j = 0 is P(ws - 1), j >= 1 is A(ws + j - 1)
            auto word = [&](int i) {
                const int j = i / LW, q = i / NW % V, w = i % NW;
                return j == 0 ? word_at(p_words, ws - 1, q, w) : word_at(a_words, ws + j - 1, q, w);
            };
            u64 wv[W * LW];
#pragma unroll
            for (int i = 0; i < W * LW; ++i) wv[i] = (i < LW ? ws > 0 : i / LW <= n) ? ld_word(word(i)) : (u64)epoch << 32;
            wait_tagged(wv, epoch, word);
#pragma unroll
            for (int q = 0; q < V; ++q) {
                auto state = [&](int j) { return untag<NIN>(wv + (j * V + q) * NW); };
                bool h = ws > 0;
                if (h) pre[q] = state(0);
#pragma unroll
                for (int j = 1; j < W; ++j)
                    if (j <= n) pre[q] = h ? S::combine(pre[q], state(j)) : state(j), h = true;
            }
            has_pre = true;
            if (chunk % W == W - 1 && chunk + 1 < chunks) {
                S incl[V];
#pragma unroll
                for (int q = 0; q < V; ++q) incl[q] = S::combine(pre[q], agg[q]);
                publish_all(p_words, chunk, incl);
            }
        } else if (chunk % W == W - 1) {  // chunk 0 ends a window only when W is 1
            publish_all(p_words, chunk, agg);
        }
    }
    // The tile's scan from its prefix, stored as it goes.
    S run[V];
    bool has[V];
#pragma unroll
    for (int q = 0; q < V; ++q) has[q] = has_pre, run[q] = pre[q];
    scan_store_run<NIN, V, R>(out + at0, C, nv, va, vb, run, has);
}

// Stacked tiles: a block's WARPS warps stacked along the scan dim, each R steps of the same 32 V
// columns (one line), so a tile is WARPS R steps tall and its look-back covers that many steps
// per window entry. The warps' aggregates meet in shared memory; the window's words (P(ws - 1),
// A(ws) .. A(c - 1), each 32 V columns x NW) are loaded by every thread of the block, column
// t % 32 V, entries t / 32 V apart, and folded in order by one thread per column.
// STAGE (forty-first session): the tile's inputs go by cp.async into shared memory
// ([NIN][WARPS][R][32 V] floats, dynamic) instead of registers, and the fold and the scan read
// them there, so that a tile holds no registers while it waits and an SM fits as many tiles as
// its shared memory holds.
template <int NIN, int V, int R, int WARPS, int W, int MINB, bool LOOKBACK, bool STAGE = false>
__global__ void __launch_bounds__(WARPS * 32, MINB)
    stacked_cols(const float* __restrict__ in0, const float* __restrict__ in1, float* __restrict__ out, i64 O, i64 T,
                 i64 C, u64* __restrict__ status, unsigned epoch) {
    typedef St<NIN> S;
    constexpr int NW = words(NIN), COLS = 32 * V, STRIDE = WARPS * 32 / COLS;  // threads per column
    constexpr int PER = (W + STRIDE - 1) / STRIDE;  // window entries a thread loads
    __shared__ S s_agg[WARPS][COLS];
    __shared__ u32 s_win[W][NW][COLS];
    __shared__ S s_pre[COLS];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const i64 groups = C / COLS, lines = O * groups, chunks = (T + (i64)WARPS * R - 1) / ((i64)WARPS * R);
    const i64 chunk = blockIdx.x / lines, line = blockIdx.x % lines, o = line / groups, g = line % groups;
    const i64 t0 = chunk * WARPS * R + (i64)warp * R;
    const int nv = t0 >= T ? 0 : (T - t0 >= R ? R : (int)(T - t0));
    const i64 at0 = (o * T + t0) * C + g * COLS + lane * V;
    extern __shared__ float4 stage_raw[];
    float* const sa = reinterpret_cast<float*>(stage_raw) + (size_t)warp * R * COLS + lane * V;  // [k COLS + q]
    float* const sb = sa + (size_t)(NIN - 1) * WARPS * R * COLS;
    float va[R][V], vb[R][V];
    if (STAGE) {
#pragma unroll
        for (int k = 0; k < R; ++k) {
            copy_async<V>(sa + k * COLS, in0 + (k < nv ? at0 + k * C : 0), k < nv);
            if (NIN == 2) copy_async<V>(sb + k * COLS, in1 + (k < nv ? at0 + k * C : 0), k < nv);
        }
        copy_commit();
        copy_wait<0>();  // each lane reads only what it copied
    } else {
        load_run<NIN, V, R>(in0, in1, at0, C, nv, va, vb);
    }
    auto item_at = [&](int k, int q) {
        return STAGE ? item<NIN>(sa[k * COLS + q], sb[k * COLS + q]) : item<NIN>(va[k][q], vb[k][q]);
    };
#pragma unroll
    for (int q = 0; q < V; ++q) {
        S agg = nv > 0 ? item_at(0, q) : S::identity();  // an empty run (past the end) folds as identity
#pragma unroll
        for (int k = 1; k < R; ++k)
            if (k < nv) agg = S::combine(agg, item_at(k, q));
        s_agg[warp][lane * V + q] = agg;
    }
    __syncthreads();
    const int col = threadIdx.x % COLS, slot = threadIdx.x / COLS;
    const bool has_pre = LOOKBACK && chunk > 0;
    if (LOOKBACK && chunks > 1) {
        u64* const a_words = status;
        u64* const p_words = status + (u64)lines * chunks * COLS * NW;
        auto word_at = [&](u64* base, i64 c, int w) { return base + ((u64)(line * chunks + c) * NW + w) * COLS + col; };
        const i64 ws = chunk / W * W;
        const int n = (int)(chunk - ws);
        S tagg{};
        if (slot == 0) {
            tagg = s_agg[0][col];
#pragma unroll
            for (int w = 1; w < WARPS; ++w) tagg = S::combine(tagg, s_agg[w][col]);
            if (chunk + 1 < chunks && chunk % W != W - 1) publish<NIN>([&](int w) { return word_at(a_words, chunk, w); }, tagg, epoch);
        }
        if (chunk > 0) {
            // entry e = 0 is P(ws - 1), e >= 1 is A(ws + e - 1); this thread's are slot + STRIDE i
            // word i = k NW + w of entry e = slot + STRIDE k
            auto word = [&](int i) {
                const int e = slot + STRIDE * (i / NW), w = i % NW;
                return e == 0 ? word_at(p_words, ws - 1, w) : word_at(a_words, ws + e - 1, w);
            };
            u64 wv[PER * NW];
#pragma unroll
            for (int i = 0; i < PER * NW; ++i) {
                const int e = slot + STRIDE * (i / NW);
                wv[i] = (e == 0 ? ws > 0 : e <= n && e < W) ? ld_word(word(i)) : (u64)epoch << 32;
            }
            wait_tagged(wv, epoch, word);
#pragma unroll
            for (int i = 0; i < PER * NW; ++i)
                if (slot + STRIDE * (i / NW) < W) s_win[slot + STRIDE * (i / NW)][i % NW][col] = (u32)wv[i];
        }
        __syncthreads();
        if (slot == 0) {
            S pre = tagg;
            if (chunk > 0) {
                auto entry = [&](int e) { return S{NIN == 2 ? __uint_as_float(s_win[e][0][col]) : 0.f, __uint_as_float(s_win[e][NW - 1][col])}; };
                bool h = ws > 0;
                if (h) pre = entry(0);
                for (int e = 1; e <= n; ++e) pre = h ? S::combine(pre, entry(e)) : entry(e), h = true;
                s_pre[col] = pre;
                pre = S::combine(pre, tagg);
            }
            if (chunk % W == W - 1 && chunk + 1 < chunks) publish<NIN>([&](int w) { return word_at(p_words, chunk, w); }, pre, epoch);
        }
        __syncthreads();
    }
    S run[V];
    bool has[V];
#pragma unroll
    for (int q = 0; q < V; ++q) {
        has[q] = has_pre;
        if (has_pre) run[q] = s_pre[lane * V + q];
        for (int w = 0; w < warp; ++w) run[q] = has[q] ? S::combine(run[q], s_agg[w][lane * V + q]) : s_agg[w][lane * V + q], has[q] = true;
    }
    scan_store_items<NIN, V, R>(out + at0, C, nv, item_at, run, has);
}

static const char* kModes[] = {"no look-back", "look-back"};

static u64* g_status;
static unsigned g_epoch = 0;

// Seconds of one configuration, and its mismatches against the host scan (look-back runs only:
// the others' results are wrong by design).
template <int NIN, int V, int R, int W, int WARPS, int MINB, int MODE>
static double run(const float* x, const float* y, float* z, const Case& c, size_t& bad) {
    const i64 lines = c.O * c.C / (32 * V), chunks = (c.T + R - 1) / R, tiles = lines * chunks;
    const unsigned blocks = (unsigned)((tiles + WARPS - 1) / WARPS);
    auto op = [&](cudaStream_t s) {
        wide_cols<NIN, V, R, W, WARPS, MINB, MODE><<<blocks, WARPS * 32, 0, s>>>(x, y, z, c.O, c.T, c.C, g_status, ++g_epoch);
    };
    return time_and_check(op, x, y, z, c, MODE != 0, bad);  // the look-back reassociates: see time_and_check
}

template <int NIN, int V, int R, int WARPS, int W, int MINB, bool LB, bool STAGE = false>
static double run_stacked(const float* x, const float* y, float* z, const Case& c, size_t& bad, int* per_sm = nullptr) {
    const i64 lines = c.O * c.C / (32 * V), chunks = (c.T + WARPS * R - 1) / (WARPS * R);
    auto kernel = stacked_cols<NIN, V, R, WARPS, W, MINB, LB, STAGE>;
    const int smem = STAGE ? NIN * WARPS * R * 32 * V * 4 : 0;
    BENCH_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    if (per_sm) BENCH_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, kernel, WARPS * 32, smem));
    auto op = [&](cudaStream_t s) {
        kernel<<<(unsigned)(lines * chunks), WARPS * 32, smem, s>>>(x, y, z, c.O, c.T, c.C, g_status, ++g_epoch);
    };
    return time_and_check(op, x, y, z, c, LB, bad);
}

int main() {
    const ColsProbe probe = cols_probe_setup();
    const auto [x, y, ints, z] = probe.in;
    g_status = status_words((size_t)1 << 30);
    const Case cases[] = {{"affine (2,4096,1024) dim 1", 2, 2, 4096, 1024}, {"sum 4096x8192 dim 0", 1, 1, 4096, 8192},
                          {"affine (4,4096,256) dim 1", 2, 4, 4096, 256}, {"affine 4096x8192 dim 0", 2, 1, 4096, 8192}};
    for (const Case& c : cases) {
        probe.print_case(c);
#define TRY(V, R, W, WARPS, MINB, MODE)                                                                          \
    {                                                                                                          \
        size_t bad = 0;                                                                                        \
        const double t = c.nin == 1 ? run<1, V, R, W, WARPS, MINB, MODE>(ints, y, z, c, bad)                     \
                                    : run<2, V, R, W, WARPS, MINB, MODE>(x, y, z, c, bad);                       \
        std::printf("  V=%d R=%-2d W=%-2d warps=%d minb=%d %-12s %7.1f us %5.1f%% of copy  %zu differ\n", V, R, W, \
                    WARPS, MINB, kModes[MODE], t * 1e6, probe.percent(c, t), bad);     \
    }
        TRY(4, 16, 1, 8, 1, 0) TRY(4, 8, 1, 8, 2, 0) TRY(1, 32, 1, 8, 2, 0) TRY(4, 4, 1, 8, 4, 0)
        TRY(4, 16, 4, 8, 1, 1) TRY(1, 32, 8, 8, 2, 1)
#undef TRY
#define TRY(V, R, WARPS, W, MINB, LB)                                                                       \
    {                                                                                                       \
        size_t bad = 0;                                                                                     \
        const double t = c.nin == 1 ? run_stacked<1, V, R, WARPS, W, MINB, LB>(ints, y, z, c, bad)          \
                                    : run_stacked<2, V, R, WARPS, W, MINB, LB>(x, y, z, c, bad);            \
        std::printf("  stacked V=%d R=%-2d warps=%-2d W=%-2d minb=%d %-12s %7.1f us %5.1f%% of copy  %zu differ\n", V, R, \
                    WARPS, W, MINB, LB ? "look-back" : "no look-back", t * 1e6, probe.percent(c, t), bad);     \
    }
        TRY(4, 4, 8, 16, 4, false) TRY(4, 4, 8, 16, 3, true) TRY(4, 4, 8, 32, 3, true) TRY(4, 4, 16, 16, 2, true)
        TRY(4, 8, 8, 16, 2, true) TRY(4, 8, 8, 8, 2, true) TRY(4, 16, 4, 16, 2, true) TRY(4, 2, 16, 16, 3, true)
        TRY(2, 8, 8, 16, 3, true) TRY(4, 8, 16, 16, 1, true) TRY(2, 16, 8, 32, 1, true) TRY(2, 4, 16, 32, 2, true)
        TRY(2, 8, 16, 32, 2, true) TRY(2, 8, 16, 32, 2, false)
#undef TRY
        // Staged in shared memory (forty-first session): the table's tile (V=1, 8 warps of 32
        // steps, window 4) and others, at as many blocks an SM as shared memory holds.
#define TRY(V, R, WARPS, W, MINB, LB)                                                                       \
    {                                                                                                       \
        size_t bad = 0;                                                                                     \
        int per_sm = 0;                                                                                     \
        const double t = c.nin == 1 ? run_stacked<1, V, R, WARPS, W, MINB, LB, true>(ints, y, z, c, bad, &per_sm) \
                                    : run_stacked<2, V, R, WARPS, W, MINB, LB, true>(x, y, z, c, bad, &per_sm); \
        std::printf("  staged V=%d R=%-2d warps=%-2d W=%-2d %d/SM %-12s %7.1f us %5.1f%% of copy  %zu differ\n", V, R, \
                    WARPS, W, per_sm, LB ? "look-back" : "no look-back", t * 1e6, probe.percent(c, t), bad);  \
    }
        TRY(1, 32, 8, 4, 3, false) TRY(1, 32, 8, 4, 3, true) TRY(1, 32, 8, 8, 3, true) TRY(1, 16, 8, 4, 4, true)
        TRY(1, 32, 4, 8, 4, true) TRY(1, 64, 4, 4, 3, true) TRY(2, 16, 8, 4, 3, true) TRY(4, 8, 8, 4, 3, true)
        TRY(1, 16, 16, 4, 2, true)
#undef TRY
    }
    return 0;
}
