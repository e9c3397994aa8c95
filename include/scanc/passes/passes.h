// The passes, one per file in src/passes/. Each is a free function; preconditions and results
// are stated here.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
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
struct AssociativityReport {
    bool associative = true;
    int trials = 0;
    // When not associative: the inputs a, b, c and both groupings, with values, e.g.
    // "a = (1, 2), b = (0.5, 3), c = (2, -1): (a∘b)∘c = (1, 7) but a∘(b∘c) = (1, 5.5)"
    std::string counterexample;
};
AssociativityReport check_associative(const Combine& combine, std::span<const DType> leaves,
                                      std::span<const DType> captured, int trials = 256,
                                      std::uint64_t seed = 0x5ca9c);
// Checks every scan of the program; CompileError at the scan with the counterexample.
void check_program_associative(const Program& program);

// recognize: matches a combine against the known associative patterns.
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

}  // namespace scanc
