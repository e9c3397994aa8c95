// ONNX export of a lowered program: params -> graph inputs (symbolic dims as dim_params),
// slices/concats/interleaves -> Slice/Concat/(Unsqueeze+Concat+Reshape), elementwise ops via
// onnx_elementwise.cpp, kept pure-sum scans -> CumSum, results -> outputs in return order.
#include "scanc/backends/onnx.h"

#include <bit>
#include <cctype>
#include <limits>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#include "onnx_graph.h"

namespace scanc {

namespace onnx_export {

int onnx_elem_type(DType t) {
    using TP = onnx::TensorProto;
    switch (t) {
        case DType::Bool: return TP::BOOL;
        case DType::I8: return TP::INT8;
        case DType::I16: return TP::INT16;
        case DType::I32: return TP::INT32;
        case DType::I64: return TP::INT64;
        case DType::U8: return TP::UINT8;
        case DType::F16: return TP::FLOAT16;
        case DType::BF16: return TP::BFLOAT16;
        case DType::F32: return TP::FLOAT;
        case DType::F64: return TP::DOUBLE;
    }
    return TP::UNDEFINED;
}

std::string GraphWriter::fresh(const std::string& hint) {
    std::string name;
    do name = cat(hint, "_", counter_++);
    while (reserved_.contains(name));
    return name;
}

onnx::NodeProto* GraphWriter::add(const std::string& op_type, std::vector<std::string> inputs,
                                  std::vector<std::string> outputs) {
    auto* n = graph_->add_node();
    n->set_op_type(op_type);
    n->set_name(cat(op_type, "_", counter_++));
    for (auto& i : inputs) n->add_input(i);
    for (auto& o : outputs) n->add_output(o);
    return n;
}

std::string GraphWriter::op(const std::string& op_type, std::vector<std::string> inputs,
                            const std::string& hint) {
    return add(op_type, std::move(inputs), {fresh(hint)})->output(0);
}

void GraphWriter::set_int(onnx::NodeProto* n, const std::string& name, std::int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
}

std::string GraphWriter::ints(const std::vector<std::int64_t>& values) {
    std::string key = "i64";
    for (auto v : values) key += cat(",", v);
    auto [it, fresh_key] = constants_.try_emplace(key);
    if (!fresh_key) return it->second;
    it->second = fresh("const");
    auto* t = graph_->add_initializer();
    t->set_name(it->second);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<std::int64_t>(values.size()));
    for (auto v : values) t->add_int64_data(v);
    return it->second;
}

std::string GraphWriter::scalar(DType dt, double f, std::int64_t i, bool as_float) {
    // Keyed by the exact bits: printing a double would merge nearby values.
    std::string key = cat(dtype_name(dt), ":", as_float ? std::bit_cast<std::int64_t>(f) : i,
                          as_float ? "f" : "i");
    auto [it, fresh_key] = constants_.try_emplace(key);
    if (!fresh_key) return it->second;
    it->second = fresh("const");
    auto* t = graph_->add_initializer();
    t->set_name(it->second);
    t->set_data_type(onnx_elem_type(dt));
    // The value in dt's own rounding, stored as raw little-endian bytes.
    Scalar s = as_float ? Scalar::of_double(dt, f) : Scalar::of_int(dt, i);
    std::string raw(dtype_size(dt), '\0');
    store_scalar(s, raw.data());
    t->set_raw_data(raw);
    return it->second;
}

std::string GraphWriter::cast(const std::string& value, DType to) {
    auto* n = add("Cast", {value}, {fresh("cast")});
    set_int(n, "to", onnx_elem_type(to));
    return n->output(0);
}

const GraphWriter::Value& GraphWriter::value(const Node* n) {
    if (n->op == Op::Literal && !values_.contains(n)) {
        const auto& lit = n->as<LiteralAttr>();
        const DType t = n->type().dtype;
        values_[n] = {scalar(t, lit.f, lit.i, lit.is_float), t};
    }
    return values_.at(n);
}

std::string GraphWriter::value_as(const Node* n, DType t) {
    if (n->op == Op::Literal) {
        const auto& lit = n->as<LiteralAttr>();
        return scalar(t, lit.f, lit.i, lit.is_float);
    }
    const Value& v = value(n);
    return v.dtype == t ? v.name : cast(v.name, t);
}

namespace {

void set_shape(onnx::ValueInfoProto* info, const Type& t) {
    auto* tt = info->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx_elem_type(t.dtype));
    auto* shape = tt->mutable_shape();
    for (auto& s : t.shape) {
        auto* dim = shape->add_dim();
        if (auto c = s.constant())
            dim->set_dim_value(*c);
        else if (auto sym = s.as_symbol())
            dim->set_dim_param(sym->name);
        // Other symbolic sizes are left unknown.
    }
}

// The 1-D shape entries [from, to) of `x`.
std::string dims(GraphWriter& g, const std::string& x, std::int64_t from, std::int64_t to) {
    auto* n = g.add("Shape", {x}, {g.fresh("dims")});
    GraphWriter::set_int(n, "start", from);
    GraphWriter::set_int(n, "end", to);
    return n->output(0);
}

// Symbolic sizes as graph values (1-D int64 tensors of one element): each symbol read off the
// shape of the first input that has it as a dim, a size's canonical form (size.h's parts)
// computed from them.
class SizeValues {
public:
    SizeValues(GraphWriter& g, const std::vector<NodeRef>& params) : g_(g) {
        for (auto& p : params) {
            const Shape& shape = p->type().shape;
            for (std::size_t i = 0; i < shape.size(); ++i)
                if (auto symbol = shape[i].as_symbol())
                    where_.try_emplace(symbol.get(), p->as<ParamAttr>().name, static_cast<int>(i));
        }
    }

