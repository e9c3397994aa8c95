// The one definition of scalar semantics (see scalar_eval.h): conversions, every elementwise op
// on every dtype, loads/stores, and combine evaluation.
#include "scanc/ir/scalar_eval.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <unordered_map>

#include "float_math.h"
#include "float_math_erf_atan.h"
#include "half.h"

namespace scanc {

namespace {

Scalar make_float(DType t, double v) {
    Scalar s;
    s.dtype = t;
    s.f = v;
    return s;
}

Scalar make_int(DType t, std::int64_t v) {
    Scalar s;
    s.dtype = t;
    s.i = v;
    return s;
}

Scalar make_bool(bool b) { return make_int(DType::Bool, b ? 1 : 0); }

// Calls visit(T{}) with the C++ type T of integer dtype t.
template <typename Visit>
decltype(auto) with_integer_type(DType t, Visit&& visit) {
    switch (t) {
        case DType::I8: return visit(std::int8_t{});
        case DType::I16: return visit(std::int16_t{});
        case DType::I32: return visit(std::int32_t{});
        case DType::I64: return visit(std::int64_t{});
        case DType::U8: return visit(std::uint8_t{});
        default: internal_error(cat("not an integer dtype: ", t));
    }
}

// Two's complement wrap into t (C++20 narrowing conversions are modular).
std::int64_t wrap(std::int64_t v, DType t) {
    if (t == DType::Bool) return v != 0;
    return with_integer_type(t, [v](auto x) -> std::int64_t { return static_cast<decltype(x)>(v); });
}

template <typename T>
std::int64_t saturate_to(double v) {
    using L = std::numeric_limits<T>;
    if (std::isnan(v)) return 0;
    // The upper limit as a double is max+1 (a power of two, exact); anything at or above it
    // saturates, and everything below truncates into range.
    if (v <= static_cast<double>(L::lowest())) return L::lowest();
    if (v >= std::ldexp(1.0, L::digits)) return L::max();
    return static_cast<T>(v);
}

std::int64_t saturate(double v, DType t) {
    if (t == DType::Bool) return v != 0;
    return with_integer_type(t, [v](auto x) { return saturate_to<decltype(x)>(v); });
}

// Explicit cast: like convert_scalar, but f16/bf16 targets round to the narrow type.
Scalar cast_scalar(const Scalar& v, DType t) {
    if (t != DType::F16 && t != DType::BF16) return convert_scalar(v, t);
    double x = v.as_double();
    return make_float(t, t == DType::F16 ? detail::round_double_to_f16(x)
                                         : detail::round_double_to_bf16(x));
}

// Operand dtype of a binary op after weak operands adopt the other's dtype (builder.cpp's
// unify, without the checks: types were checked when the IR was built).
DType unified(ScalarType a, ScalarType b) {
    if (a.weak && b.weak) return (a.dtype == DType::F64 || b.dtype == DType::F64) ? DType::F64 : DType::I64;
    return a.weak ? b.dtype : a.dtype;
}

// Comparisons of two numbers of one type (IEEE: NaN compares unequal to everything).
template <typename T>
Scalar compare(Op op, T x, T y) {
    switch (op) {
        case Op::Lt: return make_bool(x < y);
        case Op::Le: return make_bool(x <= y);
        case Op::Gt: return make_bool(x > y);
        case Op::Ge: return make_bool(x >= y);
        case Op::Eq: return make_bool(x == y);
        default: return make_bool(x != y);
    }
}

template <typename T>
Scalar float_op(Op op, const Scalar* a, DType rt) {
    T x = static_cast<T>(a[0].f);
    T y = static_cast<T>(a[1].f);  // unused by unary ops; a[1] is always readable
    if (is_comparison(op)) return compare(op, x, y);
    auto out = [rt](T v) { return make_float(rt, static_cast<double>(v)); };
    switch (op) {
        case Op::Neg: return out(-x);
        case Op::Add: return out(x + y);
        case Op::Sub: return out(x - y);
        case Op::Mul: return out(x * y);
        case Op::Div: return out(x / y);
        case Op::Exp: return out(exp_of(x));
        case Op::Log: return out(log_of(x));
        case Op::Exp2: return out(exp2_of(x));
        case Op::Log2: return out(log2_of(x));
        case Op::Log10: return out(log10_of(x));
        case Op::Erf: return out(erf_of(x));
        case Op::Erfc: return out(erfc_of(x));
        case Op::Log1p: return out(log1p_of(x));
        case Op::Expm1: return out(expm1_of(x));
        case Op::Sqrt: return out(std::sqrt(x));
        case Op::Rsqrt: return out(T(1) / std::sqrt(x));
        case Op::Abs: return out(std::fabs(x));
        case Op::Tanh: return out(tanh_of(x));
        case Op::Sigmoid: return out(sigmoid_of(x));
        case Op::Softplus: return out(softplus_of(x));
        case Op::Sin: return out(sin_of(x));
        case Op::Cos: return out(cos_of(x));
        case Op::Atan: return out(atan_of(x));
        case Op::Floor: return out(std::floor(x));
        case Op::Ceil: return out(std::ceil(x));
        case Op::Pow: return out(std::pow(x, y));
        case Op::Atan2: return out(atan2_of(x, y));
        case Op::Min: return out(std::isnan(x) ? x : std::isnan(y) ? y : std::min(x, y));
        case Op::Max: return out(std::isnan(x) ? x : std::isnan(y) ? y : std::max(x, y));
        case Op::LogAddExp: return out(logaddexp_of(x, y));
        default: internal_error(cat("`", op_info(op).spelling, "` on floats"));
    }
}

template <typename T>
Scalar int_op(Op op, const Scalar* a, DType rt) {
    using U = std::make_unsigned_t<T>;
    // Narrow types promote to int, where products could overflow: widen to an unsigned type.
    using W = std::conditional_t<(sizeof(T) < 4), std::uint32_t, U>;
    constexpr int bits = static_cast<int>(sizeof(T)) * 8;
    T x = static_cast<T>(a[0].i), y = static_cast<T>(a[1].i);
    W ux = static_cast<U>(x), uy = static_cast<U>(y);
    auto out = [rt](W v) { return make_int(rt, static_cast<T>(static_cast<U>(v))); };
    constexpr T lowest = std::numeric_limits<T>::lowest();
    bool overflowing = std::is_signed_v<T> && x == lowest && y == static_cast<T>(-1);
    if (is_comparison(op)) return compare(op, x, y);
    switch (op) {
        case Op::Neg: return out(W(0) - ux);
        case Op::Add: return out(ux + uy);
        case Op::Sub: return out(ux - uy);
        case Op::Mul: return out(ux * uy);
        case Op::Div: return y == 0 ? out(0) : overflowing ? out(ux) : out(static_cast<U>(x / y));
        case Op::Mod: return y == 0 ? out(ux) : overflowing ? out(0) : out(static_cast<U>(x % y));
        case Op::Shl: return out(ux << (uy & (bits - 1)));
        case Op::Shr: return out(static_cast<U>(static_cast<T>(x >> (uy & (bits - 1)))));
        case Op::BitAnd: return out(ux & uy);
        case Op::BitOr: return out(ux | uy);
        case Op::BitXor: return out(ux ^ uy);
        case Op::Abs: return x < 0 ? out(W(0) - ux) : out(ux);
        case Op::Min: return out(static_cast<U>(std::min(x, y)));
        case Op::Max: return out(static_cast<U>(std::max(x, y)));
        default: internal_error(cat("`", op_info(op).spelling, "` on integers"));
    }
}

Scalar bool_op(Op op, const Scalar* a) {
    bool x = a[0].i != 0, y = a[1].i != 0;
    switch (op) {
        case Op::Not: return make_bool(!x);
        case Op::And:
        case Op::BitAnd:
        case Op::Min: return make_bool(x && y);
        case Op::Or:
        case Op::BitOr:
        case Op::Max: return make_bool(x || y);
        case Op::BitXor:
        case Op::Ne: return make_bool(x != y);
        case Op::Eq: return make_bool(x == y);
        case Op::Lt: return make_bool(x < y);
        case Op::Le: return make_bool(x <= y);
        case Op::Gt: return make_bool(x > y);
        case Op::Ge: return make_bool(x >= y);
        case Op::Abs: return make_bool(x);
        default: internal_error(cat("`", op_info(op).spelling, "` on bool"));
    }
}

}  // namespace

Scalar Scalar::of_double(DType t, double v) {
    if (is_float(t)) return cast_scalar(make_float(DType::F64, v), t);
    return make_int(t, saturate(v, t));
}

Scalar Scalar::of_int(DType t, std::int64_t v) { return cast_scalar(make_int(DType::I64, v), t); }

double Scalar::as_double() const { return is_float(dtype) ? f : static_cast<double>(i); }

Scalar convert_scalar(const Scalar& v, DType t) {
    if (is_float(t)) {
        if (t == DType::F64) return make_float(t, v.as_double());
        // f32 compute precision (also for f16/bf16); int64 -> float rounds once, directly.
        float x = is_float(v.dtype) ? static_cast<float>(v.f) : static_cast<float>(v.i);
        return make_float(t, x);
    }
    if (is_float(v.dtype)) return make_int(t, saturate(v.f, t));
    return make_int(t, wrap(v.i, t));
}

Scalar eval_op(Op op, std::span<const Scalar> args, ScalarType result,
               std::span<const ScalarType> arg_types) {
    if (op == Op::Cast) return cast_scalar(args[0], result.dtype);
    if (op == Op::Where) return convert_scalar(args[0].i != 0 ? args[1] : args[2], result.dtype);
    DType operand = is_comparison(op) ? unified(arg_types[0], arg_types[1]) : result.dtype;
    Scalar a[2];
    for (std::size_t k = 0; k < args.size() && k < 2; ++k)
        a[k] = args[k].dtype == operand ? args[k] : convert_scalar(args[k], operand);
    DType rt = result.dtype;
    switch (operand) {
        case DType::F64: return float_op<double>(op, a, rt);
        case DType::F32:
        case DType::F16:
        case DType::BF16: return float_op<float>(op, a, rt);
        case DType::Bool: return bool_op(op, a);
        default: return with_integer_type(operand, [&](auto x) { return int_op<decltype(x)>(op, a, rt); });
    }
}

Scalar load_scalar(DType t, const void* p) {
    auto get = [p]<typename T>(T) {
        T v;
        std::memcpy(&v, p, sizeof v);
        return v;
    };
    switch (t) {
        case DType::Bool: return make_bool(get(std::uint8_t{}) != 0);
        case DType::I8: return make_int(t, get(std::int8_t{}));
        case DType::I16: return make_int(t, get(std::int16_t{}));
        case DType::I32: return make_int(t, get(std::int32_t{}));
        case DType::I64: return make_int(t, get(std::int64_t{}));
        case DType::U8: return make_int(t, get(std::uint8_t{}));
        case DType::F16: return make_float(t, f16_from_bits(get(std::uint16_t{})));
        case DType::BF16: return make_float(t, bf16_from_bits(get(std::uint16_t{})));
        case DType::F32: return make_float(t, get(float{}));
        case DType::F64: return make_float(t, get(double{}));
    }
    internal_error("load_scalar: unknown dtype");
}

void store_scalar(const Scalar& v, void* p) {
    auto put = [p](auto x) { std::memcpy(p, &x, sizeof x); };
    switch (v.dtype) {
        case DType::Bool: put(static_cast<std::uint8_t>(v.i != 0)); return;
        case DType::I8: put(static_cast<std::int8_t>(v.i)); return;
        case DType::I16: put(static_cast<std::int16_t>(v.i)); return;
        case DType::I32: put(static_cast<std::int32_t>(v.i)); return;
        case DType::I64: put(v.i); return;
        case DType::U8: put(static_cast<std::uint8_t>(v.i)); return;
        case DType::F16: put(f16_bits(static_cast<float>(v.f))); return;
        case DType::BF16: put(bf16_bits(static_cast<float>(v.f))); return;
        case DType::F32: put(static_cast<float>(v.f)); return;
        case DType::F64: put(v.f); return;
    }
}

CombineEvaluator::CombineEvaluator(const Combine& combine, const CombineTypes& types)
    : num_leaves_(combine.num_leaves()), num_captured_(combine.num_captured()) {
    std::unordered_map<const Node*, int> slot_of;
    auto add_params = [&](const std::vector<NodeRef>& params) {
        for (auto& p : params) {
            slot_of[p.get()] = static_cast<int>(slots_.size());
            slots_.push_back(Scalar{types[p.get()].dtype});
        }
    };
    add_params(combine.left);
    add_params(combine.right);
    add_params(combine.captured);
    for (const Node* n : topo_order(combine.results)) {
        if (slot_of.count(n)) continue;
        SCANC_INTERNAL_CHECK(n->op != Op::Param, "combine `", combine.name,
                             "` uses an undeclared parameter");
        int slot = static_cast<int>(slots_.size());
        slot_of[n] = slot;
        if (n->op == Op::Literal) {
            const auto& lit = n->as<LiteralAttr>();
            slots_.push_back(lit.is_float ? make_float(DType::F64, lit.f) : make_int(DType::I64, lit.i));
            continue;
        }
        slots_.push_back(Scalar{types[n].dtype});
        Step step{n->op, static_cast<int>(n->inputs.size()), {0, 0, 0}, {}, types[n], slot};
        SCANC_INTERNAL_CHECK(step.num_args <= 3, "op ", n->op, " with ", step.num_args, " args");
        for (int k = 0; k < step.num_args; ++k) {
            step.args[k] = slot_of.at(n->inputs[k].get());
            step.arg_types[k] = types[n->inputs[k].get()];
        }
        // Unary ops read a[1] harmlessly; point it at a valid slot.
        for (int k = step.num_args; k < 3; ++k) step.args[k] = step.args[0];
        steps_.push_back(step);
    }
    for (int i = 0; i < num_leaves_; ++i) {
        result_slots_.push_back(slot_of.at(combine.results[i].get()));
        result_dtypes_.push_back(types[combine.left[i].get()].dtype);
    }
}

void CombineEvaluator::eval(std::span<const Scalar> left, std::span<const Scalar> right,
                            std::span<const Scalar> captured, std::span<Scalar> out) {
    std::copy(left.begin(), left.end(), slots_.begin());
    std::copy(right.begin(), right.end(), slots_.begin() + num_leaves_);
    std::copy(captured.begin(), captured.end(), slots_.begin() + 2 * num_leaves_);
    for (const Step& s : steps_) {
        Scalar args[3] = {slots_[s.args[0]], slots_[s.args[1]], slots_[s.args[2]]};
        slots_[s.slot] = eval_op(s.op, std::span<const Scalar>(args, s.num_args), s.result,
                                 std::span<const ScalarType>(s.arg_types, s.num_args));
    }
    for (int i = 0; i < num_leaves_; ++i) {
        const Scalar& r = slots_[result_slots_[i]];
        out[i] = r.dtype == result_dtypes_[i] ? r : convert_scalar(r, result_dtypes_[i]);
    }
}

std::vector<Scalar> eval_combine(const Combine& combine, const CombineTypes& types,
                                 std::span<const Scalar> left, std::span<const Scalar> right,
                                 std::span<const Scalar> captured) {
    CombineEvaluator evaluator(combine, types);
    std::vector<Scalar> out(combine.num_leaves());
    evaluator.eval(left, right, captured, out);
    return out;
}

}  // namespace scanc
