// The CUDA backend's benchmark (issue 5's targets), f32 on one GPU, in one run:
//   - the device-to-device copy bandwidth (the ceiling), measured here;
//   - scanc on each case, inputs and outputs on the device, as GB/s (inputs read once + outputs
//     written once) and as a ratio to the copy;
//   - CUB (InclusiveSum, a custom max, a float2 affine) on the 1-D cases;
//   - a new program's compile and first run (fresh cache), and with --first-launch, the time a
//     new process needs to its first result (run it twice: cold, then with the disk cache warm).
// Prints a markdown table; `gpu_bench OUT.md` also writes it there. `gpu_bench --sweep T...`
// times and checks a few cases under each tuning T (see sweep below); `gpu_bench --sizes F.csv`
// times each case from 4096 to 2^28 elements for the plot (size_sweep below).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <sys/resource.h>

#include "gpu_timing.cuh"
#include "scanc/backends/cuda.h"
#include "scanc/dsl/expr.h"
#include "scanc/text/parser.h"

double cub_sum(const float* in, float* out, long long n, cudaStream_t stream);
double cub_max(const float* in, float* out, long long n, cudaStream_t stream);
double cub_affine(const float2* in, float2* out, long long n, cudaStream_t stream);

namespace {

using namespace scanc;
using dsl::Expr;
using dsl::Exprs;
using Clock = std::chrono::steady_clock;

// CPU seconds this process has used (user + system): a compile that takes longer in wall time
// than in CPU time waited on something (disk, another process), not on NVRTC's own work.
double cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// The machine's 1-minute load average: compiles read slow while other work holds the CPUs.
double load_average() {
    double load = -1;
    if (FILE* f = std::fopen("/proc/loadavg", "r")) {
        if (std::fscanf(f, "%lf", &load) != 1) load = -1;
        std::fclose(f);
    }
    return load;
}

double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

__global__ void fill_uniform(float* p, long long n, unsigned seed, float lo, float hi) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        unsigned long long h = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;
        h ^= h >> 31; h *= 0xBF58476D1CE4E5B9ull; h ^= h >> 27;
        p[i] = lo + (hi - lo) * (float)(h >> 40) * (1.0f / 16777216.0f);
    }
}

float* device_random(long long n, unsigned seed, float lo, float hi) {
    float* p = nullptr;
    BENCH_CHECK(cudaMalloc(&p, n * sizeof(float)));
    fill_uniform<<<1024, 256>>>(p, n, seed, lo, hi);
    BENCH_CHECK(cudaGetLastError());
    return p;
}

CombineRef sum_combine() {
    return dsl::trace_combine("add", 1, 0, [](const Exprs& l, const Exprs& r, const Exprs&) { return Exprs{l[0] + r[0]}; });
}
CombineRef max_combine() {
    return dsl::trace_combine("max", 1, 0, [](const Exprs& l, const Exprs& r, const Exprs&) { return Exprs{dsl::max(l[0], r[0])}; });
}
CombineRef lse_combine() {  // log-sum-exp (logcumsumexp): two transcendentals a combine
    return dsl::trace_combine("lse", 1, 0, [](const Exprs& l, const Exprs& r, const Exprs&) { return Exprs{dsl::logaddexp(l[0], r[0])}; });
}
// The same, spelled through CUDA's expf and log1pf, as logaddexp itself ran until the
// fifty-fourth session: the cost of that formula beside scanc's own f32 logaddexp, one run.
CombineRef lse_libm_combine() {
    return dsl::trace_combine("lse_libm", 1, 0, [](const Exprs& l, const Exprs& r, const Exprs&) {
        return Exprs{dsl::max(l[0], r[0]) + dsl::log1p(dsl::exp(-dsl::abs(l[0] - r[0])))};
    });
}
// Online softmax's running (max, sum of exp): two exponentials a combine over two leaves, the
// heavy combine of an eight-byte state.
CombineRef softmax_combine() {
    return dsl::trace_combine("softmax", 2, 0, [](const Exprs& l, const Exprs& r, const Exprs&) {
        Expr m = dsl::max(l[0], r[0]);
        return Exprs{m, l[1] * dsl::exp(l[0] - m) + r[1] * dsl::exp(r[0] - m)};
    });
}
CombineRef affine_combine() {
    return dsl::trace_combine("affine", 2, 0, [](const Exprs& l, const Exprs& r, const Exprs&) {
        return Exprs{l[0] * r[0], r[0] * l[1] + r[1]};
    });
}