    // nullopt where a symbol of `s` is no input's dim.
    std::optional<std::string> value(const Size& s) {
        const std::vector<Size::Part> parts = s.parts();
        std::optional<std::string> total;
        if (s.constant_term() != 0 || parts.empty()) total = g_.ints({s.constant_term()});
        for (const Size::Part& part : parts) {
            std::optional<std::string> v = part_value(part);
            if (!v) return std::nullopt;
            if (part.coefficient != 1) v = g_.op("Mul", {*v, g_.ints({part.coefficient})});
            total = total ? g_.op("Add", {*total, *v}) : *v;
        }
        return total;
    }

private:
    std::optional<std::string> part_value(const Size::Part& part) {
        using Kind = Size::Part::Kind;
        if (part.kind == Kind::Symbol) {
            const Symbol* symbol = part.symbol.get();
            if (auto read = read_.find(symbol); read != read_.end()) return read->second;
            auto it = where_.find(symbol);
            if (it == where_.end()) return std::nullopt;
            auto [input, axis] = it->second;
            return read_[symbol] = dims(g_, input, axis, axis + 1);
        }
        std::vector<std::string> args;
        for (const Size& a : part.args) {
            auto v = value(a);
            if (!v) return std::nullopt;
            args.push_back(*v);
        }
        if (part.kind != Kind::FloorDiv) return g_.op(part.kind == Kind::Min ? "Min" : "Max", args);
        // (a - a mod d) / d: ONNX's integer Mod takes the divisor's sign, so the division is exact.
        std::string d = g_.ints({part.divisor});
        return g_.op("Div", {g_.op("Sub", {args[0], g_.op("Mod", {args[0], d})}), d});
    }

