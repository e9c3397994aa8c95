// Combines shared by the pass tests, traced with the C++ DSL. Leaves are named as a user would
// write them in a .scan file so descriptions and counterexamples read naturally.
#pragma once

#include "scanc/dsl/expr.h"

namespace scanc::test {

using dsl::Expr;
using dsl::Exprs;

// A one-leaf combine `name(x1 | x2) { return fn(x1, x2) }`.
template <typename Fn>
CombineRef binary(std::string name, Fn fn) {
    return dsl::trace_combine(
        std::move(name), 1, 0,
        [fn](const Exprs& l, const Exprs& r, const Exprs&) { return Exprs{fn(l[0], r[0])}; },
        {"x1", "x2"});
}

// A two-leaf combine over (a, b) params named a1, b1 | a2, b2.
template <typename Fn>
CombineRef pair(std::string name, Fn fn) {
    return dsl::trace_combine(
        std::move(name), 2, 0,
        [fn](const Exprs& l, const Exprs& r, const Exprs&) { return fn(l[0], l[1], r[0], r[1]); },
        {"a1", "b1", "a2", "b2"});
}

// h = a*h_prev + b: the earlier map applies first.
inline CombineRef affine() {
    return pair("affine", [](Expr a1, Expr b1, Expr a2, Expr b2) {
        return Exprs{a1 * a2, a2 * b1 + b2};
    });
}

// Row-major 2x2 matrices (m11, m12, m21, m22), left times right: not commutative.
inline CombineRef matmul2x2() {
    return dsl::trace_combine("matmul", 4, 0, [](const Exprs& l, const Exprs& r, const Exprs&) {
        return Exprs{l[0] * r[0] + l[1] * r[2], l[0] * r[1] + l[1] * r[3],
                     l[2] * r[0] + l[3] * r[2], l[2] * r[1] + l[3] * r[3]};
    });
}

// Chan et al.'s parallel merge of (count, mean, M2).
inline CombineRef welford() {
    return dsl::trace_combine("welford", 3, 0, [](const Exprs& l, const Exprs& r, const Exprs&) {
        Expr n = l[0] + r[0];
        Expr delta = r[1] - l[1];
        return Exprs{n, l[1] + delta * r[0] / n, l[2] + r[2] + delta * delta * l[0] * r[0] / n};
    });
}

// (value, segment-start flag): a set flag on the right restarts the sum.
inline CombineRef segmented_sum() {
    return dsl::trace_combine("segsum", 2, 0, [](const Exprs& l, const Exprs& r, const Exprs&) {
        return Exprs{dsl::where(r[1], r[0], l[0] + r[0]), l[1] || r[1]};
    });
}

inline CombineRef smooth_max() {
    return dsl::trace_combine(
        "smooth_max", 1, 1,
        [](const Exprs& l, const Exprs& r, const Exprs& c) {
            return Exprs{c[0] * dsl::logaddexp(l[0] / c[0], r[0] / c[0])};
        },
        {"x1", "x2", "tau"});
}

}  // namespace scanc::test
