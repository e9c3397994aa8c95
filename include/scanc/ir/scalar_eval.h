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

// Evaluates a combine on one (left, right, captured) triple, given its instantiated types.
std::vector<Scalar> eval_combine(const Combine& combine, const CombineTypes& types,
                                 std::span<const Scalar> left, std::span<const Scalar> right,
                                 std::span<const Scalar> captured);

// Reads/writes one element of dtype `t` at `p` (f16/bf16 stored as IEEE/bfloat bits).
Scalar load_scalar(DType t, const void* p);
void store_scalar(const Scalar& v, void* p);

}  // namespace scanc
