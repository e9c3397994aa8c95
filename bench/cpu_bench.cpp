// CPU backend throughput against copies in the same run, on Google Benchmark. Each case is a
// benchmark named `CASE/SHAPE/DIM` (CASE: memcpy, copy_stream, sum, sum_generic, affine, affine_h, sum_ordered;
// SHAPE: N or NxM; a copy's SHAPE is the bytes copied), with counters `bytes` (inputs read once + outputs
// written once, per run) and bytes_per_second; the aggregate `best` is the fastest repetition
// (the figure cpu_bench.py reads, from --benchmark_format=json). Warm-up runs are excluded.
// Google Benchmark applies `best` (a min) to the counters too, so that row's bytes_per_second is
// the slowest repetition's rate: cpu_bench.py computes GB/s as `bytes` / the best real_time.
//
//   cpu_bench [--threads N] [--quick] [--dram-copy BYTES] [--cold-bytes BYTES]
//             [--one CASE DIM N[xM]] [--iters K] [benchmark flags]
//
// --dram-copy adds, next to every case, a copy that moves BYTES (read + write): cpu_bench.py
// passes eight times the last-level cache, so that its denominator runs from DRAM on machines
// whose cache holds the largest case (the 480 MiB L3 of the thirtieth session's Xeon).
// --cold-bytes gives each scan copies of its inputs, BYTES in all at least, that its runs take
// in turn (cpu_bench.py passes twice the last-level cache), so that they read DRAM there too.
// --one runs that single case (for profiling); with --iters K it runs exactly K timed runs after
// one warm-up, so callgrind counts divide by K + 1. Other flags go to Google Benchmark
// (--benchmark_filter=REGEX, --benchmark_format=json, ...).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "scanc/backends/cpu.h"
#include "scanc/dsl/expr.h"

using namespace scanc;
using namespace scanc::dsl;

namespace {

struct Options {
    int threads = cpu_num_threads();
    bool quick = false;
    int iters = 0;  // 0: Google Benchmark picks
    std::size_t dram_copy = 0;  // bytes moved by the DRAM-sized copy; 0: none beyond the cases'
    std::size_t cold_bytes = 0;  // a scan's input sets together at least this large (ScanCase)
};

// The scanned combine. `Affine` returns both leaves (a's running product and h), `AffineH` h
// alone, as Mamba does and as the GPU bench's affine program does. `SumGeneric` is a running sum
// written with two ops, x - (0 - y): the backend's one-op paths take single-op combines only, so
// it measures what the generic path (any combine) makes of a sum.
enum class Combine { Sum, SumGeneric, Affine, AffineH };

Combine combine_of(const std::string& name) {
    if (name == "affine") return Combine::Affine;
    if (name == "affine_h") return Combine::AffineH;
    return name == "sum_generic" ? Combine::SumGeneric : Combine::Sum;
}

bool is_affine(Combine c) { return c == Combine::Affine || c == Combine::AffineH; }

ProgramRef program(Combine combine, int rank, int dim) {
    ProgramBuilder pb(is_affine(combine) ? "affine" : "sum");
    Shape shape;
    for (int k = 0; k < rank; ++k) shape.push_back(pb.symbol("S" + std::to_string(k)));
    if (is_affine(combine)) {
        auto f = trace_combine("affine", 2, 0, [](auto& l, auto& r, auto&) {
            return Exprs{l[0] * r[0], r[0] * l[1] + r[1]};
        });
        Expr a = pb.param("a", DType::F32, shape), b = pb.param("b", DType::F32, shape);
        Exprs both = pb.scan(f, {a, b}, dim);
        return combine == Combine::AffineH ? pb.build({both[1]}) : pb.build(both);
    }
    auto f = combine == Combine::Sum
                 ? trace_combine("sum", 1, 0, [](auto& l, auto& r, auto&) { return Exprs{l[0] + r[0]}; })
                 : trace_combine("sum_generic", 1, 0, [](auto& l, auto& r, auto&) {
                       return Exprs{l[0] - (Expr(0.0) - r[0])};
                   });
    return pb.build(pb.scan(f, {pb.param("x", DType::F32, shape)}, dim));
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
    std::string s;
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
    return s;
}

// The compiled scan of the current case and its inputs, in sets that runs take in turn: with
// `cold_bytes` of them or more, a set is read again only after that much other memory, so on a
// machine whose last-level cache would hold one set (the 480 MiB L3 of the thirtieth session's
// Xeon) a run still reads its inputs from DRAM. One case is alive at a time.
struct ScanCase {
    std::string key;
    std::vector<std::vector<Tensor>> inputs;      // per set
    std::vector<std::vector<TensorView>> views;  // per set
    std::unique_ptr<Executable> exe;
    int outputs = 0;
    std::size_t next = 0;  // the set the next run reads

