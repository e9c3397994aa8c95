#include "scanc/ir/op.h"

#include <iterator>

namespace scanc {

namespace {
constexpr OpInfo kOps[] = {
#define SCANC_OP(name, spelling, form, arity, precedence) \
    {#name, spelling, OpForm::form, arity, precedence},
#include "scanc/ir/ops.def"
#undef SCANC_OP
};
}  // namespace

const OpInfo& op_info(Op op) { return kOps[static_cast<int>(op)]; }

std::optional<Op> function_op(std::string_view name) {
    for (std::size_t i = 0; i < std::size(kOps); ++i)
        if (kOps[i].form == OpForm::Function && kOps[i].spelling == name) return static_cast<Op>(i);
    return std::nullopt;
}

std::optional<Op> infix_op(std::string_view spelling) {
    for (std::size_t i = 0; i < std::size(kOps); ++i)
        if (kOps[i].form == OpForm::Infix && kOps[i].spelling == spelling)
            return static_cast<Op>(i);
    return std::nullopt;
}

}  // namespace scanc
