// The sequential inclusive scan: the definition every parallel backend must reproduce.
#include "reference_ops.h"

#include "scanc/ir/scalar_eval.h"

namespace scanc::reference {

std::vector<Tensor> run_scan(const Node& node, const CombineTypes& types,
                             std::span<const Tensor> inputs) {
    const auto& attr = node.as<ScanAttr>();
    const Combine& combine = *attr.combine;
    int num_leaves = attr.num_leaves;
    int num_captured = static_cast<int>(inputs.size()) - num_leaves;
    std::vector<std::int64_t> sizes = inputs[0].sizes();
    for (int i = 1; i < num_leaves; ++i)
        SCANC_INTERNAL_CHECK(inputs[i].sizes() == sizes, "scan leaves of different sizes");

    std::vector<Tensor> outputs;
    std::vector<DType> leaf_dtypes, captured_dtypes;
    for (int i = 0; i < num_leaves; ++i) {
        leaf_dtypes.push_back(types[combine.left[i].get()].dtype);
        outputs.push_back(Tensor::empty(node.types[i].dtype, sizes));
    }
    for (int c = 0; c < num_captured; ++c)
        captured_dtypes.push_back(types[combine.captured[c].get()].dtype);

    // Iterate over the lines: every coordinate but `dim`, which each line walks.
    int dim = attr.dim;
    std::int64_t length = sizes[dim];
    // Empty lines: nothing to walk, however many (2^40 of them would take hours).
    if (length == 0) return outputs;
    std::vector<std::int64_t> lines = sizes;
    lines[dim] = 1;
    std::vector<std::vector<std::int64_t>> strides = {contiguous_strides(sizes)};
    std::int64_t step = strides[0][dim];
    for (int c = 0; c < num_captured; ++c)
        strides.push_back(broadcast_strides(inputs[num_leaves + c], lines));

    // Reads leaf/captured element `offset` of input k, in the combine's instantiated dtype.
    auto load = [&](int k, std::int64_t offset, DType want) {
        const Tensor& t = inputs[k];
        Scalar v = load_scalar(t.dtype(), static_cast<const char*>(t.data()) +
                                              offset * static_cast<std::int64_t>(dtype_size(t.dtype())));
        return v.dtype == want ? v : convert_scalar(v, want);
    };
    auto store = [&](int i, std::int64_t offset, const Scalar& v) {
        const Tensor& t = outputs[i];
        store_scalar(v.dtype == t.dtype() ? v : convert_scalar(v, t.dtype()),
                     static_cast<char*>(t.data()) + offset * static_cast<std::int64_t>(dtype_size(t.dtype())));
    };

    CombineEvaluator evaluator(combine, types);
    std::vector<Scalar> carry(num_leaves), element(num_leaves), captured(num_captured);
    for_each_offset(lines, strides, [&](std::span<const std::int64_t> off) {
        for (int c = 0; c < num_captured; ++c)
            captured[c] = load(num_leaves + c, off[1 + c], captured_dtypes[c]);
        // Reverse walks from the end; either way the carry (the elements already combined) is
        // the left operand, so reverse = flip, scan, flip.
        auto position = [&](std::int64_t t) {
            return off[0] + (attr.reverse ? length - 1 - t : t) * step;
        };
        // The carry stays in compute precision (f32 for f16/bf16; f64 for an oracle's f32);
        // stores round.
        for (int i = 0; i < num_leaves; ++i) {
            carry[i] = load(i, position(0), leaf_dtypes[i]);
            store(i, position(0), carry[i]);
        }
        for (std::int64_t t = 1; t < length; ++t) {
            std::int64_t p = position(t);
            for (int i = 0; i < num_leaves; ++i) element[i] = load(i, p, leaf_dtypes[i]);
            evaluator.eval(carry, element, captured, carry);
            for (int i = 0; i < num_leaves; ++i) store(i, p, carry[i]);
        }
    });
    return outputs;
}

}  // namespace scanc::reference