    std::span<const TensorView> take() {
        std::span<const TensorView> v = views[next];
        next = (next + 1) % views.size();
        return v;
    }
};

ScanCase& scan_case(Combine combine, const std::vector<std::int64_t>& shape, int dim, std::size_t cold_bytes) {
    static ScanCase c;
    const bool affine = is_affine(combine);
    std::string key = cat(static_cast<int>(combine), shape_text(shape), "/", dim);
    if (c.key == key) return c;
    c = ScanCase{key, {}, {}, nullptr};
    std::int64_t numel = 1;
    for (std::int64_t n : shape) numel *= n;
    const std::size_t set_bytes = static_cast<std::size_t>(numel) * 4 * (affine ? 2 : 1);
    const std::size_t sets = set_bytes == 0 ? 1 : std::max<std::size_t>(1, (cold_bytes + set_bytes - 1) / set_bytes);
    c.inputs.resize(sets);
    c.views.resize(sets);
    for (std::size_t set = 0; set < sets; ++set)
        for (int i = 0; i < (affine ? 2 : 1); ++i) {
            Tensor t = Tensor::empty(DType::F32, shape);
            auto* p = static_cast<float*>(t.data());
            for (std::int64_t j = 0; j < numel; ++j) p[j] = i == 0 && affine ? 0.999f : 1e-3f * (j % 7);
            c.inputs[set].push_back(t);
            c.views[set].push_back(t.view());
        }
    ProgramRef p = program(combine, static_cast<int>(shape.size()), dim);
    c.outputs = static_cast<int>(p->results.size());
    c.exe = CpuBackend().compile(p);
    return c;
}

void scan_bench(benchmark::State& state, Combine combine, std::vector<std::int64_t> shape, int dim,
                int threads, bool ordered, bool once, std::size_t cold_bytes) {
    ScanCase& c = scan_case(combine, shape, dim, cold_bytes);
    RunOptions o;
    o.num_threads = threads;
    o.ordered = ordered;
    if (once) c.exe->run(c.take(), o);  // warm-up for --iters (first-touch page faults)
    for (auto _ : state) c.exe->run(c.take(), o);
    double bytes = static_cast<double>(c.views[0].size() + c.outputs) * c.inputs[0][0].numel() * 4;
    state.counters["bytes"] = bytes;
    state.SetBytesProcessed(static_cast<std::int64_t>(bytes) * state.iterations());
}

// A copy loop with streaming (non-temporal) stores. glibc's memcpy is not always the fastest
// copy: on the AMD VM of the twentieth session it moved 44 GB/s where such a loop moved 75
// (bench/cpu_memprobe), so a scan measured against memcpy alone looked faster than a copy.
void stream_copy(char* dst, const char* src, std::size_t n) {
    std::size_t i = 0;
#if defined(__x86_64__)
    for (; i + 64 <= n; i += 64)
        for (int k = 0; k < 64; k += 16)
            _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + k),
                             _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + k)));
    _mm_sfence();
#endif
    std::memcpy(dst + i, src + i, n - i);
}

// Multi-threaded copy of `bytes` (split in parts of whole 64-byte lines) by memcpy or by
// stream_copy, the ceiling for a scan. The helper threads live for the whole benchmark and meet
// the caller at a barrier per run, so small copies are not timed with thread start-up.
void copy_bench(benchmark::State& state, std::size_t bytes, int threads, bool streaming) {
    std::vector<char> a(bytes, 1), b(bytes, 2);
    auto start_of = [&](int p) { return p == threads ? bytes : bytes * p / threads / 64 * 64; };
    auto part = [&](int p) {
        std::size_t lo = start_of(p), n = start_of(p + 1) - lo;
        if (streaming) stream_copy(b.data() + lo, a.data() + lo, n);
        else std::memcpy(b.data() + lo, a.data() + lo, n);
    };
    std::barrier<> start(threads), done(threads);
    std::atomic<bool> stop{false};
    std::vector<std::thread> helpers;
    for (int p = 1; p < threads; ++p)
        helpers.emplace_back([&, p] {
            for (start.arrive_and_wait(); !stop; start.arrive_and_wait()) {
                part(p);
                done.arrive_and_wait();
            }
        });
    for (auto _ : state) {
        start.arrive_and_wait();
        part(0);
        done.arrive_and_wait();
        benchmark::DoNotOptimize(b.data());
    }
    stop = true;
    start.arrive_and_wait();
    for (auto& t : helpers) t.join();
    state.counters["bytes"] = 2.0 * static_cast<double>(bytes);
    state.SetBytesProcessed(static_cast<std::int64_t>(2 * bytes) * state.iterations());
}

