// Elementwise IR ops as ONNX nodes. Weak (literal) operands take the dtype of the strong one, as
// in the IR; f16/bf16 compute in f32 and round on the result (DESIGN §1), which also avoids
// onnxruntime's missing half kernels.
#include <cmath>
#include <numbers>

#include "onnx_graph.h"

namespace scanc::onnx_export {

std::string sign_bit(GraphWriter& g, const std::string& x, DType t) {
    std::string zero = g.scalar(t, 0.0, 0, true), one = g.scalar(t, 1.0, 1, true);
    return g.op("Or", {g.op("Less", {x, zero}), g.op("Less", {g.op("Div", {one, x}), zero})});
}

std::string sign_of(GraphWriter& g, const std::string& x, DType t) {
    return g.op("Where", {sign_bit(g, x, t), g.scalar(t, -1.0, -1, true), g.scalar(t, 1.0, 1, true)});
}

namespace {

// The dtype weak operands of `n` adopt (inputs from `first` on).
DType operand_dtype(const Node& n, std::size_t first) {
    bool any_f64 = false;
    for (std::size_t i = first; i < n.inputs.size(); ++i) {
        const Type& t = n.inputs[i]->type();
        if (!t.weak) return t.dtype;
        any_f64 = any_f64 || t.dtype == DType::F64;
    }
    return any_f64 ? DType::F64 : DType::I64;
}

bool is_signed_or_float(DType t) { return t != DType::U8 && t != DType::Bool; }

const char* direct_op(Op op) {
    switch (op) {
        case Op::Not: return "Not";
        case Op::And: return "And";
        case Op::Or: return "Or";
        case Op::Lt: return "Less";
        case Op::Le: return "LessOrEqual";
        case Op::Gt: return "Greater";
        case Op::Ge: return "GreaterOrEqual";
        case Op::Eq: return "Equal";
        case Op::Add: return "Add";
        case Op::Sub: return "Sub";
        case Op::Mul: return "Mul";
        case Op::Exp: return "Exp";
        case Op::Log: return "Log";
        case Op::Sqrt: return "Sqrt";
        case Op::Floor: return "Floor";
        case Op::Ceil: return "Ceil";
        case Op::Pow: return "Pow";
        case Op::Min: return "Min";
        case Op::Max: return "Max";
        default: return nullptr;
    }
}

std::string bit_shift(GraphWriter& g, const std::string& x, const std::string& count, bool left) {
    auto* node = g.add("BitShift", {x, count}, {g.fresh("shift")});
    auto* a = node->add_attribute();
    a->set_name("direction");
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(left ? "LEFT" : "RIGHT");
    return node->output(0);
}

// A Cast into the unsigned twin of i32 or i64 (ONNX types scanc has no dtype for).
std::string cast_unsigned(GraphWriter& g, const std::string& x, DType t) {
    auto* n = g.add("Cast", {x}, {g.fresh("cast")});
    GraphWriter::set_int(n, "to", t == DType::I32 ? onnx::TensorProto::UINT32 : onnx::TensorProto::UINT64);
    return n->output(0);
}

// x << c and x >> c as scalar_eval defines them: c modulo the bit width, `<<` wrapping, `>>` of
// a signed dtype arithmetic. ONNX's BitShift takes unsigned integers only, so a signed value
// shifts as its unsigned twin (Cast wraps both ways), and `>>` of a negative x is ~(~x >> c),
// with ~x = x ^ -1 not negative. i8 and i16 shift in i32 (onnxruntime has no bitwise kernels
// for them): the sign-extended value shifts to the same bits, and the cast back wraps as `<<`.
std::string shift(GraphWriter& g, Op op, const std::string& x, const std::string& c, DType t) {
    const std::int64_t width_mask = 8 * static_cast<std::int64_t>(dtype_size(t)) - 1;
    if (t == DType::U8)
        return bit_shift(g, x, g.op("BitwiseAnd", {c, g.scalar(t, 0, width_mask, false)}), op == Op::Shl);
    const DType w = t == DType::I8 || t == DType::I16 ? DType::I32 : t;
    const std::string xw = w == t ? x : g.cast(x, w), cw = w == t ? c : g.cast(c, w);
    const std::string masked = g.op("BitwiseAnd", {cw, g.scalar(w, 0, width_mask, false)});
    const std::string count = cast_unsigned(g, masked, w);
    std::string r;
    if (op == Op::Shl) {
        r = g.cast(bit_shift(g, cast_unsigned(g, xw, w), count, true), w);
    } else {
        const std::string negative = g.op("Less", {xw, g.scalar(w, 0, 0, false)});
        const std::string flip = g.op("Neg", {g.cast(negative, w)});  // -1 where x < 0, else 0
        const std::string flipped = cast_unsigned(g, g.op("BitwiseXor", {xw, flip}), w);
        r = g.op("BitwiseXor", {g.cast(bit_shift(g, flipped, count, false), w), flip});
    }
    return w == t ? r : g.cast(r, t);
}

// Where d != 0, by a condition the runtime's optimizer keeps: x (which may be -0) then comes
// through Where's false branch (onnxruntime 1.32 gives +0 for a -0 in its true branch, and
// swaps the branches of Where(Not(c), a, b)).
std::string nonzero(GraphWriter& g, const std::string& d, DType t) {
    return g.op("Greater", {g.op("Abs", {d}), g.scalar(t, 0.0, 0, true)});
}

// log(1 + x) to full relative precision with ONNX's Log (Goldberg): u = 1 + x rounds, and
// log(u) * (x / (u - 1)) corrects for it (the ratio first: log(u) * x overflows for x near the
// largest float); x itself where u rounds to 1, log(u) where u is inf.
std::string log1p(GraphWriter& g, const std::string& x, DType t) {
    std::string one = g.scalar(t, 1.0, 1, true);
    std::string u = g.op("Add", {x, one}), d = g.op("Sub", {u, one}), log_u = g.op("Log", {u});
    std::string ratio = g.op("Mul", {log_u, g.op("Div", {x, d})});
    std::string r = g.op("Where", {nonzero(g, d, t), ratio, x});
    return g.op("Where", {g.op("IsInf", {u}), log_u, r});
}

// exp(x) - 1 to full relative precision (Kahan): (u - 1) * (x / log(u)) with u = exp(x), the
// ratio first ((u - 1) * x overflows within 5 of exp's own overflow); x where u rounds to 1, -1
// where u - 1 does, u where it is inf.
std::string expm1(GraphWriter& g, const std::string& x, DType t) {
    std::string one = g.scalar(t, 1.0, 1, true), minus_one = g.scalar(t, -1.0, -1, true);
    std::string u = g.op("Exp", {x}), d = g.op("Sub", {u, one});
    std::string r = g.op("Mul", {d, g.op("Div", {x, g.op("Log", {u})})});
    r = g.op("Where", {g.op("Equal", {d, minus_one}), minus_one, r});
    r = g.op("Where", {nonzero(g, d, t), r, x});
    return g.op("Where", {g.op("IsInf", {u}), u, r});
}

// ONNX's Atan where onnxruntime has a kernel (f32), scanc's formula for f64.
// onnxruntime 1.32's Where returns +0 for a -0 in its true branch (and its optimizer swaps the
// branches of Where(Not(c), a, b)): a signed zero comes through the false branch here, and
// atan2 sets its sign by a product.
std::string atan_of(GraphWriter& g, const std::string& x, DType t) {
    return t == DType::F64 ? atan_f64(g, x) : g.op("Atan", {x});
}

// atan2(y, x) as C defines it, from Atan(|y| / x): plus pi where x's sign bit is set (x < 0, or
// x == 0 and 1 / x < 0: -0), 0 or pi where y is +-0 (0 / 0 is NaN); an infinite quotient (x =
// +-0, or y infinite) gives pi/2 and both infinite pi/4, as constants of the dtype (Atan's f32
// pi/2 is 2^-24 off at f64); then y's sign, by a product (which keeps -0). NaN gives NaN.
std::string atan2(GraphWriter& g, const std::string& y, const std::string& x, DType t) {
    std::string zero = g.scalar(t, 0.0, 0, true), one = g.scalar(t, 1.0, 1, true);
    auto constant = [&](double v) { return g.scalar(t, v, 0, true); };
    std::string x_negative = sign_bit(g, x, t), ay = g.op("Abs", {y}), q = g.op("Div", {ay, x});
    std::string both_inf = g.op("And", {g.op("IsInf", {x}), g.op("IsInf", {y})});
    std::string quarter = g.op("Mul", {g.op("Sign", {x}), constant(std::numbers::pi / 4)});
    std::string edge = g.op("Where", {both_inf, quarter, g.op("Mul", {g.op("Sign", {q}), constant(std::numbers::pi / 2)})});
    std::string finite = g.op("Not", {g.op("Or", {both_inf, g.op("IsInf", {q})})});
    std::string base = g.op("Where", {finite, atan_of(g, q, t), edge});
    std::string r = g.op("Where", {x_negative, g.op("Add", {base, constant(std::numbers::pi)}), base});
    std::string y_zero = g.op("And", {g.op("Equal", {y, zero}), g.op("Not", {g.op("IsNaN", {x})})});
    r = g.op("Where", {y_zero, g.op("Where", {x_negative, constant(std::numbers::pi), zero}), r});
    return g.op("Mul", {g.op("Abs", {r}), sign_of(g, y, t)});
}

// Emits `n` over operands already in dtype `t`; returns the result value name. The exp/log
// family follows scanc's formulas (src/ir/float_math.h), not ONNX's kernels, which lose
// relative precision near 0 and overflow early.
std::string emit_in(GraphWriter& g, const Node& n, const std::vector<std::string>& in, DType t) {
    auto one = [&] { return g.scalar(t, 1.0, 1, is_float(t)); };
    auto zero = [&] { return g.scalar(t, 0.0, 0, is_float(t)); };
    // exp(-|x|), the one exponential of the stable sigmoid, softplus and logaddexp
    auto decay = [&](const std::string& x) { return g.op("Exp", {g.op("Neg", {g.op("Abs", {x})})}); };
    if (const char* name = direct_op(n.op)) return g.op(name, in);
    switch (n.op) {
        case Op::Ne: return g.op("Not", {g.op("Equal", in)});
        case Op::Neg: return is_signed_or_float(t) ? g.op("Neg", in) : g.op("Sub", {zero(), in[0]});
        case Op::Abs: return is_signed_or_float(t) ? g.op("Abs", in) : in[0];
        case Op::Div:
        case Op::Mod: {
            if (is_float(t)) return g.op("Div", in);
            // Integers as scalar_eval defines them where ONNX does not (a division by zero
            // fails, INT_MIN / -1 traps): x / 0 == 0, x % 0 == x; x / -1 == -x and x % -1 == 0,
            // which wrap at INT_MIN.
            std::string by_zero = g.op("Equal", {in[1], zero()});
            std::string safe = g.op("Where", {by_zero, one(), in[1]}), by_minus_one;
            if (is_signed_or_float(t)) {
                by_minus_one = g.op("Equal", {in[1], g.scalar(t, -1.0, -1, false)});
                safe = g.op("Where", {by_minus_one, one(), safe});
            }
            std::string r;
            if (n.op == Op::Div) {
                r = g.op("Div", {in[0], safe});
                if (!by_minus_one.empty()) r = g.op("Where", {by_minus_one, g.op("Sub", {zero(), in[0]}), r});
                return g.op("Where", {by_zero, zero(), r});
            }
            // `%` takes the dividend's sign (C), which is ONNX's fmod=1.
            auto* node = g.add("Mod", {in[0], safe}, {g.fresh("mod")});
            GraphWriter::set_int(node, "fmod", 1);
            r = node->output(0);
            if (!by_minus_one.empty()) r = g.op("Where", {by_minus_one, zero(), r});
            return g.op("Where", {by_zero, in[0], r});
        }
        case Op::BitAnd: return g.op(t == DType::Bool ? "And" : "BitwiseAnd", in);
        case Op::BitOr: return g.op(t == DType::Bool ? "Or" : "BitwiseOr", in);
        case Op::BitXor: return g.op(t == DType::Bool ? "Xor" : "BitwiseXor", in);
        case Op::Shl:
        case Op::Shr: return shift(g, n.op, in[0], in[1], t);
        case Op::Log1p: return log1p(g, in[0], t);
        // ONNX has no Log2, Log10 or Exp2: log(x) / ln b (two roundings, so a few ulps and not
        // exact at powers of the base) and Pow(2, x) (the runtime's pow, exact at integers).
        case Op::Log2: return g.op("Mul", {g.op("Log", in), g.scalar(t, 1.0 / std::log(2.0), 0, true)});
        case Op::Log10: return g.op("Mul", {g.op("Log", in), g.scalar(t, 1.0 / std::log(10.0), 0, true)});
        case Op::Exp2: return g.op("Pow", {g.scalar(t, 2.0, 2, true), in[0]});
        // ONNX's Erf where onnxruntime has a kernel (f32); scanc's formulas elsewhere.
        case Op::Erf: return t == DType::F64 ? erf_f64(g, in[0]) : g.op("Erf", in);
        case Op::Erfc: return erfc_of(g, in[0], t);
        case Op::Tanh: return tanh_of(g, in[0], t);
        case Op::Atan: return atan_of(g, in[0], t);
        // onnxruntime's f64 Sin and Cos are hundreds of ulps off: scanc's formula there.
        case Op::Sin: return t == DType::F64 ? sin_cos_f64(g, in[0], false) : g.op("Sin", in);
        case Op::Cos: return t == DType::F64 ? sin_cos_f64(g, in[0], true) : g.op("Cos", in);
        case Op::Atan2: return atan2(g, in[0], in[1], t);
        case Op::Expm1: return expm1(g, in[0], t);
        case Op::Rsqrt: return g.op("Reciprocal", {g.op("Sqrt", in)});
        case Op::Sigmoid: {
            // 1 / (1 + e) at x >= 0, e / (1 + e) below, e = exp(-|x|)
            std::string e = decay(in[0]), denominator = g.op("Add", {one(), e});
            std::string positive = g.op("GreaterOrEqual", {in[0], zero()});
            return g.op("Div", {g.op("Where", {positive, one(), e}), denominator});
        }
        case Op::Softplus:  // max(x, 0) + log1p(exp(-|x|))
            return g.op("Add", {g.op("Max", {in[0], zero()}), log1p(g, decay(in[0]), t)});
        case Op::LogAddExp: {
            // max + log1p(exp(-|a - b|)); equal operands (both infinite too) give a + log 2.
            std::string m = g.op("Max", in);
            std::string soft = log1p(g, decay(g.op("Sub", in)), t);
            std::string same = g.op("Equal", in);
            std::string twice = g.op("Add", {in[0], g.scalar(t, std::log(2.0), 0, true)});
            return g.op("Where", {same, twice, g.op("Add", {m, soft})});
        }
        default: internal_error(cat("no ONNX mapping for ", n.op));
    }
}

// A cast as scalar_eval defines it: float -> integer truncates, saturates out of range and
// takes NaN to 0, where ONNX's Cast leaves those undefined (onnxruntime wraps).
std::string cast_saturating(GraphWriter& g, const GraphWriter::Value& x, DType to) {
    if (to == DType::F16 || to == DType::BF16) return cast_rounded_once(g, x.name, x.dtype, to);
    if (!is_float(x.dtype) || is_float(to) || to == DType::Bool) return g.cast(x.name, to);
    const DType f = compute_dtype(x.dtype);
    const std::string v = f == x.dtype ? x.name : g.cast(x.name, f);
    const int bits = 8 * static_cast<int>(dtype_size(to));
    const bool is_unsigned = to == DType::U8;
    // Past these the value saturates: [low, high) holds every float that truncates into range.
    const double high = std::ldexp(1.0, is_unsigned ? bits : bits - 1);
    const double low = is_unsigned ? -1.0 : -high;
    std::string above = g.op("GreaterOrEqual", {v, g.scalar(f, high, 0, true)});
    std::string below = g.op("LessOrEqual", {v, g.scalar(f, low, 0, true)});
    std::string nan = g.op("IsNaN", {v});
    std::string outside = g.op("Or", {g.op("Or", {above, below}), nan});
    // The selects in i32 for 8- and 16-bit targets (onnxruntime has no Where for them).
    const DType work = to == DType::I8 || to == DType::I16 ? DType::I32 : to;
    std::string inside = g.cast(g.op("Where", {outside, g.scalar(f, 0.0, 0, true), v}), work);
    const std::int64_t top = is_unsigned ? 255 : (std::int64_t{1} << (bits - 2)) * 2 - 1;
    const std::int64_t bottom = is_unsigned ? 0 : -top - 1;
    std::string r = g.op("Where", {above, g.scalar(work, 0.0, top, false), inside});
    r = g.op("Where", {below, g.scalar(work, 0.0, bottom, false), r});
    r = g.op("Where", {nan, g.scalar(work, 0.0, 0, false), r});
    return work == to ? r : g.cast(r, to);
}

}  // namespace

void emit_elementwise(GraphWriter& g, const Node& n) {
    const Type& out = n.type();
    if (n.op == Op::Cast) {
        const Node* x = n.inputs[0].get();
        g.bind(&n, {cast_saturating(g, g.value(x), out.dtype), out.dtype});
        return;
    }
    std::size_t first = n.op == Op::Where ? 1 : 0;
    DType t = operand_dtype(n, first);
    DType compute = compute_dtype(t);
    // onnxruntime lacks Min, Max and Where kernels for 8- and 16-bit integers and bools, and
    // ONNX's comparisons take no bools: those compute in i32 (exact for these values).
    const bool narrow = t == DType::I8 || t == DType::I16 || t == DType::Bool;
    const bool ordered = n.op == Op::Lt || n.op == Op::Le || n.op == Op::Gt || n.op == Op::Ge;
    // Div and Mod too: their guards against a zero or -1 divisor select with Where.
    if (narrow && (n.op == Op::Min || n.op == Op::Max || n.op == Op::Where || n.op == Op::Abs ||
                   n.op == Op::Div || n.op == Op::Mod || (t == DType::Bool && ordered)))
        compute = DType::I32;
    std::vector<std::string> in;
    if (n.op == Op::Where) in.push_back(g.value_as(n.inputs[0].get(), DType::Bool));
    for (std::size_t i = first; i < n.inputs.size(); ++i) {
        const Node* x = n.inputs[i].get();
        // A literal operand converts at the compute precision (scalar_eval's convert_scalar):
        // `x * 0.1` on f16 multiplies by 0.1f, not by f16(0.1).
        if (x->op == Op::Literal) {
            in.push_back(g.value_as(x, compute));
            continue;
        }
        std::string v = g.value_as(x, t);
        in.push_back(compute == t ? v : g.cast(v, compute));
    }
    std::string r;
    if (n.op == Op::Where) {
        r = g.op("Where", in);
    } else {
        r = emit_in(g, n, in, compute);
    }
    const bool bool_result = ordered || n.op == Op::Eq || n.op == Op::Ne || n.op == Op::And ||
                             n.op == Op::Or || n.op == Op::Not || compute == DType::Bool;
    DType produced = bool_result ? DType::Bool : compute;
    if (produced != out.dtype) r = g.cast(r, out.dtype);
    g.bind(&n, {r, out.dtype});
}

}  // namespace scanc::onnx_export
