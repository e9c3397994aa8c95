// Slice, concat and interleave: pure data movement along one dim of contiguous tensors.
#include "reference_ops.h"

#include <algorithm>
#include <cstring>

#include "scanc/ir/builder.h"

namespace scanc::reference {

namespace {

std::int64_t product(std::span<const std::int64_t> sizes) {
    std::int64_t n = 1;
    for (auto s : sizes) n *= s;
    return n;
}

// Copies src[o, src_start + k*src_step, :] to dst[o, dst_start + k*dst_step, :] for k < count,
// where o runs over the dims before `dim` (the same in both tensors).
void copy_along(const Tensor& src, std::int64_t src_start, std::int64_t src_step, const Tensor& dst,
                std::int64_t dst_start, std::int64_t dst_step, std::int64_t count, int dim) {
    std::span<const std::int64_t> sizes = src.sizes();
    std::int64_t outer = product(sizes.subspan(0, dim));
    std::int64_t inner = product(sizes.subspan(dim + 1));
    std::int64_t src_len = sizes[dim], dst_len = dst.sizes()[dim];
    auto elem = static_cast<std::int64_t>(dtype_size(src.dtype()));
    auto bytes = static_cast<std::size_t>(inner * elem);
    if (bytes == 0) return;
    const auto* s = static_cast<const char*>(src.data());
    auto* d = static_cast<char*>(dst.data());
    for (std::int64_t o = 0; o < outer; ++o)
        for (std::int64_t k = 0; k < count; ++k)
            std::memcpy(d + ((o * dst_len + dst_start + k * dst_step) * inner) * elem,
                        s + ((o * src_len + src_start + k * src_step) * inner) * elem, bytes);
}

}  // namespace

Tensor run_slice(const Node& node, const Tensor& in, const Bindings& bindings) {
    const auto& attr = node.as<SliceAttr>();
    std::int64_t n = in.sizes()[attr.dim];
    // A bound whose value leaves int64 is an error at the slice (the shape's simplified length
    // may still fit: the CPU backend takes that).
    const auto [start, count] = located_sizes(node.loc, [&] { return slice_extent(attr, n, bindings); });
    std::vector<std::int64_t> sizes = in.sizes();
    sizes[attr.dim] = count;
    Tensor out = Tensor::empty(in.dtype(), sizes);
    copy_along(in, start, attr.step, out, 0, 1, count, attr.dim);
    return out;
}

Tensor run_concat(const Node& node, std::span<const Tensor> inputs) {
    int dim = node.as<ConcatAttr>().dim;
    std::vector<std::int64_t> sizes = inputs[0].sizes();
    sizes[dim] = 0;
    for (const Tensor& t : inputs) sizes[dim] += t.sizes()[dim];
    Tensor out = Tensor::empty(node.type().dtype, sizes);
    std::int64_t at = 0;
    for (const Tensor& t : inputs) {
        SCANC_INTERNAL_CHECK(t.dtype() == out.dtype(), "concat of ", t.dtype(), " into ", out.dtype());
        copy_along(t, 0, 1, out, at, 1, t.sizes()[dim], dim);
        at += t.sizes()[dim];
    }
    return out;
}

Tensor run_interleave(const Node& node, const Tensor& even, const Tensor& odd) {
    int dim = node.as<InterleaveAttr>().dim;
    std::int64_t ne = even.sizes()[dim], no = odd.sizes()[dim];
    check_interleave_lengths(node.loc, dim, ne, no);
    std::vector<std::int64_t> sizes = even.sizes();
    sizes[dim] = ne + no;
    Tensor out = Tensor::empty(node.type().dtype, sizes);
    copy_along(even, 0, 1, out, 0, 2, ne, dim);
    copy_along(odd, 0, 1, out, 1, 2, no, dim);
    return out;
}

}  // namespace scanc::reference
