// A measurement, not part of the backend (issue 5, fortieth session; docs/benchmarks.md):
// cols tiles of one warp each (R steps x 32 V columns, lane l holding V adjacent columns, as
// bench/cols_wide_probe.cu), chained by chain warps (one per 32 columns of a line) instead of a look-back.
// The thirty-second session found such tiles move (2,4096,1024)'s bytes at 93% of the copy with
// no chain at all, and that a windowed look-back over them costs about one poll's round trip a
// link (a line of C chunks has C / W links, one after another). Here nothing is chained through
// round trips: every tile publishes its aggregate A(c) as tagged words, and chain warps (one per
// 32 columns of a line, resident before any tile: the grid's first blocks) load the next B
// entries at once, fold every ready one in order in registers, P(c) = P(c - 1) o A(c), and
// publish the inclusive prefixes the same way. A tile waits only for P(c - 1): about two round
// trips after its predecessor's aggregate, however long the line. The association is fixed (a serial fold of
// the aggregates, then the tile's own serial scan), so results are the same bits run to run.
// f32 sum or the affine scan (h = a h' + b), layout [O][T][C], C a multiple of 32 V. Timed as
// bench/gpu_bench.cu times (a spin kernel queued first), against a device-to-device copy of
// 2^28 floats; the chained configurations are checked against a host scan in the same order
// (sums of small integers bitwise, the affine scan within 1e-4 (1 + |h|)).
// Measured on an H100: the chain warps fold about one aggregate every 0.2 us however many they
// load at once (a round trip to L2 takes about 1.5 us while the tiles keep DRAM busy), so the
// tiles wait on them (best 53% on (2,4096,1024) against 92-96% for the same tiles alone). Built and run by `CHAIN_PROBE=1 scripts/gpu.sh OUTDIR` (CHAIN_PROBE=diag: where
// line 0's time goes), or: nvcc -O3 -std=c++20 -arch=sm_90 bench/cols_chain_probe.cu -o probe && ./probe [diag]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cols_probe_setup.cuh"

