// The cols probes' column states (bench/cols_wide_probe.cu, bench/cols_pipe_probe.cu): a
// column's f32 state (sum or the affine map), a lane's run of V columns scanned and stored from
// registers, and states published as tagged 64-bit words (value | epoch) with relaxed accesses,
// polled until every word carries this launch's epoch.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

typedef long long i64;
typedef unsigned long long u64;
typedef unsigned u32;

// Zeroed device memory for tagged words: a word written by an earlier launch carries an older
// epoch, so launches never clear it again.
inline u64* status_words(size_t bytes) {
    u64* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess || cudaMemset(p, 0, bytes) != cudaSuccess) {
        std::printf("cudaMalloc failed for the look-back words\n");
        std::exit(1);
    }
    return p;
}

__device__ __forceinline__ u64 ld_word(const u64* p) {
    u64 v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_word(u64* p, u64 v) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ u64 tag(float f, unsigned epoch) { return (u64)epoch << 32 | __float_as_uint(f); }

// A column's state: sum (NIN 1) keeps h; affine keeps the map h -> a h + b.
template <int NIN> struct St {
    float a, b;
    static __device__ __forceinline__ St identity() { return {1.f, 0.f}; }  // folds as nothing
    static __device__ __forceinline__ St combine(St x, St y) {  // x earlier
        if (NIN == 1) return {0.f, __fadd_rn(x.b, y.b)};
        return {__fmul_rn(x.a, y.a), __fadd_rn(__fmul_rn(y.a, x.b), y.b)};
    }
};
__host__ __device__ constexpr int words(int nin) { return nin; }  // tagged words per column state
template <int NIN> __device__ __forceinline__ St<NIN> item(float a, float b) { return NIN == 1 ? St<NIN>{0.f, a} : St<NIN>{a, b}; }

// A state as NW tagged words at word(0) .. word(NW - 1), and back.
template <int NIN, class At> __device__ __forceinline__ void publish(At word, St<NIN> s, unsigned epoch) {
    if (NIN == 2) st_word(word(0), tag(s.a, epoch));
    st_word(word(words(NIN) - 1), tag(s.b, epoch));
}
template <int NIN> __device__ __forceinline__ St<NIN> untag(const u64* w) {
    return St<NIN>{NIN == 2 ? __uint_as_float((u32)w[0]) : 0.f, __uint_as_float((u32)w[words(NIN) - 1])};
}
// Polls until each of the N words (first loads already in w; word(i) its address) carries this
// launch's epoch. With `hung`, gives up after 2^18 polls (some 50 ms), counts that there and
// returns false, so that a broken chain ends its probe instead of the lease.
template <int N, class At>
__device__ __forceinline__ bool wait_tagged(u64 (&w)[N], unsigned epoch, At word, unsigned* hung = nullptr) {
    for (int ns = 32, n = 0;; ns = ns < 256 ? 2 * ns : ns) {
        bool ready = true;
#pragma unroll
        for (int i = 0; i < N; ++i)
            if ((unsigned)(w[i] >> 32) != epoch) ready = false, w[i] = ld_word(word(i));
        if (ready) return true;
        if (hung && ++n > (1 << 18)) return atomicAdd(hung, 1u), false;
        __nanosleep(ns);
    }
}

template <int V> __device__ __forceinline__ void load_v(const float* p, float (&v)[V]) {
    if constexpr (V == 1) asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(v[0]) : "l"(p));
    if constexpr (V == 2) asm volatile("ld.global.nc.v2.f32 {%0, %1}, [%2];" : "=f"(v[0]), "=f"(v[1]) : "l"(p));
    if constexpr (V == 4)
        asm volatile("ld.global.nc.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), "=f"(v[3]) : "l"(p));
}
// A lane's run: R steps (nv of them valid) of its V columns from element `at`, rows C apart.
template <int NIN, int V, int R>
__device__ __forceinline__ void load_run(const float* in0, const float* in1, i64 at, i64 C, int nv, float (&va)[R][V],
                                         float (&vb)[R][V]) {
#pragma unroll
    for (int k = 0; k < R; ++k)
        if (k < nv) {
            load_v<V>(in0 + at + k * C, va[k]);
            if (NIN == 2) load_v<V>(in1 + at + k * C, vb[k]);
        }
}
// V floats from global memory into shared memory, asynchronously (zeros where !ok).
template <int V> __device__ __forceinline__ void copy_async(float* dst, const float* src, bool ok) {
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    if constexpr (V == 4)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(d), "l"(src), "r"(ok ? 16 : 0) : "memory");
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;" ::"r"(d), "l"(src), "n"(V * 4), "r"(ok ? V * 4 : 0)
                     : "memory");
}
__device__ __forceinline__ void copy_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> __device__ __forceinline__ void copy_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

template <int V> struct Vec;
template <> struct Vec<1> { typedef float T; };
template <> struct Vec<2> { typedef float2 T; };
template <> struct Vec<4> { typedef float4 T; };
template <int V> __device__ __forceinline__ void store_v(float* p, const float (&v)[V]) {
    typename Vec<V>::T t;
    std::memcpy(&t, v, sizeof t);
    *reinterpret_cast<typename Vec<V>::T*>(p) = t;
}
// The run's scan from `run` (where has[q]; else from its first item), stored as it goes; item
// k of column q is at(k, q).
template <int NIN, int V, int R, class At>
__device__ __forceinline__ void scan_store_items(float* out, i64 C, int nv, At at, St<NIN> (&run)[V], bool (&has)[V]) {
#pragma unroll
    for (int k = 0; k < R; ++k)
        if (k < nv) {
            float h[V];
#pragma unroll
            for (int q = 0; q < V; ++q) {
                const St<NIN> e = at(k, q);
                run[q] = has[q] ? St<NIN>::combine(run[q], e) : e;
                has[q] = true;
                h[q] = run[q].b;
            }
            store_v<V>(out + k * C, h);
        }
}
// The same for a run held in registers.
template <int NIN, int V, int R>
__device__ __forceinline__ void scan_store_run(float* out, i64 C, int nv, const float (&va)[R][V], const float (&vb)[R][V],
                                               St<NIN> (&run)[V], bool (&has)[V]) {
    scan_store_items<NIN, V, R>(out, C, nv, [&](int k, int q) { return item<NIN>(va[k][q], vb[k][q]); }, run, has);
}
