// Memory probe for the CPU backend's streaming paths (issue 4): what a copy and a one-op scan
// reach on this machine, and what makes glibc's large copy faster than its mid-size one. Each
// kernel runs on `threads` threads (each its share of one array), best of 3, reported as GB/s
// of bytes read + written (reads only for the read kernels).
//
//   cpu_memprobe [MIB] [THREADS]    # MIB: the source array (default 256), THREADS default 2
//   cpu_memprobe MIB THREADS stride # only the row-stride probe (round 10; below)
//   cpu_memprobe MIB THREADS lanes  # only the rows-per-group probe (round 11; below)
//
// Kernels: glibc memcpy; loops of 32-byte loads with ordinary or streaming (non-temporal)
// stores, over one stream or K pages interleaved (glibc's large copy interleaves pages); reads
// alone; a reassociated f32 prefix sum like the backend's one-op blocks (8 segments of 64 per
// block, fix-up, streaming stores through an L1 block) without and with software prefetch
// ahead; rows of 16 KiB scanned by the backend's f32 add kernels of rounds 4 and 5 with
// several prefetch distances; K strided row streams (round 7: what a strided-lane group's
// tiles ask of memory) for several K and bytes per visit; with `stride`, a strided-lane group's
// gathers and streaming scatters at row strides of 16 KiB and nearby (round 10). Needs AVX2
// (x86-64); elsewhere it says so and exits.
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

// Rows of 16 KiB (a 4096 x 4096 f32 scan along the last dim), each scanned by the backend's
// f32 add kernel of round 4 (VecScan: 8 segments of 64 scanned through an L1 buffer, fixed up,
// streamed out) or of round 5 (one pass, the running value a register), prefetching `Ahead`
// bytes on (0: none). Round 4's question: why the rows read at half a copy's rate.
constexpr std::size_t kRow = 4096;

