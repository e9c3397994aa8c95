// CPU backend throughput, measured against memcpy in the same run. Prints one JSON object per
// line: {"case", "shape", "dim", "bytes", "seconds", "gbps"}; cpu_bench.py adds the peers
// (numpy, torch), the table and the plot.
//
//   cpu_bench [--threads N] [--quick] [--one sum|affine[_ordered] DIM N[xM]]
//
// Bytes = inputs read once + outputs written once. Each figure is the best of several runs
// after a warm-up (first-touch page faults excluded).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "scanc/backends/cpu.h"
#include "scanc/dsl/expr.h"

using namespace scanc;
using namespace scanc::dsl;

namespace {

double best_seconds(const std::function<void()>& fn, double budget = 1.5) {
    fn();  // warm-up
    double best = 1e30, spent = 0;
    for (int i = 0; i < 20 && (i < 3 || spent < budget); ++i) {
        auto t0 = std::chrono::steady_clock::now();
        fn();
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        best = std::min(best, s);
        spent += s;
    }
    return best;
}

void report(const std::string& name, const std::vector<std::int64_t>& shape, int dim,
            double bytes, double seconds) {
    std::string s;
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
    std::printf("{\"case\": \"%s\", \"shape\": \"%s\", \"dim\": %d, \"bytes\": %.0f, "
                "\"seconds\": %.6g, \"gbps\": %.3f}\n",
                name.c_str(), s.c_str(), dim, bytes, seconds, bytes / seconds / 1e9);
    std::fflush(stdout);
}

// Multi-threaded memcpy of `bytes` (split in equal parts), the ceiling for a scan.
double copy_seconds(std::size_t bytes, int threads) {
    Tensor a = Tensor::empty(DType::U8, {static_cast<std::int64_t>(bytes)});
    Tensor b = Tensor::empty(DType::U8, {static_cast<std::int64_t>(bytes)});
    std::memset(a.data(), 1, bytes);
    std::memset(b.data(), 2, bytes);
    return best_seconds([&] {
        std::vector<std::thread> ts;
        for (int p = 1; p < threads; ++p)
            ts.emplace_back([&, p] {
                std::size_t lo = bytes * p / threads, hi = bytes * (p + 1) / threads;
                std::memcpy(static_cast<char*>(b.data()) + lo, static_cast<char*>(a.data()) + lo, hi - lo);
            });
        std::memcpy(b.data(), a.data(), bytes / threads);
        for (auto& t : ts) t.join();
    });
}

ProgramRef program(bool affine, int rank, int dim) {
    ProgramBuilder pb(affine ? "affine" : "sum");
    Shape shape;
    for (int k = 0; k < rank; ++k) shape.push_back(pb.symbol("S" + std::to_string(k)));
    if (affine) {
        auto f = trace_combine("affine", 2, 0, [](auto& l, auto& r, auto&) {
            return Exprs{l[0] * r[0], r[0] * l[1] + r[1]};
        });
        Expr a = pb.param("a", DType::F32, shape), b = pb.param("b", DType::F32, shape);
        return pb.build(pb.scan(f, {a, b}, dim));
    }
    auto f = trace_combine("sum", 1, 0, [](auto& l, auto& r, auto&) { return Exprs{l[0] + r[0]}; });
    return pb.build(pb.scan(f, {pb.param("x", DType::F32, shape)}, dim));
}

void bench_scan(bool affine, std::vector<std::int64_t> shape, int dim, int threads, bool ordered) {
    int leaves = affine ? 2 : 1;
    std::vector<Tensor> inputs;
    std::vector<TensorView> views;
    for (int i = 0; i < leaves; ++i) {
        Tensor t = Tensor::empty(DType::F32, shape);
        auto* p = static_cast<float*>(t.data());
        for (std::int64_t j = 0; j < t.numel(); ++j) p[j] = i == 0 && affine ? 0.999f : 1e-3f * (j % 7);
        inputs.push_back(t);
        views.push_back(t.view());
    }
    auto exe = CpuBackend().compile(program(affine, static_cast<int>(shape.size()), dim));
    RunOptions o;
    o.num_threads = threads;
    o.ordered = ordered;
    double s = best_seconds([&] { exe->run(views, o); });
    double bytes = 2.0 * leaves * inputs[0].numel() * 4;
    report(std::string(affine ? "affine" : "sum") + (ordered ? "_ordered" : ""), shape, dim, bytes, s);
}

}  // namespace

int main(int argc, char** argv) {
    int threads = cpu_num_threads();
    bool quick = false;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
        if (!std::strcmp(argv[i], "--quick")) quick = true;
        // One case only (for profiling): --one sum|affine[_ordered] DIM N[xM].
        if (!std::strcmp(argv[i], "--one") && i + 3 < argc) {
            bool affine = !std::strncmp(argv[i + 1], "affine", 6);
            bool ordered = std::strstr(argv[i + 1], "_ordered") != nullptr;
            int dim = std::atoi(argv[i + 2]);
            std::vector<std::int64_t> shape;
            for (char* p = argv[i + 3]; *p;) {
                shape.push_back(std::strtoll(p, &p, 10));
                if (*p == 'x') ++p;
            }
            bench_scan(affine, shape, dim, threads, ordered);
            return 0;
        }
    }
    const std::int64_t big = std::int64_t{1} << 26, side = 4096;
    for (std::size_t bytes : {std::size_t{big} * 8, std::size_t{big} * 16})
        report("memcpy", {static_cast<std::int64_t>(bytes)}, 0, 2.0 * bytes, copy_seconds(bytes, threads));
    for (bool affine : {false, true}) {
        bench_scan(affine, {big}, 0, threads, false);
        bench_scan(affine, {side, side}, 1, threads, false);
        bench_scan(affine, {side, side}, 0, threads, false);
    }
    if (quick) return 0;
    bench_scan(false, {big}, 0, threads, true);
    bench_scan(false, {side, side}, 1, threads, true);
    bench_scan(false, {side, side}, 0, threads, true);
    for (int k = 10; k <= 26; k += 2) {
        bench_scan(false, {std::int64_t{1} << k}, 0, threads, false);
        bench_scan(true, {std::int64_t{1} << k}, 0, threads, false);
        std::size_t bytes = (std::size_t{1} << k) * 8;
        report("memcpy", {static_cast<std::int64_t>(bytes)}, 0, 2.0 * bytes, copy_seconds(bytes, threads));
    }
    return 0;
}
