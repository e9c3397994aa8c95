// The float precision a result is computed in (precision_of), and: a result of integers or
// bools computed from floats (a cast to an integer, a comparison) is split where it leaves the
// floats, so that `bench` can check it: the floats within tolerance
// of the reference's, the rest exactly, from this backend's floats. (A backend that reassociates
// a float scan lands some elements on the other side of a rounding or comparison boundary, so
// comparing such a result with the reference's directly fails where nothing is wrong.)
#include <unordered_map>
#include <unordered_set>

#include "cli.h"
#include "scanc/error.h"
#include "scanc/ir/builder.h"

namespace scanc::cli {

namespace {

// A value that a non-float result reads as computed floats: one float output, neither a param
// (the same in both runs) nor a literal.
bool computed_float(const Node& n) {
    return n.op != Op::Param && n.op != Op::Literal && n.num_outputs() == 1 && is_float(n.type().dtype);
}

}  // namespace

DType precision_of(const Program& program, std::size_t result) {
    const NodeRef& root = program.results.at(result);
    DType least = root->type().dtype;
    auto bits = [](DType t) { return t == DType::F64 ? 53 : t == DType::F32 ? 24 : t == DType::F16 ? 11 : 8; };
    std::unordered_set<const Node*> seen;
    std::vector<const Node*> stack{root.get()};
    while (!stack.empty()) {
        const Node* n = stack.back();
        stack.pop_back();
        if (!seen.insert(n).second) continue;
        if (computed_float(*n) && is_float(least) && bits(n->type().dtype) < bits(least)) least = n->type().dtype;
        for (const NodeRef& in : n->inputs) stack.push_back(in.get());
    }
    return least;
}

std::optional<FloatSplit> split_at_floats(const Program& program, std::size_t result) {
    const NodeRef& root = program.results.at(result);
    if (is_float(root->type().dtype)) return std::nullopt;
    // The nodes between the params (or the floats) and the result, inputs before users.
    std::vector<NodeRef> floats, order;
    std::unordered_set<const Node*> seen;
    std::vector<std::pair<NodeRef, bool>> stack{{root, false}};  // (node, inputs pushed)
    while (!stack.empty()) {
        auto [n, expanded] = stack.back();
        stack.pop_back();
        if (expanded) {
            order.push_back(n);
            continue;
        }
        if (!seen.insert(n.get()).second) continue;
        if (computed_float(*n)) {
            floats.push_back(n);
            continue;
        }
        stack.push_back({n, true});
        for (const NodeRef& in : n->inputs)
            if (!seen.count(in.get())) stack.push_back({in, false});
    }
    if (floats.empty()) return std::nullopt;

    FloatSplit split;
    split.floats = std::make_shared<Program>(
        Program{program.name + "_floats", program.params, floats, program.symbols, program.loc});
    std::vector<NodeRef> params = program.params;
    std::unordered_map<const Node*, NodeRef> value;
    for (const NodeRef& f : floats) {
        NodeRef p = make_param(ParamRole::Program, static_cast<int>(params.size()),
                               cat("float_value_", params.size() - program.params.size()), f->type(), f->loc);
        params.push_back(p);
        value[f.get()] = p;
    }
    for (const NodeRef& n : order) {
        if (n->op == Op::Param) {
            value[n.get()] = n;
            continue;
        }
        std::vector<NodeRef> inputs;
        for (const NodeRef& in : n->inputs) inputs.push_back(value.at(in.get()));
        value[n.get()] = rebuild(*n, std::move(inputs));
    }
    split.rest = std::make_shared<Program>(
        Program{program.name + "_from_floats", params, {value.at(root.get())}, program.symbols, program.loc});
    return split;
}

}  // namespace scanc::cli
