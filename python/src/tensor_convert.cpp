#include "tensor_convert.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "scanc/error.h"

namespace nb = nanobind;

namespace scanc::python {
namespace {

using nb::dlpack::dtype_code;

struct DTypeCode {
    dtype_code code;
    int bits;
    DType dtype;
};

constexpr DTypeCode kDTypeCodes[] = {
    {dtype_code::Bool, 8, DType::Bool},   {dtype_code::Int, 8, DType::I8},
    {dtype_code::Int, 16, DType::I16},    {dtype_code::Int, 32, DType::I32},
    {dtype_code::Int, 64, DType::I64},    {dtype_code::UInt, 8, DType::U8},
    {dtype_code::Float, 16, DType::F16},  {dtype_code::Bfloat, 16, DType::BF16},
    {dtype_code::Float, 32, DType::F32},  {dtype_code::Float, 64, DType::F64},
};

std::optional<DType> from_dlpack(nb::dlpack::dtype t) {
    if (t.lanes != 1) return std::nullopt;
    for (const auto& c : kDTypeCodes)
        if (static_cast<std::uint8_t>(c.code) == t.code && c.bits == t.bits) return c.dtype;
    return std::nullopt;
}

nb::dlpack::dtype to_dlpack(DType t) {
    for (const auto& c : kDTypeCodes)
        if (c.dtype == t)
            return {static_cast<std::uint8_t>(c.code), static_cast<std::uint8_t>(c.bits), 1};
    internal_error(cat("no DLPack code for dtype ", t));
}

std::string dlpack_dtype_str(nb::dlpack::dtype t) {
    static constexpr const char* kCodeNames[] = {"int", "uint", "float", "?", "bfloat", "complex",
                                                 "bool"};
    const char* name = t.code < std::size(kCodeNames) ? kCodeNames[t.code] : "dtype code ";
    std::string s = cat(name, t.code < std::size(kCodeNames) ? "" : std::to_string(t.code),
                        static_cast<int>(t.bits));
    return t.lanes == 1 ? s : cat(s, "x", t.lanes);
}

// bf16 -> f32 is exact: the bf16 bits are the high half of the f32.
Tensor widen_bf16(const Tensor& t) {
    Tensor src = t.view().is_contiguous() ? t : contiguous_copy(t.view());
    Tensor out = Tensor::empty(DType::F32, src.sizes());
    const auto* in = static_cast<const std::uint16_t*>(src.data());
    auto* dst = static_cast<float*>(out.data());
    for (std::int64_t i = 0; i < src.numel(); ++i) {
        std::uint32_t bits = static_cast<std::uint32_t>(in[i]) << 16;
        std::memcpy(&dst[i], &bits, sizeof bits);
    }
    return out;
}

// What an exported array describes: a scanc tensor's memory in DLPack terms.
struct ArrayDesc {
    void* data;
    std::vector<std::size_t> shape;
    std::vector<std::int64_t> strides;
    nb::dlpack::dtype dtype;
    int device_type;
    int device_id;
};

template <typename FrameworkTag>
nb::object export_as(const ArrayDesc& d, nb::handle owner) {
    nb::ndarray<FrameworkTag> array(d.data, d.shape.size(), d.shape.data(), owner,
                                    d.strides.data(), d.dtype, d.device_type, d.device_id);
    return nb::cast(array, nb::rv_policy::reference);
}

}  // namespace

Framework parse_framework(std::string_view name) {
    if (name == "numpy") return Framework::NumPy;
    if (name == "torch") return Framework::Torch;
    if (name == "jax" || name == "jaxlib") return Framework::Jax;
    if (name == "cupy") return Framework::CuPy;
    return Framework::DLPack;
}

void unsupported_dtype(std::string_view what, std::string_view dtype) {
    user_error({}, cat(what, " has dtype ", dtype, ", which scanc does not support; expected one of bool i8 i16 ",
                       "i32 i64 u8 f16 bf16 f32 f64, in the machine's byte order"));
}

TensorView to_view(const InputArray& array, std::string_view what) {
    TensorView view;
    auto dtype = from_dlpack(array.dtype());
    if (!dtype) unsupported_dtype(what, dlpack_dtype_str(array.dtype()));
    view.dtype = *dtype;
    switch (array.device_type()) {
        case nb::device::cpu::value:
        case nb::device::cuda_host::value:  // pinned host memory: the CPU reads it directly
            view.device = {DeviceKind::CPU, 0};
            break;
        case nb::device::cuda::value:
        case nb::device::cuda_managed::value:
            view.device = {DeviceKind::CUDA, array.device_id()};
            break;
        default:
            user_error({}, cat(what, " lives on DLPack device type ", array.device_type(),
                               "; scanc runs on CPU and CUDA memory only"));
    }
    view.data = const_cast<void*>(array.data());
    for (std::size_t d = 0; d < array.ndim(); ++d) {
        view.sizes.push_back(static_cast<std::int64_t>(array.shape(d)));
        view.strides.push_back(array.stride(d));
    }
    return view;
}

nb::object to_python(Tensor tensor, Framework framework) {
    if (framework == Framework::NumPy && tensor.dtype() == DType::BF16 &&
        tensor.view().device.kind == DeviceKind::CPU)
        tensor = widen_bf16(tensor);
    const TensorView& v = tensor.view();
    bool on_cuda = v.device.kind == DeviceKind::CUDA;
    ArrayDesc desc{v.data,
                   std::vector<std::size_t>(v.sizes.begin(), v.sizes.end()),
                   v.strides,
                   to_dlpack(v.dtype),
                   on_cuda ? nb::device::cuda::value : nb::device::cpu::value,
                   v.device.index};
    // The capsule owns the Tensor; the exported array keeps the capsule alive.
    auto* owned = new Tensor(std::move(tensor));
    nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
    switch (framework) {
        case Framework::NumPy:
            if (!on_cuda) return export_as<nb::numpy>(desc, owner);
            break;  // NumPy cannot hold device memory: hand back a DLPack tensor instead
        case Framework::Torch: return export_as<nb::pytorch>(desc, owner);
        case Framework::Jax: return export_as<nb::jax>(desc, owner);
        case Framework::CuPy: return export_as<nb::cupy>(desc, owner);
        case Framework::DLPack: break;
    }
    return export_as<nb::no_framework>(desc, owner);
}

}  // namespace scanc::python