void configure(benchmark::internal::Benchmark* b, const Options& opt) {
    b->UseRealTime()->Unit(benchmark::kMillisecond);
    if (opt.iters > 0) {
        b->Iterations(opt.iters);  // the scan case runs once more untimed, as its warm-up
        return;
    }
    b->MinWarmUpTime(0.05)->MinTime(opt.quick ? 0.1 : 0.2)->Repetitions(opt.quick ? 3 : 5);
    b->ReportAggregatesOnly(true);
    b->ComputeStatistics("best", [](const std::vector<double>& v) {
        return *std::min_element(v.begin(), v.end());
    });
}

void add_scan(const std::string& name, std::vector<std::int64_t> shape, int dim,
              const Options& opt) {
    const Combine combine = combine_of(name);
    const bool ordered = name.find("_ordered") != std::string::npos;
    auto run = [=](benchmark::State& s) {
        scan_bench(s, combine, shape, dim, opt.threads, ordered, opt.iters > 0, opt.cold_bytes);
    };
    std::string full = name + "/" + shape_text(shape) + "/" + std::to_string(dim);
    configure(benchmark::RegisterBenchmark(full.c_str(), run), opt);
}

// glibc's memcpy and the streaming copy loop of `bytes`; the script takes the faster.
void add_copy(std::size_t bytes, const Options& opt) {
    for (bool streaming : {false, true}) {
        auto run = [=](benchmark::State& s) { copy_bench(s, bytes, opt.threads, streaming); };
        std::string full = (streaming ? "copy_stream/" : "memcpy/") + std::to_string(bytes) + "/0";
        configure(benchmark::RegisterBenchmark(full.c_str(), run), opt);
    }
}

// Each scan right after the copies of its bytes, so that they see the same machine load.
void add_all(const Options& opt) {
    const std::int64_t big = std::int64_t{1} << 26, side = 4096;
    // Each case's f32 arrays (inputs + outputs); its memcpy copies half its bytes moved (a copy
    // reads and writes each byte).
    const std::pair<const char*, int> cases[] = {
        {"sum", 2}, {"sum_generic", 2}, {"affine", 4}, {"affine_h", 3}};
    for (auto [c, arrays] : cases) {
        std::size_t copied = std::size_t{big} * 2 * arrays;
        // glibc copies 512 MiB in a faster mode than 256 MiB: measure that regime next to
        // every case too (the script judges against the fastest DRAM-sized copy of the run).
        if (copied < std::size_t{big} * 8) add_copy(std::size_t{big} * 8, opt);
        if (opt.dram_copy / 2 > copied) add_copy(opt.dram_copy / 2, opt);
        add_copy(copied, opt);
        add_scan(c, {big}, 0, opt);
        add_copy(copied / 4, opt);
        add_scan(c, {side, side}, 1, opt);
        add_scan(c, {side, side}, 0, opt);
    }
    if (opt.quick) return;
    add_copy(std::size_t{big} * 4, opt);
    add_scan("sum_ordered", {big}, 0, opt);
    add_scan("sum_ordered", {side, side}, 1, opt);
    add_scan("sum_ordered", {side, side}, 0, opt);
    for (int k = 10; k <= 26; k += 2) {
        add_copy((std::size_t{1} << k) * 4, opt);
        add_scan("sum", {std::int64_t{1} << k}, 0, opt);
        add_copy((std::size_t{1} << k) * 8, opt);
        add_scan("affine", {std::int64_t{1} << k}, 0, opt);
    }
}

}  // namespace

int main(int argc, char** argv) {
    Options opt;
    std::vector<char*> rest{argv[0]};
    std::vector<std::string> one;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) opt.threads = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--quick")) opt.quick = true;
        else if (!std::strcmp(argv[i], "--iters") && i + 1 < argc) opt.iters = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--dram-copy") && i + 1 < argc)
            opt.dram_copy = std::strtoull(argv[++i], nullptr, 10);
        else if (!std::strcmp(argv[i], "--cold-bytes") && i + 1 < argc)
            opt.cold_bytes = std::strtoull(argv[++i], nullptr, 10);
        else if (!std::strcmp(argv[i], "--one") && i + 3 < argc)
            one = {argv[i + 1], argv[i + 2], argv[i + 3]}, i += 3;
        else rest.push_back(argv[i]);
    }
    if (!one.empty()) {
        std::vector<std::int64_t> shape;
        for (const char* p = one[2].c_str(); *p;) {
            char* end = nullptr;
            shape.push_back(std::strtoll(p, &end, 10));
            p = *end == 'x' ? end + 1 : end;
            if (end == p && *p) break;
        }
        add_scan(one[0], shape, std::atoi(one[1].c_str()), opt);
    } else {
        add_all(opt);
    }
    int n = static_cast<int>(rest.size());
    benchmark::Initialize(&n, rest.data());
    if (benchmark::ReportUnrecognizedArguments(n, rest.data())) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
