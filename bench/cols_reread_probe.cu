// A measurement, not part of the backend (issue 5, thirty-third session;
// docs/history/cuda-sessions-21-37.md):
// a cols scan in two passes whose second reads its inputs back from L2, so that no tile ever
// waits on another while it holds data. Every look-back kernel so far lost 8-16 points to tiles
// that hold their items while their predecessors' loads land. Here tiles of TS = WARPS R steps
// x L = 32 V columns (warps stacked along the scan dim, lane = V adjacent columns) are visited
// twice: a reduce visit loads the tile, folds it, publishes its aggregate (tagged words, per
// column) and keeps nothing; a scan visit loads it again, folds the aggregates of every earlier
// tile of its line (in order, so the result is the same bits run to run; the tile's threads
// share the fold, TPC to a column, and meet in shared memory), then scans from that prefix and
// stores. Lines go in groups of `group` lines whose inputs should fit L2 together with the next
// group's; the visits run in the order reduce(0), reduce(1), scan(0), reduce(2), scan(1), ...,
// scan(last), each phase chunk-major, either a block per visit (blocks start in order) or a
// persistent grid whose block b takes visits b, b + G, ... A scan visit only waits on reduce
// visits at least a group's worth earlier, which never wait. MODE 0 runs the scan visits alone
// with no prefix (results wrong): what one pass of these tiles reaches. f32 sum or the affine
// scan (h = a h' + b), layout [O][T][C], C a multiple of L. Timed as bench/gpu_bench.cu times,
// against a device-to-device copy of 2^28 floats and one of the same bytes; the two-pass runs
// are checked against a host scan (sums of small integers bitwise, the affine scan within 1e-4
// (1 + |h|)).
// The thirty-seventh session added phases of chunks across every line (bands, so a scan visit
// reads back bytes loaded a band or two before), L2 eviction policies, and reduce visits a
// fixed lag of visits ahead of the scan visits.
// Measured in the thirty-ninth session (docs/benchmarks.md): the lag lines read at best 61.7% on
// (2,4096,1024) (V=1 R=32, a lag of 132 visits), lower the longer the lag.
// Built and run by `REREAD_PROBE=1 scripts/gpu.sh OUTDIR`, or: nvcc -O3 -std=c++20 -arch=sm_90
// bench/cols_reread_probe.cu -o probe && ./probe
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>

#include "cols_probe_setup.cuh"

// The visits of a launch, in phases of `per` tiles: with lines in `groups` groups of `group`
// lines, a phase is one group's tiles, all its chunks; with bands (`band`), `group` consecutive
// chunks of every line (chunk-major), so that a scan visit reads back bytes loaded only a band
// or two earlier. Order: reduce(0), reduce(1), scan(0), ..., scan(groups - 1). A band past the
// last chunk holds visits of no tile (chunk >= chunks).
// With a lag (lag > 0), tiles go chunk-major over all lines, and the reduce visits run `lag`
// visits ahead of the scan visits, one of each in turn: R(0) .. R(lag - 1), S(0), R(lag), S(1),
// R(lag + 1), ..., then the last scans.
struct Work {
    i64 chunks, group, groups, per, lines, lag;
    bool band;
    __host__ __device__ i64 visits(int mode) const { return (mode ? 2 : 1) * groups * per; }
    __device__ void at(i64 i, int mode, bool& scan, i64& line, i64& chunk) const {
        i64 g, r;
        if (mode && lag > 0) {
            const i64 n = lines * chunks, pairs = n - lag, t = i < lag ? i : i < lag + 2 * pairs ? (i - lag) / 2 + ((i - lag) % 2 ? lag : 0) : i - lag - pairs;
            scan = i >= lag && (i >= lag + 2 * pairs || (i - lag) % 2 == 0);
            chunk = t / lines, line = t % lines;
            return;
        }
        if (mode == 0) {
            scan = true, g = i / per, r = i % per;
        } else if (i < per) {
            scan = false, g = 0, r = i;
        } else {
            const i64 j = i - per, p = 1 + j / (2 * per), q = j % (2 * per);
            if (p < groups) scan = q >= per, g = scan ? p - 1 : p, r = scan ? q - per : q;
            else scan = true, g = groups - 1, r = q;  // the last phase: scan(groups - 1) alone
        }
        if (band) chunk = g * group + r / lines, line = r % lines;
        else chunk = r / group, line = g * group + r % group;
    }
};

