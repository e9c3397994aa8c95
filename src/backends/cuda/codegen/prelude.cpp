// The fixed head of every generated CUDA source: scalar helpers with scanc's semantics
// (scalar_eval.h), kernel arguments, cursors and the look-back words' protocol. The kernel
// templates follow (kernels.cpp). No headers: NVRTC needs none.
#include "codegen.h"

namespace scanc::cuda {

std::string_view cuda_prelude() {
    return R"CUDA(
// Compiled alone (-DSCANC_ONLY_ENTRY=i), the source keeps only kernel entry i.
#ifdef SCANC_ONLY_ENTRY
#define SCANC_ENTRY(i) ((i) == SCANC_ONLY_ENTRY)
#else
#define SCANC_ENTRY(i) 1
#endif

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
// min and max are selects, never branches: a scan unrolls dozens of combines, and branches
// kept each one's loads and ops from moving past it (max down the columns: 37% of copy with
// branches; docs/history/cuda-sessions-14-20.md, nineteenth session). A NaN operand wins, a
// first; on ties the left operand, as in the reference. (f64 logaddexp keeps its branches:
// selects computed both sides and spilled in the one-tile rows kernel.)
template <class T> __device__ __forceinline__ T sc_min(T a, T b) {
    const T m = b < a ? b : a;
    if constexpr (Tr<T>::flt) return (b != b) & (a == a) ? b : m;
    else return m;
}
template <class T> __device__ __forceinline__ T sc_max(T a, T b) {
    const T m = a < b ? b : a;
    if constexpr (Tr<T>::flt) return (b != b) & (a == a) ? b : m;
    else return m;
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
SC_UNARY(sc_exp2, exp2f(x), exp2(x))
SC_UNARY(sc_log2, log2f(x), log2(x))
SC_UNARY(sc_log10, log10f(x), log10(x))
SC_UNARY(sc_erf, erff(x), erf(x))
SC_UNARY(sc_erfc, erfcf(x), erfc(x))
SC_UNARY(sc_log1p, log1pf(x), log1p(x))
SC_UNARY(sc_expm1, expm1f(x), expm1(x))
SC_UNARY(sc_sqrt, sqrtf(x), sqrt(x))
SC_UNARY(sc_rsqrt, 1.0f / sqrtf(x), 1.0 / sqrt(x))
SC_UNARY(sc_tanh, tanhf(x), tanh(x))
SC_UNARY(sc_sin, sinf(x), sin(x))
SC_UNARY(sc_cos, cosf(x), cos(x))
SC_UNARY(sc_atan, atanf(x), atan(x))
SC_UNARY(sc_floor, floorf(x), floor(x))
SC_UNARY(sc_ceil, ceilf(x), ceil(x))
SC_UNARY(sc_sigmoid, 1.0f / (1.0f + expf(-x)), 1.0 / (1.0 + exp(-x)))
// log(1 + exp(d)) for d <= 0 in f32, the heart of logaddexp and softplus: straight-line, about
// 36 instructions, where logaddexp by log1pf(expf(d)) with branches took about 72 (SASS of one
// call) and logcumsumexp ran compute-bound at a third of copy. e = exp(d) is 2^t by MUFU ex2,
// t = d log2(e) rounded, and the product's rounding carried beside it as e = p + pc;
// log1p(e) = 2 atanh(s) with s = e / (2 + e) <= 1/3 from a reciprocal refined once (the
// denominator's rounding included), and atanh(s) / s - 1 = s^2 P(s^2), P a cubic fitted on
// [0, 1/9] (2^-27.5 relative). Below d = -104, e rounds to 0. Error: docs/semantics.md (measured
// by the GPU tests).
__device__ __forceinline__ float sc_log1p_exp(float d) {
    d = d < -104.0f ? -104.0f : d;  // e rounds to 0 below; a NaN d stays NaN
    const float t = d * 1.44269502162933349609375f;
    const float t_lo = fmaf(d, 1.925963033500011079e-8f, fmaf(d, 1.44269502162933349609375f, -t));
    float p;
    asm("ex2.approx.f32 %0, %1;" : "=f"(p) : "f"(t));
    const float pc = p * (t_lo * 0.693147180559945309f);
    const float q = 2.0f + p, q_lo = (p - (q - 2.0f)) + pc;  // 2 + e = q + q_lo
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(q));
    float s = p * r;
    s = fmaf(r, fmaf(-s, q_lo, fmaf(-q, s, p) + pc), s);
    const float z = s * s, s2 = s + s;
    const float poly =
        fmaf(fmaf(fmaf(1.401369274e-01f, z, 1.399914473e-01f), z, 2.001088858e-01f), z, 3.333320618e-01f);
    return fmaf(s2, z * poly, s2);
}
__device__ __forceinline__ float sc_softplus(float x) { return fmaxf(x, 0.0f) + sc_log1p_exp(-fabsf(x)); }
__device__ __forceinline__ double sc_softplus(double x) { return fmax(x, 0.0) + log1p(exp(-fabs(x))); }
__device__ __forceinline__ float sc_pow(float a, float b) { return powf(a, b); }
__device__ __forceinline__ double sc_pow(double a, double b) { return pow(a, b); }
__device__ __forceinline__ float sc_atan2(float y, float x) { return atan2f(y, x); }
__device__ __forceinline__ double sc_atan2(double y, double x) { return atan2(y, x); }
// logaddexp: the larger plus log1p(exp(-|a - b|)), with no special case to branch on: a NaN
// operand makes d NaN, so the sum; an infinite larger operand adds log1p of exp(-inf) (0) or,
// equal to the other, log 2 (d = 0 where inf - inf is NaN). f32 (and f16 and bf16, computed in
// f32); f64 by branches and CUDA's exp and log1p.
__device__ __forceinline__ float sc_logaddexp(float a, float b) {
    return fmaxf(a, b) + sc_log1p_exp(a == b ? 0.0f : -fabsf(a - b));
}
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
    i64 per_tile;      // rows kernel: rows per tile (> 1: one-tile rows that share a tile)
};
template <class T> __device__ __forceinline__ T ld(const char* p, i64 off) { return *(const T*)(p + off); }
template <class T> __device__ __forceinline__ void st(char* p, i64 off, T v) { *(T*)(p + off) = v; }
// Four consecutive elements in one access (the vector rows kernels, on rows aligned to four).
template <class T> struct alignas(4 * sizeof(T)) Vec4 { T v[4]; };
template <class T> __device__ __forceinline__ Vec4<T> ld4(const char* p) { return *(const Vec4<T>*)p; }
template <class T> __device__ __forceinline__ void st4(char* p, const Vec4<T>& v) { *(Vec4<T>*)p = v; }
// A thread's pointers into every access and output of a scan stage at one step of its line,
// moved along the scan dim by a fixed byte step per access: one 64-bit add per access and item,
// where recomputing base + t * stride costs a 64-bit multiply and several adds.
template <int NIN, int NOUT> struct Cursor { const char* in[NIN]; char* out[NOUT]; };
template <int NIN, int NOUT> struct Steps { i64 in[NIN], out[NOUT]; };
// A cursor's byte step along the scan dim per unit of t: the layout class's (K::STEP_IN/OUT,
// compiled in, so that the unrolled items become immediate offsets) where FIXED (the rows
// kernels) and the class fixed one, else the argument's stride.
template <class K, bool FIXED> __device__ __forceinline__ i64 in_stride(const typename K::Args& a, int j) {
    return FIXED && K::STEP_IN[j] >= 0 ? K::STEP_IN[j] : a.in[j].stride[K::D];
}
template <class K, bool FIXED> __device__ __forceinline__ i64 out_stride(const typename K::Args& a, int j) {
    return FIXED && K::STEP_OUT[j] >= 0 ? K::STEP_OUT[j] : a.out[j].stride[K::D];
}
template <class K, bool FIXED = false>
__device__ __forceinline__ typename K::Cur seek(const typename K::Args& a, const typename K::Ctx& x, i64 t) {
    typename K::Cur c;
    #pragma unroll
    for (int j = 0; j < K::NIN; ++j) c.in[j] = a.in[j].ptr + x.bin[j] + t * in_stride<K, FIXED>(a, j);
    #pragma unroll
    for (int j = 0; j < K::NOUT; ++j) c.out[j] = a.out[j].ptr + x.bout[j] + t * out_stride<K, FIXED>(a, j);
    return c;
}
template <class K, bool FIXED = false>
__device__ __forceinline__ Steps<K::NIN, K::NOUT> steps(const typename K::Args& a, i64 dt) {
    Steps<K::NIN, K::NOUT> s;
    #pragma unroll
    for (int j = 0; j < K::NIN; ++j) s.in[j] = dt * in_stride<K, FIXED>(a, j);
    #pragma unroll
    for (int j = 0; j < K::NOUT; ++j) s.out[j] = dt * out_stride<K, FIXED>(a, j);
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
// Each look-back word carries the launch's epoch on its own, so a state of any size is published
// without fences. True when all NW look-back words in raw carry this launch's epoch; w gets
// their data words.
template <class K> __device__ __forceinline__ bool unpack_tagged(const u64 (&raw)[K::NW], u32 epoch, u32 (&w)[K::NW]) {
    bool ready = true;
    #pragma unroll
    for (int q = 0; q < K::NW; ++q) {
        ready = ready && (u32)(raw[q] >> 32) == epoch;
        w[q] = (u32)raw[q];
    }
    return ready;
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
template <class K>
__device__ __forceinline__ typename K::State shfl_state(const typename K::State& s, int delta, bool up, int width = 32) {
    u32 w[K::NW];
    K::to_words(s, w);
    #pragma unroll
    for (int j = 0; j < K::NW; ++j)
        w[j] = up ? __shfl_up_sync(0xffffffffu, w[j], delta, width)
                  : __shfl_down_sync(0xffffffffu, w[j], delta, width);
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
// wait_window and finish_window return how many rounds of polls they issued (0: every word was
// already published; read by the stamps instrument only).
template <class K, int N, class F>
__device__ __forceinline__ int wait_window(F ptr_of, u32 epoch, u64 (&raw)[N][K::NW]) {
    for (int ns = 16, rounds = 0;; ns = ns < 128 ? 2 * ns : ns, ++rounds) {
        bool ready = true;
        #pragma unroll
        for (int j = 0; j < N; ++j)
            #pragma unroll
            for (int q = 0; q < K::NW; ++q)
                if ((u32)(raw[j][q] >> 32) != epoch) { ready = false; raw[j][q] = ld_status(ptr_of(j) + q); }
        if (ready) return rounds;
        __nanosleep(ns);
    }
}
template <class K, int N, class F>
__device__ __forceinline__ int finish_window(int n, F ptr_of, u32 epoch, u64 (&raw)[N][K::NW], bool& h,
                                             typename K::State& acc, const typename K::Cap& cap) {
    const int rounds = wait_window<K, N>(ptr_of, epoch, raw);
    #pragma unroll
    for (int j = 0; j < N; ++j)
        if (j < n) {
            u32 w[K::NW];
            #pragma unroll
            for (int q = 0; q < K::NW; ++q) w[q] = (u32)raw[j][q];
            fold<K>(h, acc, true, K::from_words(w), cap);
        }
    return rounds;
}
template <class K, int N, class F>
__device__ __forceinline__ void fold_window(int n, F ptr_of, u32 epoch, bool& h, typename K::State& acc,
                                            const typename K::Cap& cap) {
    u64 raw[N][K::NW];
    issue_window<K, N>(n, ptr_of, epoch, raw);
    finish_window<K, N>(n, ptr_of, epoch, raw, h, acc, cap);
}
// Folds the lanes' (h, v) in lane order (an ordered tree); lane 0 ends with the fold of all 32.
template <class K> __device__ __forceinline__ void fold_lanes(bool& h, typename K::State& v, const typename K::Cap& cap) {
    #pragma unroll
    for (int d = 1; d < 32; d *= 2) {
        typename K::State o = shfl_state<K>(v, d, false);
        bool oh = __shfl_down_sync(0xffffffffu, h, d);
        if (threadIdx.x % 32 + d < 32) fold<K>(h, v, oh, o, cap);
    }
}
__device__ __forceinline__ int pad32(int i) { return i + (i >> 5); }
// The rows transpose lives in dynamic shared memory (sized by the launch: transpose_smem_bytes in
// tuning.h), so a tile may exceed the 48 KB static limit (24-32 items of 8-byte states).
extern __shared__ __align__(16) u32 sc_dyn_smem[];
template <class K> __device__ __forceinline__ i64 phys(const ScanParams& p, i64 t) {
    return K::REVERSE ? p.len - 1 - t : t;
}

)CUDA";
}

}  // namespace scanc::cuda