__attribute__((target("avx2"))) inline __m256 scan8_shifts(__m256 v) {  // round 4
    const __m256i by1 = _mm256_setr_epi32(0, 0, 1, 2, 3, 4, 5, 6);
    const __m256i by2 = _mm256_setr_epi32(0, 0, 0, 1, 2, 3, 4, 5);
    v = _mm256_blend_ps(v, _mm256_add_ps(_mm256_permutevar8x32_ps(v, by1), v), 0xFE);
    v = _mm256_blend_ps(v, _mm256_add_ps(_mm256_permutevar8x32_ps(v, by2), v), 0xFC);
    return _mm256_blend_ps(v, _mm256_add_ps(_mm256_permute2f128_ps(v, v, 0x08), v), 0xF0);
}
template <int Ahead>
__attribute__((target("avx2"))) void rows_segments(float* d, const float* s, std::size_t n) {
    alignas(64) float buf[512];
    const __m256i last = _mm256_set1_epi32(7);
    for (std::size_t r = 0; r < n; r += kRow) {
        float c = 0;
        for (std::size_t b = r; b < r + kRow; b += 512) {
            if (Ahead)
                for (int i = 0; i < 512; i += 16) __builtin_prefetch(s + b + Ahead / 4 + i);
            __m256 cs[8];
            for (int j = 0; j < 64; j += 8)
                for (int k = 0; k < 8; ++k) {
                    __m256 v = scan8_shifts(_mm256_loadu_ps(s + b + k * 64 + j));
                    if (j) v = _mm256_add_ps(cs[k], v);
                    cs[k] = _mm256_permutevar8x32_ps(v, last);
                    _mm256_store_ps(buf + k * 64 + j, v);
                }
            for (int k = 0; k < 8; ++k) {
                for (int j = 0; j < 64; ++j) buf[k * 64 + j] += c;
                c = buf[k * 64 + 63];
            }
            copy_nt(d + b, buf, 512);
        }
    }
}
// Round 5: in-lane shifts with the identity (-0.0) shifted in, then the low half's total.
__attribute__((target("avx2"))) inline __m256 scan8_chain(__m256 v, __m256 id) {
    __m256i z = _mm256_castps_si256(id);
    v = _mm256_add_ps(_mm256_castsi256_ps(_mm256_alignr_epi8(_mm256_castps_si256(v), z, 12)), v);
    v = _mm256_add_ps(_mm256_castsi256_ps(_mm256_alignr_epi8(_mm256_castps_si256(v), z, 8)), v);
    __m256 low = _mm256_permutevar8x32_ps(v, _mm256_set1_epi32(3));
    return _mm256_add_ps(_mm256_blend_ps(id, low, 0xF0), v);
}
template <int Ahead>
__attribute__((target("avx2"))) void rows_chain(float* d, const float* s, std::size_t n) {
    const __m256 id = _mm256_set1_ps(-0.0f);
    const __m256i top = _mm256_set1_epi32(7);
    for (std::size_t r = 0; r < n; r += kRow) {
        __m256 c = id;
        for (std::size_t i = r; i < r + kRow; i += 16) {
            if (Ahead) __builtin_prefetch(s + i + Ahead / 4);
            __m256 a = scan8_chain(_mm256_loadu_ps(s + i), id);
            __m256 b = scan8_chain(_mm256_loadu_ps(s + i + 8), id);
            __m256 ca = _mm256_add_ps(c, _mm256_permutevar8x32_ps(a, top));
            _mm256_stream_ps(d + i, _mm256_add_ps(c, a));
            _mm256_stream_ps(d + i + 8, _mm256_add_ps(ca, b));
            c = _mm256_add_ps(ca, _mm256_permutevar8x32_ps(b, top));
        }
    }
}
// Round 7: K strided streams, as a strided-lane group sees memory (affine along the last dim:
// lanes are rows of kRow floats, a tile visits each row for T bytes, then the next row): rows
// copied in groups of K, T bytes per row per visit, streaming stores; with Ahead, each visit
// prefetches the row's next T bytes (the backend's prefetch_rows, a tile ahead).
template <int K, int T, bool Ahead>
__attribute__((target("avx2"))) void rows_streams(float* d, const float* s, std::size_t n) {
    constexpr std::size_t kStep = T / 4;
    for (std::size_t g = 0; g + K * kRow <= n; g += K * kRow)
        for (std::size_t t = 0; t < kRow; t += kStep)
            for (int k = 0; k < K; ++k) {
                const float* src = s + g + k * kRow + t;
                if (Ahead && t + kStep < kRow)
                    for (std::size_t b = 0; b < kStep; b += 16) __builtin_prefetch(src + kStep + b);
                copy_nt(d + g + k * kRow + t, src, kStep);
            }
}

// Round 10: a strided-lane group of affine along the last dim, memory moves only (no scan):
// 2 leaves, groups of 128 rows of kRow floats at a row stride of `ss` (inputs) and `ds`
// (outputs) floats, visits of 128 steps (512 B per row). Read: each leaf's tile gathered as
// the 8x8 transposes load it (8 rows x 32 B, the lanes' 8 steps after 8 steps) and the next
// visit's rows prefetched; Write: each leaf's tile scattered as scatter8_f32 stores it (8 rows
// x 64 B with streaming stores, 16 steps at a time), as a wavefront with Skew > 0 (at turn k,
// row c of each 8 writes its 64-byte piece k - c * Skew).
using RowKernel = void (*)(float* dst, std::size_t ds, const float* src, std::size_t ss,
                           std::size_t rows);
