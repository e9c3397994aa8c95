// The executable meaning of every scalar op: the one definition the reference executor, the
// associativity checker and the CPU backend's tests share.
//
// Semantics (DESIGN §1 plus the cases C leaves undefined, which we define so that no input can
// crash or differ between backends):
//   - f32 computes in float, f64 in double; f16/bf16 compute in f32 (round only on store).
//   - integers wrap (two's complement); `/` truncates toward zero, `%` takes the dividend's sign
//     (C semantics); x / 0 == 0 and x % 0 == x; INT_MIN / -1 wraps to INT_MIN.
//   - shifts use the count modulo the bit width; `>>` is arithmetic for signed types.
//   - min/max with a NaN operand give NaN; casts float->int saturate, NaN -> 0.
//   - a weak (literal-derived) operand is converted to the op's dtype first.
//   - f16/bf16 scalars hold f32 values. A load, an explicit cast to f16/bf16 and
//     Scalar::of_double round to the narrow type; arithmetic and implicit conversions (a weak
//     literal or a weak combine result taking an f16 dtype) keep f32 precision; store_scalar
//     rounds. Narrow rounding is round-to-nearest-even, overflow to inf, NaN stays NaN.
//   - float->bool is `v != 0` (NaN is true); bool->number is 0 or 1.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "scanc/ir/combine_types.h"

namespace scanc {

// One scalar value. Floats (any width) live in `f`, integers and bool in `i`; the value is
// always already rounded to `dtype` (f32 values are exactly representable floats, etc.).
struct Scalar {
    DType dtype = DType::F32;
    double f = 0;
    std::int64_t i = 0;

    static Scalar of_double(DType t, double v);   // rounds/wraps/saturates into t
    static Scalar of_int(DType t, std::int64_t v);  // wraps/converts into t
    double as_double() const;
    bool operator==(const Scalar&) const = default;
};

// Rounding to narrow floats, round-to-nearest-even.
float round_to_f16(float x);
float round_to_bf16(float x);
std::uint16_t f16_bits(float x);
std::uint16_t bf16_bits(float x);
float f16_from_bits(std::uint16_t b);
float bf16_from_bits(std::uint16_t b);

// Applies an elementwise op whose result type is `result` (from elementwise_type); `args` may be
// weak-typed literals (I64/F64), converted to the operands' common dtype first.
Scalar eval_op(Op op, std::span<const Scalar> args, ScalarType result,
               std::span<const ScalarType> arg_types);

// The implicit conversion of a value to dtype `t` (a weak operand adopting its op's dtype):
// integers wrap, float->int saturates (NaN -> 0), f16/bf16 targets keep f32 precision.
Scalar convert_scalar(const Scalar& v, DType t);

// Evaluates a combine on one (left, right, captured) triple, given its instantiated types.
// Results have the leaves' dtypes (a weak result is converted). Allocates; loops should use
// CombineEvaluator.
std::vector<Scalar> eval_combine(const Combine& combine, const CombineTypes& types,
                                 std::span<const Scalar> left, std::span<const Scalar> right,
                                 std::span<const Scalar> captured);

// A combine prepared for many evaluations: the topological order and the slot of every node are
// computed once, and evaluation reuses one buffer (no allocation per call). Not thread-safe: use
// one evaluator per thread. Inputs must already have the instantiated dtypes.
class CombineEvaluator {
public:
    CombineEvaluator(const Combine& combine, const CombineTypes& types);

    int num_leaves() const { return num_leaves_; }
    // Writes the num_leaves() results into `out` (which may alias `left` or `right`).
    void eval(std::span<const Scalar> left, std::span<const Scalar> right,
              std::span<const Scalar> captured, std::span<Scalar> out);

private:
    struct Step {
        Op op;
        int num_args;
        int args[3];  // slots
        ScalarType arg_types[3];
        ScalarType result;
        int slot;
    };
    int num_leaves_ = 0, num_captured_ = 0;
    std::vector<Scalar> slots_;  // left..., right..., captured..., then one per other node
    std::vector<Step> steps_;
    std::vector<int> result_slots_;
    std::vector<DType> result_dtypes_;  // the leaves' dtypes: weak results convert to these
};

// Reads/writes one element of dtype `t` at `p` (f16/bf16 stored as IEEE/bfloat bits).
Scalar load_scalar(DType t, const void* p);
void store_scalar(const Scalar& v, void* p);

}  // namespace scanc
