// Slice (a view: no copy), Concat and Interleave (strided copies).
#include <algorithm>
#include <cstring>

#include "run_stage.h"
#include "scanc/ir/builder.h"
#include "scanc/error.h"

namespace scanc::cpu {

namespace {

// A view of `t` narrowed along `dim` to [start, start + len*step) with the given step.
Tensor narrow(const Tensor& t, int dim, std::int64_t start, std::int64_t len, std::int64_t step) {
    TensorView v = t.view();
    std::size_t e = dtype_size(v.dtype);
    if (len > 0) v.data = static_cast<char*>(v.data) + start * v.strides[dim] * static_cast<std::int64_t>(e);
    v.sizes[dim] = len;
    if (len > 1) v.strides[dim] *= step;  // one element has no next one to step to
    return t.alias(std::move(v));
}

}  // namespace

void run_structural(const Stage& stage, std::vector<Tensor>& values, const Bindings& bindings) {
    const Node& node = *stage.node;
    if (stage.kind == Stage::Kind::Slice) {
        const auto& attr = node.as<SliceAttr>();
        const Tensor& x = values[stage.inputs[0]];
        std::int64_t n = x.sizes()[attr.dim];
        // The bounds, not the folded shape: a bound outside int64 is an error at the slice.
        const auto [start, count] = located_sizes(node.loc, [&] { return slice_extent(attr, n, bindings); });
        values[stage.outputs[0]] = narrow(x, attr.dim, start, count, attr.step);
        return;
    }
    Tensor out = Tensor::empty(node.type().dtype, evaluate_shape(node.type().shape, bindings));
    if (stage.kind == Stage::Kind::Concat) {
        int dim = node.as<ConcatAttr>().dim;
        std::int64_t at = 0;
        for (int v : stage.inputs) {
            const Tensor& x = values[v];
            std::int64_t len = x.sizes()[dim];
            copy_elements(narrow(out, dim, at, len, 1).view(), x.view());
            at += len;
        }
    } else {
        int dim = node.as<InterleaveAttr>().dim;
        const Tensor& even = values[stage.inputs[0]];
        const Tensor& odd = values[stage.inputs[1]];
        std::int64_t ne = even.sizes()[dim], no = odd.sizes()[dim];
        check_interleave_lengths(node.loc, dim, ne, no);
        copy_elements(narrow(out, dim, 0, ne, 2).view(), even.view());
        copy_elements(narrow(out, dim, 1, no, 2).view(), odd.view());
    }
    values[stage.outputs[0]] = std::move(out);
}

}  // namespace scanc::cpu