// Where a launch's chain words live: per line and chunk, each of the line's 32 V columns' state
// as NW tagged words (value | epoch, bench/cols_probe_state.cuh), the aggregates A, then the
// inclusive prefixes P; a word is ready when it carries this launch's epoch, so no flag, fence
// or barrier is needed anywhere. `hung` counts waits that gave up (a probe must not hang a lease).
struct Chain {
    u64 *a, *p;
    u32* hung;
    unsigned epoch;
    u64* trace;  // MODE 2 (diagnostics): line 0's chain rounds and tiles, in global time
};
__device__ __forceinline__ u64 now() { u64 t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
// trace: [0] rounds recorded, [4 + 4 n ..] round n's start, (c << 8 | k), when its loads were
// back and when its prefixes were stored; from kTileTrace, per chunk of line 0: start, A
// published, P seen, stored.
constexpr int kTileTrace = 1 << 16;

// The chain warp of 32 columns (quarter q of a line of 32 V): folds A(0 .. chunks - 2) in order,
// P(c) = P(c - 1) o A(c), and publishes each P(c). A round loads B entries (the words are their
// own flags: one round trip), folds the leading run that every lane has ready, and moves on;
// when none is, lane 0 alone polls the next entry's first word, so an idle chain costs little.
// CM (chain mode) bits: 1 weak loads (ld.global.cg), 2 weak stores (st.global.cg) of the prefixes.
template <int NIN, int B, int CM>
__device__ void chain_columns(const Chain& ch, i64 line, int q, i64 chunks, i64 cols) {
    constexpr int NW = words(NIN);
    typedef St<NIN> S;
    const int lane = threadIdx.x % 32;
    const i64 last = chunks - 1;
    auto word = [&](u64* base, i64 c) { return base + ((line * chunks + c) * cols + 32 * q + lane) * NW; };
    S pre{};
    i64 c = 0;
    for (int idle = 0; c < last;) {
        const u64 t_start = ch.trace ? now() : 0;
        u64 w[B][NW];
#pragma unroll
        for (int e = 0; e < B; ++e)
#pragma unroll
            for (int j = 0; j < NW; ++j) w[e][j] = c + e < last ? (CM & 1 ? __ldcg(word(ch.a, c + e) + j) : ld_word(word(ch.a, c + e) + j)) : 0;
        unsigned m = 0;
#pragma unroll
        for (int e = 0; e < B; ++e) {
            bool ok = c + e < last;
#pragma unroll
            for (int j = 0; j < NW; ++j) ok = ok && (unsigned)(w[e][j] >> 32) == ch.epoch;
            m |= (unsigned)ok << e;
        }
        m = __reduce_and_sync(~0u, m);
        const int k = m == (B == 32 ? ~0u : (1u << B) - 1) ? B : __ffs(~m) - 1;
        if (k == 0) {  // caught up: lane 0 waits for the next entry's first word
            bool ready = true;
            if (lane == 0)
                for (int ns = 32; (unsigned)(ld_word(word(ch.a, c)) >> 32) != ch.epoch; ns = ns < 256 ? 2 * ns : ns)
                    if (++idle > (1 << 18)) { ready = false; break; }
                    else __nanosleep(ns);
            if (!__shfl_sync(~0u, ready, 0)) {
                if (lane == 0) atomicAdd(ch.hung, 1);
                return;
            }
            continue;
        }
        idle = 0;
        const u64 t_loaded = ch.trace ? now() : 0;
#pragma unroll
        for (int e = 0; e < B; ++e)
            if (e < k) {
                const S s = untag<NIN>(w[e]);
                pre = c + e == 0 ? s : S::combine(pre, s);
                if constexpr ((CM & 2) != 0) {
                    if (NIN == 2) __stcg(word(ch.p, c + e), tag(pre.a, ch.epoch));
                    __stcg(word(ch.p, c + e) + NW - 1, tag(pre.b, ch.epoch));
                } else {
                    publish<NIN>([&](int j) { return word(ch.p, c + e) + j; }, pre, ch.epoch);
                }
            }
        if (ch.trace && line == 0 && q == 0 && lane == 0) {
            const u64 n = ch.trace[0];
            if (n < kTileTrace / 4 - 2) {
                ch.trace[0] = n + 1;
                u64* const r = ch.trace + 4 + 4 * n;
                r[0] = t_start, r[1] = (u64)c << 8 | k, r[2] = t_loaded, r[3] = now();
            }
        }
        c += k;
    }
}

// MODE 0: tiles alone (no chain; results wrong: what the tiles reach), 1: chained. The grid's
// first `chain_blocks` blocks are chain warps (MODE 1), one line each; the rest are tiles,
// chunk-major (chunk c of every line before chunk c + 1 of any). PF > 0: each tile first
// prefetches into L2 the inputs of the tile PF ahead.
template <int NIN, int V, int R, int WARPS, int MINB, int MODE, int PF, int CB, int CM = 0>
__global__ void __launch_bounds__(WARPS * 32, MINB)
    chain_cols(const float* __restrict__ in0, const float* __restrict__ in1, float* __restrict__ out, i64 O, i64 T,
               i64 C, Chain ch, int chain_blocks) {
    typedef St<NIN> S;
    constexpr int NW = words(NIN);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const i64 groups = C / (32 * V), lines = O * groups, chunks = (T + R - 1) / R;
    if (MODE >= 1 && (int)blockIdx.x < chain_blocks) {  // chain warps: V per line, 32 columns each
        const i64 cw = (i64)blockIdx.x * WARPS + warp;
        if (cw < lines * V && chunks > 1) chain_columns<NIN, CB, CM>(ch, cw / V, (int)(cw % V), chunks, 32 * V);
        return;
    }
    const i64 tile = (i64)(blockIdx.x - (MODE >= 1 ? chain_blocks : 0)) * WARPS + warp;
    if (tile >= lines * chunks) return;
    if (PF > 0 && tile + PF < lines * chunks && lane < R * NIN) {
        const i64 t2 = tile + PF, c2 = t2 / lines, l2 = t2 % lines, row = c2 * R + lane % R;
        const float* src = lane < R ? in0 : in1;
        if (row < T) {
            const float* p = src + ((l2 / groups) * T + row) * C + (l2 % groups) * 32 * V;
            asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(32 * V * 4) : "memory");
        }
    }
    const i64 chunk = tile / lines, line = tile % lines, o = line / groups, g = line % groups;
    u64* const tr = MODE == 2 && ch.trace && line == 0 && lane == 0 && chunk < kTileTrace / 4 ? ch.trace + kTileTrace + 4 * chunk : nullptr;
    if (tr) tr[0] = now();
    const i64 t0 = chunk * R;
    const int nv = T - t0 >= R ? R : (int)(T - t0);
    const i64 at0 = (o * T + t0) * C + g * 32 * V + lane * V;
    float va[R][V], vb[R][V];
    load_run<NIN, V, R>(in0, in1, at0, C, nv, va, vb);
    S pre[V];
    bool has_pre = false;
    if (MODE >= 1 && chunks > 1) {
        const i64 slot = line * chunks + chunk;
        if (chunk + 1 < chunks) {  // the last chunk's aggregate is never folded
            S agg[V];
#pragma unroll
            for (int q = 0; q < V; ++q) {
                agg[q] = item<NIN>(va[0][q], vb[0][q]);
#pragma unroll
                for (int k = 1; k < R; ++k)
                    if (k < nv) agg[q] = S::combine(agg[q], item<NIN>(va[k][q], vb[k][q]));
            }
            u64* const at = ch.a + (slot * 32 + lane) * V * NW;
#pragma unroll
            for (int q = 0; q < V; ++q) publish<NIN>([&](int j) { return at + q * NW + j; }, agg[q], ch.epoch);
        }
        if (tr) tr[1] = now();
        if (chunk > 0) {
            // One lane per chain warp (32 columns) polls one word, backing off to a microsecond,
            // before every lane loads its own: a warp of tiles polling all its words floods L2
            // (the first call: every chained shape under 66% of copy, most under 15%).
            const u64* const at = ch.p + ((slot - 1) * 32 + lane) * V * NW;
            if (lane % (32 / V) == 0)
                for (int ns = 64, n = 0; (unsigned)(ld_word(at) >> 32) != ch.epoch && ++n < (1 << 18); ns = ns < 1024 ? 2 * ns : ns)
                    __nanosleep(ns);
            __syncwarp();
            u64 w[V * NW];
#pragma unroll
            for (int i = 0; i < V * NW; ++i) w[i] = ld_word(at + i);
            wait_tagged(w, ch.epoch, [&](int i) { return at + i; }, ch.hung);
#pragma unroll
            for (int q = 0; q < V; ++q) pre[q] = untag<NIN>(w + q * NW);
            has_pre = true;
            if (tr) tr[2] = now();
        }
    }
    S run[V];
    bool has[V];
#pragma unroll
    for (int q = 0; q < V; ++q) has[q] = has_pre, run[q] = pre[q];
    scan_store_run<NIN, V, R>(out + at0, C, nv, va, vb, run, has);
    if (tr) tr[3] = now();
}