    GraphWriter& g_;
    std::unordered_map<const Symbol*, std::pair<std::string, int>> where_;  // input, axis
    std::unordered_map<const Symbol*, std::string> read_;
};

// A slice bound as an ONNX start/end (a 1-D int64 tensor): a constant as it is (ONNX clamps and
// counts negatives from the end like the IR), the whole dim as "to the end", a symbolic bound
// clamped below at 0 (the IR clamps it to [0, n], where ONNX counts a negative one from the end).
std::string slice_bound(GraphWriter& g, SizeValues& sizes, const Node& n, const Size& bound,
                        const Size& dim_size) {
    if (auto c = bound.constant()) return g.ints({*c});
    if (bound.equals(dim_size)) return g.ints({std::numeric_limits<std::int64_t>::max()});
    if (auto v = sizes.value(bound)) return g.op("Max", {*v, g.ints({0})});
    user_error(n.loc, cat("slice bound `", bound.str(), "` names a size that is no input's dim, ",
                          "so the ONNX model cannot compute it"));
}

// out[2i] = even[i], out[2i+1] = odd[i] along d, with len(even) - len(odd) in {0, 1} and both
// possibly dynamic: extend odd by even's surplus element (0 or 1 of them, so lengths match),
// stack on a new axis d+1, merge it into d, then drop the surplus again.
std::string interleave(GraphWriter& g, const std::string& even, const std::string& odd, int d,
                       int rank) {
    std::string odd_len = dims(g, odd, d, d + 1);
    std::string axes = g.ints({d});
    std::string to_end = g.ints({std::numeric_limits<std::int64_t>::max()});
    std::string surplus = g.op("Slice", {even, odd_len, to_end, axes});
    auto* ext = g.add("Concat", {odd, surplus}, {g.fresh("odd_ext")});
    GraphWriter::set_int(ext, "axis", d);
    std::string new_axis = g.ints({d + 1});
    std::string a = g.op("Unsqueeze", {even, new_axis});
    std::string b = g.op("Unsqueeze", {ext->output(0), new_axis});
    auto* stacked = g.add("Concat", {a, b}, {g.fresh("pairs")});
    GraphWriter::set_int(stacked, "axis", d + 1);
    // The merged length spelled out: a Reshape's -1 over zero elements (another dim of size 0)
    // cannot be resolved.
    std::vector<std::string> parts;
    if (d > 0) parts.push_back(dims(g, even, 0, d));
    parts.push_back(g.op("Mul", {dims(g, even, d, d + 1), g.ints({2})}));
    if (d + 1 < rank) parts.push_back(dims(g, even, d + 1, rank));
    auto* target = g.add("Concat", parts, {g.fresh("shape")});
    GraphWriter::set_int(target, "axis", 0);
    // allowzero: a 0 in the target is a size, not "copy the input's dim".
    auto* reshape = g.add("Reshape", {stacked->output(0), target->output(0)}, {g.fresh("merged")});
    GraphWriter::set_int(reshape, "allowzero", 1);
    std::string merged = reshape->output(0);
    std::string total = g.op("Add", {dims(g, even, d, d + 1), odd_len});
    return g.op("Slice", {merged, g.ints({0}), total, axes});
}

void emit_node(GraphWriter& g, SizeValues& sizes, const Node& n) {
    switch (n.op) {
        case Op::Param: return;  // bound as graph inputs
        case Op::Literal: return;  // a constant where it is used (GraphWriter::value, value_as)
        case Op::Slice: {
            const auto& a = n.as<SliceAttr>();
            const Node* x = n.inputs[0].get();
            const Size& size = x->type().shape[a.dim];
            std::string r = g.op("Slice", {g.value(x).name, slice_bound(g, sizes, n, a.start, size),
                                           slice_bound(g, sizes, n, a.stop, size), g.ints({a.dim}),
                                           g.ints({a.step})});
            g.bind(&n, {r, g.value(x).dtype});
            return;
        }
        case Op::Concat: {
            std::vector<std::string> in;
            for (auto& x : n.inputs) in.push_back(g.value_as(x.get(), n.type().dtype));
            auto* c = g.add("Concat", in, {g.fresh("concat")});
            GraphWriter::set_int(c, "axis", n.as<ConcatAttr>().dim);
            g.bind(&n, {c->output(0), n.type().dtype});
            return;
        }
        case Op::Interleave: {
            DType t = n.type().dtype;
            g.bind(&n, {interleave(g, g.value_as(n.inputs[0].get(), t),
                                   g.value_as(n.inputs[1].get(), t), n.as<InterleaveAttr>().dim,
                                   static_cast<int>(n.type().shape.size())),
                        t});
            return;
        }
        case Op::Scan: {  // a pure sum kept for CumSum (check_lowered allowed it)
            const auto& a = n.as<ScanAttr>();
            DType t = n.types[0].dtype;
            std::string axis = g.scalar(DType::I64, 0, a.dim, false);
            std::string x = g.value_as(n.inputs[0].get(), t);
            auto* c = g.add("CumSum", {x, axis}, {g.fresh("cumsum")});
            GraphWriter::set_int(c, "reverse", a.reverse ? 1 : 0);
            g.bind(&n, {c->output(0), t});
            return;
        }
        case Op::Project: g.bind(&n, g.value(n.inputs[0].get())); return;
        default: onnx_export::emit_elementwise(g, n);
    }
}

// Lengths past their bounds. A bounded lowering is right up to its bound only, and ONNX has no
// assertion: for each bounded symbol's length L, a one-element zero is reshaped to
// [1 + 3 min(bound - L, 0)] elements, which is itself where L <= bound and an invalid shape
// (-2 or less) where it is longer, so that onnxruntime fails naming the node
// (`T_exceeds_its_bound_4096`). The sum of those zeros is what the outputs' slices add to their
// ends. Only shape arithmetic, Reshape and Slice (no filled tensor, which converters take for a
// pad). nullopt where no input has a bounded symbol dim.
std::optional<std::string> bound_guards(GraphWriter& g, const std::vector<NodeRef>& params) {
    std::optional<std::string> zero;
    std::set<const Symbol*> guarded;
    for (auto& p : params) {
        const Shape& shape = p->type().shape;
        for (std::size_t i = 0; i < shape.size(); ++i) {
            SymbolRef symbol = shape[i].as_symbol();
            if (!symbol || !symbol->bound || !guarded.insert(symbol.get()).second) continue;
            const std::int64_t axis = static_cast<std::int64_t>(i);
            std::string room = g.op("Sub", {g.ints({*symbol->bound}),
                                            dims(g, p->as<ParamAttr>().name, axis, axis + 1)});
            std::string over = g.op("Mul", {g.op("Min", {room, g.ints({0})}), g.ints({3})});
            auto* check = g.add("Reshape", {g.ints({0}), g.op("Add", {over, g.ints({1})})},
                                {g.fresh("bound_zero")});
            check->set_name(g.fresh(cat(symbol->name, "_exceeds_its_bound_", *symbol->bound)));
            zero = zero ? g.op("Add", {*zero, check->output(0)}) : check->output(0);
        }
    }
    return zero;
}

bool valid_name(const std::string& s) {
    if (s.empty()) return false;
    for (char c : s)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
    return true;
}

}  // namespace

}  // namespace onnx_export