// The main job's program (scripts/main.sh): examples/mamba.scan, the affine scan along dim 1 of
// (B, L, D) with its prologue a = exp(dt A), b = dt x fused into the scan kernel; returns h.
ProgramRef mamba_program() { return load_module("examples/mamba.scan").program("mamba"); }

// A program scanning `leaves` f32 params of rank `rank` along `dim`, returning the last leaf.
ProgramRef scan_program(const CombineRef& combine, int rank, int dim) {
    dsl::ProgramBuilder b("bench");
    Shape shape;
    for (int i = 0; i < rank; ++i) shape.push_back(b.symbol(std::string(1, static_cast<char>('A' + i))));
    Exprs leaves;
    for (int i = 0; i < combine->num_leaves(); ++i) leaves.push_back(b.param(cat("x", i), DType::F32, shape));
    Exprs out = b.scan(combine, leaves, dim);
    return b.build({out.back()});
}

TensorView device_view(float* p, std::vector<std::int64_t> sizes) {
    TensorView v;
    v.data = p;
    v.dtype = DType::F32;
    v.strides = contiguous_strides(sizes);
    v.sizes = std::move(sizes);
    v.device = {DeviceKind::CUDA, 0};
    return v;
}

// CUB's scan of the same 1-D leaves (a float2 affine for two leaves, max or sum for one):
// seconds, and the bytes it moves in `bytes`.
double cub_on(const Combine& combine, const std::vector<float*>& leaves, long long n, cudaStream_t s,
              double& bytes) {
    float* out = nullptr;
    BENCH_CHECK(cudaMalloc(&out, n * 8));
    double sec;
    if (combine.num_leaves() == 2) {
        float2* pairs = nullptr;
        BENCH_CHECK(cudaMalloc(&pairs, n * 8));
        BENCH_CHECK(cudaMemcpy2D(pairs, 8, leaves[0], 4, 4, n, cudaMemcpyDeviceToDevice));
        BENCH_CHECK(cudaMemcpy2D(reinterpret_cast<char*>(pairs) + 4, 8, leaves[1], 4, 4, n, cudaMemcpyDeviceToDevice));
        sec = cub_affine(pairs, reinterpret_cast<float2*>(out), n, s);
        bytes = 16.0 * n;
        cudaFree(pairs);
    } else {
        sec = combine.name == "max" ? cub_max(leaves[0], out, n, s) : cub_sum(leaves[0], out, n, s);
        bytes = 8.0 * n;
    }
    cudaFree(out);
    return sec;
}

struct Row {
    std::string name;
    double bytes, seconds, cub_seconds = 0, cub_bytes = 0, target;
    double same_copy_seconds = 0;  // a device-to-device copy that moves the same bytes
};

double copy_seconds(long long n, cudaStream_t s) {
    float *a = device_random(n, 1, -1, 1), *b = nullptr;
    BENCH_CHECK(cudaMalloc(&b, n * sizeof(float)));
    const double t = device_copy_seconds(b, a, n * sizeof(float), s);
    cudaFree(a);
    cudaFree(b);
    return t;
}

// The latest whole compile's wall time and its slowest kernel's.
std::string slowest_kernel_note(const CudaCacheStats& s) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "; whole compile %.0f ms, slowest kernel %s %.0f ms (%.0f ms of CPU)",
                  s.last_compile_seconds * 1e3, s.slowest_kernel.c_str(), s.slowest_kernel_seconds * 1e3,
                  s.slowest_kernel_cpu_seconds * 1e3);
    return buf;
}

