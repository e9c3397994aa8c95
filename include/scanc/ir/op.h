// Operations of the IR, generated from ops.def.
#pragma once

#include <optional>
#include <ostream>
#include <string_view>

namespace scanc {

enum class Op : unsigned char {
#define SCANC_OP(name, spelling, form, arity, precedence) name,
#include "scanc/ir/ops.def"
#undef SCANC_OP
};

enum class OpForm : unsigned char { Structural, Prefix, Infix, Function, Cast };

struct OpInfo {
    std::string_view name;      // "Add"
    std::string_view spelling;  // "+"
    OpForm form;
    int arity;       // inputs of an elementwise op; -1 for variable
    int precedence;  // infix/prefix binding strength, higher binds tighter
};

const OpInfo& op_info(Op op);
inline bool is_elementwise(Op op) { return op_info(op).form != OpForm::Structural; }
inline bool is_comparison(Op op) { return op >= Op::Lt && op <= Op::Ne; }
// The op named `name` among the scalar functions (`exp`, `where`, ...), if any.
std::optional<Op> function_op(std::string_view name);
// The infix op spelled `spelling` (`+`, `and`, ...), if any.
std::optional<Op> infix_op(std::string_view spelling);

inline std::ostream& operator<<(std::ostream& out, Op op) { return out << op_info(op).name; }

}  // namespace scanc