std::string export_onnx(const Program& lowered, const OnnxOptions& options) {
    using namespace onnx_export;
    if (options.opset < 18)
        user_error({}, cat("ONNX opset ", options.opset, " is too old; scanc exports opset 18+"));
    // Ops only: whether constants are pads is lowering's business (lower_to_onnx checks it),
    // so every value of the program counts as its own.
    check_lowered(lowered, /*allow_native_cumsum=*/true, /*original=*/&lowered);
    for (const Node* n : topo_order(lowered.results))
        if (n->op == Op::Scan) {
            DType t = n->types[0].dtype;
            if (t != DType::I32 && t != DType::I64 && t != DType::F32 && t != DType::F64)
                user_error(n->loc, cat("ONNX CumSum does not take ", dtype_name(t),
                                       "; lower this scan without --native-cumsum"));
        }

    onnx::ModelProto model;
    model.set_ir_version(8);
    model.set_producer_name(options.producer);
    auto* opset = model.add_opset_import();
    opset->set_domain("");
    opset->set_version(options.opset);
    auto* graph = model.mutable_graph();
    graph->set_name(lowered.name);

    GraphWriter g(graph);
    std::set<std::string> taken;
    for (auto& p : lowered.params) {
        const std::string& name = p->as<ParamAttr>().name;
        auto* in = graph->add_input();
        in->set_name(name);
        set_shape(in, p->type());
        g.bind(p.get(), {name, p->type().dtype});
        taken.insert(name);
    }
    // Outputs keep the results' names where they can; the writer's own names avoid them all.
    std::vector<std::string> outputs;
    for (std::size_t i = 0; i < lowered.results.size(); ++i) {
        std::string name = lowered.results[i]->name;
        if (!valid_name(name) || taken.count(name)) name = cat("output", i);
        while (taken.count(name)) name += "_";
        taken.insert(name);
        outputs.push_back(name);
    }
    for (const auto& name : taken) g.reserve(name);
    SizeValues sizes(g, lowered.params);
    for (const Node* n : topo_order(lowered.results)) emit_node(g, sizes, *n);
    const std::optional<std::string> guard = bound_guards(g, lowered.params);
    for (std::size_t i = 0; i < lowered.results.size(); ++i) {
        const Node* r = lowered.results[i].get();
        const std::string& name = outputs[i];
        const Type& t = r->type();
        const std::string value = g.value_as(r, t.dtype);
        if (guard && !t.shape.empty()) {  // the whole of dim 0, through the guards (bound_guards)
            std::string end = g.op("Add", {dims(g, value, 0, 1), *guard});
            g.add("Slice", {value, g.ints({0}), end, g.ints({0})}, {name});
        } else {
            g.add("Identity", {value}, {name});
        }
        set_shape(graph->add_output(), t);
        graph->mutable_output(static_cast<int>(i))->set_name(name);
    }
    std::string bytes;
    if (!model.SerializeToString(&bytes)) throw RuntimeError("ONNX: could not serialize the model");
    return bytes;
}

std::string lower_to_onnx(const Program& program, const LowerOptions& lower,
                          const OnnxOptions& options, LoweringReport* report) {
    ProgramRef lowered = lower_scans(program, lower, report);
    check_lowered(*lowered, lower.native_cumsum, &program);
    return export_onnx(*lowered, options);
}

}  // namespace scanc
