// Emitting scalar expressions as CUDA C++ with the semantics of scalar_eval.h: each node becomes
// one `const T nK = ...;` line in its compute type, operands converted to the op's dtype first
// (weak literals adopt it), helpers (sc_add, sc_div, ...) from the prelude.
#pragma once

#include <functional>
#include <map>
#include <sstream>
#include <string>

#include "scanc/ir/builder.h"

namespace scanc::cuda {

class ExprEmitter {
public:
    // The type of a node (program nodes: their Type; combine nodes: the instantiation's).
    using TypeOf = std::function<ScalarType(const Node*)>;
    // Expression text for a non-elementwise node (a param, an access, the state), in the
    // compute type of its dtype.
    using SourceOf = std::function<std::string(const Node*)>;

    // `rounds`: every f16/bf16 result is rounded to its dtype, as the program's own tensors of
    // those dtypes are (the prologues, epilogues and maps); a combine body computes its f16/bf16
    // leaves in f32 and rounds only on store, so its emitter does not round.
    ExprEmitter(std::ostringstream& out, std::string indent, std::string prefix, TypeOf type_of,
                SourceOf source_of, bool rounds = true);

    // Emits what `n` needs and returns an expression of n's value converted to dtype `to`.
    std::string value_as(const Node* n, DType to);
    // n's value in its own dtype (weak nodes: I64/F64).
    std::string value(const Node* n);

private:
    std::string emit(const Node* n);

    std::ostringstream& out_;
    std::string indent_, prefix_;
    TypeOf type_of_;
    SourceOf source_of_;
    bool rounds_;
    std::map<const Node*, std::string> memo_;
    int next_ = 0;
};

// "(float)1.5" style typed constant of a literal, as dtype `to` (f16/bf16 rounded to their
// dtype where `narrow_rounds`, as a cast does; else at f32 precision, as an op's operand is).
std::string literal_text(const LiteralAttr& lit, DType to, bool narrow_rounds = true);
// Expression `x` (a float) rounded to f16/bf16 where t is one of them, else x.
std::string round_narrow(const std::string& x, DType t);

}  // namespace scanc::cuda
