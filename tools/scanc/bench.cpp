// `scanc bench`: runs a program on random inputs with one backend, checks the results against
// the reference executor, and reports the time and the achieved bandwidth
//   GB/s = (bytes of all inputs read once + all outputs written once) / time.
// Timing: one or two warm-up runs, then runs until about 1.5 s (--seconds) have passed; best and
// median are printed, as text or (--json) as one JSON object for scripts.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <span>

#include "cli.h"
#include "scanc/backends/reference.h"

namespace scanc::cli {
namespace {

struct BenchArgs : ProgramOptions {
    double seconds = 1.5;
    bool json = false;
};

// One result checked against the reference executor.
struct Check {
    std::string label;
    Comparison comparison;
    bool f64_oracle = false;  // passed against the f64-carry oracle, not the f32 reference
    // A non-float result that passed as recomputed from this backend's floats (within
    // tolerance of the reference's); `direct` is its comparison with the reference's result.
    std::optional<Comparison> direct;
};

// Everything a bench run found; printed as text or JSON.
struct BenchReport {
    std::string program, file, backend;
    std::map<std::string, std::int64_t> sizes;
    std::map<std::string, ValueRange> ranges;  // --range
    std::uint64_t seed = 0;
    std::int64_t input_bytes = 0, output_bytes = 0;
    std::vector<Check> checks;  // empty on the reference backend (it is the spec)
    std::vector<double> seconds;  // sorted
    bool ok() const {
        return std::all_of(checks.begin(), checks.end(),
                           [](const Check& c) { return c.comparison.mismatches == 0; });
    }
    double bytes() const { return static_cast<double>(input_bytes + output_bytes); }
    double best() const { return seconds.front(); }
    double median() const { return seconds[seconds.size() / 2]; }
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

std::vector<Check> check_against_reference(const ProgramRef& program, const std::string& backend,
                                           const RunOptions& options, std::span<const TensorView> inputs,
                                           const std::vector<Tensor>& results);

// A result of integers or bools that differs from the reference's passes as computed from this
// backend's floats when they are within tolerance and the reference computes the same result
// from them (float_split.cpp); `check` is left as it is otherwise.
void check_from_floats(const ProgramRef& program, std::size_t index, const std::string& backend,
                       const RunOptions& options, std::span<const TensorView> inputs, const Tensor& result,
                       Check& check) {
    auto split = split_at_floats(*program, index);
    if (!split) return;
    std::vector<Tensor> floats = compile(split->floats, backend)->run(inputs, options);
    // The floats checked as bench checks float results (so never split again).
    for (const Check& c : check_against_reference(split->floats, backend, options, inputs, floats))
        if (c.comparison.mismatches) return;
    std::vector<TensorView> from_floats(inputs.begin(), inputs.end());
    for (const Tensor& f : floats) from_floats.push_back(f.view());
    Comparison recomputed = compare(result, compile(split->rest, "reference")->run(from_floats)[0]);
    if (recomputed.mismatches == 0) check = {check.label, recomputed, false, check.comparison};
}

// Compares every result with the reference executor's. A float result out of tolerance is
// compared with the reference run with f64 carries too, and passes if it is within tolerance of
// that: a long f32 scan's sequential carry can drift from the exact result by more than a
// reassociated backend's (an f32 logcumsumexp of 16M elements stalled at 14.525 where the exact
// value is near 14.555 and the CPU backend gave 14.555). A result of integers or bools that
// differs and is computed from floats passes if this backend's floats are within tolerance and
// the result is exactly what the reference computes from them (float_split.cpp).
std::vector<Check> check_against_reference(const ProgramRef& program, const std::string& backend,
                                           const RunOptions& options, std::span<const TensorView> inputs,
                                           const std::vector<Tensor>& results) {
    std::vector<Tensor> want = compile(program, "reference")->run(inputs), wide;
    std::vector<Check> checks;
    for (std::size_t i = 0; i < results.size(); ++i) {
        const DType precision = precision_of(*program, i);
        Check check{result_label(*program, i), compare(results[i], want[i], precision), false, std::nullopt};
        if (check.comparison.mismatches && is_float(results[i].dtype())) {
            if (wide.empty()) wide = ReferenceBackend(/*f64_carries=*/true).compile(program)->run(inputs);
            Comparison oracle = compare(results[i], wide[i], precision);
            if (oracle.mismatches == 0) check = {check.label, oracle, true, std::nullopt};
        } else if (check.comparison.mismatches) {
            // (Where the split program cannot be built or run, the direct comparison stands.)
            try {
                check_from_floats(program, i, backend, options, inputs, results[i], check);
            } catch (const CompileError&) {
            }
        }
        checks.push_back(check);
    }
    return checks;
}

void print_text(const BenchReport& r, const Program& program) {
    std::string sizes = sizes_str(program, r.sizes);
    std::cout << r.program << " (" << r.file << ") on " << r.backend << (sizes.empty() ? "" : ", ") << sizes
              << (r.ranges.empty() ? "" : ", ") << ranges_str(program, r.ranges) << ", seed " << r.seed << "\n"
              << "  data: inputs " << size_str(r.input_bytes) << " + outputs "
              << size_str(r.output_bytes) << "\n";
    if (r.backend == "reference") std::cout << "  check: the reference executor is the spec\n";
    for (const Check& check : r.checks) {
        const Comparison& c = check.comparison;
        char line[200], tolerance[96] = "exact";
        if (c.rtol > 0)
            std::snprintf(tolerance, sizeof tolerance, "tol %.0e x (|ref| + mean |ref| %.3g)",
                          c.rtol, c.mean_magnitude);
        std::snprintf(line, sizeof line, "max abs err %.3g, max rel err %.3g (%s)", c.max_abs,
                      c.max_rel, tolerance);
        std::cout << "  check " << check.label << " vs reference"
                  << (check.f64_oracle ? " with f64 carries (the f32 one is further off)" : "")
                  << (check.direct ? " computed from this backend's floats" : "") << ": " << line
                  << (c.mismatches ? "" : ": OK") << "\n";
        if (check.direct)
            std::cout << "    (the reference's own result differs at " << check.direct->mismatches
                      << " element(s), first " << check.direct->first_mismatch
                      << ":\n    there this backend's floats, within tolerance of the reference's, "
                         "round or compare the other way)\n";
        if (c.mismatches)
            std::cout << "    FAILED: " << c.mismatches << " element(s) out of tolerance, first "
                      << c.first_mismatch << "\n";
        if (c.mismatches && c.nonfinite_mismatches == c.mismatches)
            std::cout << "    every one where the reference or this backend overflowed to inf or NaN:\n"
                         "    these random inputs overflow the result's dtype, and a scan combined in\n"
                         "    another order overflows at other elements; narrow them with --range\n"
                         "    NAME=LO:HI (floats are uniform in [-1, 1) by default)\n";
    }
    auto runs = r.seconds.size();
    std::cout << "  time: best " << time_str(r.best()) << ", median " << time_str(r.median())
              << " over " << runs << " run" << (runs == 1 ? "" : "s") << "\n"
              << "  bandwidth: " << gbps(r.bytes(), r.best()) << " best, "
              << gbps(r.bytes(), r.median()) << " median\n";
}

void print_json(const BenchReport& r) {
    nlohmann::json checks = nlohmann::json::array();
    for (const Check& check : r.checks) {
        const Comparison& c = check.comparison;
        checks.push_back({{"result", check.label},
                          {"max_abs_err", c.max_abs},
                          {"max_rel_err", c.max_rel},
                          {"rtol", c.rtol},
                          {"mismatches", c.mismatches},
                          {"nonfinite_mismatches", c.nonfinite_mismatches},
                          {"first_mismatch", c.first_mismatch},
                          {"oracle", check.f64_oracle ? "reference with f64 carries"
                                     : check.direct   ? "reference from this backend's floats"
                                                      : "reference"}});
        if (check.direct) checks.back()["reference_mismatches"] = check.direct->mismatches;
    }
    nlohmann::json ranges = nlohmann::json::object();
    for (auto& [name, range] : r.ranges) ranges[name] = {range.lo, range.hi};
    nlohmann::json out = {
        {"program", r.program},
        {"file", r.file},
        {"backend", r.backend},
        {"sizes", r.sizes},
        {"ranges", ranges},
        {"seed", r.seed},
        {"input_bytes", r.input_bytes},
        {"output_bytes", r.output_bytes},
        {"checks", checks},
        {"ok", r.ok()},
        {"runs", r.seconds.size()},
        {"best_seconds", r.best()},
        {"median_seconds", r.median()},
        {"best_gbps", r.bytes() / r.best() / 1e9},
        {"median_gbps", r.bytes() / r.median() / 1e9},
    };
    std::cout << out.dump(2) << "\n";
}

int bench(const BenchArgs& args) {
    Module module = load_module(args.file);
    ProgramRef program = module.program(args.program);
    BenchReport report;
    report.program = program->name;
    report.file = args.file;
    report.sizes = parse_sizes(args.random);
    report.seed = args.seed;
    report.backend = args.backend == "auto" ? default_backend() : args.backend;
    report.ranges = parse_ranges(*program, args.ranges);
    std::vector<Tensor> inputs = random_inputs(*program, report.sizes, args.seed, report.ranges);
    std::vector<TensorView> views = views_of(inputs);
    auto exe = compile(program, report.backend);

    std::vector<Tensor> results;
    RunOptions options = args.run_options();
    double estimate = seconds_of(*exe, views, options, &results);  // the first run may compile
    if (estimate < args.seconds) estimate = seconds_of(*exe, views, options);  // steady state
    report.input_bytes = bytes_of(inputs);
    report.output_bytes = bytes_of(results);
    if (report.backend != "reference")
        report.checks = check_against_reference(program, report.backend, options, views, results);

    // Timed runs until about `seconds` have passed: at least 3, or 1 if one run takes longer.
    double total = 0;
    std::size_t min_runs = estimate < args.seconds ? 3 : 1;
    while (report.seconds.size() < 100000 &&
           (total < args.seconds || report.seconds.size() < min_runs)) {
        report.seconds.push_back(seconds_of(*exe, views, options));
        total += report.seconds.back();
    }
    std::sort(report.seconds.begin(), report.seconds.end());
    if (args.json)
        print_json(report);
    else
        print_text(report, *program);
    if (!report.ok()) std::cerr << "error: results differ from the reference executor\n";
    return report.ok() ? 0 : 1;
}

}  // namespace

Command add_bench_command(CLI::App& parent) {
    auto args = std::make_shared<BenchArgs>();
    CLI::App* app = parent.add_subcommand(
        "bench", "Time a program on random inputs; check it against the reference executor.");
    app->footer(
        "Prints the max abs/rel error against the reference executor (exit code 1 if out of\n"
        "tolerance |err| <= rtol x (|ref| + mean |ref|), rtol that of the least precise float\n"
        "dtype the result is computed in; a float result out of it is checked\n"
        "against the reference with f64 carries too, and passes within tolerance of that; a\n"
        "result of integers or bools computed from floats passes if this backend's floats are\n"
        "within tolerance and the reference computes the same result from them), the\n"
        "best and median time of runs that take about --seconds in all, and GB/s = (bytes of\n"
        "all inputs read once + outputs written once) / time.");
    add_program_options(*app, *args)->required();
    app->add_option("--seconds", args->seconds, "about how long the timed runs take")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 600.0))
        ->check([](const std::string& text) {  // CLI::Range lets NaN through
            return std::isnan(std::strtod(text.c_str(), nullptr)) ? std::string("NaN is not a time") : std::string();
        });
    app->add_flag("--json", args->json, "print the report as one JSON object");
    return {app, [args] { return bench(*args); }};
}

}  // namespace scanc::cli
