#include "scanc/dsl/expr.h"

#include <algorithm>

#include "scanc/text/parser.h"

namespace scanc::dsl {

namespace {
// An Expr's node; CompileError for an empty (default or null) Expr, which would crash later.
const NodeRef& node_of(const Expr& e, std::string_view where) {
    if (e.node() == nullptr) user_error({}, cat(where, ": an operand is an empty Expr"));
    return e.node();
}
}  // namespace

Expr::Expr(int value) : Expr(static_cast<std::int64_t>(value)) {}
Expr::Expr(std::int64_t value) : node_(make_literal(LiteralAttr{false, 0.0, value}, false)) {}
Expr::Expr(double value) : node_(make_literal(LiteralAttr{true, value, 0}, false)) {}

Expr apply(Op op, const Exprs& args) {
    if (op_info(op).form == OpForm::Structural || op == Op::Cast)
        user_error({}, cat("apply: `", op_info(op).spelling, "` is not an elementwise operation it can build",
                           op == Op::Cast ? " (a cast needs its dtype: use cast(dtype, x))" : ""));
    std::vector<NodeRef> nodes;
    for (auto& a : args) nodes.push_back(node_of(a, cat("`", op_info(op).spelling, "`")));
    return make_elementwise(op, std::move(nodes));
}

#define SCANC_BINARY(fn, op) \
    Expr fn(const Expr& a, const Expr& b) { return apply(Op::op, {a, b}); }
SCANC_BINARY(operator+, Add)
SCANC_BINARY(operator-, Sub)
SCANC_BINARY(operator*, Mul)
SCANC_BINARY(operator/, Div)
SCANC_BINARY(operator%, Mod)
SCANC_BINARY(operator&, BitAnd)
SCANC_BINARY(operator|, BitOr)
SCANC_BINARY(operator^, BitXor)
SCANC_BINARY(operator<<, Shl)
SCANC_BINARY(operator>>, Shr)
SCANC_BINARY(operator<, Lt)
SCANC_BINARY(operator<=, Le)
SCANC_BINARY(operator>, Gt)
SCANC_BINARY(operator>=, Ge)
SCANC_BINARY(operator==, Eq)
SCANC_BINARY(operator!=, Ne)
SCANC_BINARY(operator&&, And)
SCANC_BINARY(operator||, Or)
SCANC_BINARY(pow, Pow)
SCANC_BINARY(atan2, Atan2)
SCANC_BINARY(min, Min)
SCANC_BINARY(max, Max)
SCANC_BINARY(logaddexp, LogAddExp)
#undef SCANC_BINARY

#define SCANC_UNARY(fn, op) \
    Expr fn(const Expr& x) { return apply(Op::op, {x}); }
SCANC_UNARY(operator-, Neg)
SCANC_UNARY(operator!, Not)
SCANC_UNARY(exp, Exp)
SCANC_UNARY(log, Log)
SCANC_UNARY(exp2, Exp2)
SCANC_UNARY(log2, Log2)
SCANC_UNARY(log10, Log10)
SCANC_UNARY(erf, Erf)
SCANC_UNARY(erfc, Erfc)
SCANC_UNARY(log1p, Log1p)
SCANC_UNARY(expm1, Expm1)
SCANC_UNARY(sqrt, Sqrt)
SCANC_UNARY(rsqrt, Rsqrt)
SCANC_UNARY(abs, Abs)
SCANC_UNARY(tanh, Tanh)
SCANC_UNARY(sigmoid, Sigmoid)
SCANC_UNARY(softplus, Softplus)
SCANC_UNARY(sin, Sin)
SCANC_UNARY(cos, Cos)
SCANC_UNARY(atan, Atan)
SCANC_UNARY(floor, Floor)
SCANC_UNARY(ceil, Ceil)
#undef SCANC_UNARY

Expr where(const Expr& cond, const Expr& a, const Expr& b) { return apply(Op::Where, {cond, a, b}); }
Expr cast(DType to, const Expr& x) { return make_elementwise(Op::Cast, {node_of(x, "cast")}, {}, to); }

CombineRef trace_combine(std::string name, int num_leaves, int num_captured, const CombineFn& fn,
                         std::vector<std::string> param_names) {
    if (num_leaves < 1 || num_captured < 0)
        user_error({}, cat("combine `", name, "`: a combine takes at least one leaf and no negative count of ",
                           "captured values, got ", num_leaves, " and ", num_captured));
    auto combine = std::make_shared<Combine>();
    combine->name = std::move(name);
    auto param_name = [&](std::size_t i, const char* prefix, int k) {
        return i < param_names.size() ? param_names[i] : cat(prefix, k + 1);
    };
    Exprs left, right, captured;
    for (int i = 0; i < num_leaves; ++i) {
        combine->left.push_back(make_param(ParamRole::Left, i, param_name(i, "x", i), std::nullopt));
        combine->right.push_back(
            make_param(ParamRole::Right, i, param_name(num_leaves + i, "y", i), std::nullopt));
        left.push_back(combine->left.back());
        right.push_back(combine->right.back());
    }
    for (int i = 0; i < num_captured; ++i) {
        combine->captured.push_back(make_param(ParamRole::Captured, i,
                                               param_name(2 * num_leaves + i, "c", i), std::nullopt));
        captured.push_back(combine->captured.back());
    }
    Exprs results = fn(left, right, captured);
    if (static_cast<int>(results.size()) != num_leaves)
        user_error({}, cat("combine `", combine->name, "` returns ", results.size(), " value",
                           results.size() == 1 ? "" : "s", " for ", num_leaves, " lea",
                           num_leaves == 1 ? "f" : "ves", "; it must return one per leaf"));
    for (auto& r : results) {
        if (!node_of(r, cat("combine `", combine->name, "`'s result"))->types.empty())
            user_error({}, cat("combine `", combine->name, "` returns a program value (a tensor); ",
                               "pass it as a captured value instead"));
        combine->results.push_back(r.node());
    }
    // A value traced by another combine (a lambda that kept one) would reach its parameters.
    auto own = [&](const Node* p) {
        for (const auto* list : {&combine->left, &combine->right, &combine->captured})
            for (const NodeRef& q : *list)
                if (q.get() == p) return true;
        return false;
    };
    for (const Node* n : topo_order(combine->results))
        if (n->op == Op::Param && !own(n))
            user_error({}, cat("combine `", combine->name, "` uses `", n->name, "`, a parameter of another ",
                               "combine (a value kept from another trace)"));
    return combine;
}

Expr slice(const Expr& x, std::int64_t dim, Size start, Size stop, std::int64_t step) {
    return make_slice(node_of(x, "slice"), dim, std::move(start), std::move(stop), step);
}

Expr concat(std::int64_t dim, const Exprs& xs) {
    std::vector<NodeRef> nodes;
    for (auto& x : xs) nodes.push_back(node_of(x, "concat"));
    return make_concat(dim, std::move(nodes));
}

Expr interleave(std::int64_t dim, const Expr& even, const Expr& odd) {
    return make_interleave(dim, node_of(even, "interleave"), node_of(odd, "interleave"));
}

Size ProgramBuilder::symbol(std::string name, std::optional<std::int64_t> bound) {
    if (!is_text_name(name))
        user_error({}, cat("size symbol `", name, "`: expected a name of letters, digits and `_`, not starting ",
                           "with a digit and not a reserved word"));
    if (bound && *bound < 0) user_error({}, cat("size symbol `", name, "`: bound ", *bound, " is negative"));
    for (const SymbolRef& s : symbols_)
        if (s->name == name) {
            if (bound && s->bound != bound)
                user_error({}, cat("size symbol `", name, "` has two different bounds: ", *bound, " and ",
                                   s->bound ? cat(*s->bound) : std::string("none")));
            return Size::symbol(s);
        }
    symbols_.push_back(Symbol::make(std::move(name), bound));
    return Size::symbol(symbols_.back());
}

Expr ProgramBuilder::param(std::string name, DType dtype, Shape shape) {
    for (const Size& s : shape) {
        if (auto c = s.constant(); c && *c < 0)
            user_error({}, cat("parameter `", name, "`: size ", *c, " is negative"));
        // An input's size is read off the input: only a constant or one symbol can be.
        if (!s.is_constant() && !s.as_symbol())
            user_error({}, cat("parameter `", name, "`: size `", s.str(), "` is an expression; a parameter's ",
                               "sizes are constants or symbols (derive other sizes with slices)"));
    }
    int index = static_cast<int>(params_.size());
    params_.push_back(make_param(ParamRole::Program, index, std::move(name),
                                 Type{dtype, std::move(shape), false}));
    return params_.back();
}

Exprs ProgramBuilder::scan(const CombineRef& combine, const Exprs& leaves, std::int64_t dim,
                           bool reverse, const Exprs& captured) {
    std::vector<NodeRef> l, c;
    for (auto& x : leaves) l.push_back(node_of(x, "scan"));
    for (auto& x : captured) c.push_back(node_of(x, "scan"));
    NodeRef scan = make_scan(combine, std::move(l), std::move(c), dim, reverse);
    Exprs out;
    for (auto& n : scan_outputs(scan)) out.push_back(n);
    return out;
}

ProgramRef ProgramBuilder::build(const Exprs& results) {
    auto program = std::make_shared<Program>();
    program->name = name_;
    program->params = params_;
    for (std::size_t i = 0; i < results.size(); ++i) {
        const NodeRef& r = node_of(results[i], cat("program `", name_, "`'s result ", i));
        if (r->types.size() != 1)
            user_error({}, cat("result ", i, " of program `", name_, "` is not a tensor: ",
                               r->types.empty() ? "a value inside a combine, or a bare literal"
                                                : "a multi-output node"));
        program->results.push_back(r);
    }
    const std::vector<const Node*> order = topo_order(program->results);
    for (const Node* n : order)
        if (n->op == Op::Param && std::find_if(params_.begin(), params_.end(),
                                               [&](const NodeRef& p) { return p.get() == n; }) == params_.end())
            user_error({}, cat("program `", name_, "` uses `", n->name, "`, a parameter of another ProgramBuilder"));
    for (auto& p : params_)
        for (auto& s : p->type().shape)
            for (auto& sym : s.symbols())
                if (std::find(program->symbols.begin(), program->symbols.end(), sym) ==
                    program->symbols.end()) {
                    for (const SymbolRef& other : program->symbols)
                        if (other->name == sym->name)
                            user_error({}, cat("program `", name_, "` has two different size symbols named `",
                                               sym->name, "`"));
                    program->symbols.push_back(sym);
                }
    // A slice bound's symbols must be the params' own: another builder's symbol of the same name
    // would print as this one's and mean something else.
    for (const Node* n : order)
        if (n->op == Op::Slice) {
            const auto& slice = n->as<SliceAttr>();
            for (const Size* bound : {&slice.start, &slice.stop})
                for (auto& sym : bound->symbols())
                    if (std::find(program->symbols.begin(), program->symbols.end(), sym) == program->symbols.end())
                        user_error({}, cat("program `", name_, "` slices with the size `", sym->name, "`, which no ",
                                           "parameter of this ProgramBuilder has (a symbol of another builder, or one ",
                                           "no input gives)"));
        }
    return program;
}

}  // namespace scanc::dsl
