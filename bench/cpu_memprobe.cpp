// Memory probe for the CPU backend's streaming paths (issue 4): what a copy and a one-op scan
// reach on this machine, and what makes glibc's large copy faster than its mid-size one. Each
// kernel runs on `threads` threads (each its share of one array), best of 3, reported as GB/s
// of bytes read + written (reads only for the read kernels).
//
//   cpu_memprobe [MIB] [THREADS]    # MIB: the source array (default 256), THREADS default 2
//
// Kernels: glibc memcpy; loops of 32-byte loads with ordinary or streaming (non-temporal)
// stores, over one stream or K pages interleaved (glibc's large copy interleaves pages); reads
// alone; a reassociated f32 prefix sum like the backend's one-op blocks (8 segments of 64 per
// block, fix-up, streaming stores through an L1 block) without and with software prefetch
// ahead. Needs AVX2 (x86-64); elsewhere it says so and exits.
#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

using Kernel = void (*)(float* dst, const float* src, std::size_t n);

#if defined(__x86_64__)
__attribute__((target("avx2"))) void copy_stores(float* d, const float* s, std::size_t n, bool nt) {
    for (std::size_t i = 0; i < n; i += 16) {
        __m256 a = _mm256_loadu_ps(s + i), b = _mm256_loadu_ps(s + i + 8);
        if (nt) {
            _mm256_stream_ps(d + i, a);
            _mm256_stream_ps(d + i + 8, b);
        } else {
            _mm256_storeu_ps(d + i, a);
            _mm256_storeu_ps(d + i + 8, b);
        }
    }
}
void copy_plain(float* d, const float* s, std::size_t n) { copy_stores(d, s, n, false); }
void copy_nt(float* d, const float* s, std::size_t n) { copy_stores(d, s, n, true); }

// K equal sub-ranges; each round copies one 4 KiB page of each.
template <int K>
void copy_pages(float* d, const float* s, std::size_t n) {
    std::size_t sub = n / K, page = 1024;
    for (std::size_t p = 0; p < sub; p += page)
        for (int k = 0; k < K; ++k) copy_stores(d + k * sub + p, s + k * sub + p, page, true);
}

__attribute__((target("avx2"))) void read_stream(float*, const float* s, std::size_t n) {
    __m256 a = _mm256_setzero_ps(), b = _mm256_setzero_ps();
    for (std::size_t i = 0; i < n; i += 16) {
        a = _mm256_add_ps(a, _mm256_loadu_ps(s + i));
        b = _mm256_add_ps(b, _mm256_loadu_ps(s + i + 8));
    }
    volatile float sink = _mm256_cvtss_f32(_mm256_add_ps(a, b));
    (void)sink;
}

// The backend's one-op block scan (ops_impl.inc, serial_block_impl) in scalar form, with a
// prefetch of the lines `ahead` bytes on (0: none).
template <int Ahead>
void scan_blocks(float* d, const float* s, std::size_t n) {
    alignas(64) float buf[512];
    float c = 0;
    for (std::size_t b = 0; b < n; b += 512) {
        const float* x = s + b;
        if (Ahead)
            for (int i = 0; i < 512; i += 16) __builtin_prefetch(x + Ahead / 4 + i);
        float acc[8];
        for (int k = 0; k < 8; ++k) acc[k] = buf[k * 64] = x[k * 64];
        for (int j = 1; j < 64; ++j)
            for (int k = 0; k < 8; ++k) buf[k * 64 + j] = acc[k] = acc[k] + x[k * 64 + j];
        for (int k = 0; k < 8; ++k) {
            for (int j = 0; j < 64; ++j) buf[k * 64 + j] += c;
            c = buf[k * 64 + 63];
        }
        copy_nt(d + b, buf, 512);
    }
}
#endif

void glibc_copy(float* d, const float* s, std::size_t n) { std::memcpy(d, s, n * 4); }

double best_seconds(Kernel k, float* dst, const float* src, std::size_t n, int threads) {
    double best = 1e30;
    for (int it = 0; it < 3; ++it) {
        std::barrier<> start(threads + 1);
        std::vector<std::thread> pool;
        for (int p = 0; p < threads; ++p)
            pool.emplace_back([&, p] {
                // Parts of whole pages (the page-interleaved kernels step by pages).
                std::size_t lo = n * p / threads / 1024 * 1024;
                std::size_t hi = n * (p + 1) / threads / 1024 * 1024;
                start.arrive_and_wait();
                k(dst + lo, src + lo, hi - lo);
            });
        start.arrive_and_wait();
        auto t0 = std::chrono::steady_clock::now();
        for (auto& t : pool) t.join();
        std::chrono::duration<double> took = std::chrono::steady_clock::now() - t0;
        best = std::min(best, took.count());
    }
    return best;
}

}  // namespace

int main(int argc, char** argv) {
#if defined(__x86_64__)
    if (!__builtin_cpu_supports("avx2")) {
        std::puts("cpu_memprobe: needs AVX2");
        return 0;
    }
    std::size_t mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 256;
    int threads = argc > 2 ? std::atoi(argv[2]) : 2;
    std::size_t n = mib << 18;  // floats
    auto* src = static_cast<float*>(std::aligned_alloc(4096, n * 4));
    auto* dst = static_cast<float*>(std::aligned_alloc(4096, n * 4));
    for (std::size_t i = 0; i < n; ++i) src[i] = static_cast<float>(i % 7);
    std::memset(dst, 0, n * 4);
    struct Case {
        const char* name;
        Kernel kernel;
        int passes;  // 2: read + write, 1: read only
    };
    const Case cases[] = {
        {"glibc memcpy", glibc_copy, 2},
        {"copy, ordinary stores", copy_plain, 2},
        {"copy, streaming stores", copy_nt, 2},
        {"copy, streaming, 2 pages interleaved", copy_pages<2>, 2},
        {"copy, streaming, 4 pages interleaved", copy_pages<4>, 2},
        {"read only", read_stream, 1},
        {"scan blocks, streaming stores", scan_blocks<0>, 2},
        {"scan blocks, prefetch 2 KiB ahead", scan_blocks<2048>, 2},
        {"scan blocks, prefetch 4 KiB ahead", scan_blocks<4096>, 2},
        {"scan blocks, prefetch 8 KiB ahead", scan_blocks<8192>, 2},
    };
    std::printf("%zu MiB source, %d threads\n", mib, threads);
    for (const Case& c : cases) {
        double s = best_seconds(c.kernel, dst, src, n, threads);
        std::printf("%-40s %7.2f GB/s\n", c.name, c.passes * n * 4.0 / s / 1e9);
    }
    std::free(src);
    std::free(dst);
#else
    std::puts("cpu_memprobe: x86-64 only");
#endif
    return 0;
}
