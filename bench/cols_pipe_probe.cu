// A measurement, not part of the backend (issue 5, thirty-third session;
// docs/history/cuda-sessions-21-37.md):
// cols tiles staged in shared memory by bulk tensor copies, so that an SM keeps loading while
// its tiles wait on their look-back. The backend's cols tiles hold their items in registers,
// so a tile that waits holds its SM's share of the bytes in flight. Here a persistent grid
// (every block resident at once) takes tiles of TS steps x L = 32 V columns in chunk-major
// order, block b the tiles b, b + G, b + 2 G, ... In each block one producer thread keeps D
// tiles in flight through a ring of D shared-memory stages (one 3-D bulk tensor copy per input
// and tile, completing on the stage's `full` mbarrier), and CW consumer warps each take a run of
// TS / CW steps of a tile and chain the tile to its line as the backend's cols kernel does: the
// warps' totals meet in shared memory, one deterministic windowed look-back per column (prefix
// of chunk c = P(ws - 1) o A(ws) o .. o A(c - 1), ws = c rounded down to W) on tagged words,
// then each warp scans its run from its prefix. Iteration j reduces tile j (publishing its
// aggregate at once) and scans tile j - K, so that with K > 0 a block's aggregates run ahead of
// its look-backs (K = 1 also loads a tile's window words one iteration before it reads them).
// Results leave by st.global from registers, by one bulk tensor store per warp from the stage,
// or stay in the stage (a measurement of the loads and the chain alone). f32 sum or the affine
// scan (h = a h' + b), layout [O][T][C], C a multiple of L. Timed as bench/gpu_bench.cu times (a
// spin kernel queued first), against a device-to-device copy of 2^28 floats and one of the same
// bytes; each configuration with a look-back that stores is checked against a host scan (sums of
// small integers bitwise, the affine scan within 1e-4 (1 + |h|)).
// Built and run by `PIPE_PROBE=1 scripts/gpu.sh OUTDIR`, or: nvcc -O3 -std=c++20 -arch=sm_90
// bench/cols_pipe_probe.cu -o probe && ./probe
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "cols_probe_setup.cuh"
#include "cols_probe_tma.cuh"

struct Maps { CUtensorMap in[2], out; };  // [C, T, O], boxes of [L, TS, 1] (out: [L, TS / CW, 1], a warp's run)

// Where the results go: st.global from registers (the stage freed once read), into the stage in
// place and no further (a measurement: what the loads and the chain cost), or into the stage and
// out by one bulk tensor store per warp (the stage freed once the store has read it).
enum Store { kGlobal, kSharedOnly, kBulk };
static const char* kStoreNames[] = {"st.global", "smem only", "bulk store"};

template <int NIN, int V, int TS, int D>
__host__ __device__ constexpr size_t stage_bytes() { return (size_t)D * NIN * TS * 32 * V * 4 + 1024; }  // + alignment

// The consumer warps' barrier (the producer warp never joins it).
template <int CW> __device__ __forceinline__ void consumers_sync() { asm volatile("bar.sync 1, %0;" ::"n"(CW * 32) : "memory"); }

