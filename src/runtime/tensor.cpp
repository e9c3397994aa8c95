#include "scanc/runtime/tensor.h"

#include <cstdlib>
#include <cstring>

#include "scanc/error.h"
#include "scanc/ir/size.h"  // kMaxElements

namespace scanc {

namespace {
bool has_zero(std::span<const std::int64_t> sizes) {
    for (auto s : sizes)
        if (s == 0) return true;
    return false;
}
}  // namespace

std::int64_t TensorView::numel() const {
    if (has_zero(sizes)) return 0;  // before any product: the other sizes may be huge
    std::int64_t n = 1;
    for (auto s : sizes) n *= s;
    return n;
}

std::vector<std::int64_t> contiguous_strides(std::span<const std::int64_t> sizes) {
    std::vector<std::int64_t> strides(sizes.size());
    std::int64_t stride = 1;
    for (std::size_t i = sizes.size(); i-- > 0;) {
        strides[i] = stride;
        // Only an empty tensor's sizes can overflow (others hold at most 2^50 elements); its
        // strides address nothing, so 0 past the overflow.
        if (__builtin_mul_overflow(stride, sizes[i], &stride)) stride = 0;
    }
    return strides;
}

std::optional<std::int64_t> element_count(std::span<const std::int64_t> sizes) {
    if (has_zero(sizes)) return 0;  // before any product: the other sizes may be huge
    std::int64_t n = 1;
    for (auto s : sizes)
        if (__builtin_mul_overflow(n, s, &n) || n > kMaxElements) return std::nullopt;
    return n;
}

bool TensorView::is_contiguous() const {
    if (has_zero(sizes)) return true;
    std::int64_t expected = 1;
    for (std::size_t i = sizes.size(); i-- > 0;) {
        if (sizes[i] != 1 && strides[i] != expected) return false;
        expected *= sizes[i];
    }
    return true;
}

Tensor Tensor::empty(DType dtype, std::vector<std::int64_t> sizes) {
    Tensor t;
    for (auto s : sizes)
        if (s < 0) user_error({}, cat("Tensor::empty: size ", s, " is negative"));
    // evaluate_shape refuses larger sizes; an overflow here would allocate too little.
    const std::optional<std::int64_t> n = element_count(sizes);
    SCANC_INTERNAL_CHECK(n.has_value(), "a tensor of more than 2^50 elements");
    std::size_t bytes = static_cast<std::size_t>(*n) * dtype_size(dtype);
    std::size_t rounded = (bytes + 63) / 64 * 64;
    void* data = std::aligned_alloc(64, rounded ? rounded : 64);
    if (!data) throw RuntimeError(cat("out of memory allocating ", bytes, " bytes"));
    t.owner_ = std::shared_ptr<void>(data, std::free);
    t.view_.data = data;
    t.view_.dtype = dtype;
    t.view_.strides = contiguous_strides(sizes);
    t.view_.sizes = std::move(sizes);
    return t;
}

Tensor Tensor::wrap(TensorView view, std::shared_ptr<void> owner) {
    Tensor t;
    t.view_ = std::move(view);
    t.owner_ = std::move(owner);
    return t;
}

void copy_elements(const TensorView& dst, const TensorView& src) {
    SCANC_INTERNAL_CHECK(dst.device.kind == DeviceKind::CPU && src.device.kind == DeviceKind::CPU,
                         "copy_elements of a device tensor");
    SCANC_INTERNAL_CHECK(dst.dtype == src.dtype && dst.sizes == src.sizes, "copy_elements between unlike views");
    const std::int64_t n = src.numel(), elem = static_cast<std::int64_t>(dtype_size(src.dtype));
    if (n == 0) return;
    if (src.is_contiguous() && dst.is_contiguous()) {
        std::memcpy(dst.data, src.data, static_cast<std::size_t>(n * elem));
        return;
    }
    // Rows along the last dim, the others walked in row-major order with an index counter; a row
    // is one memcpy where both sides are contiguous along it.
    const int rank = src.rank();
    const std::int64_t len = src.sizes[rank - 1], ds = dst.strides[rank - 1], ss = src.strides[rank - 1];
    const bool runs = ds == 1 && ss == 1;
    std::vector<std::int64_t> index(rank - 1, 0);
    auto* d = static_cast<char*>(dst.data);
    const auto* s = static_cast<const char*>(src.data);
    for (std::int64_t row = 0; row < n / len; ++row) {
        std::int64_t od = 0, os = 0;
        for (int k = 0; k + 1 < rank; ++k) od += index[k] * dst.strides[k], os += index[k] * src.strides[k];
        char* dr = d + od * elem;
        const char* sr = s + os * elem;
        if (runs) std::memcpy(dr, sr, static_cast<std::size_t>(len * elem));
        else
            for (std::int64_t i = 0; i < len; ++i) std::memcpy(dr + i * ds * elem, sr + i * ss * elem, elem);
        for (int k = rank - 1; k-- > 0;) {
            if (++index[k] < src.sizes[k]) break;
            index[k] = 0;
        }
    }
}

Tensor contiguous_copy(const TensorView& v) {
    SCANC_INTERNAL_CHECK(v.device.kind == DeviceKind::CPU, "contiguous_copy of a device tensor");
    Tensor out = Tensor::empty(v.dtype, v.sizes);
    copy_elements(out.view(), v);
    return out;
}

}  // namespace scanc
