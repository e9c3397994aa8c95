// `scanc bench`: runs a program on random inputs with one backend, checks the results against
// the reference executor, and reports the time and the achieved bandwidth
//   GB/s = (bytes of all inputs read once + all outputs written once) / time.
// Timing: one or two warm-up runs, then runs until about 1.5 s (--seconds) have passed; best and
// median are printed.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "cli.h"

namespace scanc::cli {
namespace {

struct BenchArgs : ProgramOptions {
    double seconds = 1.5;
};

using Clock = std::chrono::steady_clock;

double seconds_of(Executable& exe, std::span<const TensorView> inputs, const RunOptions& options,
                  std::vector<Tensor>* results = nullptr) {
    auto start = Clock::now();
    std::vector<Tensor> out = exe.run(inputs, options);
    double s = std::chrono::duration<double>(Clock::now() - start).count();
    if (results) *results = std::move(out);
    return s;
}

std::string size_str(double bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB"};
    int u = 0;
    while (bytes >= 1024 && u < 3) bytes /= 1024, ++u;
    char buf[32];
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
    return buf;
}

std::string time_str(double s) {
    char buf[32];
    if (s < 1e-3)
        std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
    else if (s < 1)
        std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
    else
        std::snprintf(buf, sizeof buf, "%.3f s", s);
    return buf;
}

std::string gbps(double bytes, double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f GB/s", s > 0 ? bytes / s / 1e9 : 0.0);
    return buf;
}

// Compares every result with the reference executor's; prints one line per result.
bool verify_against_reference(const ProgramRef& program, std::span<const TensorView> inputs,
                              const std::vector<Tensor>& results) {
    std::vector<Tensor> want = compile(program, "reference")->run(inputs);
    bool all_ok = true;
    for (std::size_t i = 0; i < results.size(); ++i) {
        Comparison c = compare(results[i], want[i]);
        char line[200], tolerance[96] = "exact";
        if (c.rtol > 0)
            std::snprintf(tolerance, sizeof tolerance, "tol %.0e x (|ref| + mean |ref| %.3g)",
                          c.rtol, c.mean_magnitude);
        std::snprintf(line, sizeof line, "max abs err %.3g, max rel err %.3g (%s)", c.max_abs,
                      c.max_rel, tolerance);
        std::cout << "  check " << result_label(*program, i) << " vs reference: " << line
                  << (c.mismatches ? "" : ": OK") << "\n";
        if (c.mismatches) {
            std::cout << "    FAILED: " << c.mismatches << " element(s) out of tolerance, first "
                      << c.first_mismatch << "\n";
            all_ok = false;
        }
    }
    return all_ok;
}

int bench(const BenchArgs& args) {
    Module module = load_module(args.file);
    ProgramRef program = module.program(args.program);
    auto sizes = parse_sizes(args.random);
    std::vector<Tensor> inputs = random_inputs(*program, sizes, args.seed);
    std::vector<TensorView> views = views_of(inputs);
    std::string backend = args.backend == "auto" ? default_backend() : args.backend;
    auto exe = compile(program, backend);

    std::cout << program->name << " (" << args.file << ") on " << backend << ", "
              << sizes_str(*program, sizes) << ", seed " << args.seed << "\n";

    std::vector<Tensor> results;
    RunOptions options = args.run_options();
    double estimate = seconds_of(*exe, views, options, &results);  // the first run may compile
    if (estimate < args.seconds) estimate = seconds_of(*exe, views, options);  // steady state
    double bytes = static_cast<double>(bytes_of(inputs) + bytes_of(results));
    std::cout << "  data: inputs " << size_str(bytes_of(inputs)) << " + outputs "
              << size_str(bytes_of(results)) << "\n";
    bool ok = backend == "reference" || verify_against_reference(program, views, results);
    if (backend == "reference") std::cout << "  check: the reference executor is the spec\n";

    // Timed runs until about `seconds` have passed: at least 3, or 1 if one run takes longer.
    std::vector<double> times;
    double total = 0;
    std::size_t min_runs = estimate < args.seconds ? 3 : 1;
    while (times.size() < 100000 && (total < args.seconds || times.size() < min_runs)) {
        times.push_back(seconds_of(*exe, views, options));
        total += times.back();
    }
    auto runs = times.size();
    std::sort(times.begin(), times.end());
    double best = times.front(), median = times[times.size() / 2];
    std::cout << "  time: best " << time_str(best) << ", median " << time_str(median) << " over "
              << runs << " run" << (runs == 1 ? "" : "s") << "\n"
              << "  bandwidth: " << gbps(bytes, best) << " best, " << gbps(bytes, median)
              << " median\n";
    if (!ok) std::cerr << "error: results differ from the reference executor\n";
    return ok ? 0 : 1;
}

}  // namespace

Command add_bench_command(CLI::App& parent) {
    auto args = std::make_shared<BenchArgs>();
    CLI::App* app = parent.add_subcommand(
        "bench", "Time a program on random inputs; check it against the reference executor.");
    app->footer(
        "Prints the max abs/rel error against the reference executor (exit code 1 if out of\n"
        "tolerance |err| <= rtol x (|ref| + mean |ref|)), the best and median time of runs that\n"
        "take about --seconds in all, and GB/s = (bytes of all inputs read once + outputs\n"
        "written once) / time.");
    add_program_options(*app, *args)->required();
    app->add_option("--seconds", args->seconds, "about how long the timed runs take")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 600.0));
    return {app, [args] { return bench(*args); }};
}

}  // namespace scanc::cli
