// What runs 16 f32 lanes a vector on AVX-512 (built for it, see CMakeLists.txt; picked at run
// time by ops_dispatch.cpp only on CPUs that have AVX-512F): the register kernel of fix-ups
// (ops_seg_local.inc), whole rows in registers (ops_row_scan.inc), the broadcast op variants
// of the fix-ups' phase 3 (ops_variants.inc), the lane loops of the arithmetic ops (plain, tee
// and streaming) and of f32 and f64 exp, exp2, log, log2, log10, log1p, expm1, tanh, sigmoid,
// softplus and logaddexp (scanc's straight-line functions, float_math.h), and f16 and bf16
// loads, stores and roundings (ops_narrow.inc), where an elementwise prologue and a scan's carry
// rows spend most of their time. The rest of the op table stays AVX2.
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
#include "minmax_regs.h"
#include "transpose_regs.h"
#include "scanc/ir/scalar_eval.h"

namespace scanc::cpu {
namespace avx512 {
namespace {
#include "ops_scalar.inc"
#include "ops_seg_local.inc"
#include "ops_row_scan.inc"
#include "ops_vec.inc"
#include "ops_variants.inc"
#include "ops_narrow.inc"

// The lane loops at 64 bytes a vector: f32 and f64 + - * / and MulAdd / AddMul (through
// lookup_variant, ops_variants.inc; plain, tee and streaming), and f32 and f64 exp, exp2, log,
// log2, log10, log1p, expm1, tanh, sigmoid, softplus, logaddexp, sin and cos; null for the rest
// of the table.
template <Op O>
using ArithmeticF = std::conditional_t<O == Op::Add, AddF,
                    std::conditional_t<O == Op::Sub, SubF, std::conditional_t<O == Op::Mul, MulF, DivF>>>;
struct PlainOps {
    static constexpr bool kBinary = true;
    template <class T, Op O> static constexpr OpFn binary = &binary_loop<T, ArithmeticF<O>>;
    template <class T, bool P> static constexpr OpFn mul_add = &mul_add_loop<T, P>;
};
template <typename T> OpFn transcendental(Op op) {
    switch (op) {
        case Op::Exp: return &unary_loop<T, ExpF>;
        case Op::Log: return &unary_loop<T, LogF>;
        case Op::Exp2: return &unary_loop<T, Exp2F>;
        case Op::Log2: return &unary_loop<T, Log2F>;
        case Op::Log10: return &unary_loop<T, Log10F>;
        case Op::Log1p: return &unary_loop<T, Log1pF>;
        case Op::Expm1: return &unary_loop<T, Expm1F>;
        case Op::Tanh: return &unary_loop<T, TanhF>;
        case Op::Sigmoid: return &unary_loop<T, SigmoidF>;
        case Op::Softplus: return &unary_loop<T, SoftplusF>;
        case Op::Sin: return unary_lanes<T, SinF>();
        case Op::Cos: return unary_lanes<T, CosF>();
        default: return nullptr;
    }
}
// f16 and bf16 loads, stores and roundings of f32 (ops_narrow.inc), 16 lanes a vector.
OpFn narrow_of(const OpKey& k) {
    const DType narrow = k.kind == OpKind::Load || k.kind == OpKind::Store ? k.t : k.t2;
    if (narrow != DType::F16 && narrow != DType::BF16) return nullptr;
    const bool bf16 = narrow == DType::BF16;
    switch (k.kind) {
        case OpKind::Load: return bf16 ? &load_narrow<true> : &load_narrow<false>;
        case OpKind::Store: return bf16 ? &store_narrow<true> : &store_narrow<false>;
        case OpKind::RoundNarrow: return bf16 ? &round_narrow<true> : &round_narrow<false>;
        case OpKind::CastNarrow: return k.t != DType::F32 ? nullptr : bf16 ? &round_narrow<true> : &round_narrow<false>;
        default: return nullptr;
    }
}
OpFn lookup_lanes_of(const OpKey& k) {
    if (k.bcast) return nullptr;  // lookup_bcast_of
    if (OpFn fn = narrow_of(k)) return fn;
    if (k.tee) return lookup_tee_of(k);
    if (OpFn fn = lookup_erf_atan_avx512(k)) return fn;
    if (k.stream) return lookup_variant<StreamOps>(k);
    if (k.kind == OpKind::Binary && k.op == Op::LogAddExp) {
        if (k.t == DType::F32) return &binary_loop<float, LogAddExpF>;
        if (k.t == DType::F64) return &binary_loop<double, LogAddExpF>;
        return nullptr;
    }
    if (k.kind != OpKind::Unary) return lookup_variant<PlainOps>(k);
    if (k.t == DType::F32) return transcendental<float>(k.op);
    if (k.t == DType::F64) return transcendental<double>(k.op);
    return nullptr;
}
}  // namespace
}  // namespace avx512

SegLocalFn seg_local_avx512() { return &avx512::seg_local<avx512::Vec512>; }
RowScanFn row_scan_avx512() { return &avx512::row_scan<avx512::Vec512>; }
OpFn lookup_bcast_avx512(const OpKey& key) { return avx512::lookup_bcast_of(key); }
OpFn lookup_lanes_avx512(const OpKey& key) { return avx512::lookup_lanes_of(key); }

}  // namespace scanc::cpu