// L2 policies (HINT 1): a reduce visit's loads stay (evict_last), since its scan visit reads
// them again; a scan visit's loads and stores go first (evict_first). HINT 0: plain accesses.
template <int HINT> __device__ __forceinline__ u64 l2_policy(bool keep) {
    u64 pol = 0;
    if (HINT && keep) asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
    if (HINT && !keep) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    return pol;
}
template <int V> __device__ __forceinline__ void load_hinted(const float* p, float (&v)[V], u64 pol) {
    if constexpr (V == 1) asm volatile("ld.global.nc.L2::cache_hint.f32 %0, [%1], %2;" : "=f"(v[0]) : "l"(p), "l"(pol));
    if constexpr (V == 2)
        asm volatile("ld.global.nc.L2::cache_hint.v2.f32 {%0, %1}, [%2], %3;" : "=f"(v[0]), "=f"(v[1]) : "l"(p), "l"(pol));
    if constexpr (V == 4)
        asm volatile("ld.global.nc.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
                     : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), "=f"(v[3]) : "l"(p), "l"(pol));
}
template <int NIN, int V, int R, int HINT>
__device__ __forceinline__ void load_tile_run(const float* in0, const float* in1, i64 at, i64 C, int nv, float (&va)[R][V],
                                              float (&vb)[R][V], bool keep) {
    if constexpr (!HINT) {
        load_run<NIN, V, R>(in0, in1, at, C, nv, va, vb);
    } else {
        const u64 pol = l2_policy<HINT>(keep);
#pragma unroll
        for (int k = 0; k < R; ++k)
            if (k < nv) {
                load_hinted<V>(in0 + at + k * C, va[k], pol);
                if (NIN == 2) load_hinted<V>(in1 + at + k * C, vb[k], pol);
            }
    }
}

template <int NIN, int V, int R, int WARPS, int MAXC, int MINB, int MODE, int HINT>
__global__ void __launch_bounds__(WARPS * 32, MINB)
    reread_cols(const float* __restrict__ in0, const float* __restrict__ in1, float* __restrict__ out, i64 T, i64 C,
                Work work, u64* __restrict__ status, unsigned epoch) {
    typedef St<NIN> S;
    constexpr int L = 32 * V, NW = words(NIN), TS = WARPS * R;
    constexpr int TPC = WARPS * 32 / L;              // threads per column in the prefix fold
    constexpr int PER = (MAXC - 1 + TPC - 1) / TPC;  // earlier tiles a thread folds, at most
    static_assert(WARPS * 32 % L == 0, "a column's fold takes whole threads");
    __shared__ S s_agg[WARPS][L];  // the warps' runs folded, per column
    __shared__ S s_part[TPC][L];   // the fold of earlier tiles, in TPC consecutive parts
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, col = threadIdx.x % L, part = threadIdx.x / L;
    const i64 col_groups = C / L;
    for (i64 i = blockIdx.x; i < work.visits(MODE); i += gridDim.x) {
        bool scan;
        i64 line, chunk;
        work.at(i, MODE, scan, line, chunk);
        if (chunk >= work.chunks) continue;  // a band past the last chunk (uniform over the block)
        const i64 o = line / col_groups, g = line % col_groups;
        const i64 t0 = chunk * TS + (i64)warp * R;
        const int nv = t0 >= T ? 0 : (T - t0 >= R ? R : (int)(T - t0));
        const i64 at0 = (o * T + t0) * C + g * L + lane * V;
        float va[R][V], vb[R][V];
        load_tile_run<NIN, V, R, HINT>(in0, in1, at0, C, nv, va, vb, !scan);
        auto word_at = [&](i64 c, int w) { return status + ((u64)(line * work.chunks + c) * NW + w) * L + col; };
        if (MODE && scan && part * PER < chunk) {  // this thread's part: tiles part PER .. of the earlier ones
            const int e0 = part * PER;
            u64 wv[PER * NW];
#pragma unroll
            for (int k = 0; k < PER * NW; ++k) wv[k] = e0 + k / NW < chunk ? ld_word(word_at(e0 + k / NW, k % NW)) : (u64)epoch << 32;
            wait_tagged(wv, epoch, [&](int k) { return word_at(e0 + k / NW, k % NW); });
            S pre = untag<NIN>(wv);
#pragma unroll
            for (int k = 1; k < PER; ++k)
                if (e0 + k < chunk) pre = S::combine(pre, untag<NIN>(wv + k * NW));
            s_part[part][col] = pre;
        }
#pragma unroll
        for (int q = 0; q < V; ++q) {
            S agg = nv > 0 ? item<NIN>(va[0][q], vb[0][q]) : S::identity();  // an empty run folds as identity
#pragma unroll
            for (int k = 1; k < R; ++k)
                if (k < nv) agg = S::combine(agg, item<NIN>(va[k][q], vb[k][q]));
            s_agg[warp][lane * V + q] = agg;
        }
        __syncthreads();
        if (!scan) {
            if (threadIdx.x < L && chunk + 1 < work.chunks) {  // a line's last aggregate is never read
                S t = s_agg[0][col];
#pragma unroll
                for (int w = 1; w < WARPS; ++w) t = S::combine(t, s_agg[w][col]);
                publish<NIN>([&](int w) { return word_at(chunk, w); }, t, epoch);
            }
        } else {
            S run[V];
            bool has[V];
#pragma unroll
            for (int q = 0; q < V; ++q) {
                const int c = lane * V + q;
                has[q] = false;
                for (int p = 0; p < TPC; ++p)
                    if (MODE && p * PER < chunk) run[q] = has[q] ? S::combine(run[q], s_part[p][c]) : s_part[p][c], has[q] = true;
                for (int w = 0; w < warp; ++w) run[q] = has[q] ? S::combine(run[q], s_agg[w][c]) : s_agg[w][c], has[q] = true;
            }
            scan_store_run<NIN, V, R>(out + at0, C, nv, va, vb, run, has);
        }
        __syncthreads();  // s_agg and s_part are the next visit's
    }
}

