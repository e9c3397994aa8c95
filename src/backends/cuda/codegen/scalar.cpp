#include "scalar.h"

#include <bit>
#include <cmath>
#include <iomanip>
#include <limits>
#include <utility>
#include <vector>

#include "codegen.h"

namespace scanc::cuda {

std::string_view compute_ctype(DType t) {
    switch (t) {
        case DType::Bool: return "bool";
        case DType::I8: return "signed char";
        case DType::I16: return "short";
        case DType::I32: return "int";
        case DType::I64: return "i64";
        case DType::U8: return "unsigned char";
        case DType::F16:
        case DType::BF16:
        case DType::F32: return "float";
        case DType::F64: return "double";
    }
    return "?";
}

std::string_view storage_ctype(DType t) {
    if (t == DType::F16 || t == DType::BF16) return "unsigned short";
    return compute_ctype(t);
}

int state_words(DType t) { return dtype_size(compute_dtype(t)) > 4 ? 2 : 1; }

namespace {

std::string int_text(std::int64_t v) {
    if (v == std::numeric_limits<std::int64_t>::min()) return "(-9223372036854775807LL - 1)";
    return cat(v, "LL");
}

std::string float_text(double v, bool single) {
    if (std::isnan(v)) return single ? "__int_as_float(0x7fc00000)" : "__longlong_as_double(0x7ff8000000000000LL)";
    if (std::isinf(v)) {
        std::string inf = single ? "__int_as_float(0x7f800000)" : "__longlong_as_double(0x7ff0000000000000LL)";
        return v < 0 ? "(-" + inf + ")" : inf;
    }
    std::ostringstream s;
    // max_digits10 round-trips exactly; the value is already rounded to float when single.
    s << std::setprecision(single ? 9 : 17) << (single ? static_cast<double>(static_cast<float>(v)) : v);
    std::string text = s.str();
    if (text.find_first_of(".en") == std::string::npos) text += ".0";
    return "(" + text + (single ? "f)" : ")");
}

ScalarType unify(ScalarType a, ScalarType b) {
    if (a.weak && b.weak)
        return {(a.dtype == DType::F64 || b.dtype == DType::F64) ? DType::F64 : DType::I64, true};
    return a.weak ? b : a;
}

// The dtype an op's operands are converted to before it applies.
DType operand_dtype(Op op, const std::vector<ScalarType>& args, ScalarType result) {
    if (op == Op::Where) return unify(args[1], args[2]).dtype;
    if (is_comparison(op)) return unify(args[0], args[1]).dtype;
    return result.dtype;
}

std::string cast_text(const std::string& x, DType from, DType to) {
    if (compute_ctype(from) == compute_ctype(to) && to != DType::F16 && to != DType::BF16) return x;
    return round_narrow(cat("sc_cast<", compute_ctype(to), ">(", x, ")"), to);
}

std::string apply(Op op, const std::vector<std::string>& a, DType operand, DType result) {
    auto call = [&](const char* fn) {
        std::string s = cat(fn, "(", a[0]);
        for (std::size_t i = 1; i < a.size(); ++i) s += ", " + a[i];
        return s + ")";
    };
    switch (op) {
        case Op::Neg: return call("sc_neg");
        case Op::Not: return "!" + a[0];
        case Op::Or: return cat("(", a[0], " || ", a[1], ")");
        case Op::And: return cat("(", a[0], " && ", a[1], ")");
        case Op::Lt: return cat("(", a[0], " < ", a[1], ")");
        case Op::Le: return cat("(", a[0], " <= ", a[1], ")");
        case Op::Gt: return cat("(", a[0], " > ", a[1], ")");
        case Op::Ge: return cat("(", a[0], " >= ", a[1], ")");
        case Op::Eq: return cat("(", a[0], " == ", a[1], ")");
        case Op::Ne: return cat("(", a[0], " != ", a[1], ")");
        case Op::BitOr: return cat("(", compute_ctype(result), ")(", a[0], " | ", a[1], ")");
        case Op::BitXor: return cat("(", compute_ctype(result), ")(", a[0], " ^ ", a[1], ")");
        case Op::BitAnd: return cat("(", compute_ctype(result), ")(", a[0], " & ", a[1], ")");
        case Op::Shl: return call("sc_shl");
        case Op::Shr: return call("sc_shr");
        case Op::Add: return call("sc_add");
        case Op::Sub: return call("sc_sub");
        case Op::Mul: return call("sc_mul");
        case Op::Div: return call("sc_div");
        case Op::Mod: return call("sc_mod");
        case Op::Exp: return call("sc_exp");
        case Op::Log: return call("sc_log");
        case Op::Exp2: return call("sc_exp2");
        case Op::Log2: return call("sc_log2");
        case Op::Log10: return call("sc_log10");
        case Op::Erf: return call("sc_erf");
        case Op::Erfc: return call("sc_erfc");
        case Op::Log1p: return call("sc_log1p");
        case Op::Expm1: return call("sc_expm1");
        case Op::Sqrt: return call("sc_sqrt");
        case Op::Rsqrt: return call("sc_rsqrt");
        case Op::Abs: return call("sc_abs");
        case Op::Tanh: return call("sc_tanh");
        case Op::Sigmoid: return call("sc_sigmoid");
        case Op::Softplus: return call("sc_softplus");
        case Op::Sin: return call("sc_sin");
        case Op::Cos: return call("sc_cos");
        case Op::Atan: return call("sc_atan");
        case Op::Floor: return call("sc_floor");
        case Op::Ceil: return call("sc_ceil");
        case Op::Pow: return call("sc_pow");
        case Op::Atan2: return call("sc_atan2");
        case Op::Min: return call("sc_min");
        case Op::Max: return call("sc_max");
        case Op::LogAddExp: return call("sc_logaddexp");
        case Op::Where: return cat("(", a[0], " ? ", a[1], " : ", a[2], ")");
        default: internal_error(cat("cuda codegen: no expression for op ", op));
    }
}

}  // namespace

std::string round_narrow(const std::string& x, DType t) {
    if (t == DType::F16) return "sc_round_f16(" + x + ")";
    if (t == DType::BF16) return "sc_round_bf16(" + x + ")";
    return x;
}

std::string literal_text(const LiteralAttr& lit, DType to, bool narrow_rounds) {
    if (is_float(to)) {
        double v = lit.as_double();
        if (to == DType::F64) return float_text(v, false);
        return narrow_rounds ? round_narrow(float_text(v, true), to) : float_text(v, true);
    }
    if (to == DType::Bool) return lit.as_double() != 0 ? "true" : "false";
    return cat("((", compute_ctype(to), ")", int_text(lit.is_float ? static_cast<std::int64_t>(lit.f) : lit.i), ")");
}

ExprEmitter::ExprEmitter(std::ostringstream& out, std::string indent, std::string prefix,
                         TypeOf type_of, SourceOf source_of, bool rounds)
    : out_(out), indent_(std::move(indent)), prefix_(std::move(prefix)),
      type_of_(std::move(type_of)), source_of_(std::move(source_of)), rounds_(rounds) {}

std::string ExprEmitter::value_as(const Node* n, DType to) {
    if (n->op == Op::Literal) return literal_text(n->as<LiteralAttr>(), to);
    ScalarType t = type_of_(n);
    std::string v = value(n);
    if (compute_ctype(t.dtype) == compute_ctype(to)) return v;
    return cast_text(v, t.dtype, to);
}

std::string ExprEmitter::value(const Node* n) {
    if (n->op == Op::Literal) return literal_text(n->as<LiteralAttr>(), type_of_(n).dtype);
    if (auto it = memo_.find(n); it != memo_.end()) return it->second;
    // Operands before the ops that read them, walked without recursion (a chain may be
    // kMaxNodeDepth ops long), in the order a recursive walk would emit them.
    std::vector<std::pair<const Node*, bool>> stack{{n, false}};
    while (!stack.empty()) {
        auto [m, operands_done] = stack.back();
        stack.pop_back();
        if (m->op == Op::Literal || memo_.count(m)) continue;
        if (operands_done || !is_elementwise(m->op)) {
            memo_[m] = emit(m);  // its operands' values are memoized: emit recurses no deeper
            continue;
        }
        stack.push_back({m, true});
        for (auto in = m->inputs.rbegin(); in != m->inputs.rend(); ++in) stack.push_back({in->get(), false});
    }
    return memo_.at(n);
}

std::string ExprEmitter::emit(const Node* n) {
    if (!is_elementwise(n->op)) return source_of_(n);
    ScalarType result = type_of_(n);
    std::string expr;
    if (n->op == Op::Cast) {
        const Node* in = n->inputs[0].get();
        expr = cast_text(value(in), type_of_(in).dtype, result.dtype);
    } else {
        std::vector<ScalarType> types;
        for (auto& in : n->inputs) types.push_back(type_of_(in.get()));
        DType operand = operand_dtype(n->op, types, result);
        std::vector<std::string> args;
        for (std::size_t i = 0; i < n->inputs.size(); ++i) {
            const Node* in = n->inputs[i].get();
            const DType to = n->op == Op::Where && i == 0 ? DType::Bool : operand;
            // An op's literal operand converts at f32 precision also for f16/bf16 ops (as
            // scalar_eval's convert_scalar does): `x * 0.1` multiplies by 0.1f, not by bf16(0.1).
            args.push_back(in->op == Op::Literal ? literal_text(in->as<LiteralAttr>(), to, false) : value_as(in, to));
        }
        expr = apply(n->op, args, operand, result.dtype);
        if (rounds_) expr = round_narrow(expr, result.dtype);
    }
    std::string name = cat(prefix_, next_++);
    out_ << indent_ << "const " << compute_ctype(result.dtype) << " " << name << " = " << expr << ";\n";
    return name;
}

}  // namespace scanc::cuda
