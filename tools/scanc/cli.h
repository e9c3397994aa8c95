// Shared pieces of the `scanc` command line (DESIGN §3): the subcommand interface, the options
// every subcommand spells the same way, and making inputs (random or from .npy files).
// Errors the user can fix are CompileErrors (exit code 2); main.cpp maps exceptions to codes.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "scanc/scanc.h"

namespace scanc::cli {

// A registered subcommand: its CLI11 app and what to do when it was chosen (returns the exit
// code). NAME.cpp defines `Command add_NAME_command(CLI::App& parent)`.
struct Command {
    CLI::App* app = nullptr;
    std::function<int()> run;
};

// What `run` and `bench` both take, spelled the same way.
struct ProgramOptions {
    std::string file, program, backend = "auto";
    std::vector<std::string> random;  // SYM=N,SYM=N items
    std::vector<std::string> ranges;  // --range NAME=LO:HI items
    bool random_given = false;        // --random, with or without sizes (set before running)
    std::uint64_t seed = 0;
    int threads = 0;       // --threads (cpu backend; 0: SCANC_NUM_THREADS or every core)
    bool ordered = false;  // --ordered (cpu backend: combine strictly in order)

    RunOptions run_options() const {
        RunOptions o;
        o.num_threads = threads;
        o.ordered = ordered;
        return o;
    }
};
// Adds FILE, --program, --backend, --random, --range and --seed; returns the --random option.
CLI::Option* add_program_options(CLI::App& app, ProgramOptions& options);

// --random SYM=N,SYM=N (the option may also be repeated, or given without sizes): symbol name
// -> size.
// CompileError naming the bad item and the expected form.
// SYM=N[,SYM=N...] of `option` (named in errors).
std::map<std::string, std::int64_t> parse_sizes(const std::vector<std::string>& specs,
                                                const std::string& option = "--random");

// The size symbols of the program's parameters, in order of appearance.
std::vector<SymbolRef> size_symbols(const Program& program);
// "B=4 L=4096 D=256", in the program's order of symbols.
std::string sizes_str(const Program& program, const std::map<std::string, std::int64_t>& sizes);

// Where --range puts a parameter's random values: floats uniform in [lo, hi), integers in
// [lo, hi].
struct ValueRange {
    double lo, hi;
};
// --range NAME=LO:HI items: parameter name -> range. CompileError naming the item when it does
// not parse, names no parameter, names one twice, has LO > HI, is outside the parameter's dtype
// or gives integers a fraction (bool inputs take no range).
std::map<std::string, ValueRange> parse_ranges(const Program& program, const std::vector<std::string>& specs);
// "dt in [0.001, 0.1) A in [-8, -1)", in the program's order of parameters.
std::string ranges_str(const Program& program, const std::map<std::string, ValueRange>& ranges);

// Random values for every parameter, shaped by `sizes` (every symbol needed, none unknown,
// bounds respected). Floats uniform in [-1, 1); signed integers uniform in [-8, 8]; u8 in
// [0, 16]; bool true with probability 1/2; a parameter in `ranges` within its range instead.
// Deterministic for a seed.
std::vector<Tensor> random_inputs(const Program& program,
                                  const std::map<std::string, std::int64_t>& sizes,
                                  std::uint64_t seed, const std::map<std::string, ValueRange>& ranges = {});

// --input NAME=PATH.npy, one per parameter, each exactly once; returned in parameter order.
std::vector<Tensor> read_inputs(const Program& program, const std::vector<std::string>& specs);

std::vector<TensorView> views_of(const std::vector<Tensor>& tensors);
std::int64_t bytes_of(const std::vector<Tensor>& tensors);

// "f32[2, 7] = [0.1, -0.25, ..., 3]": dtype, sizes and a few values.
std::string summarize(const TensorView& tensor);

// How far `got` is from `want` (same dtype and sizes). NaNs must match NaNs and infinities
// must match exactly; everything else within atol + rtol * (|want| + mean |want|) for the
// dtype's tolerance (exact for integers and bool).
struct Comparison {
    double max_abs = 0;
    double max_rel = 0;         // relative to the element
    double mean_magnitude = 0;  // mean |want| over the finite elements
    std::int64_t mismatches = 0;
    std::int64_t nonfinite_mismatches = 0;  // of those, where either side is inf or NaN
    std::string first_mismatch;  // "at [3, 17]: got 1.5, want 1.25"
    double rtol = 0, atol = 0;
};
Comparison compare(const TensorView& got, const TensorView& want);
// The same within the tolerance of dtype `precision` (a float result computed from a less
// precise one: precision_of).
Comparison compare(const TensorView& got, const TensorView& want, DType precision);
// The least precise float dtype that result `result` of `program` is computed in (a scan, an
// op or a cast computed on the way, not a param or a literal), else the result's own: an f32 sum
// returned as f64 carries the f32 sum's error, which f64's tolerance would call a mismatch.
DType precision_of(const Program& program, std::size_t result);

// A non-float result split where it leaves the floats it is computed from (float_split.cpp):
// `floats` returns those values, `rest` computes the result from the program's params followed
// by them. nullopt for a float result, or one computed from no float value.
struct FloatSplit {
    ProgramRef floats, rest;
};
std::optional<FloatSplit> split_at_floats(const Program& program, std::size_t result);

// Writes `text` to the file `path` (CompileError when it cannot be written in full).
void write_file(const std::string& path, const std::string& text);

// A program's name and where the result goes in messages: "result 0 `h`".
std::string result_label(const Program& program, std::size_t index);

}  // namespace scanc::cli
