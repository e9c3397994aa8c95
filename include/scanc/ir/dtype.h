// Element types of tensors and scalar values.
#pragma once

#include <cstddef>
#include <optional>
#include <ostream>
#include <string_view>

namespace scanc {

enum class DType : unsigned char { Bool, I8, I16, I32, I64, U8, F16, BF16, F32, F64 };

inline constexpr DType kAllDTypes[] = {DType::Bool, DType::I8,  DType::I16,  DType::I32, DType::I64,
                                       DType::U8,   DType::F16, DType::BF16, DType::F32, DType::F64};

std::string_view dtype_name(DType t);                 // "f32"
std::optional<DType> parse_dtype(std::string_view s);  // "f32" -> F32
std::size_t dtype_size(DType t);                      // bytes per element

inline bool is_float(DType t) {
    return t == DType::F16 || t == DType::BF16 || t == DType::F32 || t == DType::F64;
}
inline bool is_integer(DType t) {  // bool is not an integer here
    return t == DType::I8 || t == DType::I16 || t == DType::I32 || t == DType::I64 || t == DType::U8;
}
inline bool is_signed_integer(DType t) { return is_integer(t) && t != DType::U8; }
// f16 and bf16 are stored narrow but computed in f32 (DESIGN §1).
inline DType compute_dtype(DType t) { return (t == DType::F16 || t == DType::BF16) ? DType::F32 : t; }

inline std::ostream& operator<<(std::ostream& out, DType t) { return out << dtype_name(t); }

}  // namespace scanc
