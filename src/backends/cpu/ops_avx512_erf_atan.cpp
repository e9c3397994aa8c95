// The AVX-512 lane loops of f32 and f64 erf, erfc, atan and atan2 (float_math_erf_atan.h, each
// forced inline into its loop): a file of their own, built for AVX-512 like ops_avx512.cpp
// (picked at run time by it), where their size would take GCC's inlining budget from that
// file's other loops (exp, log1p and softplus of f64 lost theirs).
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include <immintrin.h>

#include "../../ir/float_math.h"
#include "../../ir/float_math_erf_atan.h"
#include "bytecode.h"
#include "scanc/ir/scalar_eval.h"

namespace scanc::cpu {
namespace avx512_erf_atan {
namespace {
#include "ops_scalar.inc"
#include "ops_vec.inc"

template <typename T>
OpFn lanes_of(const OpKey& k) {
    if (k.kind == OpKind::Binary) return k.op == Op::Atan2 ? &binary_loop<T, Atan2F> : nullptr;
    if (k.kind != OpKind::Unary) return nullptr;
    switch (k.op) {
        case Op::Erf: return &unary_loop<T, ErfF>;
        case Op::Erfc: return &unary_loop<T, ErfcF>;
        case Op::Atan: return &unary_loop<T, AtanF>;
        default: return nullptr;
    }
}
}  // namespace
}  // namespace avx512_erf_atan

OpFn lookup_erf_atan_avx512(const OpKey& k) {
    if (k.bcast || k.tee || k.stream) return nullptr;
    if (k.t == DType::F32) return avx512_erf_atan::lanes_of<float>(k);
    if (k.t == DType::F64) return avx512_erf_atan::lanes_of<double>(k);
    return nullptr;
}

}  // namespace scanc::cpu