// A program's compile and first run on `in`, timed to its first result (wall, and this
// process's CPU seconds): a program compiles at its first run, the kernels that run launches
// first. Then the wait for the program's other kernels, which compile in the background, and
// the cache's note on the whole compile (none when the program came from a cache).
struct TimedFirstRun {
    double seconds = 0, cpu = 0, whole = 0;
    std::string note;
};
TimedFirstRun timed_first_run(const ProgramRef& program, const std::vector<TensorView>& in) {
    const int compiles = cuda_cache_stats().compiles;
    TimedFirstRun t;
    auto t0 = Clock::now();
    double cpu0 = cpu_seconds();
    auto exe = CudaBackend().compile(program);
    exe->run(in);
    BENCH_CHECK(cudaDeviceSynchronize());
    t.seconds = seconds_since(t0), t.cpu = cpu_seconds() - cpu0;
    cuda_finish_compiles();
    CudaCacheStats stats = cuda_cache_stats();
    if (stats.compiles > compiles) t.whole = stats.last_compile_seconds, t.note = slowest_kernel_note(stats);
    return t;
}

// time_median of a program's runs, after its first run and the background compiles it began:
// the timed runs have the CPU to themselves.
double time_runs(Executable& exe, const std::vector<TensorView>& in, const RunOptions& opts, cudaStream_t s,
                 int reps = 15, int warmup = 3) {
    exe.run(in, opts);
    BENCH_CHECK(cudaStreamSynchronize(s));
    cuda_finish_compiles();
    return time_median([&](cudaStream_t) { exe.run(in, opts); }, s, reps, warmup);
}

// A new process's first compile and launch, of one of four programs on a small input, each
// of whose first runs launches one kernel: `affine` over (3, 1000, 7) along dim 1 and `sum`
// over (1000, 7) along dim 0 (the cols kernel), `affine-1d` and `sum-1d` over 2^20 (the vector
// look-back rows kernel, the slowest to compile).
int first_launch(const std::string& which) {
    const bool sum = which.rfind("sum", 0) == 0, one_d = which.find("-1d") != std::string::npos;
    auto t0 = Clock::now();
    bool ok = cuda_available();  // loads libcuda, cuInit
    BENCH_CHECK(cudaFree(nullptr));  // creates the primary context
    double init = seconds_since(t0);
    const std::vector<std::int64_t> shape = one_d ? std::vector<std::int64_t>{1 << 20}
                                          : sum   ? std::vector<std::int64_t>{1000, 7}
                                                  : std::vector<std::int64_t>{3, 1000, 7};
    long long n = 1;
    for (auto x : shape) n *= x;
    std::vector<TensorView> in;
    if (!sum) in.push_back(device_view(device_random(n, 1, 0.5f, 1), shape));
    in.push_back(device_view(device_random(n, 2, -1, 1), shape));
    const int rank = static_cast<int>(shape.size()), dim = one_d ? 0 : sum ? 0 : 1;
    TimedFirstRun first =
        timed_first_run(scan_program(sum ? sum_combine() : affine_combine(), rank, dim), in);
    auto stats = cuda_cache_stats();
    std::printf("first-launch (%s): gpu=%d driver+context %.1f ms, compile-or-load + first run %.1f ms "
                "(%.1f ms of CPU; compiles %d, quick builds %d, disk hits %d; load %.1f)%s\n",
                which.c_str(), ok, init * 1e3, first.seconds * 1e3, first.cpu * 1e3, stats.compiles,
                stats.quick_builds, stats.disk_hits, load_average(), first.note.c_str());
    return 0;
}

// The scan of `combine` ("add", "max", "affine", "softmax", else log-sum-exp) in f64 on the
// host: its last leaf.
std::vector<float> host_scan(const std::string& combine, const std::vector<std::vector<float>>& leaves, long long outer,
                             long long len, long long inner) {
    std::vector<float> out(leaves[0].size());
    for (long long o = 0; o < outer; ++o)
        for (long long i = 0; i < inner; ++i) {
            double h = 0, m = 0;  // m: softmax's running maximum
            for (long long t = 0; t < len; ++t) {
                long long at = (o * len + t) * inner + i;
                const double x = leaves.back()[at];
                if (combine == "affine") h = leaves[0][at] * h + x;
                else if (combine == "softmax") {
                    const double xm = leaves[0][at], top = t == 0 ? xm : std::max(m, xm);
                    h = t == 0 ? x : h * std::exp(m - top) + x * std::exp(xm - top);
                    m = top;
                }
                else if (combine == "add") h += x;
                else if (t == 0) h = x;
                else if (combine == "max") h = std::max(h, x);
                else h = std::max(h, x) + std::log1p(std::exp(-std::fabs(h - x)));  // lse
                out[at] = static_cast<float>(h);
            }
        }
    return out;
}

