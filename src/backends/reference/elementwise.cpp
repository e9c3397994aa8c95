// Elementwise ops with NumPy broadcasting, one scalar at a time through eval_op.
#include "reference_ops.h"

#include "scanc/ir/scalar_eval.h"

namespace scanc::reference {

std::vector<std::int64_t> broadcast_strides(const Tensor& in,
                                            std::span<const std::int64_t> out_sizes) {
    const auto& sizes = in.sizes();
    SCANC_INTERNAL_CHECK(sizes.size() <= out_sizes.size(), "broadcast of rank ", sizes.size(),
                         " to rank ", out_sizes.size());
    std::vector<std::int64_t> contiguous = contiguous_strides(sizes);
    std::vector<std::int64_t> strides(out_sizes.size(), 0);
    std::size_t offset = out_sizes.size() - sizes.size();
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        std::int64_t want = out_sizes[i + offset];
        SCANC_INTERNAL_CHECK(sizes[i] == want || sizes[i] == 1, "size ", sizes[i],
                             " does not broadcast to ", want, " along dim ", i + offset);
        strides[i + offset] = sizes[i] == 1 ? 0 : contiguous[i];
    }
    return strides;
}

Tensor run_elementwise(const Node& node, std::span<const Tensor> args,
                       std::vector<std::int64_t> out_sizes) {
    const Type& type = node.type();
    Tensor out = Tensor::empty(type.dtype, std::move(out_sizes));
    std::size_t n = args.size();
    SCANC_INTERNAL_CHECK(n >= 1 && n <= 3, "elementwise op ", node.op, " with ", n, " inputs");
    std::vector<std::vector<std::int64_t>> strides;
    ScalarType arg_types[3];
    for (std::size_t k = 0; k < n; ++k) {
        strides.push_back(broadcast_strides(args[k], out.sizes()));
        const Type& t = node.inputs[k]->type();
        arg_types[k] = {t.dtype, t.weak};
    }
    strides.push_back(out.view().strides);
    ScalarType result{type.dtype, type.weak};
    std::size_t out_elem = dtype_size(type.dtype);
    auto* dst = static_cast<char*>(out.data());
    Scalar values[3];
    for_each_offset(out.sizes(), strides, [&](std::span<const std::int64_t> off) {
        for (std::size_t k = 0; k < n; ++k) {
            const auto* src = static_cast<const char*>(args[k].data());
            values[k] = load_scalar(args[k].dtype(), src + off[k] * dtype_size(args[k].dtype()));
        }
        Scalar r = eval_op(node.op, std::span<const Scalar>(values, n), result,
                           std::span<const ScalarType>(arg_types, n));
        store_scalar(r, dst + off[n] * out_elem);
    });
    return out;
}

}  // namespace scanc::reference
