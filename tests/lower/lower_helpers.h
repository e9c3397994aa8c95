// Helpers of the lowering tests: combines, random inputs, and running a program (original or
// lowered) on the reference executor so the two can be compared element by element.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "scanc/backends/reference.h"
#include "scanc/dsl/expr.h"
#include "scanc/ir/scalar_eval.h"
#include "scanc/passes/passes.h"

namespace scanc::lower_test {

using dsl::Expr;
using dsl::Exprs;

inline CombineRef sum() {
    return dsl::trace_combine("sum", 1, 0,
                              [](auto& l, auto& r, auto&) { return Exprs{l[0] + r[0]}; });
}

// h = a*h_prev + b: not commutative, two leaves.
inline CombineRef affine() {
    return dsl::trace_combine("affine", 2, 0, [](auto& l, auto& r, auto&) {
        return Exprs{l[0] * r[0], r[0] * l[1] + r[1]};
    });
}

// tau * logaddexp(x/tau, y/tau): one captured value.
inline CombineRef smooth_max() {
    return dsl::trace_combine("smooth_max", 1, 1, [](auto& l, auto& r, auto& c) {
        return Exprs{c[0] * dsl::logaddexp(l[0] / c[0], r[0] / c[0])};
    });
}

template <typename T>
void put(char* e, double v) {
    T x = static_cast<T>(v);
    std::memcpy(e, &x, sizeof x);
}

template <typename T>
double get(const char* e) {
    T x;
    std::memcpy(&x, e, sizeof x);
    return static_cast<double>(x);
}

// Random values for a tensor: integers in [-50, 50], floats uniform in [lo, hi].
inline Tensor random_tensor(DType dtype, const std::vector<std::int64_t>& sizes,
                            std::mt19937_64& rng, double lo = -1, double hi = 1) {
    Tensor t = Tensor::empty(dtype, sizes);
    std::uniform_real_distribution<double> real(lo, hi);
    std::uniform_int_distribution<int> small(-50, 50);
    auto* p = static_cast<char*>(t.data());
    for (std::int64_t i = 0; i < t.numel(); ++i) {
        char* e = p + i * dtype_size(dtype);
        switch (dtype) {
            case DType::F64: put<double>(e, real(rng)); break;
            case DType::F32: put<float>(e, real(rng)); break;
            case DType::I32: put<std::int32_t>(e, small(rng)); break;
            case DType::I64: put<std::int64_t>(e, small(rng)); break;
            default: throw std::logic_error("random_tensor: dtype not used by these tests");
        }
    }
    return t;
}

// The elements of a contiguous tensor as doubles.
inline std::vector<double> as_doubles(const Tensor& t) {
    std::vector<double> out(static_cast<std::size_t>(t.numel()));
    const auto* p = static_cast<const char*>(t.data());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = load_scalar(t.dtype(), p + i * dtype_size(t.dtype())).as_double();
    return out;
}

inline std::vector<Tensor> run_reference(const ProgramRef& p, const std::vector<Tensor>& inputs) {
    std::vector<TensorView> views(inputs.begin(), inputs.end());
    return ReferenceBackend().compile(p)->run(views);
}

// Every output of `lowered` equals the same output of `original` on `inputs`: exactly for
// integers, within rtol (relative to 1 + |want|) for floats.
inline void expect_same_results(const ProgramRef& original, const ProgramRef& lowered,
                                const std::vector<Tensor>& inputs, double rtol = 1e-9) {
    auto want = run_reference(original, inputs);
    auto got = run_reference(lowered, inputs);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t r = 0; r < want.size(); ++r) {
        ASSERT_EQ(got[r].sizes(), want[r].sizes()) << "result " << r;
        ASSERT_EQ(got[r].dtype(), want[r].dtype()) << "result " << r;
        auto g = as_doubles(got[r]), w = as_doubles(want[r]);
        double tol = is_float(want[r].dtype()) ? rtol : 0;
        std::int64_t bad = 0;
        for (std::size_t i = 0; i < w.size(); ++i)
            if (!(std::fabs(g[i] - w[i]) <= tol * (1 + std::fabs(w[i]))) && ++bad <= 3)
                ADD_FAILURE() << "result " << r << " element " << i << ": got " << g[i]
                              << ", want " << w[i];
        ASSERT_EQ(bad, 0) << bad << " elements differ";
    }
}

// ceil(log2 n) by doubling, independent of the pass's bit tricks.
inline int levels_for(std::int64_t n) {
    int levels = 0;
    for (std::int64_t covered = 1; covered < n; covered *= 2) ++levels;
    return levels;
}

}  // namespace scanc::lower_test