template <bool Read, bool Write, int Skew, int kLanes = 128, int kVisit = 128>
__attribute__((target("avx2"))) void rows_group(float* d, std::size_t ds, const float* s,
                                                 std::size_t ss, std::size_t rows) {
    constexpr int kLeaves = 2, kPieces = kVisit / 16;
    // Not zeros: streaming zeros over zeroed pages measured up to 228 GB/s here (some layer below
    // the VM short-cuts them), nonsense for a scan's outputs.
    std::vector<float> tiles(2 * kLeaves * kLanes * kVisit + 16, 1.0f);
    float* tile = tiles.data() + (16 - reinterpret_cast<std::uintptr_t>(tiles.data()) / 4 % 16) % 16;
    std::size_t leaf_rows = rows / kLeaves;
    __m256 sink = _mm256_setzero_ps();
    for (std::size_t g = 0; g + kLanes <= leaf_rows; g += kLanes)
        for (std::size_t t0 = 0; t0 < kRow; t0 += kVisit)
            for (int k = 0; k < kLeaves; ++k) {
                std::size_t row0 = k * leaf_rows + g;
                float* in = tile + k * kLanes * kVisit;
                float* out = tile + (kLeaves + k) * kLanes * kVisit;
                if (Read) {
                    for (int l0 = 0; l0 < kLanes; l0 += 8)
                        for (int c = 0; c < kVisit; c += 8)
                            for (int i = 0; i < 8; ++i) {
                                __m256 v = _mm256_loadu_ps(s + (row0 + l0 + i) * ss + t0 + c);
                                _mm256_store_ps(in + (c * kLanes + l0 * 8 + i * 8) % (kLanes * kVisit), v);
                            }
                    if (t0 + kVisit < kRow)
                        for (int l = 0; l < kLanes; ++l)
                            for (int b = 0; b < kVisit; b += 16)
                                __builtin_prefetch(s + (row0 + l) * ss + t0 + kVisit + b);
                    sink = _mm256_add_ps(sink, _mm256_load_ps(in));
                }
                if (Write)
                    for (int l0 = 0; l0 < kLanes; l0 += 8)
                        for (int turn = 0; turn < kPieces + 7 * Skew; ++turn)
                            for (int c = 0; c < 8; ++c) {
                                int piece = turn - c * Skew;
                                if (piece < 0 || piece >= kPieces) continue;
                                float* q = d + (row0 + l0 + c) * ds + t0 + piece * 16;
                                const float* t = out + l0 * kVisit + piece * 128 + c * 16;
                                _mm256_stream_ps(q, _mm256_load_ps(t));
                                _mm256_stream_ps(q + 8, _mm256_load_ps(t + 8));
                            }
            }
    volatile float keep = _mm256_cvtss_f32(sink);
    (void)keep;
    _mm_sfence();
}
#endif

void glibc_copy(float* d, const float* s, std::size_t n) { std::memcpy(d, s, n * 4); }

// Best of 3 runs of part(p) on `threads` threads, started together. A run lasts from the first
// thread's start to the last one's end, as the threads see them: timed from the caller, a
// caller descheduled after the start barrier (2 vCPUs, 3 threads) timed only the tail of a run.
template <typename Part>
double best_seconds(int threads, Part part) {
    using Clock = std::chrono::steady_clock;
    double best = 1e30;
    for (int it = 0; it < 3; ++it) {
        std::barrier<> start(threads);
        std::vector<Clock::time_point> began(threads), ended(threads);
        std::vector<std::thread> pool;
        for (int p = 0; p < threads; ++p)
            pool.emplace_back([&, p] {
                start.arrive_and_wait();
                began[p] = Clock::now();
                part(p);
                ended[p] = Clock::now();
            });
        for (auto& t : pool) t.join();
        std::chrono::duration<double> took =
            *std::max_element(ended.begin(), ended.end()) - *std::min_element(began.begin(), began.end());
        best = std::min(best, took.count());
    }
    return best;
}

double best_seconds(Kernel k, float* dst, const float* src, std::size_t n, int threads) {
    return best_seconds(threads, [&](int p) {
        // Parts of whole pages (the page-interleaved kernels step by pages).
        std::size_t lo = n * p / threads / 1024 * 1024;
        std::size_t hi = n * (p + 1) / threads / 1024 * 1024;
        k(dst + lo, src + lo, hi - lo);
    });
}