static Chain g_chain;

// Seconds of one configuration, and its mismatches against the host scan (chained runs only).
template <int NIN, int V, int R, int WARPS, int MINB, int MODE, int PF, int CB>
static double run(const float* x, const float* y, float* z, const Case& c, size_t& bad) {
    const i64 lines = c.O * c.C / (32 * V), chunks = (c.T + R - 1) / R, tiles = lines * chunks;
    const int chain_blocks = MODE >= 1 ? (int)((lines * V + WARPS - 1) / WARPS) : 0;
    const unsigned blocks = (unsigned)(chain_blocks + (tiles + WARPS - 1) / WARPS);
    auto op = [&](cudaStream_t s) {
        Chain ch = g_chain;
        ch.epoch = ++g_chain.epoch;
        chain_cols<NIN, V, R, WARPS, MINB, MODE, PF, CB><<<blocks, WARPS * 32, 0, s>>>(x, y, z, c.O, c.T, c.C, ch, chain_blocks);
    };
    BENCH_CHECK(cudaMemset(g_chain.hung, 0, 4));
    const double t = time_and_check(op, x, y, z, c, MODE != 0, bad);
    u32 hung = 0;
    BENCH_CHECK(cudaMemcpy(&hung, g_chain.hung, 4, cudaMemcpyDeviceToHost));
    if (hung) std::printf("  (%u waits gave up)\n", hung), bad += hung;
    return t;
}

