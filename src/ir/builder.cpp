// Type and shape inference for every node kind, run as nodes are built.
#include "scanc/ir/builder.h"

#include <algorithm>
#include <limits>

#include "scanc/ir/combine_types.h"

namespace scanc {

namespace {

std::string spelled(Op op) {
    const OpInfo& info = op_info(op);
    return info.form == OpForm::Cast ? std::string("cast") : std::string(info.spelling);
}

// Unifies operand dtypes: a weak operand adopts the other's dtype.
ScalarType unify(Op op, ScalarType a, ScalarType b, const SourceLoc& loc) {
    if (a.weak && b.weak) return {(a.dtype == DType::F64 || b.dtype == DType::F64) ? DType::F64 : DType::I64, true};
    if (a.weak || b.weak) {
        ScalarType strong = a.weak ? b : a, lit = a.weak ? a : b;
        if (lit.dtype == DType::F64 && !is_float(strong.dtype))
            user_error(loc, cat("dtype mismatch: `", spelled(op), "` mixes a float literal with ",
                                dtype_name(strong.dtype), "; write an integer literal or cast"));
        return strong;
    }
    if (a.dtype != b.dtype)
        user_error(loc, cat("dtype mismatch: `", spelled(op), "` needs operands of one dtype, got ",
                            dtype_name(a.dtype), " and ", dtype_name(b.dtype),
                            "; cast one of them, e.g. ", dtype_name(a.dtype), "(x)"));
    return a;
}

void require(bool ok, Op op, ScalarType t, const char* what, const SourceLoc& loc) {
    if (!ok)
        user_error(loc, cat("`", spelled(op), "` needs ", what, " operands, got ",
                            t.weak ? "a literal of " : "", dtype_name(t.dtype)));
}

}  // namespace

ScalarType elementwise_type(Op op, std::span<const ScalarType> args, std::optional<DType> cast_to,
                            const SourceLoc& loc) {
    const OpInfo& info = op_info(op);
    SCANC_INTERNAL_CHECK(info.form != OpForm::Structural, "not elementwise: ", op);
    if (info.arity >= 0 && static_cast<int>(args.size()) != info.arity)
        user_error(loc, cat("`", spelled(op), "` takes ", info.arity, " argument",
                            info.arity == 1 ? "" : "s", ", got ", args.size()));
    if (op == Op::Cast) return {*cast_to, false};
    if (op == Op::Where) {
        if (args[0].dtype != DType::Bool || args[0].weak)
            user_error(loc, cat("`where` needs a bool condition, got ",
                                args[0].weak ? "one made only of literals (decide it before writing the program)"
                                             : dtype_name(args[0].dtype)));
        return unify(op, args[1], args[2], loc);
    }
    ScalarType t = args[0];
    if (args.size() == 2) t = unify(op, args[0], args[1], loc);
    bool numeric = t.dtype != DType::Bool;
    switch (op) {
        case Op::Neg:
        case Op::Add:
        case Op::Sub:
        case Op::Mul:
        case Op::Div: require(numeric, op, t, "numeric", loc); return t;
        case Op::Mod:
        case Op::Shl:
        case Op::Shr: require(is_integer(t.dtype) || (t.weak && t.dtype == DType::I64), op, t, "integer", loc); return t;
        case Op::BitAnd:
        case Op::BitOr:
        case Op::BitXor:
            require(is_integer(t.dtype) || t.dtype == DType::Bool, op, t, "integer or bool", loc);
            return t;
        case Op::Not:
        case Op::And:
        case Op::Or: require(t.dtype == DType::Bool && !t.weak, op, t, "bool", loc); return t;
        case Op::Lt:
        case Op::Le:
        case Op::Gt:
        case Op::Ge:
        case Op::Eq:
        case Op::Ne: return {DType::Bool, t.weak};
        case Op::Abs:
        case Op::Min:
        case Op::Max: return t;
        default:  // transcendental and rounding functions
            if (t.weak) return {DType::F64, true};
            require(is_float(t.dtype), op, t, "floating-point", loc);
            return t;
    }
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const SourceLoc& loc) {
    std::size_t rank = std::max(a.size(), b.size());
    Shape out(rank);
    for (std::size_t i = 0; i < rank; ++i) {
        // Align from the right, as NumPy does.
        const Size* x = i < rank - a.size() ? nullptr : &a[i - (rank - a.size())];
        const Size* y = i < rank - b.size() ? nullptr : &b[i - (rank - b.size())];
        if (!x || (x->constant() == 1 && y)) {
            out[i] = *y;
        } else if (!y || y->constant() == 1 || x->equals(*y)) {
            out[i] = *x;
        } else if (x->same_value(*y)) {  // the same length in two forms: the shorter one
            out[i] = y->str().size() < x->str().size() ? *y : *x;
        } else {
            user_error(loc, cat("shape mismatch: cannot broadcast ", shape_str(a), " with ",
                                shape_str(b), ": size ", x->str(), " against ", y->str(),
                                " cannot be shown equal"));
        }
    }
    return out;
}

int normalize_dim(std::int64_t dim, int rank, const SourceLoc& loc) {
    if (dim < -rank || dim >= rank)
        user_error(loc, cat("dim ", dim, " is out of range for a tensor of ", rank, " dim",
                            rank == 1 ? "" : "s", rank ? cat(" (valid: ", -rank, "..", rank - 1, ")") : ""));
    return static_cast<int>(dim < 0 ? dim + rank : dim);
}

namespace {

// Provably k >= 0 for every value of its symbols (max(k, 0) folds to k only then).
bool provably_nonnegative(const Size& k) { return Size::max(k, 0).equals(k); }

// n - min(k, n), k >= 0: the length of x[k:] and of x[:-k] for x of length n. Where n is itself
// m - min(j, m) (x a slice of that form), it is m - min(j + k, m), the same value: a chain of
// such slices keeps one term, where nesting would repeat n twice a slice (2^depth terms). k and
// j may be symbolic (x[K:][K:] is T - min(2*K, T)). nullopt where n has no such form.
std::optional<Size> collapsed_drop(const Size& n, const Size& k) {
    for (const Size::Part& part : n.parts()) {
        if (part.kind != Size::Part::Kind::Min || part.coefficient != -1) continue;
        for (int a = 0; a < 2; ++a) {
            const Size& j = part.args[a];
            const Size& m = part.args[1 - a];
            if (!provably_nonnegative(j) || !(n + Size::min(j, m)).equals(m)) continue;
            try {
                return m - Size::min(j + k, m);
            } catch (const SizeOverflow&) {  // j + k past int64: the nested form
            }
        }
    }
    return std::nullopt;
}

Size drop(const Size& n, const Size& k) {
    if (auto collapsed = collapsed_drop(n, k)) return *collapsed;
    return n - Size::min(k, n);
}

// No min, max or floordiv: a sum of symbols and a constant.
bool linear(const Size& n) {
    const auto parts = n.parts();
    return std::all_of(parts.begin(), parts.end(),
                       [](const Size::Part& p) { return p.kind == Size::Part::Kind::Symbol; });
}

// max(v, 0). Where v is max(a, 0) + r with r <= 0 (a slice of a clamped length), it is
// max(a + r, 0), the same value one max shallower.
Size clamp0(const Size& v) {
    for (const Size::Part& part : v.parts()) {
        if (part.kind != Size::Part::Kind::Max || part.coefficient != 1) continue;
        for (int i = 0; i < 2; ++i) {
            if (part.args[i].constant() != 0) continue;
            const Size& a = part.args[1 - i];
            const Size r = v - Size::max(a, 0);
            if (Size::min(r, 0).equals(r)) return Size::max(a + r, 0);
        }
    }
    return Size::max(v, 0);
}

}  // namespace

// The common slices take drop's form, so that equal lengths compare equal: x[k:] and x[:-k] are
// n - min(k, n) (lowered scans combine the two, and concat x[:k] back on: min(k, n) cancels),
// and x[1:-1], x[2:] and x[:-2] all n - min(2, n). Elsewhere a length names its input's length
// once (clamp0): naming it twice a slice doubles the expression a slice, and a chain of 30 slices
// took minutes.
Size slice_length(const Size& n, const Size& start, const Size& stop, std::int64_t step) {
    constexpr std::int64_t kMost = std::numeric_limits<std::int64_t>::max();
    // A negative constant counts from the end: its k = -c (-2^63 has no negation; n < 2^63
    // counts back to 0 from it as from -(2^63 - 1)).
    auto from_end = [&](const Size& v) -> std::optional<Size> {
        auto c = v.constant();
        if (c && *c < 0) return Size(-std::max(*c, -kMost));
        return std::nullopt;
    };
    const std::optional<Size> start_back = from_end(start), stop_back = from_end(stop);
    // x less its first k: drop's form where it collapses or names a sum of symbols twice, else
    // max(x - k, 0).
    auto less = [](const Size& x, const Size& k) {
        if (auto collapsed = collapsed_drop(x, k)) return *collapsed;
        return linear(x) ? x - Size::min(k, x) : clamp0(x - k);
    };
    const Size clamped_stop = Size::max(Size::min(stop, n), 0);
    // The stop as a position in [0, n]; n - k for a stop of n less some k >= 0 (x[:T - K] is
    // as long as x[K:]).
    auto position = [&]() {
        if (stop_back) return less(n, *stop_back);
        try {
            if (const Size k = n - stop; provably_nonnegative(k)) return less(n, k);
        } catch (const SizeOverflow&) {
        }
        return clamped_stop;
    };
    if (step == 1 && stop_back && start.constant() == 0) return drop(n, *stop_back);  // x[:-k]
    if (step == 1 && provably_nonnegative(start) && clamped_stop.equals(n)) return drop(n, start);  // x[k:]
    // x[:m] with m x's length spelled another way (same_value): m. A lowered scan slices its
    // leaves so, to give them one spelling (lower_scans.cpp).
    if (step == 1 && start.constant() == 0 && !stop.is_constant() && stop.same_value(n)) return stop;
    if (start_back && stop_back)  // x[-j:-k]: min(j, n) - k, clamped at 0, names n once
        return clamp0(Size::ceildiv(Size::min(*start_back, n) - *stop_back, step));
    const Size e = position();
    if (start_back) return Size::max(Size::ceildiv(e - drop(n, *start_back), step), 0);  // x[-k:...]
    // The start clamped at 0 only: a start past the stop gives nothing either way.
    const Size len = less(e, Size::max(start, 0));
    return step == 1 ? len : Size::ceildiv(len, step);
}

NodeRef make_param(ParamRole role, int index, std::string name, std::optional<Type> type,
                   SourceLoc loc) {
    auto n = std::make_shared<Node>();
    n->op = Op::Param;
    n->attr = ParamAttr{role, index, name};
    if (type) n->types = {*type};
    n->name = std::move(name);
    n->loc = std::move(loc);
    return n;
}

NodeRef make_literal(LiteralAttr value, bool typed, SourceLoc loc) {
    auto n = std::make_shared<Node>();
    n->op = Op::Literal;
    n->attr = value;
    if (typed) n->types = {Type{value.is_float ? DType::F64 : DType::I64, {}, true}};
    n->loc = std::move(loc);
    return n;
}

std::int64_t slice_bound(const Size& bound, std::int64_t n, const Bindings& bindings) {
    auto c = bound.constant();
    if (c && *c < 0) return std::max<std::int64_t>(n + *c, 0);
    return std::clamp<std::int64_t>(bound.evaluate(bindings), 0, n);
}

SliceExtent slice_extent(const SliceAttr& slice, std::int64_t n, const Bindings& bindings) {
    const std::int64_t start = slice_bound(slice.start, n, bindings);
    const std::int64_t stop = slice_bound(slice.stop, n, bindings);
    // ceil((stop - start) / step) without adding step - 1, which overflows for a huge step.
    return {start, stop > start ? (stop - start - 1) / slice.step + 1 : 0};
}

static bool all_typed(const std::vector<NodeRef>& args, const SourceLoc& loc) {
    bool any = false, all = true;
    for (auto& a : args) {
        bool typed = !a->types.empty();
        any = any || typed;
        all = all && typed;
    }
    if (any != all)
        user_error(loc, "an operation mixes a program value (a tensor) with a value inside a combine; "
                        "a combine reaches tensors only as captured values (`with (...)`)");
    return all && !args.empty();
}

// The type of `x`, an operand of the program-level `op`; a user error where it is a value inside
// a combine (a C++ DSL user can pass one; the text front end's scopes cannot).
static const Type& tensor_type(const NodeRef& x, const char* op, const SourceLoc& loc) {
    if (!x) user_error(loc, cat(op, " of a null value"));
    if (x->types.size() != 1)
        user_error(loc, cat(op, " takes tensors (program values), got ",
                            x->types.empty() ? "a value inside a combine or a bare literal; inside a combine only scalar operations apply"
                                             : "a multi-output node; project one output"));
    return x->types[0];
}

// Sets `n`'s inputs and depth; `n.loc` must be set, as the error names it.
static void set_inputs(Node& n, std::vector<NodeRef> inputs) {
    for (auto& in : inputs) n.depth = std::max(n.depth, in->depth + 1);
    if (n.depth > kMaxNodeDepth)
        user_error(n.loc, cat("this value is computed by a chain of ", n.depth, " operations, each "
                              "on the result of the previous one; scanc handles chains of at most ",
                              kMaxNodeDepth));
    n.inputs = std::move(inputs);
}

NodeRef make_elementwise(Op op, std::vector<NodeRef> args, SourceLoc loc,
                         std::optional<DType> cast_to) {
    // A combine-level literal used beside program values becomes a program literal.
    bool any_typed = std::any_of(args.begin(), args.end(), [](auto& a) { return !a->types.empty(); });
    for (auto& a : args)
        if (any_typed && a->op == Op::Literal && a->types.empty())
            a = make_literal(a->as<LiteralAttr>(), true, a->loc);
    auto n = std::make_shared<Node>();
    n->op = op;
    if (op == Op::Cast) n->attr = CastAttr{*cast_to};
    if (all_typed(args, loc)) {
        std::vector<ScalarType> scalar;
        Shape shape;
        for (auto& a : args) {
            const Type& t = a->type();
            scalar.push_back({t.dtype, t.weak});
            shape = broadcast_shapes(shape, t.shape, loc);
        }
        ScalarType r = elementwise_type(op, scalar, cast_to, loc);
        n->types = {Type{r.dtype, shape, r.weak}};
    } else {
        // Combine level: check arity now; dtypes are checked when a scan instantiates it.
        const OpInfo& info = op_info(op);
        if (info.arity >= 0 && static_cast<int>(args.size()) != info.arity)
            user_error(loc, cat("`", spelled(op), "` takes ", info.arity, " argument",
                                info.arity == 1 ? "" : "s", ", got ", args.size()));
    }
    n->loc = std::move(loc);
    set_inputs(*n, std::move(args));
    return n;
}

static std::string describe(const NodeRef& n) {
    return n->name.empty() ? cat("a value of type ", n->type().str())
                           : cat("`", n->name, "` (", n->type().str(), ")");
}

NodeRef make_scan(CombineRef combine, std::vector<NodeRef> leaves, std::vector<NodeRef> captured,
                  std::int64_t dim, bool reverse, SourceLoc loc) {
    if (!combine) user_error(loc, "scan needs a combine, got a null CombineRef");
    if (static_cast<int>(leaves.size()) != combine->num_leaves())
        user_error(loc, cat("combine `", combine->name, "` takes ", combine->num_leaves(),
                            " lea", combine->num_leaves() == 1 ? "f" : "ves", ", got ",
                            leaves.size()));
    if (static_cast<int>(captured.size()) != combine->num_captured())
        user_error(loc, cat("combine `", combine->name, "` takes ", combine->num_captured(),
                            " captured value", combine->num_captured() == 1 ? "" : "s",
                            " (`with (...)`), got ", captured.size()));
    if (leaves.empty()) user_error(loc, cat("combine `", combine->name, "` has no leaves; a scan needs at least one"));
    for (auto& x : leaves) tensor_type(x, "scan", loc);
    for (auto& x : captured) tensor_type(x, "scan", loc);
    const Type& first = leaves[0]->type();
    int rank = static_cast<int>(first.shape.size());
    if (rank == 0) user_error(loc, cat("cannot scan ", describe(leaves[0]), ": it has no dims"));
    int d = normalize_dim(dim, rank, loc);
    std::vector<DType> leaf_dtypes, captured_dtypes;
    std::vector<Type> out_types;
    for (auto& leaf : leaves) {
        const Type& t = leaf->type();
        if (!shapes_equal(t.shape, first.shape))
            user_error(loc, cat("shape mismatch: scan leaves must have one shape, but ",
                                describe(leaves[0]), " and ", describe(leaf), " differ"));
        DType dt = t.weak ? (t.dtype == DType::F64 ? DType::F32 : DType::I64) : t.dtype;
        leaf_dtypes.push_back(dt);
        out_types.push_back(Type{dt, t.shape, false});
    }
    for (auto& c : captured) {
        const Type& t = c->type();
        if (t.shape.size() > first.shape.size())
            user_error(loc, cat("captured ", describe(c), " has more dims than the leaves ",
                                shape_str(first.shape)));
        std::size_t offset = first.shape.size() - t.shape.size();
        for (std::size_t i = 0; i < t.shape.size(); ++i) {
            const Size& s = t.shape[i];
            const Size& leaf = first.shape[i + offset];
            if (static_cast<int>(i + offset) == d) {
                if (s.constant() != 1)
                    user_error(loc, cat("captured ", describe(c), " varies along the scan dim ", d,
                                        " (size ", s.brief(),
                                        "); a captured value must have size 1 there"));
            } else if (s.constant() != 1 && !s.same_value(leaf)) {
                user_error(loc, cat("shape mismatch: captured ", describe(c),
                                    " does not broadcast to the leaves ", shape_str(first.shape),
                                    ": size ", s.brief(), " against ", leaf.brief()));
            }
        }
        captured_dtypes.push_back(t.weak ? (t.dtype == DType::F64 ? DType::F32 : DType::I64) : t.dtype);
    }
    instantiate_combine(*combine, leaf_dtypes, captured_dtypes, loc);

    auto n = std::make_shared<Node>();
    n->op = Op::Scan;
    n->attr = ScanAttr{combine, static_cast<int>(leaves.size()), d, reverse};
    leaves.insert(leaves.end(), captured.begin(), captured.end());
    n->types = std::move(out_types);
    n->loc = std::move(loc);
    set_inputs(*n, std::move(leaves));
    return n;
}

NodeRef make_project(NodeRef multi, int index, SourceLoc loc) {
    SCANC_INTERNAL_CHECK(index >= 0 && index < multi->num_outputs(), "project ", index, " of ",
                         multi->num_outputs());
    auto n = std::make_shared<Node>();
    n->op = Op::Project;
    n->attr = ProjectAttr{index};
    if (!multi->types.empty()) n->types = {multi->types[index]};
    n->loc = std::move(loc);
    set_inputs(*n, {std::move(multi)});
    return n;
}

std::vector<NodeRef> scan_outputs(const NodeRef& scan) {
    std::vector<NodeRef> out;
    for (int i = 0; i < scan->num_outputs(); ++i) out.push_back(make_project(scan, i, scan->loc));
    return out;
}

NodeRef make_slice(NodeRef x, std::int64_t dim, Size start, Size stop, std::int64_t step,
                   SourceLoc loc) {
    const Type& t = tensor_type(x, "slice", loc);
    int d = normalize_dim(dim, static_cast<int>(t.shape.size()), loc);
    if (step < 1) user_error(loc, cat("slice step must be 1 or more, got ", step));
    Type out = t;
    out.shape[d] =
        located_sizes(loc, [&] { return slice_length(t.shape[d], start, stop, step); });
    auto n = std::make_shared<Node>();
    n->op = Op::Slice;
    n->attr = SliceAttr{d, std::move(start), std::move(stop), step};
    n->types = {std::move(out)};
    n->loc = std::move(loc);
    set_inputs(*n, {std::move(x)});
    return n;
}

// Concat and interleave join tensors along `dim`: one dtype, one rank, equal other dims.
static void require_joinable(const char* op, int d, const Type& a, const Type& b,
                             const SourceLoc& loc) {
    if (a.dtype != b.dtype)
        user_error(loc, cat("dtype mismatch: ", op, " of ", dtype_name(a.dtype), " and ",
                            dtype_name(b.dtype)));
    if (a.shape.size() != b.shape.size())
        user_error(loc, cat(op, " needs tensors of one rank, got ", shape_str(a.shape), " and ",
                            shape_str(b.shape)));
    for (int k = 0; k < static_cast<int>(a.shape.size()); ++k)
        if (k != d && !a.shape[k].same_value(b.shape[k]))
            user_error(loc, cat("shape mismatch: ", op, " along dim ", d, " of ", shape_str(a.shape),
                                " and ", shape_str(b.shape), ": dim ", k, " differs"));
}

NodeRef make_concat(std::int64_t dim, std::vector<NodeRef> xs, SourceLoc loc) {
    if (xs.empty()) user_error(loc, "concat needs at least one tensor");
    for (auto& x : xs) tensor_type(x, "concat", loc);
    Type out = xs[0]->type();
    out.weak = false;
    int rank = static_cast<int>(out.shape.size());
    int d = normalize_dim(dim, rank, loc);
    for (std::size_t i = 1; i < xs.size(); ++i) {
        const Type& t = xs[i]->type();
        require_joinable("concat", d, xs[0]->type(), t, loc);
        out.shape[d] = located_sizes(loc, [&] { return out.shape[d] + t.shape[d]; });
    }
    auto n = std::make_shared<Node>();
    n->op = Op::Concat;
    n->attr = ConcatAttr{d};
    n->types = {std::move(out)};
    n->loc = std::move(loc);
    set_inputs(*n, std::move(xs));
    return n;
}

namespace {
[[noreturn]] void refuse_interleave_lengths(const SourceLoc& loc, int dim, const std::string& even,
                                            const std::string& odd) {
    user_error(loc, cat("interleave needs the first tensor as long as the second or one longer along dim ", dim,
                        ", got ", even, " and ", odd));
}
}  // namespace

void check_interleave_lengths(const SourceLoc& loc, int dim, std::int64_t even, std::int64_t odd) {
    if (even - odd != 0 && even - odd != 1) refuse_interleave_lengths(loc, dim, cat(even), cat(odd));
}

NodeRef make_interleave(std::int64_t dim, NodeRef even, NodeRef odd, SourceLoc loc) {
    const Type& e = tensor_type(even, "interleave", loc);
    const Type& o = tensor_type(odd, "interleave", loc);
    int rank = static_cast<int>(e.shape.size());
    int d = normalize_dim(dim, rank, loc);
    require_joinable("interleave", d, e, o, loc);
    if (auto diff = located_sizes(loc, [&] { return e.shape[d] - o.shape[d]; }).constant();
        diff && *diff != 0 && *diff != 1)
        refuse_interleave_lengths(loc, d, e.shape[d].brief(), o.shape[d].brief());
    Type out = e;
    out.weak = false;
    out.shape[d] = located_sizes(loc, [&] { return e.shape[d] + o.shape[d]; });
    auto n = std::make_shared<Node>();
    n->op = Op::Interleave;
    n->attr = InterleaveAttr{d};
    n->types = {std::move(out)};
    n->loc = std::move(loc);
    set_inputs(*n, {std::move(even), std::move(odd)});
    return n;
}

NodeRef rebuild(const Node& node, std::vector<NodeRef> inputs,
                const std::unordered_map<const Symbol*, Size>& sizes) {
    NodeRef out;
    switch (node.op) {
        case Op::Param:
        case Op::Literal: {
            auto copy = std::make_shared<Node>(node);
            return copy;
        }
        case Op::Scan: {
            const auto& a = node.as<ScanAttr>();
            std::vector<NodeRef> leaves(inputs.begin(), inputs.begin() + a.num_leaves);
            std::vector<NodeRef> captured(inputs.begin() + a.num_leaves, inputs.end());
            out = make_scan(a.combine, leaves, captured, a.dim, a.reverse, node.loc);
            break;
        }
        case Op::Slice: {
            const auto& a = node.as<SliceAttr>();
            auto rewritten = [&](const Size& s) {
                Size r = located_sizes(node.loc, [&] { return s.substitute(sizes); });
                // A bound that evaluates negative clamps to 0, but a negative constant counts
                // from the end: a symbol replaced by a size must keep the first meaning.
                if (!s.is_constant() && r.is_constant() && *r.constant() < 0) return Size(0);
                return r;
            };
            out = make_slice(inputs[0], a.dim, rewritten(a.start), rewritten(a.stop), a.step,
                             node.loc);
            break;
        }
        case Op::Concat: out = make_concat(node.as<ConcatAttr>().dim, inputs, node.loc); break;
        case Op::Interleave:
            out = make_interleave(node.as<InterleaveAttr>().dim, inputs[0], inputs[1], node.loc);
            break;
        case Op::Project: out = make_project(inputs[0], node.as<ProjectAttr>().index, node.loc); break;
        default: {
            std::optional<DType> to;
            if (node.op == Op::Cast) to = node.as<CastAttr>().to;
            out = make_elementwise(node.op, std::move(inputs), node.loc, to);
        }
    }
    out->name = node.name;
    return out;
}

}  // namespace scanc