static u64* g_status;
static unsigned g_epoch = 0;

// How a configuration's visits are ordered: phases of lines (groups of the most lines whose inputs
// fit `budget` bytes) or bands (the most chunks of every line that fit it), and whether a
// persistent grid takes them.
struct Plan {
    double budget;
    bool band, persistent;
    i64 lag = 0;  // > 0: reduce visits this many ahead of the scan visits (budget and band unused)
};

// Seconds of one configuration, its phase size (`group`: lines, or chunks a band), its blocks
// per SM, and its mismatches against the host scan (MODE 1 only).
template <int NIN, int V, int R, int WARPS, int MAXC, int MINB, int MODE, int HINT>
static double run(const float* x, const float* y, float* z, const Case& c, Plan plan, int sms, i64& group, int& per_sm,
                  size_t& bad) {
    constexpr int L = 32 * V, TS = WARPS * R;
    const i64 lines = c.O * (c.C / L), chunks = (c.T + TS - 1) / TS;
    if (chunks > MAXC) return 0;
    Work work{chunks, 1, 0, 0, lines, std::min(plan.lag, lines * chunks), plan.band};
    if (plan.lag > 0) {
        work.groups = 1, work.per = lines * chunks;
    } else if (plan.band) {
        const double band_bytes = (double)lines * TS * L * 4 * NIN;  // one chunk of every line
        work.group = std::max<i64>(1, std::min<i64>(chunks, (i64)(plan.budget / band_bytes)));
        work.groups = (chunks + work.group - 1) / work.group, work.per = lines * work.group;
    } else {
        const double line_bytes = (double)c.T * L * 4 * NIN;
        for (i64 d = 1; d <= lines; ++d)
            if (lines % d == 0 && d * line_bytes <= plan.budget) work.group = d;
        work.groups = lines / work.group, work.per = work.group * chunks;
    }
    group = work.group;
    auto kernel = reread_cols<NIN, V, R, WARPS, MAXC, MINB, MODE, HINT>;
    BENCH_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, WARPS * 32, 0));
    // Persistent: every block resident, visits b, b + G, ...; else a block a visit, started in
    // order, so a scan visit's block starts after those of the reduce visits it waits on.
    const unsigned grid =
        (unsigned)(plan.persistent ? std::min<i64>(work.visits(MODE), (i64)sms * per_sm) : work.visits(MODE));
    auto op = [&](cudaStream_t s) { kernel<<<grid, WARPS * 32, 0, s>>>(x, y, z, c.T, c.C, work, g_status, ++g_epoch); };
    return time_and_check(op, x, y, z, c, MODE != 0, bad);
}