// Diagnostics (MODE 2, one launch after one untraced): where line 0's time goes. Its chain warp
// (columns 0-31) notes each round's time and the run it folded, its tiles when they start,
// publish A, see P(c - 1) and end; printed as medians and as times at fractions of the line.
template <int NIN, int V, int R, int WARPS, int MINB, int PF, int CB, int CM>
static void diagnose(const float* x, const float* y, float* z, const Case& c) {
    const i64 lines = c.O * c.C / (32 * V), chunks = (c.T + R - 1) / R, tiles = lines * chunks;
    const int chain_blocks = (int)((lines * V + WARPS - 1) / WARPS);
    const unsigned blocks = (unsigned)(chain_blocks + (tiles + WARPS - 1) / WARPS);
    std::vector<u64> tr(2 * kTileTrace);
    for (int pass = 0; pass < 2; ++pass) {
        BENCH_CHECK(cudaMemset(g_chain.trace, 0, tr.size() * 8));
        Chain ch = g_chain;
        ch.epoch = ++g_chain.epoch;
        if (pass == 0) ch.trace = nullptr;
        chain_cols<NIN, V, R, WARPS, MINB, 2, PF, CB, CM><<<blocks, WARPS * 32>>>(x, y, z, c.O, c.T, c.C, ch, chain_blocks);
        BENCH_CHECK(cudaDeviceSynchronize());
    }
    BENCH_CHECK(cudaMemcpy(tr.data(), g_chain.trace, tr.size() * 8, cudaMemcpyDeviceToHost));
    const u64* tile = tr.data() + kTileTrace;
    const i64 n = std::min<i64>(chunks, kTileTrace / 4);
    const double t0 = (double)tile[0];
    auto us = [&](u64 t) { return ((double)t - t0) * 1e-3; };
    const u64 rounds = tr[0];
    auto rec = [&](u64 r) { return tr.data() + 4 + 4 * r; };  // start, c << 8 | k, loads back, stored
    std::vector<double> gaps, loads, folds, phase[3];
    int hist[4] = {};
    for (u64 r = 0; r < rounds; ++r) {
        const int k = (int)(rec(r)[1] & 255);
        ++hist[k == 1 ? 0 : k < 4 ? 1 : k < CB ? 2 : 3];
        loads.push_back((double)(rec(r)[2] - rec(r)[0]) * 1e-3), folds.push_back((double)(rec(r)[3] - rec(r)[2]) * 1e-3);
        if (r) gaps.push_back((double)(rec(r)[0] - rec(r - 1)[0]) * 1e-3);
    }
    for (i64 k = 1; k + 1 < n; ++k)
        for (int j = 0; j < 3; ++j) phase[j].push_back((double)(tile[4 * k + j + 1] - tile[4 * k + j]) * 1e-3);
    auto median = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v.empty() ? 0.0 : v[v.size() / 2]; };
    std::printf("  diagnostics, V=%d R=%d warps=%d minb=%d pf=%d chain batch %d (%s loads, %s stores): line 0 ends at %.1f us; "
                "its chain warp took %llu rounds (k = 1: %d, 2-3: %d, 4-%d: %d, %d: %d), median %.2f us apart: loads %.2f, "
                "fold and stores %.2f\n",
                V, R, WARPS, MINB, PF, CB, CM & 1 ? "weak" : "strong", CM & 2 ? "weak" : "strong", us(tile[4 * (n - 1) + 3]),
                (unsigned long long)rounds, hist[0], hist[1], CB - 1, hist[2], CB, hist[3], median(gaps), median(loads),
                median(folds));
    std::printf("    a tile's median load + fold + publish %.2f us, wait for P %.2f us, scan + store %.2f us\n",
                median(phase[0]), median(phase[1]), median(phase[2]));
    for (double f : {0.1, 0.25, 0.5, 0.75, 0.99}) {
        const i64 k = (i64)(f * (n - 1));
        double folded = 0;  // when the chain folded chunk k
        for (u64 r = 0; r < rounds; ++r) {
            const u64 c0 = rec(r)[1] >> 8, kk = rec(r)[1] & 255;
            if ((u64)k >= c0 && (u64)k < c0 + kk) folded = us(rec(r)[3]);
        }
        std::printf("    chunk %5lld: starts %7.1f us, A %7.1f, folded %7.1f, P(c - 1) seen %7.1f, ends %7.1f\n",
                    (long long)k, us(tile[4 * k]), us(tile[4 * k + 1]), folded, us(tile[4 * k + 2]), us(tile[4 * k + 3]));
    }
}