#if defined(__x86_64__)
// `cpu_memprobe MIB THREADS stride`: rows_group at row strides of 16 KiB (4096 floats), 16 KiB
// + 64 B and 16 KiB + 256 B, inputs and outputs apart and together, GB/s of the bytes moved
// (round 10).
int stride_probe(std::size_t n, int threads) {
    std::size_t rows = n / kRow / (256 * threads) * (256 * threads);
    auto* src = static_cast<float*>(std::aligned_alloc(4096, rows * 4160 * 4));
    auto* dst = static_cast<float*>(std::aligned_alloc(4096, rows * 4160 * 4));
    for (std::size_t i = 0; i < rows * 4160; ++i) src[i] = static_cast<float>(i % 7);
    std::memset(dst, 0, rows * 4160 * 4);
    struct Case {
        const char* name;
        RowKernel kernel;
        std::size_t ss, ds;
        int passes;
    };
    const Case cases[] = {
        {"write, 8 rows x 64 B, out 4096", rows_group<false, true, 0>, 4096, 4096, 1},
        {"write, 8 rows x 64 B, out 4112", rows_group<false, true, 0>, 4096, 4112, 1},
        {"write, 8 rows x 64 B, out 4160", rows_group<false, true, 0>, 4096, 4160, 1},
        {"write, wavefront skew 1, out 4096", rows_group<false, true, 1>, 4096, 4096, 1},
        {"write, wavefront skew 1, out 4112", rows_group<false, true, 1>, 4096, 4112, 1},
        {"read, 8 rows x 32 B, in 4096", rows_group<true, false, 0>, 4096, 4096, 1},
        {"read, 8 rows x 32 B, in 4160", rows_group<true, false, 0>, 4160, 4096, 1},
        {"both, in 4096, out 4096", rows_group<true, true, 0>, 4096, 4096, 2},
        {"both, in 4160, out 4096", rows_group<true, true, 0>, 4160, 4096, 2},
        {"both, in 4096, out 4160", rows_group<true, true, 0>, 4096, 4160, 2},
        {"both, in 4160, out 4160", rows_group<true, true, 0>, 4160, 4160, 2},
        {"both, wavefront skew 1, 4096", rows_group<true, true, 1>, 4096, 4096, 2},
    };
    std::printf("%zu rows of %zu floats, %d threads\n", rows, kRow, threads);
    for (const Case& c : cases) {
        double s = best_seconds(threads, [&](int p) {
            std::size_t r0 = rows * p / threads, r1 = rows * (p + 1) / threads;
            c.kernel(dst + r0 * c.ds, c.ds, src + r0 * c.ss, c.ss, r1 - r0);
        });
        std::printf("%-46s %7.2f GB/s\n", c.name, c.passes * rows * kRow * 4.0 / s / 1e9);
        std::memset(dst, 0, rows * 4160 * 4);  // every case writes over the same kind of pages
    }
    std::free(src);
    std::free(dst);
    return 0;
}

