// A measurement, not part of the backend (issue 5, thirty-third session; docs/benchmarks.md):
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
// Built and run by `REREAD_PROBE=1 scripts/gpu.sh OUTDIR`, or: nvcc -O3 -std=c++20 -arch=sm_90
// bench/cols_reread_probe.cu -o probe && ./probe
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>

#include "cols_probe_setup.cuh"

// The visits of a launch: lines in `groups` groups of `group`, `per` = group x chunks tiles a
// phase, in the order reduce(0), reduce(1), scan(0), ..., scan(groups - 1).
struct Work {
    i64 chunks, group, groups, per;
    __host__ __device__ i64 visits(int mode) const { return (mode ? 2 : 1) * groups * per; }
    __device__ void at(i64 i, int mode, bool& scan, i64& line, i64& chunk) const {
        i64 g, r;
        if (mode == 0) {
            scan = true, g = i / per, r = i % per;
        } else if (i < per) {
            scan = false, g = 0, r = i;
        } else {
            const i64 j = i - per, p = 1 + j / (2 * per), q = j % (2 * per);
            if (p < groups) scan = q >= per, g = scan ? p - 1 : p, r = scan ? q - per : q;
            else scan = true, g = groups - 1, r = q;  // the last phase: scan(groups - 1) alone
        }
        chunk = r / group, line = g * group + r % group;
    }
};

template <int NIN, int V, int R, int WARPS, int MAXC, int MINB, int MODE>
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
        const i64 o = line / col_groups, g = line % col_groups;
        const i64 t0 = chunk * TS + (i64)warp * R;
        const int nv = t0 >= T ? 0 : (T - t0 >= R ? R : (int)(T - t0));
        const i64 at0 = (o * T + t0) * C + g * L + lane * V;
        float va[R][V], vb[R][V];
        load_run<NIN, V, R>(in0, in1, at0, C, nv, va, vb);
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
            S agg = nv > 0 ? item<NIN>(va[0][q], vb[0][q]) : S{1.f, 0.f};  // an empty run folds as identity
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

// Seconds of one configuration with groups of the most lines whose inputs fit `budget` bytes
// (`group`), its blocks per SM, and its mismatches against the host scan (MODE 1 only).
template <int NIN, int V, int R, int WARPS, int MAXC, int MINB, int MODE>
static double run(const float* x, const float* y, float* z, const Case& c, double budget, bool persistent, int sms,
                  i64& group, int& per_sm, size_t& bad) {
    constexpr int L = 32 * V, TS = WARPS * R;
    const i64 lines = c.O * (c.C / L), chunks = (c.T + TS - 1) / TS;
    if (chunks > MAXC) return 0;
    const double line_bytes = (double)c.T * L * 4 * NIN;
    group = 1;
    for (i64 d = 1; d <= lines; ++d)
        if (lines % d == 0 && d * line_bytes <= budget) group = d;
    const Work work{chunks, group, lines / group, group * chunks};
    auto kernel = reread_cols<NIN, V, R, WARPS, MAXC, MINB, MODE>;
    BENCH_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, WARPS * 32, 0));
    // Persistent: every block resident, visits b, b + G, ...; else a block a visit, started in
    // order, so a scan visit's block starts after those of the reduce visits it waits on.
    const unsigned grid = (unsigned)(persistent ? std::min<i64>(work.visits(MODE), (i64)sms * per_sm) : work.visits(MODE));
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
#define TRY(V, R, WARPS, MAXC, MINB, MODE, BUDGET, PERSIST)                                                           \
    {                                                                                                                \
        size_t bad = 0;                                                                                              \
        int per_sm = 0;                                                                                              \
        i64 group = 0;                                                                                               \
        const double t = c.nin == 1 ? run<1, V, R, WARPS, MAXC, MINB, MODE>(ints, y, z, c, BUDGET, PERSIST, sms, group, \
                                                                            per_sm, bad)                             \
                                    : run<2, V, R, WARPS, MAXC, MINB, MODE>(x, y, z, c, BUDGET, PERSIST, sms, group,  \
                                                                            per_sm, bad);                            \
        if (t > 0)                                                                                                   \
            std::printf("  V=%d R=%-2d warps=%-2d %d/SM %-10s groups of %-3lld lines %-9s %7.1f us %5.1f%% of copy  %zu differ\n", \
                        V, R, WARPS, per_sm, PERSIST ? "persistent" : "per visit", (long long)group,                 \
                        MODE ? "two-pass" : "one pass", t * 1e6, probe.percent(c, t), bad);                  \
    }
        TRY(1, 32, 8, 24, 2, 0, 1e12, false) TRY(1, 32, 8, 24, 2, 1, 16 * MB, false) TRY(1, 32, 8, 24, 2, 1, 32 * MB, false)
        TRY(1, 32, 8, 24, 2, 1, 32 * MB, true) TRY(1, 16, 8, 40, 2, 0, 1e12, false) TRY(1, 16, 8, 40, 2, 1, 32 * MB, false)
        TRY(2, 16, 8, 40, 2, 0, 1e12, false) TRY(2, 16, 8, 40, 2, 1, 16 * MB, false) TRY(2, 16, 8, 40, 2, 1, 32 * MB, false)
        TRY(4, 8, 16, 40, 1, 0, 1e12, false) TRY(4, 8, 16, 40, 1, 1, 32 * MB, false)
        TRY(4, 4, 16, 72, 1, 0, 1e12, false) TRY(4, 4, 16, 72, 1, 1, 32 * MB, false)
#undef TRY
    }
    return 0;
}
