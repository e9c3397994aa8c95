#include "scanc/ir/combine_types.h"

namespace scanc {

ScalarType CombineTypes::operator[](const Node* n) const {
    auto it = of.find(n);
    SCANC_INTERNAL_CHECK(it != of.end(), "node ", n->op, " has no type in this combine");
    return it->second;
}

CombineTypes instantiate_combine(const Combine& combine, std::span<const DType> leaves,
                                 std::span<const DType> captured, const SourceLoc& use) {
    CombineTypes types;
    for (int i = 0; i < combine.num_leaves(); ++i) {
        types.of[combine.left[i].get()] = {leaves[i], false};
        types.of[combine.right[i].get()] = {leaves[i], false};
    }
    for (int i = 0; i < combine.num_captured(); ++i)
        types.of[combine.captured[i].get()] = {captured[i], false};
    for (const Node* n : topo_order(combine.results)) {
        if (types.of.count(n)) continue;
        if (n->op == Op::Param)
            internal_error(cat("combine `", combine.name, "` uses a parameter it does not declare"));
        if (n->op == Op::Literal) {
            types.of[n] = {n->as<LiteralAttr>().is_float ? DType::F64 : DType::I64, true};
            continue;
        }
        SCANC_INTERNAL_CHECK(is_elementwise(n->op), "combine node ", n->op, " is not elementwise");
        std::vector<ScalarType> args;
        for (auto& in : n->inputs) args.push_back(types.of.at(in.get()));
        std::optional<DType> to;
        if (n->op == Op::Cast) to = n->as<CastAttr>().to;
        // Report errors at the op inside the combine, and say which scan instantiated it.
        try {
            types.of[n] = elementwise_type(n->op, args, to, n->loc);
        } catch (const CompileError& e) {
            std::string via = use.valid() ? cat(" (combine `", combine.name, "` used by the scan at ",
                                                use.str(), ")")
                                          : cat(" (in combine `", combine.name, "`)");
            user_error(n->loc.valid() ? n->loc : use, e.message() + via);
        }
    }
    for (int i = 0; i < combine.num_leaves(); ++i) {
        ScalarType r = types.of.at(combine.results[i].get());
        if (r.weak ? (r.dtype == DType::F64 && !is_float(leaves[i])) : r.dtype != leaves[i])
            user_error(use.valid() ? use : combine.loc,
                       cat("dtype mismatch: combine `", combine.name, "` returns ",
                           dtype_name(r.dtype), " for leaf ", i, ", whose dtype is ",
                           dtype_name(leaves[i])));
    }
    return types;
}

}  // namespace scanc
