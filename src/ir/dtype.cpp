#include "scanc/ir/dtype.h"

namespace scanc {

std::string_view dtype_name(DType t) {
    switch (t) {
        case DType::Bool: return "bool";
        case DType::I8: return "i8";
        case DType::I16: return "i16";
        case DType::I32: return "i32";
        case DType::I64: return "i64";
        case DType::U8: return "u8";
        case DType::F16: return "f16";
        case DType::BF16: return "bf16";
        case DType::F32: return "f32";
        case DType::F64: return "f64";
    }
    return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
    for (DType t : kAllDTypes)
        if (dtype_name(t) == s) return t;
    return std::nullopt;
}

std::size_t dtype_size(DType t) {
    switch (t) {
        case DType::Bool:
        case DType::I8:
        case DType::U8: return 1;
        case DType::I16:
        case DType::F16:
        case DType::BF16: return 2;
        case DType::I32:
        case DType::F32: return 4;
        case DType::I64:
        case DType::F64: return 8;
    }
    return 0;
}

}  // namespace scanc