__global__ void round_to_integers(float* p, long long n) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride) p[i] = rintf(p[i]);
}

std::vector<float> to_host(const float* p, long long n) {
    std::vector<float> h(n);
    BENCH_CHECK(cudaMemcpy(h.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost));
    return h;
}

// Tuning sweep: % of copy of each case under each SCANC_CUDA_TUNING (`table` = the built-in
// table), each result checked against a host scan: sums of integers in {-1, 0, 1} exactly (every
// partial sum is an integer far below 2^24), affine within 1e-3 relative. A wrong result prints
// WRONG in place of the figure. SWEEP_ONLY=TEXT[|TEXT...] keeps the cases whose name contains
// one of the TEXTs (one case under a profiler).
int sweep(int n_tunings, char** tunings, double copy_bw, const RunOptions& opts, cudaStream_t s) {
    struct C {
        std::string name;
        CombineRef c;
        std::vector<std::int64_t> shape;
        int dim;
        bool mamba = false;  // examples/mamba.scan over shape (B, L, D): its prologue fused
    } cases[] = {{"sum rows", sum_combine(), {8192, 4096}, 1},
                 {"sum 65536 rows of 4096", sum_combine(), {65536, 4096}, 1},  // the size plot's 2^28
                 {"sum 1-D 2^28", sum_combine(), {1ll << 28}, 0},
                 {"sum dim 0", sum_combine(), {4096, 8192}, 0},
                 {"sum 16x2^22", sum_combine(), {16, 1 << 22}, 1},
                 {"affine 16x2^22", affine_combine(), {16, 1 << 22}, 1},
                 {"sum 4x2^24", sum_combine(), {4, 1 << 24}, 1},
                 // 16x2^22's bytes as one row, and as rows 16 KB longer (not a power of two apart)
                 {"sum 1-D 2^26", sum_combine(), {1ll << 26}, 0},
                 {"sum 16x(2^22+4096)", sum_combine(), {16, (1 << 22) + 4096}, 1},
                 {"sum 1-D 2^20 (us)", sum_combine(), {1 << 20}, 0},
                 {"affine rows", affine_combine(), {8192, 4096}, 1},
                 {"affine (2,4096,1024) d1", affine_combine(), {2, 4096, 1024}, 1},
                 {"affine 1-D", affine_combine(), {1ll << 28}, 0},
                 {"sum 2^18 rows of 128", sum_combine(), {1 << 18, 128}, 1},
                 {"sum 2^21 rows of 16", sum_combine(), {1 << 21, 16}, 1},
                 {"affine 2^16 rows of 500", affine_combine(), {1 << 16, 500}, 1},
                 {"sum 2^17 rows of 600", sum_combine(), {1 << 17, 600}, 1},
                 {"sum 2^16 rows of 1000", sum_combine(), {1 << 16, 1000}, 1},
                 {"sum 2^15 rows of 2048", sum_combine(), {1 << 15, 2048}, 1},
                 {"affine 2^15 rows of 2048", affine_combine(), {1 << 15, 2048}, 1},
                 {"sum 2048x2^15", sum_combine(), {2048, 1 << 15}, 1},
                 {"sum dim 0 4096x8200", sum_combine(), {4096, 8200}, 0},  // rows not 2^k bytes apart
                 {"affine 256x2^20", affine_combine(), {256, 1 << 20}, 1},
                 // cols scans at other line counts (lines of 16 columns: 128 to 2048; 32 of 32 columns)
                 {"cols sum 16384x2048", sum_combine(), {16384, 2048}, 0},
                 {"cols sum 65536x512", sum_combine(), {65536, 512}, 0},
                 {"cols sum (64,4096,64)", sum_combine(), {64, 4096, 64}, 1},
                 {"cols affine (4,2048,1024)", affine_combine(), {4, 2048, 1024}, 1},
                 {"cols affine (1,4096,3000)", affine_combine(), {1, 4096, 3000}, 1},
                 {"cols affine 65536x512", affine_combine(), {65536, 512}, 0},
                 {"cols affine dim 0", affine_combine(), {4096, 8192}, 0},  // the walk probe's best case
                 {"cols affine (4,4096,256)", affine_combine(), {4, 4096, 256}, 1},  // the main job's shape
                 {"mamba (4,4096,256)", affine_combine(), {4, 4096, 256}, 1, true},  // the main job
                 {"mamba (8,4096,1024)", affine_combine(), {8, 4096, 1024}, 1, true},
                 // the same program with D = 1: its prologue in the rows kernels (short and long rows)
                 {"mamba rows (8192,4096,1)", affine_combine(), {8192, 4096, 1}, 1, true},
                 {"mamba rows (64,2^20,1)", affine_combine(), {64, 1 << 20, 1}, 1, true},
                 // combines of longer latency than an add: cummax and logcumsumexp
                 {"max 1-D", max_combine(), {1ll << 28}, 0},
                 {"max rows", max_combine(), {8192, 4096}, 1},
                 {"max dim 0", max_combine(), {4096, 8192}, 0},
                 {"lse 1-D", lse_combine(), {1ll << 28}, 0},
                 {"lse rows", lse_combine(), {8192, 4096}, 1},
                 {"lse dim 0", lse_combine(), {4096, 8192}, 0},
                 {"lse_libm 1-D", lse_libm_combine(), {1ll << 28}, 0},
                 {"lse_libm rows", lse_libm_combine(), {8192, 4096}, 1},
                 {"lse_libm dim 0", lse_libm_combine(), {4096, 8192}, 0},
                 {"softmax 1-D", softmax_combine(), {1ll << 28}, 0},
                 {"softmax rows", softmax_combine(), {8192, 4096}, 1},
                 {"softmax dim 0", softmax_combine(), {4096, 8192}, 0}};
    std::vector<std::string> only;  // SWEEP_ONLY's alternatives
    if (const char* env = std::getenv("SWEEP_ONLY"))
        for (std::string text(env); !text.empty();) {
            const auto bar = text.find('|');
            only.push_back(text.substr(0, bar));
            text = bar == std::string::npos ? "" : text.substr(bar + 1);
        }
    std::vector<std::vector<std::string>> cells(n_tunings);
    std::vector<std::string> names;  // the cases run, in order
    for (auto& c : cases) {
        if (!only.empty() && std::none_of(only.begin(), only.end(), [&](auto& o) { return c.name.find(o) != std::string::npos; }))
            continue;
        names.push_back(c.name);
        long long n = 1, outer = 1, inner = 1;
        for (std::size_t j = 0; j < c.shape.size(); ++j) {
            n *= c.shape[j];
            if (static_cast<int>(j) < c.dim) outer *= c.shape[j];
            if (static_cast<int>(j) > c.dim) inner *= c.shape[j];
        }
        int leaves = c.c->num_leaves();
        std::vector<float*> bufs;
        std::vector<TensorView> in;
        std::vector<std::vector<float>> host;
        std::vector<float> ref;
        double bytes = 4.0 * n * (leaves + 1);
        if (c.mamba) {  // x, dt in [0, 1], A in [-1, -0.1]: leaves (exp(dt A), dt x), as bench_mamba
            const std::int64_t D = c.shape[2];
            bufs = {device_random(n, 21, -1, 1), device_random(n, 22, 0, 1), device_random(D, 23, -1, -0.1f)};
            in = {device_view(bufs[0], c.shape), device_view(bufs[1], c.shape), device_view(bufs[2], {D})};
            std::vector<float> x = to_host(bufs[0], n), dt = to_host(bufs[1], n), A = to_host(bufs[2], D);
            std::vector<float> a(n);
            for (long long j = 0; j < n; ++j) a[j] = std::exp(dt[j] * A[j % D]), x[j] *= dt[j];
            ref = host_scan("affine", {a, x}, outer, c.shape[c.dim], inner);
            bytes = 4.0 * (3 * n + D);
        } else {
            for (int l = 0; l < leaves; ++l) {
                bufs.push_back(device_random(n, 5 + l, l == 0 && leaves == 2 ? 0.5f : -1.0f, 1.0f));
                if (leaves == 1) round_to_integers<<<1024, 256>>>(bufs.back(), n);
                in.push_back(device_view(bufs.back(), c.shape));
                host.push_back(to_host(bufs.back(), n));
            }
            ref = host_scan(c.c->name, host, outer, c.shape[c.dim], inner);
        }
        const bool exact = c.c->name == "add" || c.c->name == "max";  // integers in {-1, 0, 1}
        for (int i = 0; i < n_tunings; ++i) {
            if (std::string(tunings[i]) == "table") unsetenv("SCANC_CUDA_TUNING");
            else setenv("SCANC_CUDA_TUNING", tunings[i], 1);
            std::string cell;
            try {
                auto exe = CudaBackend().compile(c.mamba ? mamba_program() : scan_program(c.c, static_cast<int>(c.shape.size()), c.dim));
                double sec = time_runs(*exe, in, opts, s, 9, 2);
                std::vector<Tensor> out = exe->run(in, opts);
                BENCH_CHECK(cudaStreamSynchronize(s));
                std::vector<float> got = to_host(static_cast<const float*>(out[0].data()), n);
                long long bad = 0;
                for (long long j = 0; j < n; ++j) {
                    float tol = exact ? 0.0f : 1e-3f * (1 + std::fabs(ref[j]));
                    bad += !(std::fabs(got[j] - ref[j]) <= tol);
                }
                char buf[64];
                if (bad) std::snprintf(buf, sizeof buf, "WRONG (%lld)", bad);
                else if (n == (1 << 20)) std::snprintf(buf, sizeof buf, "%.1f", sec * 1e6);
                else std::snprintf(buf, sizeof buf, "%.1f%%", 100 * bytes / sec / copy_bw);
                cell = buf;
            } catch (const std::exception& e) {
                cell = std::string("error: ") + e.what();
            }
            std::printf("%-26s %-28s %s\n", c.name.c_str(), tunings[i], cell.c_str());
            std::fflush(stdout);
            cells[i].push_back(cell);
        }
        for (float* p : bufs) cudaFree(p);
    }
    unsetenv("SCANC_CUDA_TUNING");
    std::printf("\n| SCANC_CUDA_TUNING |");
    for (auto& name : names) std::printf(" %s |", name.c_str());
    std::printf("\n|---|");
    for (std::size_t j = 0; j < names.size(); ++j) std::printf("---|");
    for (int i = 0; i < n_tunings; ++i) {
        std::printf("\n| %s |", tunings[i]);
        for (auto& cell : cells[i]) std::printf(" %s |", cell.c_str());
    }
    std::printf("\n");
    return 0;
}