template <int NIN, int V, int TS, int CW, int D, int W, int K, bool LOOKBACK, int STORE>
__global__ void __launch_bounds__((CW + 1) * 32)
    pipe_cols(float* __restrict__ out, i64 O, i64 T, i64 C, u64* __restrict__ status, unsigned epoch,
              const __grid_constant__ Maps maps) {
    typedef St<NIN> S;
    constexpr int L = 32 * V, R = TS / CW, NW = words(NIN);
    constexpr int STRIDE = CW * 32 / L, PER = (W + STRIDE - 1) / STRIDE;  // window entries a thread loads
    static_assert(TS % CW == 0 && CW * 32 % L == 0, "a tile splits into whole runs, a column into whole threads");
    extern __shared__ unsigned char smem_raw[];
    __shared__ unsigned long long full[D], empty[D];
    // Tiles j - K .. j are under way: their warps' totals and aggregates in a ring of K + 2, so
    // that a fast warp never overwrites what a slow one still reads.
    constexpr int NB = K + 2;
    static_assert(STORE != kBulk || D >= K + 2, "a bulk-stored stage is freed one tile after its scan");
    static_assert(D >= K + 1, "tiles j - K .. j are staged at once");
    __shared__ S s_agg[NB][CW][L], s_tagg[NB][L];
    __shared__ u32 s_win[W][NW][L];
    __shared__ S s_pre[2][L];
    float* const stages = (float*)aligned_smem(smem_raw);
    auto stage = [&](int k, int slot) { return stages + ((size_t)slot * NIN + k) * TS * L; };
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const i64 groups = C / L, lines = O * groups, chunks = (T + TS - 1) / TS, tiles = lines * chunks;
    if (threadIdx.x == 0) {
        for (int d = 0; d < D; ++d) mbar_init(&full[d]), mbar_init(&empty[d], CW);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (warp == CW) {  // the producer: tile j of this block into stage j % D once its (j - D)th is free
        if (lane == 0) {
            int j = 0;
            for (i64 t = blockIdx.x; t < tiles; t += gridDim.x, ++j) {
                const int slot = j % D;
                if (j >= D) mbar_wait(&empty[slot], (unsigned)((j / D - 1) & 1));
                const i64 chunk = t / lines, line = t % lines;
                mbar_expect(&full[slot], NIN * TS * L * 4);  // out-of-bounds steps are filled and counted too
                for (int k = 0; k < NIN; ++k)
                    tma_load(stage(k, slot), &maps.in[k], (int)(line % groups * L), (int)(chunk * TS), (int)(line / groups),
                             &full[slot]);
            }
        }
        return;
    }
    const int col = threadIdx.x % L, slot_of_col = threadIdx.x / L;  // the look-back's threads: STRIDE per column
    u64* const a_words = status;
    u64* const p_words = status + (u64)lines * chunks * L * NW;
    auto word_at = [&](u64* base, i64 line, i64 c, int w) { return base + ((u64)(line * chunks + c) * NW + w) * L + col; };
    struct Tile { i64 chunk, line, o, g, t0; int nv; };
    auto tile_at = [&](i64 j) {  // this block's j-th tile, and this warp's run of it
        const i64 t = blockIdx.x + j * gridDim.x, chunk = t / lines, line = t % lines;
        const i64 t0 = chunk * TS + (i64)warp * R;
        return Tile{chunk, line, line / groups, line % groups, t0, t0 >= T ? 0 : (T - t0 >= R ? R : (int)(T - t0))};
    };
    auto read_run = [&](i64 j, float (&va)[R][V], float (&vb)[R][V]) {
        const float* sa = stage(0, (int)(j % D)) + warp * R * L + lane * V;
        const float* sb = stage(NIN - 1, (int)(j % D)) + warp * R * L + lane * V;
#pragma unroll
        for (int k = 0; k < R; ++k)
#pragma unroll
            for (int q = 0; q < V; ++q) va[k][q] = sa[k * L + q], vb[k][q] = sb[k * L + q];
    };
    auto free_stage = [&](i64 j) {
        __syncwarp();
        if (lane == 0) mbar_arrive(&empty[j % D]);
    };
    // Word i of this thread's share of tile c's window: entry e = 0 is P(ws - 1), e >= 1 is
    // A(ws + e - 1); this thread's entries are slot_of_col + STRIDE k.
    auto window_word = [&](const Tile& c, int i) {
        const i64 ws = c.chunk / W * W;
        const int e = slot_of_col + STRIDE * (i / NW), w = i % NW;
        return e == 0 ? word_at(p_words, c.line, ws - 1, w) : word_at(a_words, c.line, ws + e - 1, w);
    };
    auto load_window = [&](const Tile& c, u64 (&wv)[PER * NW]) {  // words not needed read as ready
        const i64 ws = c.chunk / W * W;
        const int n = (int)(c.chunk - ws);
#pragma unroll
        for (int i = 0; i < PER * NW; ++i) {
            const int e = slot_of_col + STRIDE * (i / NW);
            wv[i] = c.chunk > 0 && (e == 0 ? ws > 0 : e <= n && e < W) ? ld_word(window_word(c, i)) : (u64)epoch << 32;
        }
    };
    u64 wv_cur[PER * NW], wv_next[PER * NW];  // tile j - 1's window words, and tile j's (K = 1)
    const i64 mine = (tiles - blockIdx.x + gridDim.x - 1) / gridDim.x;  // this block's tiles
    float va[R][V], vb[R][V];
    // Iteration j reduces tile j (its warps' totals, and with a look-back its aggregate published
    // at once), then scans tile j - K: look-back, scan from the prefix, store.
    for (i64 j = 0; j < mine + K; ++j) {
        if (j < mine) {
            const Tile r = tile_at(j);
            mbar_wait(&full[j % D], (unsigned)((j / D) & 1));
            read_run(j, va, vb);
            if (STORE == kGlobal && K == 0) free_stage(j);
#pragma unroll
            for (int q = 0; q < V; ++q) {
                S agg = r.nv > 0 ? item<NIN>(va[0][q], vb[0][q]) : S::identity();  // an empty run folds as identity
#pragma unroll
                for (int k = 1; k < R; ++k)
                    if (k < r.nv) agg = S::combine(agg, item<NIN>(va[k][q], vb[k][q]));
                s_agg[j % NB][warp][lane * V + q] = agg;
            }
        }
        consumers_sync<CW>();
        if (j < mine && LOOKBACK && chunks > 1 && slot_of_col == 0) {
            const Tile r = tile_at(j);
            S tagg = s_agg[j % NB][0][col];
#pragma unroll
            for (int w = 1; w < CW; ++w) tagg = S::combine(tagg, s_agg[j % NB][w][col]);
            s_tagg[j % NB][col] = tagg;
            if (r.chunk + 1 < chunks && r.chunk % W != W - 1)
                publish<NIN>([&](int w) { return word_at(a_words, r.line, r.chunk, w); }, tagg, epoch);
        }
        // With a lag, tile j's window words are loaded now and read at its scan, one iteration
        // on: the loads' round trip overlaps the scan of tile j - 1.
        if (K == 1 && LOOKBACK && chunks > 1) {
#pragma unroll
            for (int i = 0; i < PER * NW; ++i) wv_cur[i] = wv_next[i];
            if (j < mine) load_window(tile_at(j), wv_next);
        }
        if (j < K) continue;
        const i64 js = j - K;
        const Tile c = tile_at(js);
        if (K > 0) {
            read_run(js, va, vb);
            if (STORE == kGlobal) free_stage(js);
        }
        const bool has_pre = LOOKBACK && c.chunk > 0;
        if (LOOKBACK && chunks > 1) {
            const i64 ws = c.chunk / W * W;
            const int n = (int)(c.chunk - ws);
            if (c.chunk > 0) {
                if (K != 1) load_window(c, wv_cur);
                u64 (&wv)[PER * NW] = wv_cur;
                wait_tagged(wv, epoch, [&](int i) { return window_word(c, i); });
#pragma unroll
                for (int i = 0; i < PER * NW; ++i)
                    if (slot_of_col + STRIDE * (i / NW) < W) s_win[slot_of_col + STRIDE * (i / NW)][i % NW][col] = (u32)wv[i];
            }
            consumers_sync<CW>();
            if (slot_of_col == 0) {
                S pre = s_tagg[js % NB][col];
                if (c.chunk > 0) {
                    auto entry = [&](int e) {
                        return S{NIN == 2 ? __uint_as_float(s_win[e][0][col]) : 0.f, __uint_as_float(s_win[e][NW - 1][col])};
                    };
                    bool h = ws > 0;
                    if (h) pre = entry(0);
                    for (int e = 1; e <= n; ++e) pre = h ? S::combine(pre, entry(e)) : entry(e), h = true;
                    s_pre[js & 1][col] = pre;
                    pre = S::combine(pre, s_tagg[js % NB][col]);
                }
                if (c.chunk % W == W - 1 && c.chunk + 1 < chunks)
                    publish<NIN>([&](int w) { return word_at(p_words, c.line, c.chunk, w); }, pre, epoch);
            }
            consumers_sync<CW>();
        }
        S run[V];
        bool has[V];
#pragma unroll
        for (int q = 0; q < V; ++q) {
            has[q] = has_pre;
            if (has_pre) run[q] = s_pre[js & 1][lane * V + q];
            for (int w = 0; w < warp; ++w) {
                const S a = s_agg[js % NB][w][lane * V + q];
                run[q] = has[q] ? S::combine(run[q], a) : a, has[q] = true;
            }
        }
        if (STORE == kGlobal) {
            scan_store_run<NIN, V, R>(out + (c.o * T + c.t0) * C + c.g * L + lane * V, C, c.nv, va, vb, run, has);
            continue;
        }
        scan_store_run<NIN, V, R>(stage(0, (int)(js % D)) + warp * R * L + lane * V, L, c.nv, va, vb, run, has);
        if (STORE == kSharedOnly) {
            free_stage(js);
            continue;
        }
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // the bulk store reads what the lanes wrote
        __syncwarp();
        if (lane == 0) {
            if (c.nv > 0) tma_store(&maps.out, (int)(c.g * L), (int)c.t0, (int)c.o, stage(0, (int)(js % D)) + warp * R * L);
            bulk_commit();
            if (js > 0) {  // the previous tile's store has read its stage: free it
                bulk_wait_read<1>();
                mbar_arrive(&empty[(js - 1) % D]);
            }
        }
    }
    if (STORE == kBulk && lane == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

static u64* g_status;
static unsigned g_epoch = 0;

// Seconds of one configuration, its blocks per SM, and its mismatches against the host scan
// (look-back runs only: the others' results are wrong by design).
template <int NIN, int V, int TS, int CW, int D, int W, int K, bool LB, int STORE>
static double run(const float* x, const float* y, float* z, const Case& c, int sms, int& per_sm, size_t& bad) {
    constexpr int L = 32 * V;
    const i64 tiles = c.O * (c.C / L) * ((c.T + TS - 1) / TS);
    auto kernel = pipe_cols<NIN, V, TS, CW, D, W, K, LB, STORE>;
    const size_t smem = stage_bytes<NIN, V, TS, D>();
    BENCH_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    BENCH_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, (CW + 1) * 32, smem));
    const unsigned grid = (unsigned)std::min<i64>(tiles, (i64)sms * per_sm);  // all resident: tiles wait on earlier ones
    Maps maps{};
    const float* ins[2] = {x, y};
    for (int k = 0; k < NIN; ++k) make_map(&maps.in[k], ins[k], c.O, c.T, c.C, L, TS);
    make_map(&maps.out, z, c.O, c.T, c.C, L, TS / CW);
    auto op = [&](cudaStream_t s) { kernel<<<grid, (CW + 1) * 32, smem, s>>>(z, c.O, c.T, c.C, g_status, ++g_epoch, maps); };
    return time_and_check(op, x, y, z, c, LB && STORE != kSharedOnly, bad);
}

int main() {
    const ColsProbe probe = cols_probe_setup();
    const auto [x, y, ints, z] = probe.in;
    const int sms = probe.sms;
    g_status = status_words((size_t)1 << 30);
    const Case cases[] = {{"affine (2,4096,1024) dim 1", 2, 2, 4096, 1024}, {"sum 4096x8192 dim 0", 1, 1, 4096, 8192},
                          {"affine (4,4096,256) dim 1", 2, 4, 4096, 256}, {"affine (2,4099,1024) dim 1", 2, 2, 4099, 1024}};
    for (const Case& c : cases) {
        probe.print_case(c);
#define TRY(V, TS, CW, D, W, K, LB, STORE)                                                                            \
    {                                                                                                                \
        size_t bad = 0;                                                                                              \
        int per_sm = 0;                                                                                              \
        const double t = c.nin == 1 ? run<1, V, TS, CW, D, W, K, LB, STORE>(ints, y, z, c, sms, per_sm, bad)          \
                                    : run<2, V, TS, CW, D, W, K, LB, STORE>(x, y, z, c, sms, per_sm, bad);            \
        std::printf("  V=%d TS=%-3d CW=%d D=%d W=%-2d K=%d %d/SM %-12s %-10s %7.1f us %5.1f%% of copy  %zu differ\n", V, TS, \
                    CW, D, W, K, per_sm, LB ? "look-back" : "no look-back", kStoreNames[STORE], t * 1e6,               \
                    probe.percent(c, t), bad);                                                               \
    }
        // Boxes of 32 V columns: V = 1 (128-byte rows, the thirty-third session's), 2 and 4
        // (thirty-fourth session; first as many stages as fit, then two 32 KB stages a block).
        TRY(1, 128, 8, 3, 16, 0, false, kSharedOnly) TRY(2, 64, 8, 3, 16, 0, false, kSharedOnly)
        TRY(4, 32, 8, 4, 16, 0, false, kSharedOnly) TRY(4, 32, 8, 4, 16, 0, false, kGlobal)
        TRY(4, 32, 8, 4, 16, 0, true, kSharedOnly) TRY(4, 32, 8, 4, 16, 1, true, kSharedOnly)
        TRY(1, 128, 8, 3, 16, 0, true, kGlobal) TRY(2, 64, 8, 3, 16, 1, true, kGlobal)
        TRY(4, 32, 8, 4, 16, 0, true, kGlobal) TRY(4, 32, 8, 4, 16, 1, true, kGlobal)
        TRY(4, 32, 4, 4, 16, 1, true, kGlobal) TRY(4, 64, 8, 2, 16, 1, true, kGlobal)
        TRY(4, 32, 8, 4, 16, 0, true, kBulk) TRY(2, 64, 8, 2, 16, 0, true, kGlobal)
        TRY(1, 128, 8, 2, 16, 0, false, kSharedOnly) TRY(2, 64, 8, 2, 16, 0, false, kSharedOnly)
        TRY(4, 32, 8, 2, 16, 0, false, kSharedOnly) TRY(4, 16, 4, 4, 16, 0, false, kSharedOnly)
        TRY(1, 128, 8, 2, 16, 0, true, kGlobal) TRY(4, 32, 8, 2, 16, 0, true, kGlobal)
        TRY(4, 16, 4, 4, 16, 0, true, kGlobal)
#undef TRY
    }
    return 0;
}
