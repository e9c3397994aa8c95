// Internal: rounding doubles to the narrow float formats (f16, bf16), used by casts from f64,
// where going through f32 first could round twice.
#pragma once

namespace scanc::detail {

// x rounded to IEEE binary16 (RNE; overflow to +-inf; NaN, inf and signed zero kept).
double round_double_to_f16(double x);
// x rounded to bfloat16 (RNE; overflow to +-inf; NaN, inf and signed zero kept).
double round_double_to_bf16(double x);

}  // namespace scanc::detail
