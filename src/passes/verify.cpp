// verify: re-derives every node's types from its inputs with the builders' own rules (`rebuild`)
// and checks them against the types the node carries, plus the structural invariants the
// builders cannot see (params are the program's own, combines are closed and well formed).
// Builders throw CompileError at the node's place for user-level mistakes; everything that only
// a buggy front end or pass could produce is an InternalError.
#include <algorithm>
#include <unordered_set>

#include "scanc/ir/builder.h"
#include "scanc/passes/passes.h"

namespace scanc {

namespace {

std::string describe(const Node& n) {
    std::string name = n.name.empty() ? "" : cat(" `", n.name, "`");
    std::string at = n.loc.valid() ? cat(" at ", n.loc.str()) : "";
    return cat(op_info(n.op).name, name, at);
}

bool same_type(const Type& a, const Type& b) {
    return a.dtype == b.dtype && a.weak == b.weak && shapes_equal(a.shape, b.shape);
}

// The normalized dim of the ops that carry one; builders store it normalized.
std::optional<int> dim_attr(const Node& n) {
    switch (n.op) {
        case Op::Scan: return n.as<ScanAttr>().dim;
        case Op::Slice: return n.as<SliceAttr>().dim;
        case Op::Concat: return n.as<ConcatAttr>().dim;
        case Op::Interleave: return n.as<InterleaveAttr>().dim;
        default: return std::nullopt;
    }
}

void check_combine_param(const NodeRef& p, ParamRole role, int index, const Combine& c) {
    SCANC_INTERNAL_CHECK(p && p->op == Op::Param, "combine `", c.name, "` has a parameter slot ",
                         index, " that is not a Param node");
    const auto* attr = std::get_if<ParamAttr>(&p->attr);
    SCANC_INTERNAL_CHECK(attr && attr->role == role && attr->index == index, "combine `", c.name,
                         "` parameter `", p->name, "` has the wrong role or index");
    SCANC_INTERNAL_CHECK(p->types.empty(), "combine `", c.name, "` parameter `", p->name,
                         "` is typed; combine nodes are dtype-generic");
}

// Counts and closure of a combine. Counts are something a user can get wrong in text, so they
// are CompileErrors; a foreign or typed node inside a combine is a front end's bug.
void verify_combine(const Combine& c, const Node& scan) {
    const SourceLoc& loc = c.loc.valid() ? c.loc : scan.loc;
    if (c.left.empty())
        user_error(loc, cat("combine `", c.name, "` has no leaves; a scan needs at least one"));
    if (c.left.size() != c.right.size())
        user_error(loc, cat("combine `", c.name, "` has ", c.left.size(), " left and ",
                            c.right.size(), " right parameters; it needs one of each per leaf"));
    if (c.results.size() != c.left.size())
        user_error(loc, cat("combine `", c.name, "` returns ", c.results.size(), " value",
                            c.results.size() == 1 ? "" : "s", " for ", c.left.size(), " lea",
                            c.left.size() == 1 ? "f" : "ves", "; it must return one per leaf"));
    std::unordered_set<const Node*> own;
    auto add_params = [&](const std::vector<NodeRef>& params, ParamRole role) {
        for (int i = 0; i < static_cast<int>(params.size()); ++i) {
            check_combine_param(params[i], role, i, c);
            own.insert(params[i].get());
        }
    };
    add_params(c.left, ParamRole::Left);
    add_params(c.right, ParamRole::Right);
    add_params(c.captured, ParamRole::Captured);
    for (const auto& r : c.results)
        SCANC_INTERNAL_CHECK(r != nullptr, "combine `", c.name, "` has a null result");
    for (const Node* n : topo_order(c.results)) {
        SCANC_INTERNAL_CHECK(n->types.empty(), "combine `", c.name, "` contains a typed (program) ",
                             describe(*n));
        if (n->op == Op::Param) {
            SCANC_INTERNAL_CHECK(own.count(n), "combine `", c.name,
                                 "` reaches a parameter it does not declare: ", describe(*n));
        } else {
            SCANC_INTERNAL_CHECK(n->op == Op::Literal || is_elementwise(n->op), "combine `", c.name,
                                 "` contains a non-scalar ", describe(*n));
        }
    }
}

void verify_param(const Node& n, const Program& p) {
    auto it = std::find_if(p.params.begin(), p.params.end(),
                           [&](const NodeRef& q) { return q.get() == &n; });
    SCANC_INTERNAL_CHECK(it != p.params.end(), "program `", p.name,
                         "` uses a parameter that is not its own: ", describe(n));
}

void verify_literal(const Node& n) {
    const auto& v = n.as<LiteralAttr>();
    const Type& t = n.type();
    SCANC_INTERNAL_CHECK(t.weak && t.shape.empty() &&
                             t.dtype == (v.is_float ? DType::F64 : DType::I64),
                         "program literal ", describe(n), " has type ", t.str(),
                         "; literals are weak 0-d i64 or f64");
}

// Re-infers the node's types from its (already verified) inputs and compares.
void verify_inferred(const Node& n, const Program& p) {
    if (n.op == Op::Scan) {
        const auto& attr = n.as<ScanAttr>();
        SCANC_INTERNAL_CHECK(attr.combine != nullptr, describe(n), " has no combine");
        verify_combine(*attr.combine, n);
        SCANC_INTERNAL_CHECK(attr.num_leaves == attr.combine->num_leaves() &&
                                 static_cast<int>(n.inputs.size()) ==
                                     attr.num_leaves + attr.combine->num_captured(),
                             describe(n), " has ", n.inputs.size(), " inputs and num_leaves ",
                             attr.num_leaves, " for combine `", attr.combine->name, "`");
    }
    if (n.op == Op::Project)
        SCANC_INTERNAL_CHECK(n.inputs.size() == 1 && n.inputs[0]->op == Op::Scan, describe(n),
                             " must project a scan");
    for (const auto& in : n.inputs)
        if (n.op != Op::Project)
            SCANC_INTERNAL_CHECK(in->types.size() == 1, describe(n), " reads ", describe(*in),
                                 ", which has ", in->types.size(), " outputs; project one");
    NodeRef again = rebuild(n, n.inputs);
    SCANC_INTERNAL_CHECK(again->types.size() == n.types.size(), describe(n), " carries ",
                         n.types.size(), " types but its inputs give ", again->types.size());
    for (std::size_t i = 0; i < n.types.size(); ++i)
        SCANC_INTERNAL_CHECK(same_type(n.types[i], again->types[i]), describe(n), " in program `",
                             p.name, "` carries type ", n.types[i].str(), " (output ", i,
                             ") but its inputs give ", again->types[i].str());
    SCANC_INTERNAL_CHECK(dim_attr(n) == dim_attr(*again), describe(n),
                         " stores a dim that is not normalized");
}

void verify_signature(const Program& p) {
    for (int i = 0; i < static_cast<int>(p.params.size()); ++i) {
        const NodeRef& q = p.params[i];
        SCANC_INTERNAL_CHECK(q && q->op == Op::Param, "program `", p.name, "` parameter ", i,
                             " is not a Param node");
        const auto& attr = q->as<ParamAttr>();
        SCANC_INTERNAL_CHECK(attr.role == ParamRole::Program && attr.index == i, "program `",
                             p.name, "` parameter ", describe(*q), " has role/index ",
                             static_cast<int>(attr.role), "/", attr.index, " at position ", i);
        SCANC_INTERNAL_CHECK(q->types.size() == 1 && !q->type().weak, "program `", p.name,
                             "` parameter ", describe(*q), " must have one strong type");
        for (const Size& s : q->type().shape)
            for (const SymbolRef& sym : s.symbols())
                SCANC_INTERNAL_CHECK(
                    std::find(p.symbols.begin(), p.symbols.end(), sym) != p.symbols.end(),
                    "program `", p.name, "` does not list the size symbol ", sym->name, " of ",
                    describe(*q));
    }
    for (std::size_t i = 0; i < p.results.size(); ++i) {
        const NodeRef& r = p.results[i];
        SCANC_INTERNAL_CHECK(r != nullptr, "program `", p.name, "` result ", i, " is null");
        SCANC_INTERNAL_CHECK(r->types.size() == 1, "program `", p.name, "` result ", i, " (",
                             describe(*r), ") has ", r->types.size(),
                             " outputs; a result must be a single typed value");
    }
}

}  // namespace

void verify(const Program& program) {
    verify_signature(program);
    for (const Node* n : topo_order(program.results)) {
        SCANC_INTERNAL_CHECK(!n->types.empty(), "program `", program.name,
                             "` contains an untyped (combine-level) ", describe(*n));
        switch (n->op) {
            case Op::Param: verify_param(*n, program); break;
            case Op::Literal: verify_literal(*n); break;
            default: verify_inferred(*n, program);
        }
    }
}

}  // namespace scanc
