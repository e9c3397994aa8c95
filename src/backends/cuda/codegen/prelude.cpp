// The fixed part of every generated CUDA source: scalar helpers with scanc's semantics
// (scalar_eval.h) and the kernel templates. Generated code defines, per stage, a struct K with
// State, Ctx, combine, load, store, word conversions and its tuning constants, then
// instantiates scan_rows<K> / scan_cols<K> / a map kernel. No headers: NVRTC needs none.
#include "codegen.h"

namespace scanc::cuda {

std::string_view cuda_prelude() {
    return R"CUDA(
typedef long long i64;
typedef unsigned long long u64;
typedef unsigned int u32;

// ---- scalar semantics (include/scanc/ir/scalar_eval.h) ----
template <class T> struct Tr { static constexpr bool flt = false, sgn = true; typedef u64 U; };
template <> struct Tr<float> { static constexpr bool flt = true, sgn = true; typedef float U; };
template <> struct Tr<double> { static constexpr bool flt = true, sgn = true; typedef double U; };
template <> struct Tr<unsigned char> { static constexpr bool flt = false, sgn = false; typedef u64 U; };
template <> struct Tr<bool> { static constexpr bool flt = false, sgn = false; typedef u64 U; };

template <class T> __device__ __forceinline__ T sc_add(T a, T b) {
    if constexpr (Tr<T>::flt) return a + b; else return (T)((u64)a + (u64)b);
}
template <class T> __device__ __forceinline__ T sc_sub(T a, T b) {
    if constexpr (Tr<T>::flt) return a - b; else return (T)((u64)a - (u64)b);
}
template <class T> __device__ __forceinline__ T sc_mul(T a, T b) {
    if constexpr (Tr<T>::flt) return a * b; else return (T)((u64)a * (u64)b);
}
template <class T> __device__ __forceinline__ T sc_neg(T a) {
    if constexpr (Tr<T>::flt) return -a; else return (T)(0ull - (u64)a);
}
template <class T> __device__ __forceinline__ T sc_div(T a, T b) {
    if constexpr (Tr<T>::flt) return a / b;
    else {
        if (b == 0) return (T)0;
        if constexpr (Tr<T>::sgn) if (b == (T)-1) return sc_neg(a);
        return (T)(a / b);
    }
}
template <class T> __device__ __forceinline__ T sc_mod(T a, T b) {
    if (b == 0) return a;
    if constexpr (Tr<T>::sgn) if (b == (T)-1) return (T)0;
    return (T)(a % b);
}
template <class T> __device__ __forceinline__ T sc_shl(T a, T b) {
    constexpr u64 bits = 8 * sizeof(T);
    return (T)((u64)a << ((u64)b & (bits - 1)));
}
template <class T> __device__ __forceinline__ T sc_shr(T a, T b) {
    constexpr u64 bits = 8 * sizeof(T);
    return (T)(a >> (int)((u64)b & (bits - 1)));
}
template <class T> __device__ __forceinline__ T sc_abs(T a) {
    if constexpr (Tr<T>::flt) return a < 0 ? -a : (a == 0 ? (T)0 : a);
    else if constexpr (Tr<T>::sgn) return a < 0 ? sc_neg(a) : a;
    else return a;
}
template <class T> __device__ __forceinline__ T sc_min(T a, T b) {
    if constexpr (Tr<T>::flt) { if (a != a) return a; if (b != b) return b; }
    return b < a ? b : a;
}
template <class T> __device__ __forceinline__ T sc_max(T a, T b) {
    if constexpr (Tr<T>::flt) { if (a != a) return a; if (b != b) return b; }
    return a < b ? b : a;
}
template <class To, class From> __device__ __forceinline__ To sc_cast(From x) {
    if constexpr (sizeof(To) == 1 && !Tr<To>::sgn && !Tr<To>::flt && To(2) == To(1)) {
        return x != 0;  // bool
    } else if constexpr (!Tr<To>::flt && Tr<From>::flt) {
        if (x != x) return (To)0;
        constexpr To lo = Tr<To>::sgn ? (To)((u64)1 << (8 * sizeof(To) - 1)) : (To)0;
        constexpr To hi = (To)~lo;
        if (x <= (From)lo) return lo;
        if (x >= (From)hi) return hi;
        return (To)x;
    } else {
        return (To)x;
    }
}
__device__ __forceinline__ float sc_round_f16(float x) {
    unsigned short h; float y;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
    asm("cvt.f32.f16 %0, %1;" : "=f"(y) : "h"(h));
    return y;
}
__device__ __forceinline__ float sc_round_bf16(float x) {
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x));
    return __int_as_float((int)h << 16);
}
__device__ __forceinline__ float sc_f16_load(unsigned short h) {
    float y; asm("cvt.f32.f16 %0, %1;" : "=f"(y) : "h"(h)); return y;
}
__device__ __forceinline__ unsigned short sc_f16_store(float x) {
    unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x)); return h;
}
__device__ __forceinline__ float sc_bf16_load(unsigned short h) { return __int_as_float((int)h << 16); }
__device__ __forceinline__ unsigned short sc_bf16_store(float x) {
    unsigned short h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x)); return h;
}

