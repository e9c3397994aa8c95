// Tensors at run time: a view (pointer, dtype, sizes, strides in elements, device) and an owning
// handle. Views come from anywhere (NumPy, DLPack, a caller's buffer); backends read views and
// return owning Tensors.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "scanc/ir/dtype.h"

namespace scanc {

enum class DeviceKind : unsigned char { CPU, CUDA };

struct Device {
    DeviceKind kind = DeviceKind::CPU;
    int index = 0;

    bool operator==(const Device&) const = default;
};

struct TensorView {
    void* data = nullptr;
    DType dtype = DType::F32;
    std::vector<std::int64_t> sizes;
    std::vector<std::int64_t> strides;  // in elements; may be 0 (broadcast) or negative
    Device device;

    int rank() const { return static_cast<int>(sizes.size()); }
    std::int64_t numel() const;
    bool is_contiguous() const;  // row-major, no gaps
    template <typename T>
    T* ptr() const {
        return static_cast<T*>(data);
    }
};

std::vector<std::int64_t> contiguous_strides(std::span<const std::int64_t> sizes);
// The elements of a tensor of these (non-negative) sizes: 0 where one is 0, however large the
// others; nullopt past kMaxElements (2^50), the most scanc's sizes allow.
std::optional<std::int64_t> element_count(std::span<const std::int64_t> sizes);

class Tensor {
public:
    Tensor() = default;
    // A new contiguous CPU tensor, 64-byte aligned, uninitialized.
    static Tensor empty(DType dtype, std::vector<std::int64_t> sizes);
    // A tensor over memory kept alive by `owner` (a CUDA allocation, a framework's buffer).
    static Tensor wrap(TensorView view, std::shared_ptr<void> owner);
    // A tensor over this one's memory (`view` lies within it), kept alive by the same owner, so
    // that a view of a view holds no chain of tensors (10000 chained slices were freed by a
    // recursion that deep).
    Tensor alias(TensorView view) const { return wrap(std::move(view), owner_); }

    const TensorView& view() const { return view_; }
    operator const TensorView&() const { return view_; }  // NOLINT
    void* data() const { return view_.data; }
    DType dtype() const { return view_.dtype; }
    const std::vector<std::int64_t>& sizes() const { return view_.sizes; }
    std::int64_t numel() const { return view_.numel(); }
    bool defined() const { return owner_ != nullptr || view_.data != nullptr; }

private:
    TensorView view_;
    std::shared_ptr<void> owner_;
};

// Copies a view of any strides into a new contiguous CPU tensor.
Tensor contiguous_copy(const TensorView& v);
// Copies the elements of `src` into those of `dst` (CPU views of one dtype and shape, any strides
// that keep dst's elements apart; they must not overlap).
void copy_elements(const TensorView& dst, const TensorView& src);

}  // namespace scanc
