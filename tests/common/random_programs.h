// Test inputs and random programs shared by the backends' differential tests: random tensors
// seen through several layouts, the reference executor's results, a tolerant comparison, and
// random scan programs (combines, leaves, captured values, prologues, epilogues, dims,
// directions, dtypes and awkward sizes) with inputs to run them on.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "scanc/backends/reference.h"
#include "scanc/dsl/expr.h"

namespace scanc::test {

enum class Values { SmallInts, Unit, Decay };  // [-k, k] integers, [-1, 1], [0.5, 1)
enum class Layout { Contiguous, Transposed, Strided, Flipped };

// Owns the memory behind views handed to run().
struct Inputs {
    std::vector<Tensor> storage;
    std::vector<TensorView> views;

    // A tensor of `sizes` filled with random `values`, seen through `layout`.
    void add(DType t, const std::vector<std::int64_t>& sizes, Values values, Layout layout,
             std::mt19937_64& rng);
};

std::vector<Tensor> run_reference(const ProgramRef& p, const Inputs& in);

// Elementwise comparison; integers/bool and `bitwise` floats must match exactly, other floats
// within `rtol` of the reference relative to max(1, the mean magnitude of the reference).
// Returns "" when equal, else a description of the first mismatch.
std::string compare(const Tensor& expected, const Tensor& actual, bool bitwise, double rtol);

// Default relative tolerance for reassociated float results of dtype t.
double tolerance(DType t);

// A random scan program over symbolic sizes and inputs for it: a combine of one to four leaves
// (sums, max, a last-nonzero select, affine, 2x2 matrix products, combines of a captured
// value), any dtype it is defined on, rank 1-3 with awkward extents (0, 1, primes, 2^k +- 1,
// sometimes one line of 2^16 or more), any dim, either direction, with or without a prologue
// (a broadcast operand) and an epilogue (a result that reads an input), inputs in any layout.
struct RandomProgram {
    ProgramRef program;
    Inputs inputs;
    bool exact = true;  // every association gives the same bits (else compare by tolerance(dtype))
    DType dtype = DType::F32;
    std::vector<std::pair<std::string, std::int64_t>> sizes;  // each size symbol's extent in inputs
    std::string what;   // the case, for failure messages
};
RandomProgram random_program(std::mt19937_64& rng);
// Runs `check` on `count` random programs drawn from `seed`, each under a trace naming it; `rng`
// (the same generator) may draw more for the case. Stops after a fatal failure.
void for_each_random_program(std::uint64_t seed, int count,
                             const std::function<void(const RandomProgram&, std::mt19937_64& rng)>& check);

// Compares `actual` with the reference's results of `p` (exact, or within tolerance(dtype) where
// p is not exact; `bitwise`: exact whatever p says): "" when they match, else the first mismatch.
std::string compare_results(const RandomProgram& p, const std::vector<Tensor>& expected,
                            const std::vector<Tensor>& actual, bool bitwise = false);

}  // namespace scanc::test