int main() {
    const ColsProbe probe = cols_probe_setup();
    const auto [x, y, ints, z] = probe.in;
    const int sms = probe.sms;
    g_status = status_words((size_t)1 << 30);
    const Case cases[] = {{"affine (4,4096,256) dim 1", 2, 4, 4096, 256}, {"affine (2,4096,1024) dim 1", 2, 2, 4096, 1024},
                          {"sum 4096x8192 dim 0", 1, 1, 4096, 8192}, {"affine (2,4099,1024) dim 1", 2, 2, 4099, 1024}};
    const double MB = 1 << 20;
    for (const Case& c : cases) {
        probe.print_case(c);
#define TRY(V, R, WARPS, MAXC, MINB, MODE, HINT, ...)                                                             \
    {                                                                                                                \
        size_t bad = 0;                                                                                              \
        int per_sm = 0;                                                                                              \
        i64 group = 0;                                                                                               \
        const Plan plan{__VA_ARGS__};                                                                                \
        const double t = c.nin == 1                                                                                  \
                             ? run<1, V, R, WARPS, MAXC, MINB, MODE, HINT>(ints, y, z, c, plan, sms, group, per_sm, bad) \
                             : run<2, V, R, WARPS, MAXC, MINB, MODE, HINT>(x, y, z, c, plan, sms, group, per_sm, bad);   \
        if (t > 0)                                                                                                   \
            std::printf("  V=%d R=%-2d warps=%-2d %d/SM %-10s %s of %-3lld %-6s %-9s %-7s %7.1f us %5.1f%% of copy  %zu differ\n", \
                        V, R, WARPS, per_sm, plan.persistent ? "persistent" : "per visit",                           \
                        plan.lag ? "lag" : plan.band ? "bands" : "groups", (long long)(plan.lag ? plan.lag : group),     \
                        plan.lag ? "visits" : plan.band ? "chunks" : "lines",             \
                        MODE ? "two-pass" : "one pass", HINT ? "L2 hint" : "", t * 1e6, probe.percent(c, t), bad);   \
    }
        // One pass with no prefix (what the tiles reach), the thirty-third session's groups of
        // lines; bands of chunks with and without L2 policies (thirty-seventh session, 2nd call);
        // reduce visits a lag ahead (prepared then, not yet run).
        TRY(1, 32, 8, 24, 2, 0, 0, 1e12, false, false) TRY(2, 16, 8, 40, 2, 0, 0, 1e12, false, false)
        TRY(4, 8, 16, 40, 1, 0, 0, 1e12, false, false) TRY(4, 4, 16, 72, 1, 0, 0, 1e12, false, false)
        TRY(2, 16, 8, 40, 2, 1, 0, 16 * MB, false, false)
        for (const int hint : {0, 1})
            for (const double mb : {2, 4, 8}) {
                if (hint) TRY(2, 16, 8, 40, 2, 1, 1, mb * MB, true, false)
                else TRY(2, 16, 8, 40, 2, 1, 0, mb * MB, true, false)
            }
        TRY(2, 16, 8, 40, 2, 1, 1, 4 * MB, true, true) TRY(1, 32, 8, 24, 2, 1, 1, 4 * MB, true, false)
        TRY(4, 8, 16, 40, 1, 1, 0, 4 * MB, true, false) TRY(4, 8, 16, 40, 1, 1, 1, 4 * MB, true, false)
        TRY(4, 4, 16, 72, 1, 1, 1, 4 * MB, true, false) TRY(4, 4, 16, 72, 1, 1, 1, 8 * MB, true, false)
        for (const i64 lag : {132, 264, 396, 528, 792}) {
            TRY(2, 16, 8, 40, 2, 1, 0, 0, false, false, lag) TRY(2, 16, 8, 40, 2, 1, 1, 0, false, false, lag)
            TRY(1, 32, 8, 24, 2, 1, 0, 0, false, false, lag) TRY(1, 32, 8, 24, 2, 1, 1, 0, false, false, lag)
        }
#undef TRY
    }
    return 0;
}
