// Elementwise IR ops as ONNX nodes. Weak (literal) operands take the dtype of the strong one, as
// in the IR; f16/bf16 compute in f32 and round on the result (DESIGN §1), which also avoids
// onnxruntime's missing half kernels.
#include <cmath>

#include "onnx_graph.h"

namespace scanc::onnx_export {

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

const char* direct_op(Op op) {
    switch (op) {
        case Op::Neg: return "Neg";
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
        case Op::Div: return "Div";
        case Op::Exp: return "Exp";
        case Op::Log: return "Log";
        case Op::Sqrt: return "Sqrt";
        case Op::Abs: return "Abs";
        case Op::Tanh: return "Tanh";
        case Op::Sigmoid: return "Sigmoid";
        case Op::Softplus: return "Softplus";
        case Op::Sin: return "Sin";
        case Op::Cos: return "Cos";
        case Op::Floor: return "Floor";
        case Op::Ceil: return "Ceil";
        case Op::Pow: return "Pow";
        case Op::Min: return "Min";
        case Op::Max: return "Max";
        default: return nullptr;
    }
}

[[noreturn]] void no_onnx_form(const Node& n, DType t) {
    user_error(n.loc, cat("`", op_info(n.op).spelling, "` on ", dtype_name(t),
                          " has no ONNX form (ONNX BitShift takes unsigned integers only); ",
                          "cast to u8 or rewrite the combine"));
}

// Emits `n` over operands already in dtype `t`; returns the result value name.
std::string emit_in(GraphWriter& g, const Node& n, const std::vector<std::string>& in, DType t) {
    auto one = [&] { return g.scalar(t, 1.0, 1, is_float(t)); };
    if (const char* name = direct_op(n.op)) return g.op(name, in);
    switch (n.op) {
        case Op::Ne: return g.op("Not", {g.op("Equal", in)});
        case Op::Mod: {
            // `%` takes the dividend's sign (C), which is ONNX's fmod=1.
            auto* node = g.add("Mod", in, {g.fresh("mod")});
            GraphWriter::set_int(node, "fmod", 1);
            return node->output(0);
        }
        case Op::BitAnd: return g.op(t == DType::Bool ? "And" : "BitwiseAnd", in);
        case Op::BitOr: return g.op(t == DType::Bool ? "Or" : "BitwiseOr", in);
        case Op::BitXor: return g.op(t == DType::Bool ? "Xor" : "BitwiseXor", in);
        case Op::Shl:
        case Op::Shr: {
            if (t != DType::U8) no_onnx_form(n, t);
            auto* node = g.add("BitShift", in, {g.fresh("shift")});
            auto* a = node->add_attribute();
            a->set_name("direction");
            a->set_type(onnx::AttributeProto::STRING);
            a->set_s(n.op == Op::Shl ? "LEFT" : "RIGHT");
            return node->output(0);
        }
        case Op::Log1p: return g.op("Log", {g.op("Add", {in[0], one()})});
        case Op::Expm1: return g.op("Sub", {g.op("Exp", in), one()});
        case Op::Rsqrt: return g.op("Reciprocal", {g.op("Sqrt", in)});
        case Op::LogAddExp: {
            // max + log1p(exp(-|a - b|)); equal operands (both infinite too) give a + log 2.
            std::string m = g.op("Max", in);
            std::string gap = g.op("Neg", {g.op("Abs", {g.op("Sub", in)})});
            std::string soft = g.op("Log", {g.op("Add", {g.op("Exp", {gap}), one()})});
            std::string same = g.op("Equal", in);
            std::string twice = g.op("Add", {in[0], g.scalar(t, std::log(2.0), 0, true)});
            return g.op("Where", {same, twice, g.op("Add", {m, soft})});
        }
        default: internal_error(cat("no ONNX mapping for ", n.op));
    }
}

}  // namespace

void emit_elementwise(GraphWriter& g, const Node& n) {
    const Type& out = n.type();
    if (n.op == Op::Cast) {
        const Node* x = n.inputs[0].get();
        g.bind(&n, {g.cast(g.value(x).name, out.dtype), out.dtype});
        return;
    }
    std::size_t first = n.op == Op::Where ? 1 : 0;
    DType t = operand_dtype(n, first);
    DType compute = compute_dtype(t);
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
    DType produced = out.dtype == DType::Bool ? DType::Bool : compute;
    if (produced != out.dtype) r = g.cast(r, out.dtype);
    g.bind(&n, {r, out.dtype});
}

}  // namespace scanc::onnx_export
