// The kernel templates of every generated CUDA source, after the prelude: rows (look-back and
// resident), cols and map. Generated code defines, per stage, a struct K with State, Ctx, Cur,
// combine, fetch + compute (the prologue), store, word conversions and its tuning constants,
// then instantiates scan_rows<K> / scan_rows_resident_groups<K> / scan_cols<K, L> / map_kernel<K>.
#include "codegen.h"

namespace scanc::cuda {

std::string_view cuda_kernels() {
    return R"CUDA(// ---- rows: scan along a dim with inner extent 1. Each warp owns a segment of 32 x IT
// consecutive elements: loaded striped (coalesced), transposed through its shared-memory
// segment so that each thread scans IT consecutive items, then stored striped again. ----
// Short rows share a warp: its lanes split into groups of 2^lw (lw < 5), one row each, and a
// group's part of the segment is its 2^lw x IT elements (lw = 5, the default: the whole warp).
template <class K, int IT, bool VEC = false> using Segment = u32[K::NW][(VEC ? 36 : 33) * IT];  // pad32 / pad4
// Lane l of a group of 2^lw holds its part's elements s, s + 2^lw, ... (s = l mod 2^lw):
// t0 = the lane's first one, and item k is valid when (k << lw) < nval (32-bit compares;
// nval = min(end - t0, IT << lw) or 0).
__device__ __forceinline__ int striped_valid(i64 t0, i64 end, int it, int lw = 5) {
    return t0 >= end ? 0 : (end - t0 >= ((i64)it << lw) ? it << lw : (int)(end - t0));
}
// Where item k of `lane` lies in the segment, striped (a group's part starts at group x part).
__device__ __forceinline__ int striped_at(int k, int lane, int it, int lw) {
    return (lane >> lw << lw) * it + (k << lw) + (lane & ((1 << lw) - 1));
}
// ok ? v : State{}, word by word through selp. Written as a conditional, the compiler sinks v's
// arithmetic into a branch per item, which serializes a computing prologue's items (% of copy,
// branches -> selects: mamba (8,4096,1024) 74.5 -> 81.5, along rows of 4096 61 -> 97;
// docs/history/cuda-sessions-21-37.md, 29th session).
template <class K> __device__ __forceinline__ typename K::State keep_if(bool ok, const typename K::State& v) {
    u32 w[K::NW], z[K::NW];
    K::to_words(v, w);
    K::to_words(typename K::State{}, z);
    #pragma unroll
    for (int j = 0; j < K::NW; ++j)
        asm("{ .reg .pred p; setp.ne.u32 p, %3, 0; selp.b32 %0, %1, %2, p; }"
            : "=r"(w[j]) : "r"(w[j]), "r"(z[j]), "r"((u32)ok));
    return K::from_words(w);
}
// A thread's N items from its cursor c on, stepping by s, item k valid where ok(k) (else
// State{}). Where the fused prologue computes (K::FETCH_FIRST), every load is written before any
// arithmetic: interleaved, ptxas places the first dependent instruction after a few loads and each
// warp waits a DRAM latency with few in flight. (With keep_if's selects ptxas may still start the
// first items' arithmetic among the last loads; forcing all loads first spilled and ran slower:
// docs/history/cuda-sessions-21-37.md, 29th session.) Plain loads keep one loop, which ptxas
// schedules best (two loops sink the last item's loads past the scan:
// docs/history/cuda-sessions-21-37.md, 28th session).
template <class K, int N, class Ok>
__device__ __forceinline__ void load_items(typename K::Cur& c, const Steps<K::NIN, K::NOUT>& s, const typename K::Ctx& x,
                                           Ok ok, typename K::State (&items)[N]) {
    if constexpr (K::FETCH_FIRST) {
        typename K::Raw raw[N];
        #pragma unroll
        for (int k = 0; k < N; ++k) {
            raw[k] = ok(k) ? K::fetch(c) : typename K::Raw{};
            advance<K>(c, s);
        }
        #pragma unroll
        for (int k = 0; k < N; ++k) items[k] = keep_if<K>(ok(k), K::compute(raw[k], x));  // Raw{} computes harmlessly
    } else {
        #pragma unroll
        for (int k = 0; k < N; ++k) {
            items[k] = ok(k) ? K::compute(K::fetch(c), x) : typename K::State{};
            advance<K>(c, s);
        }
    }
}
template <class K, int IT>
__device__ __forceinline__ void load_striped(const typename K::Args& a, const typename K::Ctx& x, i64 t0,
                                             int nval, typename K::State (&items)[IT], int lw = 5) {
    typename K::Cur c = seek<K, true>(a, x, phys<K>(a.p, t0));
    load_items<K, IT>(c, steps<K, true>(a, K::REVERSE ? -(1 << lw) : 1 << lw), x, [&](int k) { return (k << lw) < nval; },
                      items);
}
// ---- vector rows (K::VEC; rows of whole vectors of four elements, aligned to four): lane l's
// items 4m .. 4m + 3 are the segment's elements 128m + 4l .. 128m + 4l + 3, read and written as
// one access per input and output (fetch4 / store4). The transposes go through a segment padded
// by four words per 32 (pad4), so that a lane's four words are one aligned 16-byte shared
// access on both sides, without bank conflicts. ----
__device__ __forceinline__ int pad4(int i) { return i + ((i >> 5) << 2); }
// Where the lane's vector m lies in the padded segment, striped (elements 128m + 4 lane ..) and
// blocked (lane x IT + 4m ..): pad4 split so that the lane's part is one base and m's a constant
// offset (else each vector's address is a register, and 4-byte states spill them).
__device__ __forceinline__ int striped_vec_at(int m, int lane) { return 144 * m + pad4(4 * lane); }
template <int IT> __device__ __forceinline__ int blocked_vec_at(int lane, int m) {
    if constexpr (IT % 32 == 0) return lane * (IT + IT / 8) + pad4(4 * m);
    else return pad4(lane * IT + 4 * m);
}
// Four states to / from four consecutive words (at `at`, a multiple of 4) of each word plane.
template <class K, class Seg> __device__ __forceinline__ void put4(Seg& sw, int at, const typename K::State* s) {
    u32 w[4][K::NW];
    #pragma unroll
    for (int q = 0; q < 4; ++q) K::to_words(s[q], w[q]);
    #pragma unroll
    for (int j = 0; j < K::NW; ++j) *reinterpret_cast<uint4*>(&sw[j][at]) = make_uint4(w[0][j], w[1][j], w[2][j], w[3][j]);
}
template <class K, class Seg> __device__ __forceinline__ void get4(const Seg& sw, int at, typename K::State* s) {
    u32 w[4][K::NW];
    #pragma unroll
    for (int j = 0; j < K::NW; ++j) {
        const uint4 v = *reinterpret_cast<const uint4*>(&sw[j][at]);
        w[0][j] = v.x, w[1][j] = v.y, w[2][j] = v.z, w[3][j] = v.w;
    }
    #pragma unroll
    for (int q = 0; q < 4; ++q) s[q] = K::from_words(w[q]);
}
// The cursor at the lane's first vector: memory order runs backwards in a reverse scan, so a
// vector starts at the last of its four elements there.
template <class K> __device__ __forceinline__ typename K::Cur seek_vec(const typename K::Args& a, const typename K::Ctx& x, i64 wbase) {
    return seek<K, true>(a, x, phys<K>(a.p, wbase + 4 * (threadIdx.x % 32) + (K::REVERSE ? 3 : 0)));
}
// The segment starting at wbase, nrem of its elements valid (a multiple of 4): items in the
// vector-striped order above.
template <class K, int IT>
__device__ __forceinline__ void load_vec(const typename K::Args& a, const typename K::Ctx& x, i64 wbase, int nrem,
                                         typename K::State (&items)[IT]) {
    typename K::Cur c = seek_vec<K>(a, x, wbase);
    const auto s = steps<K, true>(a, K::REVERSE ? -128 : 128);
    const int lane = threadIdx.x % 32;
    auto valid = [&](int m) { return (m << 7) + 4 * lane < nrem; };
    // Vector m's four states into the items, in their order (a reverse scan's memory order runs
    // backwards).
    auto put = [&](int m, const typename K::State (&v)[4]) {
        #pragma unroll
        for (int q = 0; q < 4; ++q) items[4 * m + q] = v[K::REVERSE ? 3 - q : q];
    };
    if constexpr (K::FETCH_FIRST) {  // as in load_items
        typename K::Raw4 raw[IT / 4];
        #pragma unroll
        for (int m = 0; m < IT / 4; ++m) {
            raw[m] = valid(m) ? K::fetch4(c) : typename K::Raw4{};
            advance<K>(c, s);
        }
        #pragma unroll
        for (int m = 0; m < IT / 4; ++m) {
            typename K::State v[4];
            K::compute4(raw[m], x, v);
            #pragma unroll
            for (int q = 0; q < 4; ++q) v[q] = keep_if<K>(valid(m), v[q]);
            put(m, v);
        }
    } else {
        #pragma unroll
        for (int m = 0; m < IT / 4; ++m) {
            typename K::State v[4] = {};
            if (valid(m)) K::compute4(K::fetch4(c), x, v);
            put(m, v);
            advance<K>(c, s);
        }
    }
}
template <class K, int IT>
__device__ __forceinline__ void store_vec(const typename K::Args& a, const typename K::Ctx& x, Segment<K, IT, true>& sw,
                                          i64 wbase, int nrem) {
    typename K::Cur c = seek_vec<K>(a, x, wbase);
    const auto s = steps<K, true>(a, K::REVERSE ? -128 : 128);
    const int lane = threadIdx.x % 32;
    #pragma unroll
    for (int m = 0; m < IT / 4; ++m) {
        typename K::State v[4], o[4];
        get4<K>(sw, striped_vec_at(m, lane), v);
        #pragma unroll
        for (int q = 0; q < 4; ++q) o[q] = v[K::REVERSE ? 3 - q : q];
        if ((m << 7) + 4 * lane < nrem) K::store4(c, o);
        advance<K>(c, s);
    }
}
// Where a thread's item k lies in the segment, blocked (padded): (lane x IT + k) + one word per
// 32, split so that when IT is a multiple of 32 the lane's part is one base and k's a constant.
template <int IT> __device__ __forceinline__ int blocked_at(int lane, int k) {
    if constexpr (IT % 32 == 0) return lane * (IT + IT / 32) + pad32(k);
    else return pad32(lane * IT + k);
}
// A thread's inclusive scan of its IT consecutive items. Returns the total of the first nv (a
// select per item: an index nv - 1 would put items[] in local memory).
template <class K, int IT>
__device__ __forceinline__ typename K::State scan_items(typename K::State (&items)[IT], int nv, const typename K::Cap& cap) {
    typename K::State agg = items[0];
    #pragma unroll
    for (int k = 1; k < IT; ++k) {
        items[k] = K::combine(items[k - 1], items[k], cap);
        if (k < nv) agg = items[k];
    }
    return agg;
}
// The thread's exclusive prefix `pre` folded onto every item, when it has one (ph).
template <class K, int IT>
__device__ __forceinline__ void fold_prefix(typename K::State (&items)[IT], bool ph, const typename K::State& pre,
                                            const typename K::Cap& cap) {
    if (!ph) return;
    #pragma unroll
    for (int k = 0; k < IT; ++k) items[k] = K::combine(pre, items[k], cap);
}
// The lanes' (h, v) folded in lane order within groups of 2^lw lanes, across lanes `step`
// apart (a scan by doubling, so lanes step apart hold consecutive parts): (h, v) becomes the
// inclusive fold, (exh, ex) the exclusive one (exh false on the first `step` lanes).
template <class K>
__device__ __forceinline__ void scan_lanes(typename K::State& v, bool& h, typename K::State& ex, bool& exh, int step,
                                           int lw, const typename K::Cap& cap) {
    const int at = threadIdx.x % 32 & ((1 << lw) - 1);
    #pragma unroll
    for (int d = 1; d < 32; d *= 2) {
        if (d * step >> lw) break;
        typename K::State o = shfl_state<K>(v, d * step, true, 1 << lw);
        bool oh = __shfl_up_sync(0xffffffffu, h, d * step, 1 << lw);
        if (at >= d * step && oh) { v = h ? K::combine(o, v, cap) : o; h = true; }
    }
    ex = shfl_state<K>(v, step, true, 1 << lw);
    exh = __shfl_up_sync(0xffffffffu, h, step, 1 << lw) && at >= step;
}
// Striped -> blocked, then the thread's inclusive scan of its nv valid items and the group's
// inclusive scan of thread totals: (ex, exh) is the lane's exclusive group prefix, (tot, toth) on
// the group's last lane the group's total.
template <class K, int IT, bool VEC = false>
__device__ __forceinline__ void scan_segment(Segment<K, IT, VEC>& sw, typename K::State (&items)[IT], int nv,
                                             const typename K::Cap& cap, typename K::State& ex, bool& exh,
                                             typename K::State& tot, bool& toth, int lw = 5) {
    typedef typename K::State S;
    const int lane = threadIdx.x % 32;
    __syncwarp();  // the segment's previous readers are done
    if constexpr (VEC) {
        #pragma unroll
        for (int m = 0; m < IT / 4; ++m) put4<K>(sw, striped_vec_at(m, lane), items + 4 * m);
        __syncwarp();
        #pragma unroll
        for (int m = 0; m < IT / 4; ++m) get4<K>(sw, blocked_vec_at<IT>(lane, m), items + 4 * m);
    } else {
        #pragma unroll
        for (int k = 0; k < IT; ++k) {
            u32 w[K::NW]; K::to_words(items[k], w);
            #pragma unroll
            for (int j = 0; j < K::NW; ++j) sw[j][pad32(striped_at(k, lane, IT, lw))] = w[j];
        }
        __syncwarp();
        #pragma unroll
        for (int k = 0; k < IT; ++k) {
            u32 w[K::NW];
            #pragma unroll
            for (int j = 0; j < K::NW; ++j) w[j] = sw[j][blocked_at<IT>(lane, k)];
            items[k] = K::from_words(w);
        }
    }
    S v = scan_items<K, IT>(items, nv, cap);
    bool h = nv > 0;
    scan_lanes<K>(v, h, ex, exh, 1, lw, cap);
    tot = v;
    toth = h;
}
// pre o items (when ph), blocked -> striped, and the fused epilogue's stores of the lane's
// valid striped elements (t0 and nval as in load_striped; VEC: wbase and nrem as in load_vec).
template <class K, int IT, bool VEC = false>
__device__ __forceinline__ void store_segment(const typename K::Args& a, const typename K::Ctx& x,
                                              Segment<K, IT, VEC>& sw, typename K::State (&items)[IT], bool ph,
                                              const typename K::State& pre, i64 t0, int nval, int lw = 5) {
    const int lane = threadIdx.x % 32;
    fold_prefix<K, IT>(items, ph, pre, x.cap);
    __syncwarp();
    if constexpr (VEC) {
        #pragma unroll
        for (int m = 0; m < IT / 4; ++m) put4<K>(sw, blocked_vec_at<IT>(lane, m), items + 4 * m);
        __syncwarp();
        store_vec<K, IT>(a, x, sw, t0, nval);
        return;
    }
    #pragma unroll
    for (int k = 0; k < IT; ++k) {
        u32 w[K::NW]; K::to_words(items[k], w);
        #pragma unroll
        for (int j = 0; j < K::NW; ++j) sw[j][blocked_at<IT>(lane, k)] = w[j];
    }
    __syncwarp();
    typename K::Cur c = seek<K, true>(a, x, phys<K>(a.p, t0));
    const auto s = steps<K, true>(a, K::REVERSE ? -(1 << lw) : 1 << lw);
    #pragma unroll
    for (int k = 0; k < IT; ++k) {
        u32 w[K::NW];
        #pragma unroll
        for (int j = 0; j < K::NW; ++j) w[j] = sw[j][pad32(striped_at(k, lane, IT, lw))];
        if ((k << lw) < nval) K::store(c, K::from_words(w));
        advance<K>(c, s);
    }
}
template <class K> __device__ __forceinline__ i64 tile_id(const ScanParams& p) {
    if constexpr (!K::TICKETS) {
        // Blocks start in increasing index order (CUB's single-pass scan relies on the same), so
        // a tile's predecessors are running or done and the look-back cannot deadlock.
        return blockIdx.x;
    } else {
        __shared__ u32 s_tile;  // a ticket: forward progress under any block order
        if (threadIdx.x == 0) s_tile = atomicAdd(p.counter, 1u) - (u32)p.tile_base;
        __syncthreads();
        return s_tile;
    }
}
// A look-back rows tile's row and chunk: chunk-major (chunk c of every row before chunk c + 1
// of any) within bands of ROW_BAND rows taken one after another (0: one band of every row; 1:
// row-major). The last band may hold fewer rows.
template <class K> __device__ __forceinline__ void tile_place(const ScanParams& p, i64 tile, i64& row, i64& chunk) {
    if constexpr (K::ROW_BAND == 0) {
        row = tile % p.outer, chunk = tile / p.outer;
    } else if constexpr (K::ROW_BAND == 1) {
        row = tile / p.chunks, chunk = tile % p.chunks;
    } else {
        const i64 first = tile / ((i64)K::ROW_BAND * p.chunks) * K::ROW_BAND;
        const i64 rows = p.outer - first < K::ROW_BAND ? p.outer - first : K::ROW_BAND, t = tile - first * p.chunks;
        row = first + t % rows, chunk = t / rows;
    }
}
// L2 prefetch (ROW_PREFETCH > 0, look-back tiles): the inputs of `tile`, which starts about one
// tile life later, go to L2 now, so DRAM stays busy while resident tiles wait on their look-back
// with their data in registers, and later tiles load from L2. Lane j takes input j where its
// scan dim steps by 1 to 16 bytes (not broadcast ones), the range's whole 16-byte blocks only,
// so the prefetch stays inside the view.
template <class K, i64 TILE>
__device__ __forceinline__ void prefetch_tile(const typename K::Args& a, const ScanParams& p, i64 tile) {
#if __CUDA_ARCH__ >= 900
    const int lane = threadIdx.x % 32;
    if (lane >= K::NIN || tile >= p.outer * p.chunks) return;
    typename K::Ctx x;
    i64 row, chunk;
    tile_place<K>(p, tile, row, chunk);
    K::row_base(a, row, 0, x);
    const i64 first = chunk * TILE;
    const i64 last = (first + TILE < p.len ? first + TILE : p.len) - 1;
    #pragma unroll
    for (int j = 0; j < K::NIN; ++j) {  // compile-time j: no local copies of a.in and x.bin
        const i64 step = in_stride<K, true>(a, j);
        if (lane != j || step == 0 || step > 16 || step < -16) continue;
        i64 lo = x.bin[j] + phys<K>(p, first) * step, hi = x.bin[j] + phys<K>(p, last) * step;
        if (lo > hi) { const i64 t = lo; lo = hi; hi = t; }
        const u64 b = ((u64)(a.in[j].ptr + lo) + 15) & ~(u64)15;
        const u64 e = (u64)(a.in[j].ptr + hi + (step < 0 ? -step : step)) & ~(u64)15;
        if (e > b) asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(b), "r"((u32)(e - b)) : "memory");
    }
#endif
}
__device__ __forceinline__ int valid_items(i64 first, i64 end, int it) {
    return first >= end ? 0 : (end - first >= it ? it : (int)(end - first));
}

// Measurement only (tuning stamps=1): thread 0 of a look-back tile notes the global time at
// dispatch, at its P publish and at its end, and the SM cycles from dispatch to the end of each
// phase, and writes them as 8 words per tile after the look-back words (layout: stamps.h).
template <bool ON> struct TileStamps {
    enum Phase { LOADED, BARRIER1, WINDOW, PREFIX, PUBLISHED, BARRIER2, STORED };
    u64 g0 = 0, gpub = 0;
    long long c0 = 0;
    u32 d[7] = {};
    int a_rounds = 0, p_rounds = 0;  // rounds of polls until the window's A's, and P, were seen
    static __device__ __forceinline__ u64 now() { u64 t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
    __device__ __forceinline__ void start() {
        if constexpr (ON) if (threadIdx.x == 0) { g0 = now(); c0 = clock64(); }
    }
    __device__ __forceinline__ void mark(Phase ph) {
        if constexpr (ON) if (threadIdx.x == 0) {
            d[ph] = (u32)(clock64() - c0);
            if (ph == PUBLISHED) gpub = now();
        }
    }
    __device__ __forceinline__ void write(u64* at, u32 chunk, u32 window_pos) {
        if constexpr (ON) if (threadIdx.x == 0) {
            u32 sm; asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
            const u64 rec[8] = {g0, gpub, now(), sm | (u64)d[0] << 32, d[1] | (u64)d[2] << 32,
                                d[3] | (u64)d[4] << 32, d[5] | (u64)d[6] << 32,
                                chunk | (u64)(window_pos & 0xffff) << 32 | (u64)(a_rounds < 255 ? a_rounds : 255) << 48 |
                                    (u64)(p_rounds < 255 ? p_rounds : 255) << 56};
            #pragma unroll
            for (int j = 0; j < 8; ++j) at[j] = rec[j];
        }
    }
};

// The prefix P(e) of the window end e = ws - 1 that the tiles of the window at ws fold onto
// (ROW_SKIP): polled (praw holds the first poll), or, where that window end has published its
// F = (f, a) and P(e - W) is out (`p_before`, null for the first two windows), made as that
// window end makes it: combine(combine(P(e - W), f), a). Either way the same bits, so the
// result does not depend on which arrives first, and the chain of window prefixes advances two
// windows per round trip. Returns the rounds of polls (the stamps instrument).
template <class K>
__device__ __forceinline__ int wait_window_prefix(u64 (&praw)[1][K::NW], const u64* p_at, const u64* f_at,
                                                  const u64* a_at, const u64* p_before, u32 epoch,
                                                  typename K::State& out, const typename K::Cap& cap) {
    for (int ns = 16, rounds = 0;; ns = ns < 128 ? 2 * ns : ns, ++rounds) {
        u32 w[K::NW];
        if (unpack_tagged<K>(praw[0], epoch, w)) {
            out = K::from_words(w);
            return rounds;
        }
        if (p_before) {
            u64 fv[K::NW], av[K::NW], pv[K::NW];
            #pragma unroll
            for (int q = 0; q < K::NW; ++q) fv[q] = ld_status(f_at + q), av[q] = ld_status(a_at + q), pv[q] = ld_status(p_before + q);
            u32 fw[K::NW], aw[K::NW], pw[K::NW];
            const bool f_ready = unpack_tagged<K>(fv, epoch, fw), a_ready = unpack_tagged<K>(av, epoch, aw);
            if (unpack_tagged<K>(pv, epoch, pw) && f_ready && a_ready) {
                out = K::combine(K::combine(K::from_words(pw), K::from_words(fw), cap), K::from_words(aw), cap);
                return rounds;
            }
        }
        __nanosleep(ns);
        #pragma unroll
        for (int q = 0; q < K::NW; ++q)
            if ((u32)(praw[0][q] >> 32) != epoch) praw[0][q] = ld_status(p_at + q);
    }
}

// Rows longer than a warp's resident segment: a row is split into tiles of THREADS x ITEMS
// elements chained by a deterministic windowed look-back (a row of one tile has none). Rows of
// at most one tile of THREADS x SHARED_ITEMS run in the SHARED kernel, scanc_rows_shared_N,
// several to a tile where they need at most half of it (the executable picks). Look-back
// words: the aggregates A of every tile, then the inclusive prefixes P, NW words per tile each,
// so that a warp's window loads are coalesced. Where a tile's time goes (stamps=1,
// bench/lookback_stamps.py): docs/history/cuda-sessions-01-04.md, third session.
template <class K, bool SHARED, bool VEC> __device__ void scan_rows(const typename K::Args& a) {
    typedef typename K::State S;
    constexpr int T = K::ROW_THREADS, IT = SHARED ? K::SHARED_ITEMS : VEC ? K::ROW_ITEMS : K::SCALAR_ITEMS;
    constexpr int WARPS = T / 32, W = K::ROW_WINDOW;
    constexpr int SEG = 32 * IT, PER = W / 32;
    constexpr i64 TILE = (i64)T * IT;
    Segment<K, IT, VEC>* xchg = reinterpret_cast<Segment<K, IT, VEC>*>(sc_dyn_smem);
    __shared__ u32 s_tot[WARPS][K::NW];
    __shared__ int s_has[WARPS];
    __shared__ u32 s_pre[K::NW];
    __shared__ u32 s_win[K::NW][W + W / 32];  // the window's aggregates, in tile order (pad32)
    const ScanParams& p = a.p;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    TileStamps<K::STAMPS> stamp;
    // Chunk-major order (ROW_CHUNK_MAJOR): chunk c of every row before chunk c + 1 of any, so
    // that several rows' look-back chains advance side by side, each `outer` tiles apart.
    // SHARED: p.per_tile rows share a tile (chunks = 1):
    // each takes wpr = WARPS / per_tile consecutive warps, and a warp is segment `seg` of its
    // row. (Its own kernel: a row that varies within the block costs registers, and sharing
    // one register allocation cost the other tiles 2-8 points.)
    const i64 tile = tile_id<K>(p);
    if constexpr (!SHARED && K::ROW_PREFETCH > 0)
        if (warp == WARPS - 1) prefetch_tile<K, TILE>(a, p, tile + K::ROW_PREFETCH);
    const int wpr = SHARED ? WARPS / (int)p.per_tile : WARPS, seg = SHARED ? warp % wpr : warp;
    i64 row = tile * p.per_tile + warp / wpr, chunk = 0;
    if constexpr (!SHARED) tile_place<K>(p, tile, row, chunk);
    const bool live = !SHARED || row < p.outer;
    stamp.start();
    const i64 start = chunk * TILE, end = !live ? 0 : (start + TILE < p.len ? start + TILE : p.len);
    typename K::Ctx x;
    K::row_base(a, live ? row : 0, 0, x);
    const u32 epoch = (u32)p.epoch;
    // Deterministic look-back: the prefix of chunk c is always P(ws - 1) o A(ws) o ... o A(c - 1),
    // ws = c rounded down to the window; the same association on every run. Warp 0 issues the
    // loads of those words now, so they travel while the tile's data does: load j of lane l
    // reads A(ws + 32 j + l).
    const bool lookback = warp == 0 && chunk > 0;
    const i64 ws = chunk / W * W;
    const int nwin = lookback && chunk - ws > lane ? (int)((chunk - ws - lane + 31) / 32) : 0;
    u64* const a_row = p.status + (u64)(row * p.chunks) * K::NW;
    u64* const p_row = a_row + (u64)p.outer * p.chunks * K::NW;
    auto a_of = [&](int j) { return a_row + (u64)(ws + j * 32 + lane) * K::NW; };
    // Copy j of a window end's P lies (outer x chunks x NW) x j words past p_row, so that the
    // tiles polling one P spread over ROW_PCOPIES places in L2 (tile c reads copy c % copies).
    const u64 pcopy_stride = (u64)p.outer * p.chunks * K::NW;
    auto p_of = [&](int) { return p_row + (u64)(chunk % K::ROW_PCOPIES) * pcopy_stride + (u64)(ws - 1) * K::NW; };
    // ROW_SKIP: each window end also publishes F = (f, its own aggregate), the two states its P
    // is made of, after the P copies (f, then the aggregates, outer x chunks x NW words each).
    u64* const f_row = p_row + (u64)K::ROW_PCOPIES * pcopy_stride;
    u64 raw[PER][K::NW], praw[1][K::NW];
    issue_window<K, PER>(nwin, a_of, epoch, raw);
    issue_window<K, 1>(lookback && lane == 0 && ws > 0 ? 1 : 0, p_of, epoch, praw);
    const i64 wbase = start + (i64)seg * SEG;
    // VEC: the segment's valid elements (whole vectors); else the lane's, striped
    const int nval = VEC ? valid_items(wbase, end, SEG) : striped_valid(wbase + lane, end, IT);
    S items[IT];
    if constexpr (VEC) load_vec<K, IT>(a, x, wbase, nval, items);
    else load_striped<K, IT>(a, x, wbase + lane, nval, items);
    S ex, v;
    bool exh, h;
    scan_segment<K, IT, VEC>(xchg[warp], items, valid_items(wbase + (i64)lane * IT, end, IT), x.cap, ex, exh, v, h);
    stamp.mark(stamp.LOADED);
    // NONDET (an instrument that measures what determinism costs): a snapshot of the window's P
    // words, taken now; the fold starts at the nearest one published, as CUB's look-back does.
    u64 rawp[K::NONDET ? PER : 1][K::NW];
    if constexpr (K::NONDET) issue_window<K, PER>(nwin, [&](int j) { return p_row + (u64)(ws + j * 32 + lane) * K::NW; }, epoch, rawp);
    if (lane == 31) {
        u32 w[K::NW]; K::to_words(v, w);
        #pragma unroll
        for (int j = 0; j < K::NW; ++j) s_tot[warp][j] = w[j];
        s_has[warp] = h;
    }
    __syncthreads();
    stamp.mark(stamp.BARRIER1);
    if (!SHARED && warp == 0 && p.chunks > 1) {
        S tagg; bool th = false;
        #pragma unroll
        for (int w2 = 0; w2 < WARPS; ++w2) fold<K>(th, tagg, s_has[w2], K::from_words(s_tot[w2]), x.cap);
        u64* const st_a = a_row + (u64)chunk * K::NW, *const st_p = p_row + (u64)chunk * K::NW;
        if (lane == 0) publish<K>(st_a, epoch, tagg);  // A: this tile's aggregate
        if (chunk == 0) {
            if (lane == 0) publish<K>(st_p, epoch, tagg);  // P: inclusive prefix
        } else {
            // Back to tile order through shared memory: lane l folds A(ws + PER l ...) in order.
            const int a_rounds = wait_window<K, PER>(a_of, epoch, raw);
            stamp.mark(stamp.WINDOW);
            if constexpr (K::STAMPS) stamp.a_rounds = __reduce_max_sync(0xffffffffu, a_rounds);
            #pragma unroll
            for (int j = 0; j < PER; ++j)
                #pragma unroll
                for (int q = 0; q < K::NW; ++q)
                    if (j < nwin) s_win[q][pad32(j * 32 + lane)] = (u32)raw[j][q];
            int near = 0;  // NONDET: 1 + (index - ws) of the nearest published P in the window, or 0
            if constexpr (K::NONDET) {
                #pragma unroll
                for (int j = 0; j < PER; ++j) {
                    u32 w[K::NW];
                    if (j < nwin && unpack_tagged<K>(rawp[j], epoch, w)) near = j * 32 + lane + 1;
                }
                near = __reduce_max_sync(0xffffffffu, near);
                #pragma unroll
                for (int j = 0; j < PER; ++j)
                    if (near && j * 32 + lane == near - 1) {
                        #pragma unroll
                        for (int q = 0; q < K::NW; ++q) s_pre[q] = (u32)rawp[j][q];
                    }
            }
            __syncwarp();
            const i64 c0 = ws + lane * PER;
            const int nfold = c0 >= chunk ? 0 : (chunk - c0 >= PER ? PER : (int)(chunk - c0));
            const int skip = near > lane * PER ? near - lane * PER : 0;  // items at or before that P
            S f; bool fh = false;
            #pragma unroll
            for (int i = 0; i < PER; ++i)
                if (i < nfold && i >= skip) {
                    u32 w[K::NW];
                    #pragma unroll
                    for (int q = 0; q < K::NW; ++q) w[q] = s_win[q][pad32(lane * PER + i)];
                    fold<K>(fh, f, true, K::from_words(w), x.cap);
                }
            fold_lanes<K>(fh, f, x.cap);
            if (lane == 0) {
                S pre = f;
                if (near) {
                    const S pn = K::from_words(s_pre);
                    pre = fh ? K::combine(pn, f, x.cap) : pn;
                } else if (ws > 0) {
                    S pw; bool ph = false;
                    if constexpr (K::ROW_SKIP) {
                        if (chunk % W == W - 1 && chunk + 1 < p.chunks) {  // F, before its own wait
                            publish<K>(f_row + (u64)chunk * K::NW, epoch, f);
                            publish<K>(f_row + pcopy_stride + (u64)chunk * K::NW, epoch, tagg);
                        }
                        const i64 e = ws - 1;  // the last window's end
                        stamp.p_rounds = wait_window_prefix<K>(praw, p_of(0), f_row + (u64)e * K::NW,
                                                               f_row + pcopy_stride + (u64)e * K::NW,
                                                               ws >= 2 * W ? p_of(0) - (u64)W * K::NW : nullptr,
                                                               epoch, pw, x.cap);
                    } else {
                        stamp.p_rounds = finish_window<K, 1>(1, p_of, epoch, praw, ph, pw, x.cap);
                    }
                    pre = fh ? K::combine(pw, f, x.cap) : pw;
                }
                stamp.mark(stamp.PREFIX);
                if (chunk + 1 < p.chunks) {
                    const S incl = K::combine(pre, tagg, x.cap);
                    publish<K>(st_p, epoch, incl);
                    if (chunk % W == W - 1)
                        for (int j = 1; j < K::ROW_PCOPIES; ++j) publish<K>(st_p + j * pcopy_stride, epoch, incl);
                }
                stamp.mark(stamp.PUBLISHED);
                u32 w[K::NW]; K::to_words(pre, w);
                #pragma unroll
                for (int j = 0; j < K::NW; ++j) s_pre[j] = w[j];
            }
        }
    }
    __syncthreads();
    stamp.mark(stamp.BARRIER2);
    // this thread's exclusive prefix: tile prefix o earlier warps of its row o earlier lanes
    bool ph = chunk > 0;
    S pre;
    if (ph) pre = K::from_words(s_pre);
    for (int w2 = warp - seg; w2 < warp; ++w2) fold<K>(ph, pre, s_has[w2], K::from_words(s_tot[w2]), x.cap);
    fold<K>(ph, pre, exh, ex, x.cap);
    store_segment<K, IT, VEC>(a, x, xchg[warp], items, ph, pre, VEC ? wbase : wbase + lane, nval);
    stamp.mark(stamp.STORED);
    const u64 lookback_words = (u64)p.outer * p.chunks * (1 + K::ROW_PCOPIES + (K::ROW_SKIP ? 2 : 0)) * K::NW;
    stamp.write(p.status + lookback_words + (u64)tile * 8, (u32)chunk, (u32)(chunk - ws));
}

// Rows that fit a warp's segment (len <= 32 x RES_ITEMS): no look-back and no block barriers.
// A grid of resident blocks strides over the rows and issues the next rows' loads before
// scanning the current ones, so memory stays busy while a warp scans and stores. A row goes to
// a group of 2^lw lanes (the fewest whose RES_ITEMS items hold it): 32 / 2^lw rows per warp at a
// time. Two kernels, which compile in parallel: scanc_resident_N (LW = 5: whole warps, for rows
// longer than 16 x RES_ITEMS) and scanc_resident_groups_N (LW < 0: lw computed at run time; one
// kernel per width would nearly double NVRTC's time). Longer rows take the look-back kernel, one
// tile each while they fit one (faster than a resident block per row:
// docs/history/cuda-sessions-05-07.md, fifth session).
template <class K, int LW> __device__ void scan_rows_resident_groups(const typename K::Args& a) {
    typedef typename K::State S;
    constexpr int IT = K::RES_ITEMS, WARPS = K::RES_THREADS / 32;
    Segment<K, IT>* xchg = reinterpret_cast<Segment<K, IT>*>(sc_dyn_smem);
    const ScanParams& p = a.p;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int lw = LW;
    if (LW < 0)
        for (lw = 4; lw > 0 && ((i64)IT << (lw - 1)) >= p.len;) --lw;
    const int group = lane >> lw, sub = lane & ((1 << lw) - 1);
    const i64 step = (i64)gridDim.x * WARPS << (5 - lw);
    const int nv = valid_items((i64)sub * IT, p.len, IT), nval = striped_valid(sub, p.len, IT, lw);
    // base: the warp's first row, uniform over it, so that every lane runs every shuffle; a
    // lane's row is base + group, idle past the last row.
    i64 base = ((i64)blockIdx.x * WARPS + warp) << (5 - lw);
    auto load_row = [&](i64 row, typename K::Ctx& x, S (&items)[IT]) {
        const bool live = row < p.outer;
        if (live) K::row_base(a, row, 0, x);
        load_striped<K, IT>(a, x, sub, live ? nval : 0, items, lw);
    };
    typename K::Ctx x{};
    S items[IT];
    if (base < p.outer) load_row(base + group, x, items);
    for (; base < p.outer; base += step) {
        const i64 row = base + group;
        typename K::Ctx xn{};
        S nitems[IT];
        if (base + step < p.outer) load_row(row + step, xn, nitems);
        S ex, v, pre;
        bool exh, h, ph = false;
        scan_segment<K, IT>(xchg[warp], items, row < p.outer ? nv : 0, x.cap, ex, exh, v, h, lw);
        fold<K>(ph, pre, exh, ex, x.cap);
        store_segment<K, IT>(a, x, xchg[warp], items, ph, pre, sub, row < p.outer ? nval : 0, lw);
        x = xn;
        #pragma unroll
        for (int k = 0; k < IT; ++k) items[k] = nitems[k];
    }
}

// ---- cols: scan along a dim with inner extent > 1. A line is L columns (8, 16 or 32); a tile is
// [WARPS x SUB x ROWS steps] x L columns, SUB = 32 / L runs of ROWS steps to a warp, lane
// (sub, column) holding one run of one column. Each column is its own scan, chained across tiles
// along the scan dim by a per-column look-back. ----
template <class K, int L> __device__ void scan_cols(const typename K::Args& a) {
    typedef typename K::State S;
    constexpr int WARPS = K::COL_WARPS, RPW = K::COL_ROWS, W = K::COL_WINDOW, SUB = 32 / L;
    constexpr i64 CH = (i64)WARPS * SUB * RPW;
    __shared__ u32 s_tot[WARPS][K::NW][L];
    __shared__ int s_has[WARPS];
    __shared__ u32 s_pre[K::NW][L];
    const ScanParams& p = a.p;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, col = lane % L, sub = lane / L;
    const i64 lines = p.outer * p.groups, tile = tile_id<K>(p);
    const i64 chunk = tile / lines, line = tile % lines, o = line / p.groups, g = line % p.groups;
    const i64 i = g * L + col;
    const bool lane_ok = i < p.inner;
    typename K::Ctx x;
    K::row_base(a, o, lane_ok ? i : 0, x);
    const u32 epoch = (u32)p.epoch;
    const i64 t0 = chunk * CH + ((i64)warp * SUB + sub) * RPW;
    const int nv = t0 >= p.len ? 0 : (p.len - t0 >= RPW ? RPW : (int)(p.len - t0));
    S items[RPW];
    const auto step = steps<K>(a, K::REVERSE ? -1 : 1);
    typename K::Cur c = seek<K>(a, x, phys<K>(p, t0));
    load_items<K, RPW>(c, step, x, [&](int k) { return k < nv && lane_ok; }, items);
    // The warp's runs of a column, folded in order by shuffles L lanes apart: (h, v) inclusive,
    // (exh, ex) exclusive; a run past the end (nv = 0) only ever follows valid ones.
    S v = scan_items<K, RPW>(items, nv, x.cap), ex;
    bool h = nv > 0, exh = false;
    if constexpr (SUB > 1) scan_lanes<K>(v, h, ex, exh, L, 5, x.cap);
    if (sub == SUB - 1) {
        u32 w[K::NW]; K::to_words(v, w);
        #pragma unroll
        for (int j = 0; j < K::NW; ++j) s_tot[warp][j][col] = w[j];
        if (col == 0) s_has[warp] = h;
    }
    __syncthreads();
    if (warp == 0 && sub == 0 && p.chunks > 1) {
        S tagg; bool th = false;
        #pragma unroll
        for (int w2 = 0; w2 < WARPS; ++w2) {
            u32 w[K::NW];
            #pragma unroll
            for (int j = 0; j < K::NW; ++j) w[j] = s_tot[w2][j][col];
            fold<K>(th, tagg, s_has[w2], K::from_words(w), x.cap);
        }
        // Only window ends publish P (the next window's tiles read it) and only the other tiles
        // A (the later tiles of their window read it), so that a tile writes one run of L x NW
        // words, the A's and the P's in separate arrays; a line's last tile publishes nothing.
        // (Forty-second session, H100: A and P from every tile, side by side, cost sum dim 0 1.4
        // points and lines of 128 chunks 4-5.)
        auto entry = [&](i64 c, int kind) {
            return p.status + (((u64)kind * lines * p.chunks + line * p.chunks + c) * L + col) * K::NW;
        };
        const bool window_end = chunk % W == W - 1, last = chunk + 1 == p.chunks;
        if (!window_end && !last) publish<K>(entry(chunk, 0), epoch, tagg);
        S pre;
        if (chunk == 0) {
            if (window_end && !last) publish<K>(entry(chunk, 1), epoch, tagg);
        } else {
            const i64 ws = chunk / W * W;
            bool fh = false;
            // The last window end's P first (fh false: pre = P), all of its words polled at
            // once, then the window's A's. (A state's words one after another, as before the
            // forty-third session, cost an affine P a second round trip: H100, two rounds,
            // (2,4096,1024) 80.0-80.3 -> 80.9-81.5%, (4,4096,256) 67.0 -> 67.4-68.2%.)
            if (ws > 0) fold_window<K, 1>(1, [&](int) { return entry(ws - 1, 1); }, epoch, fh, pre, x.cap);
            fold_window<K, W>((int)(chunk - ws), [&](int j) { return entry(ws + j, 0); }, epoch, fh, pre, x.cap);
            if (window_end && !last) publish<K>(entry(chunk, 1), epoch, K::combine(pre, tagg, x.cap));
            u32 w[K::NW]; K::to_words(pre, w);
            #pragma unroll
            for (int j = 0; j < K::NW; ++j) s_pre[j][col] = w[j];
        }
    }
    __syncthreads();
    bool ph = chunk > 0;
    S pre;
    u32 w[K::NW];
    if (ph) {
        #pragma unroll
        for (int j = 0; j < K::NW; ++j) w[j] = s_pre[j][col];
        pre = K::from_words(w);
    }
    for (int w2 = 0; w2 < warp; ++w2) {
        #pragma unroll
        for (int j = 0; j < K::NW; ++j) w[j] = s_tot[w2][j][col];
        fold<K>(ph, pre, s_has[w2], K::from_words(w), x.cap);
    }
    if constexpr (SUB > 1) fold<K>(ph, pre, exh, ex, x.cap);
    if (!lane_ok) return;
    fold_prefix<K, RPW>(items, ph, pre, x.cap);
    c = seek<K>(a, x, phys<K>(p, t0));
    #pragma unroll
    for (int k = 0; k < RPW; ++k) {
        if (k < nv) K::store(c, items[k]);
        advance<K>(c, step);
    }
}
// ---- map: one thread per element of a value that must be materialized ----
template <class K> __device__ void map_kernel(const typename K::Args& a) {
    i64 n = 1;
    #pragma unroll
    for (int j = 0; j < K::R; ++j) n *= a.size[j];
    for (i64 lin = blockIdx.x * (i64)blockDim.x + threadIdx.x; lin < n; lin += (i64)gridDim.x * blockDim.x) {
        i64 c[K::R], r = lin;
        #pragma unroll
        for (int j = K::R - 1; j >= 0; --j) { c[j] = r % a.size[j]; r /= a.size[j]; }
        K::eval(a, c);
    }
}
)CUDA";
}

}  // namespace scanc::cuda