// Size sweep for the plot (bench/gpu_plot.py): each case and a device-to-device copy of the
// same bytes at 4^k elements, CUB beside the 1-D cases; CSV rows `case,elements,bytes,seconds`.
int size_sweep(const char* path, const RunOptions& opts, cudaStream_t s) {
    FILE* f = std::fopen(path, "w");
    if (!f) return 1;
    std::fprintf(f, "case,elements,bytes,seconds\n");
    auto row = [&](const char* name, long long n, double bytes, double sec) {
        std::fprintf(f, "%s,%lld,%.0f,%.9g\n", name, n, bytes, sec);
        std::printf("%-22s %11lld %9.1f us %6.0f GB/s\n", name, n, sec * 1e6, bytes / sec / 1e9);
        std::fflush(stdout);
    };
    struct C {
        const char* name;
        CombineRef c;
        long long inner;  // row length of the 2-D cases (0: 1-D)
        int dim;
    } cases[] = {{"scanc sum 1-D", sum_combine(), 0, 0},
                 {"scanc affine 1-D", affine_combine(), 0, 0},
                 {"scanc sum rows of 4096", sum_combine(), 4096, 1},
                 {"scanc sum dim 0 x1024", sum_combine(), 1024, 0}};
    for (long long n = 1 << 12; n <= (1ll << 28); n *= 4) {
        row("copy", n, 8.0 * n, copy_seconds(n, s));
        for (auto& c : cases) {
            std::vector<std::int64_t> shape = c.inner ? std::vector<std::int64_t>{n / c.inner, c.inner}
                                                      : std::vector<std::int64_t>{n};
            auto exe = CudaBackend().compile(scan_program(c.c, static_cast<int>(shape.size()), c.dim));
            const int leaves = c.c->num_leaves();
            std::vector<float*> bufs;
            std::vector<TensorView> in;
            for (int i = 0; i < leaves; ++i) {
                bufs.push_back(device_random(n, 17 + i, leaves == 2 && i == 0 ? 0.5f : -1.0f, 1.0f));
                in.push_back(device_view(bufs.back(), shape));
            }
            row(c.name, n, 4.0 * n * (leaves + 1), time_runs(*exe, in, opts, s));
            if (!c.inner) {  // CUB on the same 1-D data
                double bytes = 0, sec = cub_on(*c.c, bufs, n, s, bytes);
                row(leaves == 2 ? "CUB affine 1-D (float2)" : "CUB sum 1-D", n, bytes, sec);
            }
            for (float* p : bufs) cudaFree(p);
        }
    }
    std::fclose(f);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc > 1 && std::string(argv[1]) == "--first-launch")
        return first_launch(argc > 2 ? argv[2] : "affine");
    if (!cuda_available()) {
        std::printf("no GPU: %s\n", cuda_unavailable_reason().c_str());
        return 1;
    }
    cudaStream_t s;
    BENCH_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    RunOptions opts;
    opts.stream = s;
    // The process's first compile (it loads NVRTC) and run, before any device memory is held but
    // the inputs; a second program's after the copy below has used 2 GB. Each first run
    // launches one kernel (cols; vector rows), which compiles ahead of the program's others.
    double load = load_average();
    float* cols_in = device_random(4096ll * 8192, 5, -1, 1);
    const TimedFirstRun first = timed_first_run(scan_program(sum_combine(), 2, 0), {device_view(cols_in, {4096, 8192})});
    cudaFree(cols_in);
    const long long big = 1ll << 28;
    double copy = copy_seconds(big, s);
    double copy_bw = 2.0 * big * 4 / copy;
    std::printf("device-to-device copy: %.0f GB/s (2^28 f32, read + write) on %s\n", copy_bw / 1e9, device_name());

    float* rows_in = device_random(1 << 20, 6, -1, 1);
    const TimedFirstRun second = timed_first_run(scan_program(sum_combine(), 1, 0), {device_view(rows_in, {1 << 20})});
    cudaFree(rows_in);
    std::printf("new programs with a fresh cache, compile + first run: the process's first (sum 4096x8192 dim 0, "
                "loads NVRTC) %.3f s (%.3f s of CPU%s), a second (sum 1-D 2^20) %.3f s (%.3f s of CPU%s); load "
                "average %.1f before, %.1f now\n", first.seconds, first.cpu, first.note.c_str(), second.seconds,
                second.cpu, second.note.c_str(), load, load_average());

    std::vector<Row> rows;
    // Times `exe` on `in` (device buffers `bufs`, freed after) as a row of `bytes`, beside a copy
    // of the same bytes (read + write): what a kernel of this size can reach, launch, ramp-up and
    // drain included. The targets divide by the 2^28 copy.
    auto time_row = [&](Row r, Executable& exe, const std::vector<TensorView>& in, std::vector<float*> bufs) {
        r.seconds = time_runs(exe, in, opts, s);
        for (float* p : bufs) cudaFree(p);
        r.same_copy_seconds = copy_seconds(static_cast<long long>(r.bytes / 8), s);
        rows.push_back(r);
        std::printf("%-34s %8.1f us  %6.0f GB/s  %5.1f%% of copy, %5.1f%% of a same-bytes copy\n", r.name.c_str(),
                    r.seconds * 1e6, r.bytes / r.seconds / 1e9, 100 * r.bytes / r.seconds / copy_bw,
                    100 * r.same_copy_seconds / r.seconds);
        std::fflush(stdout);
    };
    auto bench = [&](const std::string& name, const CombineRef& combine, std::vector<std::int64_t> shape, int dim,
                     double target) {
        long long n = 1;
        for (auto x : shape) n *= x;
        auto exe = CudaBackend().compile(scan_program(combine, static_cast<int>(shape.size()), dim));
        std::vector<float*> bufs;
        std::vector<TensorView> in;
        for (int i = 0; i < combine->num_leaves(); ++i) {
            bool coefficient = combine->num_leaves() == 2 && i == 0;
            bufs.push_back(device_random(n, 17 + i, coefficient ? 0.5f : -1.0f, 1.0f));
            in.push_back(device_view(bufs.back(), shape));
        }
        Row r{name, 4.0 * n * (combine->num_leaves() + 1), 0, 0, 0, target};
        if (shape.size() == 1) r.cub_seconds = cub_on(*combine, bufs, n, s, r.cub_bytes);  // CUB, same data
        time_row(r, *exe, in, bufs);
    };
    // The main job: x, dt in, h out; A (D floats) negative, dt in [0, 1].
    auto bench_mamba = [&](const std::string& name, std::int64_t B, std::int64_t L, std::int64_t D) {
        const long long n = B * L * D;
        auto exe = CudaBackend().compile(mamba_program());
        std::vector<float*> bufs = {device_random(n, 21, -1, 1), device_random(n, 22, 0, 1), device_random(D, 23, -1, -0.1f)};
        std::vector<TensorView> in = {device_view(bufs[0], {B, L, D}), device_view(bufs[1], {B, L, D}),
                                      device_view(bufs[2], {D})};
        time_row(Row{name, 4.0 * (3 * n + D), 0, 0, 0, 0}, *exe, in, bufs);
    };
    if (argc > 1 && std::string(argv[1]) == "--sweep") return sweep(argc - 2, argv + 2, copy_bw, opts, s);
    if (argc > 2 && std::string(argv[1]) == "--sizes") return size_sweep(argv[2], opts, s);
    bench("sum 1-D 2^28", sum_combine(), {big}, 0, 0.90);
    bench("sum rows 8192x4096 dim 1", sum_combine(), {8192, 4096}, 1, 0.90);
    bench("sum 4096x8192 dim 0", sum_combine(), {4096, 8192}, 0, 0.90);
    bench("sum 16x2^22 dim 1", sum_combine(), {16, 1 << 22}, 1, 0.90);
    bench("affine rows 8192x4096 dim 1", affine_combine(), {8192, 4096}, 1, 0.85);
    bench("affine (2,4096,1024) dim 1", affine_combine(), {2, 4096, 1024}, 1, 0.85);
    bench("affine 1-D 2^28", affine_combine(), {big}, 0, 0.85);
    bench("max 1-D 2^28", max_combine(), {big}, 0, 0);
    bench("sum 1-D 2^20", sum_combine(), {1 << 20}, 0, 0);
    bench("sum 2^18 rows of 128", sum_combine(), {1 << 18, 128}, 1, 0);
    bench_mamba("mamba (4,4096,256) (main job)", 4, 4096, 256);
    bench_mamba("mamba (8,4096,1024)", 8, 4096, 1024);

    std::string table = "| case | scanc us | scanc GB/s | % of copy | target | % of a same-bytes copy | CUB GB/s | "
                        "CUB % of copy |\n|---|---|---|---|---|---|---|---|\n";
    for (auto& r : rows) {
        double bw = r.bytes / r.seconds;
        char line[512];
        std::snprintf(line, sizeof line, "| %s | %.1f | %.0f | %.1f%% | %s | %.1f%% | %s | %s |\n", r.name.c_str(),
                      r.seconds * 1e6, bw / 1e9, 100 * bw / copy_bw,
                      r.target > 0 ? (std::string(">= ") + std::to_string(int(r.target * 100)) + "%").c_str() : "-",
                      100 * r.same_copy_seconds / r.seconds,
                      r.cub_seconds > 0 ? std::to_string(int(r.cub_bytes / r.cub_seconds / 1e9)).c_str() : "-",
                      r.cub_seconds > 0 ? (std::to_string(int(100 * r.cub_bytes / r.cub_seconds / copy_bw)) + "%").c_str() : "-");
        table += line;
    }
    char head[256];
    std::snprintf(head, sizeof head,
                  "copy ceiling %.0f GB/s; a new program's compile + first run %.3f s (whole compile %.3f s), a "
                  "second program's %.3f s (%.3f s)\n\n",
                  copy_bw / 1e9, first.seconds, first.whole, second.seconds, second.whole);
    std::printf("\n%s%s", head, table.c_str());
    if (argc > 1 && argv[1][0] != '-') {
        if (FILE* f = std::fopen(argv[1], "w")) {
            std::fprintf(f, "%s%s", head, table.c_str());
            std::fclose(f);
        }
    }
    return 0;
}