// `cpu_memprobe MIB THREADS lanes`: rows_group's reads, writes and both at a 16 KiB row stride
// for 16 to 128 rows per group, visits of 128 to 1024 steps (round 11: how many row streams).
int lanes_probe(std::size_t n, int threads) {
    std::size_t rows = n / kRow / (256 * threads) * (256 * threads);
    auto* src = static_cast<float*>(std::aligned_alloc(4096, rows * kRow * 4));
    auto* dst = static_cast<float*>(std::aligned_alloc(4096, rows * kRow * 4));
    for (std::size_t i = 0; i < rows * kRow; ++i) src[i] = static_cast<float>(i % 7);
    std::memset(dst, 0, rows * kRow * 4);
    struct Case {
        const char* name;
        RowKernel kernel;
        int passes;
    };
    const Case cases[] = {
        {"read, 128 rows x 128 steps", rows_group<true, false, 0, 128, 128>, 1},
        {"read, 64 rows x 256 steps", rows_group<true, false, 0, 64, 256>, 1},
        {"read, 32 rows x 256 steps", rows_group<true, false, 0, 32, 256>, 1},
        {"read, 32 rows x 512 steps", rows_group<true, false, 0, 32, 512>, 1},
        {"read, 16 rows x 256 steps", rows_group<true, false, 0, 16, 256>, 1},
        {"read, 16 rows x 1024 steps", rows_group<true, false, 0, 16, 1024>, 1},
        {"read, 8 rows x 1024 steps", rows_group<true, false, 0, 8, 1024>, 1},
        {"both, 128 rows x 128, skew 1", rows_group<true, true, 1, 128, 128>, 2},
        {"both, 64 rows x 256, skew 1", rows_group<true, true, 1, 64, 256>, 2},
        {"both, 32 rows x 256, skew 1", rows_group<true, true, 1, 32, 256>, 2},
        {"both, 32 rows x 512, skew 1", rows_group<true, true, 1, 32, 512>, 2},
        {"both, 16 rows x 1024, skew 1", rows_group<true, true, 1, 16, 1024>, 2},
    };
    std::printf("%zu rows of %zu floats, %d threads\n", rows, kRow, threads);
    for (const Case& c : cases) {
        double s = best_seconds(threads, [&](int p) {
            std::size_t r0 = rows * p / threads, r1 = rows * (p + 1) / threads;
            c.kernel(dst + r0 * kRow, kRow, src + r0 * kRow, kRow, r1 - r0);
        });
        std::printf("%-46s %7.2f GB/s\n", c.name, c.passes * rows * kRow * 4.0 / s / 1e9);
        std::memset(dst, 0, rows * kRow * 4);
    }
    std::free(src);
    std::free(dst);
    return 0;
}
#endif

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
    if (argc > 3 && std::string(argv[3]) == "stride") return stride_probe(n, threads);
    if (argc > 3 && std::string(argv[3]) == "lanes") return lanes_probe(n, threads);
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
        {"rows, round 4 vector segments, ahead 4 KiB", rows_segments<4096>, 2},
        {"rows, round 5 one chain, no prefetch", rows_chain<0>, 2},
        {"rows, round 5 one chain, ahead 2 KiB", rows_chain<2048>, 2},
        {"rows, round 5 one chain, ahead 4 KiB", rows_chain<4096>, 2},
        {"rows, round 5 one chain, ahead 8 KiB", rows_chain<8192>, 2},
        {"8 row streams, 1 KiB per visit", rows_streams<8, 1024, false>, 2},
        {"32 row streams, 1 KiB per visit", rows_streams<32, 1024, false>, 2},
        {"64 row streams, 1 KiB per visit", rows_streams<64, 1024, false>, 2},
        {"64 row streams, 1 KiB, prefetch next", rows_streams<64, 1024, true>, 2},
        {"128 row streams, 512 B per visit", rows_streams<128, 512, false>, 2},
        {"128 row streams, 512 B, prefetch next", rows_streams<128, 512, true>, 2},
        {"128 row streams, 1 KiB per visit", rows_streams<128, 1024, false>, 2},
        {"256 row streams, 256 B per visit", rows_streams<256, 256, false>, 2},
        {"64 row streams, 4 KiB per visit", rows_streams<64, 4096, false>, 2},
    };
    std::printf("%zu MiB source, %d threads\n", mib, threads);
    for (const Case& c : cases) {
        double s = best_seconds(c.kernel, dst, src, n, threads);
        std::printf("%-46s %7.2f GB/s\n", c.name, c.passes * n * 4.0 / s / 1e9);
    }
    std::free(src);
    std::free(dst);
#else
    std::puts("cpu_memprobe: x86-64 only");
#endif
    return 0;
}
