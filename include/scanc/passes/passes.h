// The passes, one per file in src/passes/. Each is a free function; preconditions and results
// are stated here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "scanc/ir/node.h"
#include "scanc/ir/scalar_eval.h"

namespace scanc {

// verify: re-checks every invariant of a program built by any means (parser, DSL, a pass):
// every node's types and shapes re-inferred from its inputs agree with the ones it carries,
// params are the program's own, results are single-output. CompileError (user-level mistakes)
// or InternalError (a malformed IR).
void verify(const Program& program);

// check_associative: randomized test of f(f(a,b),c) == f(a,f(b,c)) for the combine instantiated
// at these dtypes; relative tolerance for floats, exact for integers and bool.
// Each trial draws a, b, c per leaf dtype (floats: small integers, [-2, 2], magnitudes 1e-3..1e3,
// now and then +-0; integers: small and full range; bool) and captured values shared by the
// three. Floats agree when |x - y| <= tol * (|x| + |y| + the magnitudes of a, b, c, a∘b, b∘c),
// tol 1e-2 for f16/bf16, 1e-4 f32, 1e-10 f64; NaN equals NaN. A float trial that differs is
// re-run in f64 with the same values: if it agrees there the difference was rounding. A trial
// that differs because a side overflowed to inf/NaN from finite inputs is skipped. Stops at the
// first counterexample. Deterministic for a given seed. Throws CompileError if the combine does
// not type-check at these dtypes.
struct AssociativityReport {
    bool associative = true;
    int trials = 0;        // trials run (fewer than asked when a counterexample stopped it)
    int skipped = 0;       // trials that differed only through overflow to inf/NaN
    int rounding_only = 0; // trials that differed in their dtype but agreed when widened to f64
    // When not associative: the inputs a, b, c and both groupings, with values, e.g.
    // "a = (1, 2), b = (0.5, 3), c = (2, -1): (a∘b)∘c = (1, 7) but a∘(b∘c) = (1, 5.5)"
    std::string counterexample;
};
AssociativityReport check_associative(const Combine& combine, std::span<const DType> leaves,
                                      std::span<const DType> captured, int trials = 256,
                                      std::uint64_t seed = 0x5ca9c);
// Checks every scan of the program whose combine recognize() does not know, once per combine
// and dtypes; CompileError at the scan: "combine `avg` is not associative: <counterexample>".
void check_program_associative(const Program& program);

// recognize: matches a combine against the known associative patterns, structurally (no
// evaluation), modulo commutativity of + * min max logaddexp and, or:
//   Sum x1 + x2; Prod x1 * x2; Max max(x1, x2), where(x1 > x2, x1, x2) and its mirrored
//   comparisons (>=, <, <=), `x1 or x2`; Min likewise; LogAddExp logaddexp(x1, x2) or
//   log(exp(x1) + exp(x2)); Affine (two leaves): h = a*h_prev + b, i.e. (a1*a2, a2*b1 + b2) in
//   any operand order and either leaf order. (a1*a2, a1*b2 + b1) composes the other way round and
//   is not Affine. Captured values may be declared but must not appear in the results.
// Note: a where-form max/min differs from max/min only when a NaN meets the comparison; code
// that replaces one by the other must keep the combine's own NaN behaviour if it matters.
enum class Pattern { Unknown, Sum, Prod, Max, Min, LogAddExp, Affine };
struct Recognized {
    Pattern pattern = Pattern::Unknown;
    // Affine: which leaf is the multiplier `a` and which the offset `b`.
    int a_leaf = 0, b_leaf = 1;
    bool commutative = false;
    std::string description;  // "sum", "affine (a: x1, b: x2)", ...
};
std::string_view pattern_name(Pattern p);
Recognized recognize(const Combine& combine);
// The identity element of a recognized pattern for leaves of these dtypes (sum: 0, prod: 1,
// max: -inf or the lowest integer, affine: (1, 0), ...); nullopt for Unknown.
std::optional<std::vector<Scalar>> identity(const Recognized& r, std::span<const DType> leaves);

// lower_scans (DESIGN §6): replaces every scan by slice/concat/interleave and elementwise ops,
// so that backends without a scan (ONNX, TensorRT) can run the program.
//   HillisSteele:  ceil(log2 S) levels; level k: y = concat(y[:k], f(y[:-k], y[k:])) (reverse
//                  mirrored, the later element on the left). No identity element, no padding.
//                  Dynamic S needs a bound M (in the program or LowerOptions::bounds); then
//                  ceil(log2 M) levels are emitted and clamped slices make the extra ones no-ops.
//   WorkEfficient: odd/even recursion (JAX's): at most 2*S combine applications and
//                  2*ceil(log2 S) levels. Needs a static S.
//   Auto:          work-efficient for static S > 64, else hillis-steele; says why in the report.
// Combines are inlined: left/right params become slices of the running tensors, captured
// params the scan's captured tensors (size 1 along dim, they broadcast). The lowered program has
// the same params (with the bounds of LowerOptions applied) and results. native_cumsum keeps
// single-leaf pure-sum scans of i32/i64/f32/f64 as scans, for exporters that map them to a
// native CumSum (ONNX CumSum).
enum class ScanAlgorithm { HillisSteele, WorkEfficient, Auto };
std::string_view algorithm_name(ScanAlgorithm a);  // "hillis-steele", "work-efficient", "auto"
// Parses those names; CompileError listing them otherwise.
ScanAlgorithm parse_algorithm(std::string_view name);

struct LowerOptions {
    ScanAlgorithm algorithm = ScanAlgorithm::Auto;
    // Size symbol name -> bound M (`--bound L=M`); tightens (never loosens) a declared bound.
    std::vector<std::pair<std::string, std::int64_t>> bounds;
    // Size symbol name -> a fixed size (`--size L=N`): the lowered program takes only that size
    // (so work-efficient applies); CompileError if it exceeds a declared bound.
    std::vector<std::pair<std::string, std::int64_t>> sizes;
    bool native_cumsum = false;
    // How errors name a bound or size: the CLI's flags (`--bound L=M`) or the Python keyword
    // arguments (`bounds={'L': M}`), so that each caller reads what it wrote.
    enum class Spelling { Cli, Python } spelling = Spelling::Cli;
};

// What lowering did to one scan, for `scanc lower --stats` and the tests.
struct LoweredScan {
    std::string where;            // "file:line:col" of the scan, or "scan #i"
    ScanAlgorithm algorithm;      // the one used (never Auto)
    std::string reason;           // why auto chose it ("" when asked explicitly)
    std::string length;           // the scan length S as written ("L", "1000")
    std::int64_t max_length = 0;  // S, or its bound M when dynamic
    int levels = 0;               // combine applications on the longest dependency chain
    int combine_instances = 0;    // times the combine body was inlined
    // Combine applications per independent scan line at max_length (elements combined).
    std::int64_t applications = 0;
    bool native_cumsum = false;   // kept as a scan for a native CumSum
};
struct LoweringReport {
    std::vector<LoweredScan> scans;
};

// CompileError at the scan for a dynamic length without a bound (naming the dim and symbol),
// work-efficient with a dynamic length, or a bound naming no size of the program.
ProgramRef lower_scans(const Program& program, const LowerOptions& options = {},
                       LoweringReport* report = nullptr);

// check_lowered: the checked result of lower_scans. CompileError at the offending node if the
// program has a scan (unless allow_native_cumsum and it is a single-leaf pure sum), an op that
// is not param/literal/elementwise/slice/concat/interleave, or a concat/interleave operand that
// is a constant pad (from literals alone or `x * 0`, e.g. ones/zeros). Constants the `original`
// program computes itself (`one = 0 * p + 1` as a leaf) are the user's, not pads: they are
// recognized by node or by source place when `original` is given.
void check_lowered(const Program& program, bool allow_native_cumsum = false,
                   const Program* original = nullptr);
// Op name ("Add", "Slice", ...) -> number of nodes, over every node reachable from the results.
std::map<std::string, int> op_census(const Program& program);
// Whether `combine` is a single-leaf pure sum `x + y` (no captured values).
bool is_pure_sum(const Combine& combine);

}  // namespace scanc
