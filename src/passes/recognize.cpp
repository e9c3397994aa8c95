// recognize: structural matching of a combine's result DAGs against the associative patterns
// backends have fast paths for, modulo commutativity of + * min max logaddexp and the usual
// alternative spellings (`where(x1 > x2, x1, x2)` for max, `x1 or x2` for bool max, ...).
// Matching is purely structural: it never evaluates anything, so it cannot be fooled by values.
#include <cstdint>
#include <limits>

#include "scanc/passes/passes.h"

namespace scanc {

namespace {

// The two operands of `n` if it is the binary op `op`.
std::optional<std::pair<const Node*, const Node*>> operands(const Node* n, Op op) {
    if (n->op != op || n->inputs.size() != 2) return std::nullopt;
    return std::pair{n->inputs[0].get(), n->inputs[1].get()};
}

// `n` is `op(x, y)` or `op(y, x)`.
bool is_commuted(const Node* n, Op op, const Node* x, const Node* y) {
    auto ops = operands(n, op);
    return ops && ((ops->first == x && ops->second == y) || (ops->first == y && ops->second == x));
}

// `n` is a where/select that picks the larger (`want_max`) or smaller of x and y:
// where(x > y, x, y), where(x >= y, x, y), where(y < x, x, y), where(x < y, y, x), ...
bool is_select(const Node* n, const Node* x, const Node* y, bool want_max) {
    if (n->op != Op::Where) return false;
    const Node* cond = n->inputs[0].get();
    const Node* picked = n->inputs[1].get();
    const Node* other = n->inputs[2].get();
    if (!((picked == x && other == y) || (picked == y && other == x))) return false;
    const Node* greater = nullptr;  // the operand the condition says is the larger one
    if (auto ops = operands(cond, Op::Gt)) greater = ops->first;
    if (auto ops = operands(cond, Op::Ge)) greater = ops->first;
    if (auto ops = operands(cond, Op::Lt)) greater = ops->second;
    if (auto ops = operands(cond, Op::Le)) greater = ops->second;
    if (!greater || !is_commuted(cond, cond->op, x, y)) return false;
    return (greater == picked) == want_max;
}

bool is_max(const Node* n, const Node* x, const Node* y) {
    return is_commuted(n, Op::Max, x, y) || is_commuted(n, Op::Or, x, y) ||
           is_select(n, x, y, true);
}

bool is_min(const Node* n, const Node* x, const Node* y) {
    return is_commuted(n, Op::Min, x, y) || is_commuted(n, Op::And, x, y) ||
           is_select(n, x, y, false);
}

// logaddexp(x, y), or log(exp(x) + exp(y)) written out.
bool is_logaddexp(const Node* n, const Node* x, const Node* y) {
    if (is_commuted(n, Op::LogAddExp, x, y)) return true;
    if (n->op != Op::Log) return false;
    auto sum = operands(n->inputs[0].get(), Op::Add);
    auto exp_of = [](const Node* e, const Node* v) {
        return e->op == Op::Exp && e->inputs[0].get() == v;
    };
    return sum && ((exp_of(sum->first, x) && exp_of(sum->second, y)) ||
                   (exp_of(sum->first, y) && exp_of(sum->second, x)));
}

Recognized single_leaf(const Combine& c) {
    const Node* r = c.results[0].get();
    const Node* x = c.left[0].get();
    const Node* y = c.right[0].get();
    Recognized out;
    out.commutative = true;
    if (is_commuted(r, Op::Add, x, y)) out.pattern = Pattern::Sum;
    else if (is_commuted(r, Op::Mul, x, y)) out.pattern = Pattern::Prod;
    else if (is_max(r, x, y)) out.pattern = Pattern::Max;
    else if (is_min(r, x, y)) out.pattern = Pattern::Min;
    else if (is_logaddexp(r, x, y)) out.pattern = Pattern::LogAddExp;
    else return Recognized{};
    out.description = std::string(pattern_name(out.pattern));
    return out;
}

// The affine recurrence h = a * h_prev + b: an element (a, b) is the map h -> a*h + b, and the
// earlier (left) map applies first, so (a1, b1) then (a2, b2) is (a1*a2, a2*b1 + b2). Only that
// order counts: (a1*a2, a1*b2 + b1) composes the other way round (associative, but a different
// recurrence) and stays Unknown.
bool is_affine(const Combine& c, int a, int b) {
    const Node *a1 = c.left[a].get(), *a2 = c.right[a].get();
    const Node *b1 = c.left[b].get(), *b2 = c.right[b].get();
    if (!is_commuted(c.results[a].get(), Op::Mul, a1, a2)) return false;
    auto sum = operands(c.results[b].get(), Op::Add);
    if (!sum) return false;
    return (sum->second == b2 && is_commuted(sum->first, Op::Mul, a2, b1)) ||
           (sum->first == b2 && is_commuted(sum->second, Op::Mul, a2, b1));
}

Recognized two_leaves(const Combine& c) {
    for (int a = 0; a < 2; ++a) {
        if (!is_affine(c, a, 1 - a)) continue;
        Recognized out;
        out.pattern = Pattern::Affine;
        out.a_leaf = a;
        out.b_leaf = 1 - a;
        out.commutative = false;
        out.description = cat("affine (a: ", c.left[a]->name, ", b: ", c.left[1 - a]->name, ")");
        return out;
    }
    return Recognized{};
}

template <typename T>
Scalar int_extreme(DType t, bool highest) {
    using L = std::numeric_limits<T>;
    return Scalar::of_int(t, highest ? L::max() : L::min());
}

// The largest or smallest value of a dtype: +-inf for floats, true/false for bool.
Scalar extreme(DType t, bool highest) {
    switch (t) {
        case DType::Bool: return int_extreme<bool>(t, highest);
        case DType::I8: return int_extreme<std::int8_t>(t, highest);
        case DType::I16: return int_extreme<std::int16_t>(t, highest);
        case DType::I32: return int_extreme<std::int32_t>(t, highest);
        case DType::I64: return int_extreme<std::int64_t>(t, highest);
        case DType::U8: return int_extreme<std::uint8_t>(t, highest);
        default: {
            double inf = std::numeric_limits<double>::infinity();
            return Scalar::of_double(t, highest ? inf : -inf);
        }
    }
}

Scalar constant(DType t, int v) {
    return is_float(t) ? Scalar::of_double(t, v) : Scalar::of_int(t, v);
}

}  // namespace

std::string_view pattern_name(Pattern p) {
    switch (p) {
        case Pattern::Unknown: return "unknown";
        case Pattern::Sum: return "sum";
        case Pattern::Prod: return "prod";
        case Pattern::Max: return "max";
        case Pattern::Min: return "min";
        case Pattern::LogAddExp: return "logaddexp";
        case Pattern::Affine: return "affine";
    }
    return "unknown";
}

Recognized recognize(const Combine& combine) {
    std::size_t leaves = combine.left.size();
    if (combine.results.size() != leaves || combine.right.size() != leaves) return Recognized{};
    if (combine.num_leaves() == 1) return single_leaf(combine);
    if (combine.num_leaves() == 2) return two_leaves(combine);
    return Recognized{};
}

std::optional<std::vector<Scalar>> identity(const Recognized& r, std::span<const DType> leaves) {
    if (r.pattern == Pattern::Unknown) return std::nullopt;
    std::size_t want = r.pattern == Pattern::Affine ? 2 : 1;
    SCANC_INTERNAL_CHECK(leaves.size() == want, "identity of ", pattern_name(r.pattern), " for ",
                         leaves.size(), " leaves");
    DType t = leaves[0];
    switch (r.pattern) {
        case Pattern::Sum: return std::vector{constant(t, 0)};
        case Pattern::Prod: return std::vector{constant(t, 1)};
        case Pattern::Max: return std::vector{extreme(t, false)};
        case Pattern::Min: return std::vector{extreme(t, true)};
        case Pattern::LogAddExp: return std::vector{extreme(t, false)};
        case Pattern::Affine: {
            std::vector<Scalar> out(2);
            out[r.a_leaf] = constant(leaves[r.a_leaf], 1);
            out[r.b_leaf] = constant(leaves[r.b_leaf], 0);
            return out;
        }
        case Pattern::Unknown: break;
    }
    return std::nullopt;
}

}  // namespace scanc