#define SC_UNARY(name, f32fn, f64fn) \
    __device__ __forceinline__ float name(float x) { return f32fn; } \
    __device__ __forceinline__ double name(double x) { return f64fn; }
SC_UNARY(sc_exp, expf(x), exp(x))
SC_UNARY(sc_log, logf(x), log(x))
SC_UNARY(sc_log1p, log1pf(x), log1p(x))
SC_UNARY(sc_expm1, expm1f(x), expm1(x))
SC_UNARY(sc_sqrt, sqrtf(x), sqrt(x))
SC_UNARY(sc_rsqrt, 1.0f / sqrtf(x), 1.0 / sqrt(x))
SC_UNARY(sc_tanh, tanhf(x), tanh(x))
SC_UNARY(sc_sin, sinf(x), sin(x))
SC_UNARY(sc_cos, cosf(x), cos(x))
SC_UNARY(sc_floor, floorf(x), floor(x))
SC_UNARY(sc_ceil, ceilf(x), ceil(x))
SC_UNARY(sc_sigmoid, 1.0f / (1.0f + expf(-x)), 1.0 / (1.0 + exp(-x)))
SC_UNARY(sc_softplus, fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x))),
         fmax(x, 0.0) + log1p(exp(-fabs(x))))
__device__ __forceinline__ float sc_pow(float a, float b) { return powf(a, b); }
__device__ __forceinline__ double sc_pow(double a, double b) { return pow(a, b); }
template <class T> __device__ __forceinline__ T sc_logaddexp(T a, T b) {
    if (a != a || b != b) return a + b;
    if (a == b) return a + sc_log((T)2);  // also inf+inf and -inf+-inf without NaN
    T m = a < b ? b : a, d = a < b ? a - b : b - a;
    return m + sc_log1p(sc_exp(d));
}

// ---- memory ----
template <int R> struct View { char* ptr; i64 stride[R]; };  // strides in bytes
struct ScanParams {
    u64* status;       // look-back words: (epoch << 32) | data word
    u32* counter;      // dynamic tile ids, never reset: tile = ticket - tile_base
    i64 epoch, tile_base, outer, len, inner, chunks, groups;
};
template <class T> __device__ __forceinline__ T ld(const char* p, i64 off) { return *(const T*)(p + off); }
template <class T> __device__ __forceinline__ void st(char* p, i64 off, T v) { *(T*)(p + off) = v; }
// A thread's pointers into every access and output of a scan stage at one step of its line,
// moved along the scan dim by a fixed byte step per access: one 64-bit add per access and item,
// where recomputing base + t * stride costs a 64-bit multiply and several adds.
template <int NIN, int NOUT> struct Cursor { const char* in[NIN]; char* out[NOUT]; };
template <int NIN, int NOUT> struct Steps { i64 in[NIN], out[NOUT]; };
template <class K>
__device__ __forceinline__ typename K::Cur seek(const typename K::Args& a, const typename K::Ctx& x, i64 t) {
    typename K::Cur c;
    #pragma unroll
    for (int j = 0; j < K::NIN; ++j) c.in[j] = a.in[j].ptr + x.bin[j] + t * a.in[j].stride[K::D];
    #pragma unroll
    for (int j = 0; j < K::NOUT; ++j) c.out[j] = a.out[j].ptr + x.bout[j] + t * a.out[j].stride[K::D];
    return c;
}
template <class K> __device__ __forceinline__ Steps<K::NIN, K::NOUT> steps(const typename K::Args& a, i64 dt) {
    Steps<K::NIN, K::NOUT> s;
    #pragma unroll
    for (int j = 0; j < K::NIN; ++j) s.in[j] = dt * a.in[j].stride[K::D];
    #pragma unroll
    for (int j = 0; j < K::NOUT; ++j) s.out[j] = dt * a.out[j].stride[K::D];
    return s;
}
template <class K> __device__ __forceinline__ void advance(typename K::Cur& c, const Steps<K::NIN, K::NOUT>& s) {
    #pragma unroll
    for (int j = 0; j < K::NIN; ++j) c.in[j] += s.in[j];
    #pragma unroll
    for (int j = 0; j < K::NOUT; ++j) c.out[j] += s.out[j];
}

