// Test helpers: tensors made from and read back into plain C++ vectors with raw memory copies,
// so expected values never pass through the scalar semantics under test.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "scanc/runtime/tensor.h"

namespace scanc::testing {

template <typename T>
Tensor tensor_of(DType dtype, std::vector<std::int64_t> sizes, const std::vector<T>& values) {
    Tensor t = Tensor::empty(dtype, std::move(sizes));
    if (static_cast<std::size_t>(t.numel()) != values.size() || sizeof(T) != dtype_size(dtype))
        throw std::logic_error("tensor_of: element count or size mismatch");
    if (!values.empty()) std::memcpy(t.data(), values.data(), values.size() * sizeof(T));
    return t;
}

// The elements of a tensor of any strides, in row-major order.
template <typename T>
std::vector<T> values_of(const TensorView& v) {
    if (sizeof(T) != dtype_size(v.dtype)) throw std::logic_error("values_of: element size mismatch");
    std::vector<T> out;
    std::int64_t n = v.numel();
    std::vector<std::int64_t> index(v.sizes.size(), 0);
    for (std::int64_t k = 0; k < n; ++k) {
        std::int64_t offset = 0;
        for (std::size_t d = 0; d < index.size(); ++d) offset += index[d] * v.strides[d];
        T x;
        std::memcpy(&x, static_cast<const char*>(v.data) + offset * static_cast<std::int64_t>(sizeof(T)),
                    sizeof(T));
        out.push_back(x);
        for (std::size_t d = index.size(); d-- > 0;) {
            if (++index[d] < v.sizes[d]) break;
            index[d] = 0;
        }
    }
    return out;
}

inline std::vector<double> uniform(std::size_t n, double lo, double hi, std::mt19937_64& rng) {
    std::uniform_real_distribution<double> dist(lo, hi);
    std::vector<double> out(n);
    for (auto& x : out) x = dist(rng);
    return out;
}

inline bool close(double got, double want, double rel = 1e-9) {
    if (std::isnan(want)) return std::isnan(got);
    if (std::isinf(want)) return got == want;
    return std::fabs(got - want) <= rel * std::max(1.0, std::fabs(want));
}

// The f16 value nearest to x (ties to an even mantissa; past the largest finite value by half
// an ulp or more: inf), found by search in the table of every finite f16.
double nearest_f16(double x);
// Same for bfloat16.
double nearest_bf16(double x);

}  // namespace scanc::testing
