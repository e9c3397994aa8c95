// The C++ DSL. `Expr` wraps an IR node with operators and the scalar functions of DESIGN §2, so
// combines are written as ordinary C++ lambdas and traced once into the IR:
//
//   auto affine = scanc::dsl::trace_combine("affine", 2, 0, [](auto& l, auto& r, auto&) {
//       return scanc::dsl::Exprs{l[0] * r[0], r[0] * l[1] + r[1]};
//   });
//
// The same Expr type builds programs (ProgramBuilder): applied to program parameters, the
// operators make elementwise tensor ops with NumPy broadcasting.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "scanc/ir/builder.h"

namespace scanc::dsl {

class Expr {
public:
    Expr(NodeRef node) : node_(std::move(node)) {}  // NOLINT: nodes convert implicitly
    Expr(int value);                                // NOLINT: integer literal
    Expr(std::int64_t value);                       // NOLINT: integer literal
    Expr(double value);                             // NOLINT: float literal

    const NodeRef& node() const { return node_; }
    // For programs: the value's type (dtype and symbolic shape).
    const Type& type() const { return node_->type(); }

private:
    NodeRef node_;
};
using Exprs = std::vector<Expr>;

Expr operator+(const Expr& a, const Expr& b);
Expr operator-(const Expr& a, const Expr& b);
Expr operator*(const Expr& a, const Expr& b);
Expr operator/(const Expr& a, const Expr& b);
Expr operator%(const Expr& a, const Expr& b);
Expr operator&(const Expr& a, const Expr& b);
Expr operator|(const Expr& a, const Expr& b);
Expr operator^(const Expr& a, const Expr& b);
Expr operator<<(const Expr& a, const Expr& b);
Expr operator>>(const Expr& a, const Expr& b);
Expr operator<(const Expr& a, const Expr& b);
Expr operator<=(const Expr& a, const Expr& b);
Expr operator>(const Expr& a, const Expr& b);
Expr operator>=(const Expr& a, const Expr& b);
Expr operator==(const Expr& a, const Expr& b);
Expr operator!=(const Expr& a, const Expr& b);
Expr operator&&(const Expr& a, const Expr& b);  // `and` (both sides are evaluated)
Expr operator||(const Expr& a, const Expr& b);  // `or`
Expr operator-(const Expr& a);
Expr operator!(const Expr& a);  // `not`

Expr exp(const Expr& x);
Expr log(const Expr& x);
Expr exp2(const Expr& x);
Expr log2(const Expr& x);
Expr log10(const Expr& x);
Expr erf(const Expr& x);
Expr erfc(const Expr& x);
Expr log1p(const Expr& x);
Expr expm1(const Expr& x);
Expr sqrt(const Expr& x);
Expr rsqrt(const Expr& x);
Expr abs(const Expr& x);
Expr tanh(const Expr& x);
Expr sigmoid(const Expr& x);
Expr softplus(const Expr& x);
Expr sin(const Expr& x);
Expr cos(const Expr& x);
Expr atan(const Expr& x);
Expr floor(const Expr& x);
Expr ceil(const Expr& x);
Expr pow(const Expr& x, const Expr& y);
Expr atan2(const Expr& y, const Expr& x);
Expr min(const Expr& x, const Expr& y);
Expr max(const Expr& x, const Expr& y);
Expr logaddexp(const Expr& x, const Expr& y);
Expr where(const Expr& cond, const Expr& a, const Expr& b);
Expr cast(DType to, const Expr& x);

// Any op of the IR by its enum, for generated code (parsers, fuzzers).
Expr apply(Op op, const Exprs& args);

using CombineFn = std::function<Exprs(const Exprs& left, const Exprs& right, const Exprs& captured)>;

// Traces `fn` once into a dtype-generic combine with `num_leaves` leaves and `num_captured`
// captured values. `param_names` (left..., right..., captured...) are for printing; defaults
// are x1.., y1.., c1...
CombineRef trace_combine(std::string name, int num_leaves, int num_captured, const CombineFn& fn,
                         std::vector<std::string> param_names = {});

// Program-level operations.
Expr slice(const Expr& x, std::int64_t dim, Size start, Size stop, std::int64_t step = 1);
Expr concat(std::int64_t dim, const Exprs& xs);
Expr interleave(std::int64_t dim, const Expr& even, const Expr& odd);

class ProgramBuilder {
public:
    explicit ProgramBuilder(std::string name) : name_(std::move(name)) {}

    // A size symbol, the same size wherever it appears: asking again for a name gives the same
    // symbol. `bound`: every run has size <= bound (given once, or the same each time). The
    // name is an identifier of the text format (it is printed as written).
    Size symbol(std::string name, std::optional<std::int64_t> bound = std::nullopt);
    // A parameter of dims that are symbols or sizes >= 0. Its name is a hint for printing (the
    // printer makes names unique identifiers), and for error messages.
    Expr param(std::string name, DType dtype, Shape shape);
    // Inclusive scan of `leaves` along `dim`; one output per leaf.
    Exprs scan(const CombineRef& combine, const Exprs& leaves, std::int64_t dim,
               bool reverse = false, const Exprs& captured = {});
    // Each result a tensor computed from this builder's own parameters.
    ProgramRef build(const Exprs& results);

private:
    std::string name_;
    std::vector<NodeRef> params_;
    std::vector<SymbolRef> symbols_;
};

}  // namespace scanc::dsl