__device__ __forceinline__ void st_status(u64* p, u32 epoch, u32 word) {
    u64 v = ((u64)epoch << 32) | word;
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ u64 ld_status(const u64* p) {
    u64 v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
// Spins until all NW words at p carry this launch's epoch; each word is tagged on its own, so a
// state of any size is published without fences.
template <class K> __device__ __forceinline__ typename K::State wait_state(const u64* p, u32 epoch) {
    u32 w[K::NW];
    #pragma unroll
    for (int j = 0; j < K::NW; ++j) {
        u64 v = ld_status(p + j);
        int ns = 16;
        while ((u32)(v >> 32) != epoch) {
            __nanosleep(ns);
            ns = ns < 128 ? 2 * ns : ns;
            v = ld_status(p + j);
        }
        w[j] = (u32)v;
    }
    return K::from_words(w);
}
template <class K> __device__ __forceinline__ void publish(u64* p, u32 epoch, const typename K::State& s) {
    u32 w[K::NW];
    K::to_words(s, w);
    #pragma unroll
    for (int j = 0; j < K::NW; ++j) st_status(p + j, epoch, w[j]);
}
// (has, value) folding: a missing value acts as the identity the combine may not have.
template <class K> __device__ __forceinline__ void fold(bool& h, typename K::State& acc, bool oh,
                                                       const typename K::State& o,
                                                       const typename K::Cap& cap) {
    if (oh) { acc = h ? K::combine(acc, o, cap) : o; h = true; }
}
template <class K> __device__ __forceinline__ typename K::State shfl_state(const typename K::State& s, int delta, bool up) {
    u32 w[K::NW];
    K::to_words(s, w);
    #pragma unroll
    for (int j = 0; j < K::NW; ++j)
        w[j] = up ? __shfl_up_sync(0xffffffffu, w[j], delta) : __shfl_down_sync(0xffffffffu, w[j], delta);
    return K::from_words(w);
}
// A window of look-back words, loaded in two steps so that the loads travel while the tile does
// other work: issue_window starts them, finish_window re-polls what was not yet published and
// folds the states at ptr_of(0..n-1) (n <= N) in order into (h, acc). Indices stay compile-time.
template <class K, int N, class F>
__device__ __forceinline__ void issue_window(int n, F ptr_of, u32 epoch, u64 (&raw)[N][K::NW]) {
    #pragma unroll
    for (int j = 0; j < N; ++j)
        #pragma unroll
        for (int q = 0; q < K::NW; ++q) raw[j][q] = j < n ? ld_status(ptr_of(j) + q) : ((u64)epoch << 32);
}
template <class K, int N, class F>
__device__ __forceinline__ void wait_window(F ptr_of, u32 epoch, u64 (&raw)[N][K::NW]) {
    for (int ns = 16;; ns = ns < 128 ? 2 * ns : ns) {
        bool ready = true;
        #pragma unroll
        for (int j = 0; j < N; ++j)
            #pragma unroll
            for (int q = 0; q < K::NW; ++q)
                if ((u32)(raw[j][q] >> 32) != epoch) { ready = false; raw[j][q] = ld_status(ptr_of(j) + q); }
        if (ready) break;
        __nanosleep(ns);
    }
}
template <class K, int N, class F>
__device__ __forceinline__ void finish_window(int n, F ptr_of, u32 epoch, u64 (&raw)[N][K::NW], bool& h,
                                              typename K::State& acc, const typename K::Cap& cap) {
    wait_window<K, N>(ptr_of, epoch, raw);
    #pragma unroll
    for (int j = 0; j < N; ++j)
        if (j < n) {
            u32 w[K::NW];
            #pragma unroll
            for (int q = 0; q < K::NW; ++q) w[q] = (u32)raw[j][q];
            fold<K>(h, acc, true, K::from_words(w), cap);
        }
}
template <class K, int N, class F>
__device__ __forceinline__ void fold_window(int n, F ptr_of, u32 epoch, bool& h, typename K::State& acc,
                                            const typename K::Cap& cap) {
    u64 raw[N][K::NW];
    issue_window<K, N>(n, ptr_of, epoch, raw);
    finish_window<K, N>(n, ptr_of, epoch, raw, h, acc, cap);
}
__device__ __forceinline__ int pad32(int i) { return i + (i >> 5); }
// The rows transpose lives in dynamic shared memory (sized by the launch: transpose_smem_bytes in
// tuning.h), so a tile may exceed the 48 KB static limit (24-32 items of 8-byte states).
extern __shared__ __align__(16) u32 sc_dyn_smem[];
template <class K> __device__ __forceinline__ i64 phys(const ScanParams& p, i64 t) {
    return K::REVERSE ? p.len - 1 - t : t;
}

// ---- rows: scan along a dim with inner extent 1. Each warp owns a segment of 32 x IT
// consecutive elements: loaded striped (coalesced), transposed through its shared-memory
// segment so that each thread scans IT consecutive items, then stored striped again. ----
template <class K, int IT> using Segment = u32[K::NW][32 * IT + IT];  // padded: pad32
// Lane l of a warp holds its segment's elements l, l + 32, ...: t0 = the lane's first one, and
// item k is valid when 32 k < nval (32-bit compares; nval = min(end - t0, 32 IT) or 0).
__device__ __forceinline__ int striped_valid(i64 t0, i64 end, int it) {
    return t0 >= end ? 0 : (end - t0 >= 32 * it ? 32 * it : (int)(end - t0));
}
template <class K, int IT>
__device__ __forceinline__ void load_striped(const typename K::Args& a, const typename K::Ctx& x, i64 t0,
                                             int nval, typename K::State (&items)[IT]) {
    typename K::Cur c = seek<K>(a, x, phys<K>(a.p, t0));
    const auto s = steps<K>(a, K::REVERSE ? -32 : 32);
    #pragma unroll
    for (int k = 0; k < IT; ++k) {
        items[k] = k * 32 < nval ? K::load(c) : typename K::State{};
        advance<K>(c, s);
    }
}
// Striped -> blocked, then the thread's inclusive scan of its nv valid items and the warp's
// inclusive scan of thread totals: (ex, exh) is the lane's exclusive warp prefix, (tot, toth) on
// lane 31 the warp's total.
template <class K, int IT>
__device__ __forceinline__ void scan_segment(Segment<K, IT>& sw, typename K::State (&items)[IT], int nv,
                                             const typename K::Cap& cap, typename K::State& ex, bool& exh,
                                             typename K::State& tot, bool& toth) {
    typedef typename K::State S;
    const int lane = threadIdx.x % 32;
    __syncwarp();  // the segment's previous readers are done
    #pragma unroll
    for (int k = 0; k < IT; ++k) {
        u32 w[K::NW]; K::to_words(items[k], w);
        #pragma unroll
        for (int j = 0; j < K::NW; ++j) sw[j][pad32(k * 32 + lane)] = w[j];
    }
    __syncwarp();
    #pragma unroll
    for (int k = 0; k < IT; ++k) {
        u32 w[K::NW];
        #pragma unroll
        for (int j = 0; j < K::NW; ++j) w[j] = sw[j][pad32(lane * IT + k)];
        items[k] = K::from_words(w);
    }
    // agg = the last valid item (a k == nv - 1 select becomes an indexed load that puts items[]
    // in local memory).
    S agg = items[0];
    #pragma unroll
    for (int k = 1; k < IT; ++k) {
        items[k] = K::combine(items[k - 1], items[k], cap);
        if (k < nv) agg = items[k];
    }
    bool h = nv > 0;
    S v = agg;
    #pragma unroll
    for (int d = 1; d < 32; d *= 2) {
        S o = shfl_state<K>(v, d, true);
        bool oh = __shfl_up_sync(0xffffffffu, h, d);
        if (lane >= d && oh) { v = h ? K::combine(o, v, cap) : o; h = true; }
    }
    ex = shfl_state<K>(v, 1, true);
    exh = __shfl_up_sync(0xffffffffu, h, 1) && lane > 0;
    tot = v;
    toth = h;
}
// pre o items (when ph), blocked -> striped, and the fused epilogue's stores of the lane's
// valid striped elements (t0 and nval as in load_striped).
template <class K, int IT>
__device__ __forceinline__ void store_segment(const typename K::Args& a, const typename K::Ctx& x,
                                              Segment<K, IT>& sw, typename K::State (&items)[IT], bool ph,
                                              const typename K::State& pre, i64 t0, int nval) {
    const int lane = threadIdx.x % 32;
    if (ph) {
        #pragma unroll
        for (int k = 0; k < IT; ++k) items[k] = K::combine(pre, items[k], x.cap);
    }
    __syncwarp();
    #pragma unroll
    for (int k = 0; k < IT; ++k) {
        u32 w[K::NW]; K::to_words(items[k], w);
        #pragma unroll
        for (int j = 0; j < K::NW; ++j) sw[j][pad32(lane * IT + k)] = w[j];
    }
    __syncwarp();
    typename K::Cur c = seek<K>(a, x, phys<K>(a.p, t0));
    const auto s = steps<K>(a, K::REVERSE ? -32 : 32);
    #pragma unroll
    for (int k = 0; k < IT; ++k) {
        u32 w[K::NW];
        #pragma unroll
        for (int j = 0; j < K::NW; ++j) w[j] = sw[j][pad32(k * 32 + lane)];
        if (k * 32 < nval) K::store(c, K::from_words(w));
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
__device__ __forceinline__ int valid_items(i64 first, i64 end, int it) {
    return first >= end ? 0 : (end - first >= it ? it : (int)(end - first));
}

// Long rows: a row is split into tiles of THREADS x ITEMS elements chained by a deterministic
// windowed look-back. Look-back words: the aggregates A of every tile, then the inclusive
// prefixes P, NW words per tile each, so that a warp's window loads are coalesced.
template <class K> __device__ void scan_rows(const typename K::Args& a) {
    typedef typename K::State S;
    constexpr int T = K::ROW_THREADS, IT = K::ROW_ITEMS, WARPS = T / 32, W = K::ROW_WINDOW;
    constexpr int SEG = 32 * IT, PER = W / 32;
    constexpr i64 TILE = (i64)T * IT;
    Segment<K, IT>* xchg = reinterpret_cast<Segment<K, IT>*>(sc_dyn_smem);
    __shared__ u32 s_tot[WARPS][K::NW];
    __shared__ int s_has[WARPS];
    __shared__ u32 s_pre[K::NW];
    __shared__ u32 s_win[K::NW][W + W / 32];  // the window's aggregates, in tile order (pad32)
    const ScanParams& p = a.p;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const i64 tile = tile_id<K>(p), row = tile / p.chunks, chunk = tile % p.chunks;
    const i64 start = chunk * TILE, end = start + TILE < p.len ? start + TILE : p.len;
    typename K::Ctx x;
    K::row_base(a, row, 0, x);
    const u32 epoch = (u32)p.epoch;
    // Deterministic look-back: the prefix of chunk c is always P(ws - 1) o A(ws) o ... o A(c - 1),
    // ws = c rounded down to the window; the same association on every run. Warp 0 issues the
    // loads of those words now, so they travel while the tile's data does: load j of lane l
    // reads A(ws + 32 j + l).
    const bool lookback = warp == 0 && chunk > 0;
    const i64 ws = chunk / W * W;
    const int nwin = lookback && chunk - ws > lane ? (int)((chunk - ws - lane + 31) / 32) : 0;
    u64* const a_row = p.status + (u64)(tile - chunk) * K::NW;
    u64* const p_row = a_row + (u64)p.outer * p.chunks * K::NW;
    auto a_of = [&](int j) { return a_row + (u64)(ws + j * 32 + lane) * K::NW; };
    auto p_of = [&](int) { return p_row + (u64)(ws - 1) * K::NW; };
    u64 raw[PER][K::NW], praw[1][K::NW];
    issue_window<K, PER>(nwin, a_of, epoch, raw);
    issue_window<K, 1>(lookback && lane == 0 && ws > 0 ? 1 : 0, p_of, epoch, praw);
    const i64 wbase = start + (i64)warp * SEG;
    const int nval = striped_valid(wbase + lane, end, IT);
    S items[IT];
    load_striped<K, IT>(a, x, wbase + lane, nval, items);
    S ex, v;
    bool exh, h;
    scan_segment<K, IT>(xchg[warp], items, valid_items(wbase + (i64)lane * IT, end, IT), x.cap, ex, exh, v, h);
    if (lane == 31) {
        u32 w[K::NW]; K::to_words(v, w);
        #pragma unroll
        for (int j = 0; j < K::NW; ++j) s_tot[warp][j] = w[j];
        s_has[warp] = h;
    }
    __syncthreads();
    if (warp == 0 && p.chunks > 1) {
        S tagg; bool th = false;
        #pragma unroll
        for (int w2 = 0; w2 < WARPS; ++w2) fold<K>(th, tagg, s_has[w2], K::from_words(s_tot[w2]), x.cap);
        u64* const st_a = a_row + (u64)chunk * K::NW, *const st_p = p_row + (u64)chunk * K::NW;
        if (lane == 0) publish<K>(st_a, epoch, tagg);  // A: this tile's aggregate
        if (chunk == 0) {
            if (lane == 0) publish<K>(st_p, epoch, tagg);  // P: inclusive prefix
        } else {
            // Back to tile order through shared memory: lane l folds A(ws + PER l ...) in order.
            wait_window<K, PER>(a_of, epoch, raw);
            #pragma unroll
            for (int j = 0; j < PER; ++j)
                #pragma unroll
                for (int q = 0; q < K::NW; ++q)
                    if (j < nwin) s_win[q][pad32(j * 32 + lane)] = (u32)raw[j][q];
            __syncwarp();
            const i64 c0 = ws + lane * PER;
            const int nfold = c0 >= chunk ? 0 : (chunk - c0 >= PER ? PER : (int)(chunk - c0));
            S f; bool fh = false;
            #pragma unroll
            for (int i = 0; i < PER; ++i)
                if (i < nfold) {
                    u32 w[K::NW];
                    #pragma unroll
                    for (int q = 0; q < K::NW; ++q) w[q] = s_win[q][pad32(lane * PER + i)];
                    fold<K>(fh, f, true, K::from_words(w), x.cap);
                }
            #pragma unroll
            for (int d = 1; d < 32; d *= 2) {  // ordered tree reduction: lane 0 gets the fold
                S o = shfl_state<K>(f, d, false);
                bool oh = __shfl_down_sync(0xffffffffu, fh, d);
                if (lane + d < 32) fold<K>(fh, f, oh, o, x.cap);
            }
            if (lane == 0) {
                S pre = f;
                if (ws > 0) {
                    S pw; bool ph = false;
                    finish_window<K, 1>(1, p_of, epoch, praw, ph, pw, x.cap);
                    pre = fh ? K::combine(pw, f, x.cap) : pw;
                }
                if (chunk + 1 < p.chunks) publish<K>(st_p, epoch, K::combine(pre, tagg, x.cap));
                u32 w[K::NW]; K::to_words(pre, w);
                #pragma unroll
                for (int j = 0; j < K::NW; ++j) s_pre[j] = w[j];
            }
        }
    }
    __syncthreads();
    // this thread's exclusive prefix: tile prefix o earlier warps o earlier lanes
    bool ph = chunk > 0;
    S pre;
    if (ph) pre = K::from_words(s_pre);
    for (int w2 = 0; w2 < warp; ++w2) fold<K>(ph, pre, s_has[w2], K::from_words(s_tot[w2]), x.cap);
    fold<K>(ph, pre, exh, ex, x.cap);
    store_segment<K, IT>(a, x, xchg[warp], items, ph, pre, wbase + lane, nval);
}

// Rows that fit one tile (len <= RES_THREADS x RES_ITEMS): no look-back. A grid of resident
// blocks strides over the rows and issues the next row's loads before scanning the current
// one, so memory stays busy while a block scans and stores. Rows of at most 32 x RES_ITEMS
// elements go one per warp, without block barriers.
template <class K> __device__ void scan_rows_resident(const typename K::Args& a) {
    typedef typename K::State S;
    constexpr int IT = K::RES_ITEMS, WARPS = K::RES_THREADS / 32, SEG = 32 * IT;
    Segment<K, IT>* xchg = reinterpret_cast<Segment<K, IT>*>(sc_dyn_smem);
    __shared__ u32 s_tot[2][WARPS][K::NW];  // double-buffered: one barrier per row
    __shared__ int s_has[2][WARPS];
    const ScanParams& p = a.p;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const bool per_warp = p.len <= SEG;  // uniform over the grid
    const i64 step = per_warp ? (i64)gridDim.x * WARPS : (i64)gridDim.x;
    const i64 wbase = per_warp ? 0 : (i64)warp * SEG;
    const int nv = valid_items(wbase + (i64)lane * IT, p.len, IT), nval = striped_valid(wbase + lane, p.len, IT);
    i64 row = per_warp ? (i64)blockIdx.x * WARPS + warp : (i64)blockIdx.x;
    typename K::Ctx x;
    S items[IT];
    if (row < p.outer) {
        K::row_base(a, row, 0, x);
        load_striped<K, IT>(a, x, wbase + lane, nval, items);
    }
    // row is warp-uniform, and block-uniform unless per_warp, where no block barrier runs.
    for (int parity = 0; row < p.outer; row += step, parity ^= 1) {
        const i64 next = row + step;
        typename K::Ctx xn;
        S nitems[IT];
        if (next < p.outer) {
            K::row_base(a, next, 0, xn);
            load_striped<K, IT>(a, xn, wbase + lane, nval, nitems);
        }
        S ex, v, pre;
        bool exh, h, ph = false;
        scan_segment<K, IT>(xchg[warp], items, nv, x.cap, ex, exh, v, h);
        if (!per_warp) {
            if (lane == 31) {
                u32 w[K::NW]; K::to_words(v, w);
                #pragma unroll
                for (int j = 0; j < K::NW; ++j) s_tot[parity][warp][j] = w[j];
                s_has[parity][warp] = h;
            }
            __syncthreads();
            for (int w2 = 0; w2 < warp; ++w2)
                fold<K>(ph, pre, s_has[parity][w2], K::from_words(s_tot[parity][w2]), x.cap);
        }
        fold<K>(ph, pre, exh, ex, x.cap);
        store_segment<K, IT>(a, x, xchg[warp], items, ph, pre, wbase + lane, nval);
        x = xn;
        #pragma unroll
        for (int k = 0; k < IT; ++k) items[k] = nitems[k];
    }
}

// ---- cols: scan along a dim with inner extent > 1. A tile is [WARPS*ROWS steps x 32 lanes];
// each lane is its own scan, chained across tiles along the scan dim by a per-lane look-back. ----
template <class K> __device__ void scan_cols(const typename K::Args& a) {
    typedef typename K::State S;
    constexpr int WARPS = K::COL_WARPS, RPW = K::COL_ROWS, W = K::COL_WINDOW;
    constexpr i64 CH = (i64)WARPS * RPW;
    __shared__ u32 s_tot[WARPS][K::NW][32];
    __shared__ int s_has[WARPS];
    __shared__ u32 s_pre[K::NW][32];
    const ScanParams& p = a.p;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const i64 lines = p.outer * p.groups, tile = tile_id<K>(p);
    const i64 chunk = tile / lines, line = tile % lines, o = line / p.groups, g = line % p.groups;
    const i64 i = g * 32 + lane;
    const bool lane_ok = i < p.inner;
    typename K::Ctx x;
    K::row_base(a, o, lane_ok ? i : 0, x);
    const u32 epoch = (u32)p.epoch;
    const i64 t0 = chunk * CH + (i64)warp * RPW;
    const int nv = t0 >= p.len ? 0 : (p.len - t0 >= RPW ? RPW : (int)(p.len - t0));
    S items[RPW];
    const auto step = steps<K>(a, K::REVERSE ? -1 : 1);
    typename K::Cur c = seek<K>(a, x, phys<K>(p, t0));
    #pragma unroll
    for (int k = 0; k < RPW; ++k) {
        items[k] = (k < nv && lane_ok) ? K::load(c) : S{};
        advance<K>(c, step);
    }
    S agg = items[0];
    #pragma unroll
    for (int k = 1; k < RPW; ++k) {
        items[k] = K::combine(items[k - 1], items[k], x.cap);
        if (k < nv) agg = items[k];
    }
    {
        u32 w[K::NW]; K::to_words(agg, w);
        #pragma unroll
        for (int j = 0; j < K::NW; ++j) s_tot[warp][j][lane] = w[j];
        if (lane == 0) s_has[warp] = nv > 0;
    }
    __syncthreads();
    if (warp == 0 && p.chunks > 1) {
        S tagg; bool th = false;
        #pragma unroll
        for (int w2 = 0; w2 < WARPS; ++w2) {
            u32 w[K::NW];
            #pragma unroll
            for (int j = 0; j < K::NW; ++j) w[j] = s_tot[w2][j][lane];
            fold<K>(th, tagg, s_has[w2], K::from_words(w), x.cap);
        }
        auto entry = [&](i64 c, int kind) {
            return p.status + ((u64)(line * p.chunks + c) * 32 + lane) * 2 * K::NW + kind * K::NW;
        };
        publish<K>(entry(chunk, 0), epoch, tagg);
        S pre;
        if (chunk == 0) {
            publish<K>(entry(chunk, 1), epoch, tagg);
        } else {
            const i64 ws = chunk / W * W;
            bool fh = false;
            if (ws > 0) { pre = wait_state<K>(entry(ws - 1, 1), epoch); fh = true; }
            fold_window<K, W>((int)(chunk - ws), [&](int j) { return entry(ws + j, 0); }, epoch, fh, pre, x.cap);
            if (chunk + 1 < p.chunks) publish<K>(entry(chunk, 1), epoch, K::combine(pre, tagg, x.cap));
            u32 w[K::NW]; K::to_words(pre, w);
            #pragma unroll
            for (int j = 0; j < K::NW; ++j) s_pre[j][lane] = w[j];
        }
    }
    __syncthreads();
    bool ph = chunk > 0;
    S pre;
    u32 w[K::NW];
    if (ph) {
        #pragma unroll
        for (int j = 0; j < K::NW; ++j) w[j] = s_pre[j][lane];
        pre = K::from_words(w);
    }
    for (int w2 = 0; w2 < warp; ++w2) {
        #pragma unroll
        for (int j = 0; j < K::NW; ++j) w[j] = s_tot[w2][j][lane];
        fold<K>(ph, pre, s_has[w2], K::from_words(w), x.cap);
    }
    if (!lane_ok) return;
    c = seek<K>(a, x, phys<K>(p, t0));
    #pragma unroll
    for (int k = 0; k < RPW; ++k) {
        if (k < nv) K::store(c, ph ? K::combine(pre, items[k], x.cap) : items[k]);
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
