// Symbolic sizes. A dimension is a constant, a symbol (`L`), or a small integer expression over
// symbols (what slice and concat produce). Sizes are kept in a canonical linear form
//   constant + sum(coefficient * term),  term = symbol | min(..) | max(..) | floordiv(.., d)
// so that sums that are equal compare equal; sizes of one symbol that differ in form are
// compared by value (same_value). Symbols are identified by object; the name is only for
// printing.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <unordered_map>
#include <vector>

#include "scanc/error.h"

namespace scanc {

// Size arithmetic whose result leaves int64 (or is -2^63, which has no negation): the user's
// absurd dims, slice bounds or sizes. A CompileError without a place; located_sizes gives it one.
class SizeOverflow : public CompileError {
public:
    SizeOverflow() : CompileError({}, "this size does not fit in 64 bits") {}
};

// f(), with a SizeOverflow it throws reported at `loc` (where the sizes were written).
template <typename F>
auto located_sizes(const SourceLoc& loc, F f) -> decltype(f()) {
    try {
        return f();
    } catch (const SizeOverflow& e) {
        user_error(loc, e.message());
    }
}

// Tensors of more elements are refused when their sizes are evaluated: no allocation, index or
// byte count of a smaller one can overflow int64 (1 PiB of bytes at the least).
constexpr std::int64_t kMaxElements = std::int64_t{1} << 50;

struct Symbol {
    std::string name;
    std::optional<std::int64_t> bound;  // `L<=65536`: every run must have L <= bound
    std::uint64_t id;                   // creation order, for deterministic printing

    static std::shared_ptr<const Symbol> make(std::string name,
                                              std::optional<std::int64_t> bound = std::nullopt);
};
using SymbolRef = std::shared_ptr<const Symbol>;

// Values of symbols for one run.
using Bindings = std::unordered_map<const Symbol*, std::int64_t>;

class Size {
public:
    Size(std::int64_t constant = 0);  // NOLINT: a constant converts implicitly
    static Size symbol(SymbolRef s);
    static Size min(const Size& a, const Size& b);
    static Size max(const Size& a, const Size& b);
    static Size floordiv(const Size& a, std::int64_t divisor);  // divisor > 0
    static Size ceildiv(const Size& a, std::int64_t divisor);   // divisor > 0

    friend Size operator+(const Size& a, const Size& b);
    friend Size operator-(const Size& a, const Size& b);
    friend Size operator*(const Size& a, std::int64_t k);
    friend Size operator*(std::int64_t k, const Size& a) { return a * k; }

    bool is_constant() const;
    std::optional<std::int64_t> constant() const;
    // The symbol, if this size is exactly one symbol.
    SymbolRef as_symbol() const;
    // Every symbol this size mentions.
    std::vector<SymbolRef> symbols() const;

    // Provably equal: canonical forms are identical. Unequal does not mean provably different.
    bool equals(const Size& other) const;
    // equals, or of one symbol and equal at every value of it (size_periodic.cpp): what
    // checks of tensors' shapes ask. It evaluates where canonical forms differ, so the passes
    // that build sizes and ask equals at every step keep to that.
    bool same_value(const Size& other) const;
    // The value for these bindings. Throws CompileError naming the symbol if one is unbound,
    // SizeOverflow if a step of it leaves int64.
    std::int64_t evaluate(const Bindings& bindings) const;
    // This size with each symbol in `values` replaced by its size there.
    Size substitute(const std::unordered_map<const Symbol*, Size>& values) const;
    // The largest value possible with every symbol in [0, bound]; nullopt if a symbol is unbounded.
    std::optional<std::int64_t> upper_bound() const;

    std::string str() const;
    // str() cut to about `limit` characters ("..." where cut), for messages: a size nested
    // deeply enough has text too long to print whole.
    std::string brief(std::size_t limit = 240) const;

    // The canonical form part by part, for emitters that compute a size at run time (the ONNX
    // export): the size is constant_term() plus each part's coefficient times its value.
    struct Part {
        enum class Kind { Symbol, Min, Max, FloorDiv } kind;
        SymbolRef symbol;          // Symbol
        std::vector<Size> args;    // Min, Max: two; FloorDiv: one
        std::int64_t divisor = 1;  // FloorDiv (> 0)
        std::int64_t coefficient = 1;
    };
    std::int64_t constant_term() const { return constant_; }
    std::vector<Part> parts() const;

    struct Term;

private:
    std::int64_t constant_ = 0;
    // Sorted by term order; no zero coefficients.
    std::vector<std::pair<std::shared_ptr<const Term>, std::int64_t>> terms_;

    friend struct SizeOps;
};

inline std::ostream& operator<<(std::ostream& out, const Size& s) { return out << s.str(); }

using Shape = std::vector<Size>;

std::string shape_str(const Shape& shape);  // "[B, L, 4]", each size brief() (for messages)
bool shapes_equal(const Shape& a, const Shape& b);  // rank and every size's same_value
// The sizes for these bindings; CompileError if the tensor would have more than kMaxElements.
std::vector<std::int64_t> evaluate_shape(const Shape& shape, const Bindings& bindings);

}  // namespace scanc