int main(int argc, char** argv) {
    const ColsProbe probe = cols_probe_setup();
    const auto [x, y, ints, z] = probe.in;
    // Room for 2^17 tiles' words (the cases' most, R = 4): 2 KB each kind at most.
    const size_t slots = (size_t)1 << 17;
    g_chain.a = status_words(slots * 2048);
    g_chain.p = status_words(slots * 2048);
    g_chain.hung = reinterpret_cast<u32*>(status_words(8));
    g_chain.trace = status_words(2 * kTileTrace * 8);
    if (argc > 1 && std::string(argv[1]) == "diag") {  // where the time goes, two shapes
        const Case a{"affine (2,4096,1024) dim 1", 2, 2, 4096, 1024}, b{"sum 4096x8192 dim 0", 1, 1, 4096, 8192};
        for (const Case* c : {&a, &b}) {
            std::printf("%s\n", c->name);
            const float* in = c->nin == 1 ? ints : x;
            // Chain batches of 8 and 32, strong or weak loads (CM 1) and stores (CM 2): which
            // phase of a chain round costs its time?
            if (c->nin == 1) diagnose<1, 4, 8, 8, 2, 0, 8, 0>(in, y, z, *c), diagnose<1, 4, 8, 8, 2, 0, 8, 2>(in, y, z, *c),
                             diagnose<1, 4, 8, 8, 2, 0, 32, 0>(in, y, z, *c), diagnose<1, 4, 8, 8, 2, 0, 32, 3>(in, y, z, *c);
            else diagnose<2, 4, 8, 8, 2, 0, 8, 0>(in, y, z, *c), diagnose<2, 4, 8, 8, 2, 0, 8, 2>(in, y, z, *c),
                 diagnose<2, 4, 8, 8, 2, 0, 8, 3>(in, y, z, *c), diagnose<2, 4, 16, 8, 1, 0, 32, 0>(in, y, z, *c),
                 diagnose<2, 4, 16, 8, 1, 0, 32, 3>(in, y, z, *c);
        }
        return 0;
    }
    const Case cases[] = {{"affine (2,4096,1024) dim 1", 2, 2, 4096, 1024}, {"affine (2,4099,1024) dim 1", 2, 2, 4099, 1024},
                          {"sum 4096x8192 dim 0", 1, 1, 4096, 8192}, {"affine (4,4096,256) dim 1", 2, 4, 4096, 256},
                          {"affine 4096x8192 dim 0", 2, 1, 4096, 8192}};
    for (const Case& c : cases) {
        probe.print_case(c);
#define TRY(V, R, WARPS, MINB, MODE, PF, CB)                                                                    \
    {                                                                                                             \
        size_t bad = 0;                                                                                           \
        const double t = c.nin == 1 ? run<1, V, R, WARPS, MINB, MODE, PF, CB>(ints, y, z, c, bad)                   \
                                    : run<2, V, R, WARPS, MINB, MODE, PF, CB>(x, y, z, c, bad);                     \
        std::printf("  V=%d R=%-2d warps=%d minb=%d pf=%-4d chain batch %-2d %-7s %7.1f us %5.1f%% of copy  %zu differ\n", \
                    V, R, WARPS, MINB, PF, CB, MODE ? "chained" : "alone", t * 1e6, probe.percent(c, t), bad);        \
    }
        TRY(4, 4, 8, 4, 0, 0, 8) TRY(4, 8, 8, 2, 0, 0, 8)
        TRY(4, 4, 8, 4, 1, 0, 8) TRY(4, 8, 8, 2, 1, 0, 8) TRY(4, 8, 8, 2, 1, 0, 16) TRY(4, 16, 8, 1, 1, 0, 16)
        TRY(4, 16, 4, 3, 1, 0, 8) TRY(4, 8, 8, 2, 1, 512, 8) TRY(4, 16, 4, 3, 1, 256, 8)
#undef TRY
    }
    return 0;
}
