// Expressions and size expressions of the .scan format.
//
// Precedence comes from ops.def (loosest first): or, and, not (prefix), comparisons
// (non-associative), |, ^, &, << >>, + -, * / %, unary -, then calls and atoms. Unary minus
// written directly before a number folds into the literal (`-2`, `-inf`); `-(2)` stays a negation.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "parser_impl.h"
#include "suggest.h"

namespace scanc::text {

namespace {

constexpr int kMaxDepth = 200;  // nested parentheses, calls and prefix operators

int precedence_of(Op op) { return op_info(op).precedence; }

// The infix op a token spells, if any (`and`/`or` are words, the rest punctuation).
std::optional<Op> infix_of(const Token& t) {
    if (t.kind != TokenKind::Punct && !t.is("and") && !t.is("or")) return std::nullopt;
    return infix_op(t.text);
}

constexpr std::string_view kStructural[] = {"slice", "concat", "interleave"};

bool is_structural(std::string_view name) {
    for (auto s : kStructural)
        if (name == s) return true;
    return false;
}

}  // namespace

NodeRef Parser::parse_expr() { return parse_level(1); }

// Recursion through parentheses and prefix operators is bounded, so no input overflows the stack.
template <typename ParseFn>
auto Parser::nested(const Token& at, ParseFn parse) -> decltype(parse()) {
    if (++depth_ > kMaxDepth) user_error(at.loc, "expression nested too deeply");
    auto result = parse();
    --depth_;
    return result;
}

// Precedence climbing, one level per call; every binary level is left-associative except
// comparisons, which do not chain.
NodeRef Parser::parse_level(int precedence) {
    if (precedence == precedence_of(Op::Not)) return parse_prefix(Op::Not, precedence);
    if (precedence == precedence_of(Op::Neg)) return parse_prefix(Op::Neg, precedence);
    if (precedence > precedence_of(Op::Neg)) return parse_primary();
    NodeRef lhs = parse_level(precedence + 1);
    while (true) {
        const Token& t = peek();
        auto op = infix_of(t);
        if (!op || precedence_of(*op) != precedence) return lhs;
        next();
        NodeRef rhs = parse_level(precedence + 1);
        lhs = make_elementwise(*op, {lhs, rhs}, t.loc);
        if (is_comparison(*op)) {
            auto again = infix_of(peek());
            if (again && is_comparison(*again))
                user_error(peek().loc,
                           cat("comparisons do not chain: write `a ", t.text, " b and b ",
                               peek().text, " c` instead of `a ", t.text, " b ", peek().text, " c`"));
        }
    }
}

NodeRef Parser::parse_prefix(Op op, int precedence) {
    const Token& t = peek();
    if (!t.is(op_info(op).spelling)) return parse_level(precedence + 1);
    next();
    // `-2`, `-inf`: the minus belongs to the literal.
    const Token& operand = peek();
    if (op == Op::Neg && (operand.kind == TokenKind::Int || operand.kind == TokenKind::Float ||
                          operand.is("inf") || operand.is("nan")))
        return literal(next(), true);
    NodeRef x = nested(t, [&] { return parse_prefix(op, precedence); });
    return make_elementwise(op, {x}, t.loc);
}

NodeRef Parser::parse_primary() {
    const Token& t = peek();
    if (t.kind == TokenKind::Int || t.kind == TokenKind::Float || t.is("inf") || t.is("nan"))
        return literal(next(), false);
    if (t.is("(")) {
        next();
        NodeRef x = nested(t, [&] { return parse_expr(); });
        expect(")", " to close the `(`");
        return x;
    }
    if (t.is("scan"))
        user_error(t.loc, "`scan` must be the whole right-hand side of a statement: "
                          "`y = scan f(x) dim=0`");
    if (t.kind == TokenKind::Ident && !is_reserved(t.text)) {
        next();
        // Calls nest like parentheses: `exp(exp(...))` is bounded too.
        if (peek().is("(")) return nested(t, [&] { return parse_call(t); });
        return lookup(t);
    }
    fail(t, "an expression");
}

NodeRef Parser::literal(const Token& t, bool negative) {
    LiteralAttr value{true, 0.0, 0};
    if (t.kind == TokenKind::Int) {
        value = {false, 0.0, int_value(t, negative)};
    } else if (t.is("inf")) {
        value.f = std::numeric_limits<double>::infinity();
    } else if (t.is("nan")) {
        value.f = std::numeric_limits<double>::quiet_NaN();
    } else {
        value.f = std::strtod(t.text.c_str(), nullptr);  // overflow gives inf, as C does
    }
    if (value.is_float && negative) value.f = -value.f;
    return make_literal(value, !scope_->in_combine, t.loc);
}

NodeRef Parser::lookup(const Token& name) const {
    auto it = scope_->values.find(name.text);
    if (it != scope_->values.end()) return it->second;
    if (scope_->sizes.count(name.text))
        user_error(name.loc, cat("`", name.text, "` is a size, not a tensor; sizes appear only in "
                                 "parameter types and slice bounds"));
    std::vector<std::string> known;
    for (auto& [n, v] : scope_->values) known.push_back(n);
    std::sort(known.begin(), known.end());
    user_error(name.loc, cat("unknown name `", name.text, "`", did_you_mean(name.text, known, 1)));
}

std::vector<std::string> Parser::function_names() const {
    std::vector<std::string> names;
    for (int i = 0; i <= static_cast<int>(Op::Cast); ++i)
        if (op_info(static_cast<Op>(i)).form == OpForm::Function)
            names.emplace_back(op_info(static_cast<Op>(i)).spelling);
    for (DType t : kAllDTypes) names.emplace_back(dtype_name(t));
    if (!scope_->in_combine)
        for (auto s : kStructural) names.emplace_back(s);
    return names;
}

// `(args...)`, the `(` not taken yet (an argument may start with its own `(`); `opening`
// says what the `(` was expected for.
std::vector<NodeRef> Parser::parse_args(const Token& callee, std::string_view opening) {
    expect("(", opening);
    std::vector<NodeRef> args;
    if (accept(")")) return args;
    do {
        args.push_back(parse_expr());
    } while (accept(","));
    expect(")", cat(" or `,` in the arguments of `", callee.text, "`"));
    return args;
}

NodeRef Parser::parse_call(const Token& name) {
    if (is_structural(name.text)) return parse_structural(name);
    std::optional<DType> cast_to = parse_dtype(name.text);
    std::optional<Op> op = cast_to ? std::optional(Op::Cast) : function_op(name.text);
    if (!op)
        user_error(name.loc, cat("unknown function `", name.text, "`",
                                 did_you_mean(name.text, function_names())));
    std::vector<NodeRef> args = parse_args(name, "");
    int arity = op_info(*op).arity;
    if (static_cast<int>(args.size()) != arity)
        user_error(name.loc, cat("`", name.text, "` takes ", arity, " argument",
                                 arity == 1 ? "" : "s", ", got ", args.size()));
    return make_elementwise(*op, std::move(args), name.loc, cast_to);
}

// slice(x, dim, start, stop[, step]), concat(dim, x, y, ...), interleave(dim, even, odd)
NodeRef Parser::parse_structural(const Token& name) {
    if (scope_->in_combine)
        user_error(name.loc, cat("`", name.text, "` is not allowed inside a combine: a combine "
                                 "works on scalars"));
    next();  // `(`
    auto comma = [&] { expect(",", cat(" between the arguments of `", name.text, "`")); };
    const char* dim_what = "an integer dim";
    if (name.is("slice")) {
        NodeRef x = parse_expr();
        comma();
        std::int64_t dim = expect_int(dim_what, true);
        comma();
        Size start = parse_size();
        comma();
        Size stop = parse_size();
        std::int64_t step = 1;
        if (accept(",")) {
            const Token& at = peek();
            step = expect_int("a positive integer step", false);
            if (step < 1) user_error(at.loc, cat("slice step must be 1 or more, got ", step));
        }
        expect(")", " after the arguments of `slice` (x, dim, start, stop[, step])");
        return make_slice(x, dim, start, stop, step, name.loc);
    }
    std::int64_t dim = expect_int(dim_what, true);
    std::vector<NodeRef> xs;
    while (accept(",")) xs.push_back(parse_expr());
    expect(")", cat(" or `,` in the arguments of `", name.text, "`"));
    if (name.is("concat")) {
        if (xs.empty()) user_error(name.loc, "`concat` needs at least one tensor after the dim");
        return make_concat(dim, std::move(xs), name.loc);
    }
    if (xs.size() != 2)
        user_error(name.loc, cat("`interleave` takes a dim and 2 tensors, got ", xs.size(),
                                 " tensor", xs.size() == 1 ? "" : "s"));
    return make_interleave(dim, xs[0], xs[1], name.loc);
}

// Size expressions: integers, size symbols, + -, integer-constant *, min(a, b), max(a, b),
// floordiv(a, k). Exactly what Size::str() prints.
namespace {

// Size arithmetic that would overflow int64 is an error at the operator (SizeOverflow).
Size combine_sizes(const Size& a, const Size& b, char op, const Token& at) {
    auto x = a.constant(), y = b.constant();
    if (op == '*' && !x && !y)
        user_error(at.loc, cat("a size can only be multiplied by an integer constant, not `",
                               a.brief(), " * ", b.brief(), "`"));
    return located_sizes(at.loc, [&] {
        if (op == '+') return a + b;
        if (op == '-') return a - b;
        return y ? a * *y : b * *x;
    });
}

}  // namespace

Size Parser::parse_size() {
    Size s = parse_size_term();
    while (peek().is("+") || peek().is("-")) {
        const Token& op = next();
        s = combine_sizes(s, parse_size_term(), op.text[0], op);
    }
    return s;
}

Size Parser::parse_size_term() {
    Size s = parse_size_factor();
    while (peek().is("*")) {
        const Token& star = next();
        s = combine_sizes(s, parse_size_factor(), '*', star);
    }
    return s;
}

Size Parser::parse_size_factor() {
    const Token& t = peek();
    if (t.is("-")) {
        next();
        if (peek().kind == TokenKind::Int) return Size(int_value(next(), true));
        return combine_sizes(nested(t, [&] { return parse_size_factor(); }), -1, '*', t);
    }
    if (t.kind == TokenKind::Int) return Size(int_value(next(), false));
    if (t.is("(")) {
        next();
        Size s = nested(t, [&] { return parse_size(); });
        expect(")", " to close the `(`");
        return s;
    }
    const char* expected =
        "an integer size (a literal, a size symbol, or +, -, *, min, max of them)";
    if (t.kind != TokenKind::Ident || is_reserved(t.text)) fail(t, expected);
    next();
    if ((t.is("min") || t.is("max") || t.is("floordiv")) && peek().is("(")) {
        return nested(t, [&] {
            next();
            Size a = parse_size();
            expect(",", cat(" between the arguments of `", t.text, "`"));
            if (t.is("floordiv")) {
                const Token& at = peek();
                std::int64_t d = expect_int("a positive integer divisor", false);
                if (d < 1) user_error(at.loc, "floordiv needs a positive divisor");
                expect(")", " after the arguments of `floordiv`");
                return Size::floordiv(a, d);
            }
            Size b = parse_size();
            expect(")", cat(" after the arguments of `", t.text, "`"));
            return t.is("min") ? Size::min(a, b) : Size::max(a, b);
        });
    }
    if (auto it = scope_->sizes.find(t.text); it != scope_->sizes.end())
        return Size::symbol(it->second);
    if (scope_->values.count(t.text))
        user_error(t.loc, cat("`", t.text, "` is a tensor; a slice bound must be an integer, a "
                              "size symbol, or an expression of them"));
    std::vector<std::string> known;
    for (auto& [n, s] : scope_->sizes) known.push_back(n);
    user_error(t.loc, cat("unknown size `", t.text, "`", did_you_mean(t.text, known, 1)));
}

}  // namespace scanc::text
