// Internal to the reference executor: the evaluation of each node kind. Every value is a
// contiguous CPU Tensor; sizes come from the run's Bindings. Each function checks what only the
// run can know and throws CompileError at the node's place for the user's mistakes.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "scanc/ir/combine_types.h"
#include "scanc/runtime/tensor.h"

namespace scanc::reference {

// Visits every index of `sizes` in row-major order. `strides[k]` (in elements, 0 = broadcast)
// gives operand k's running offset, passed to `visit` as offsets[k].
template <typename Visit>
void for_each_offset(std::span<const std::int64_t> sizes,
                     const std::vector<std::vector<std::int64_t>>& strides, Visit&& visit) {
    std::int64_t total = 1;
    for (auto s : sizes) total *= s;
    if (total == 0) return;
    std::size_t rank = sizes.size(), operands = strides.size();
    std::vector<std::int64_t> index(rank, 0), offsets(operands, 0);
    for (std::int64_t n = 0; n < total; ++n) {
        visit(std::span<const std::int64_t>(offsets));
        for (std::size_t d = rank; d-- > 0;) {
            if (++index[d] < sizes[d]) {
                for (std::size_t k = 0; k < operands; ++k) offsets[k] += strides[k][d];
                break;
            }
            index[d] = 0;
            for (std::size_t k = 0; k < operands; ++k) offsets[k] -= strides[k][d] * (sizes[d] - 1);
        }
    }
}

// Strides (elements) that read contiguous `in` broadcast NumPy-style to `out_sizes`.
// InternalError if it does not broadcast (the builder proved it would).
std::vector<std::int64_t> broadcast_strides(const Tensor& in,
                                            std::span<const std::int64_t> out_sizes);

// An elementwise op over broadcast inputs into a new tensor of `out_sizes`.
Tensor run_elementwise(const Node& node, std::span<const Tensor> args,
                       std::vector<std::int64_t> out_sizes);

// A scan node: inputs = leaves then captured; one output per leaf.
std::vector<Tensor> run_scan(const Node& node, const CombineTypes& types,
                             std::span<const Tensor> inputs);

Tensor run_slice(const Node& node, const Tensor& in, const Bindings& bindings);
Tensor run_concat(const Node& node, std::span<const Tensor> inputs);
Tensor run_interleave(const Node& node, const Tensor& even, const Tensor& odd);

}  // namespace scanc::reference
