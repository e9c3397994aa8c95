// check_lowered: asserts that a program is what lower_scans promises (DESIGN §6) — no scan, no
// identity or ones/zeros pad, only slice/concat/interleave/elementwise ops — and counts its ops.
#include <set>
#include <unordered_set>

#include "scanc/passes/passes.h"

namespace scanc {

std::map<std::string, int> op_census(const Program& program) {
    std::map<std::string, int> census;
    for (const Node* n : topo_order(program.results)) ++census[std::string(op_info(n->op).name)];
    return census;
}

namespace {

std::string where(const Node& n) {
    return n.name.empty() ? std::string() : cat(" (`", n.name, "`)");
}

}  // namespace

void check_lowered(const Program& program, bool allow_native_cumsum, const Program* original) {
    std::unordered_set<const Node*> users_own;
    std::set<std::string> users_places;
    auto add_place = [&](const Node* n) {
        if (n->loc.valid()) users_places.insert(cat(op_info(n->op).name, "@", n->loc.str()));
    };
    if (original)
        for (const Node* n : topo_order(original->results)) {
            users_own.insert(n);
            add_place(n);
            // Lowering inlines a scan's combine with its statements' places (lower_scans.cpp).
            if (n->op == Op::Scan)
                for (const Node* c : topo_order(n->as<ScanAttr>().combine->results)) add_place(c);
        }
    auto is_users = [&](const Node* n) {
        return users_own.count(n) ||
               (n->loc.valid() && users_places.count(cat(op_info(n->op).name, "@", n->loc.str())));
    };
    // Values computed from literals alone: a concat/interleave operand of that kind is a pad.
    std::unordered_set<const Node*> constant;
    for (const Node* n : topo_order(program.results)) {
        switch (n->op) {
            case Op::Param:
            case Op::Slice:
            case Op::Project: break;
            case Op::Literal: constant.insert(n); break;
            case Op::Scan:
                if (allow_native_cumsum && is_pure_sum(*n->as<ScanAttr>().combine)) break;
                user_error(n->loc, cat("the lowered program `", program.name,
                                       "` still has a scan", where(*n), " of combine `",
                                       n->as<ScanAttr>().combine->name,
                                       "`; expected slice/concat/elementwise ops only"));
            case Op::Concat:
            case Op::Interleave:
                for (auto& in : n->inputs) {
                    const Node* source = in.get();
                    // A slice or a cast (lowering widens f16 leaves) of a value is that value.
                    while (source->op == Op::Slice || source->op == Op::Cast) source = source->inputs[0].get();
                    if ((constant.count(source) || source->type().weak) && !is_users(source))
                        user_error(n->loc, cat("the lowered program `", program.name,
                                               "` pads with a constant", where(*source), " in a ",
                                               op_info(n->op).name, "; lowering must not pad ",
                                               "(no identity element, no ones/zeros)"));
                }
                break;
            default: {
                if (!is_elementwise(n->op))
                    user_error(n->loc, cat("the lowered program `", program.name, "` has an op `",
                                           op_info(n->op).name, "`", where(*n),
                                           "; expected slice/concat/interleave/elementwise only"));
                // x * 0 is zeros whatever x is; anything over constants alone is constant too.
                bool all_constant = true, times_zero = false;
                for (auto& in : n->inputs) {
                    all_constant = all_constant && constant.count(in.get());
                    if (n->op == Op::Mul && in->op == Op::Literal &&
                        in->as<LiteralAttr>().as_double() == 0)
                        times_zero = true;
                }
                if (all_constant || times_zero) constant.insert(n);
            }
        }
    }
}

}  // namespace scanc
