// The recursive-descent parser behind parse_module. Private to src/text; split over
// parser.cpp (definitions and statements) and parse_expr.cpp (expressions and sizes).
//
// Every node is built through ir/builder.h as soon as it is parsed, so type and shape errors
// surface at the token that caused them. The first error wins.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "lexer.h"
#include "scanc/ir/builder.h"

namespace scanc::text {

// Words that can never name a value.
bool is_reserved(std::string_view word);

class Parser {
public:
    Parser(std::vector<Token> tokens, std::string file);
    Module parse();

private:
    // What names mean where we are: a combine sees its params and locals; a program sees its
    // params, locals and size symbols.
    struct Scope {
        bool in_combine = false;
        std::unordered_map<std::string, NodeRef> values;
        std::unordered_map<std::string, SourceLoc> defined_at;  // params, for duplicate errors
        std::map<std::string, SymbolRef> sizes;
    };
    struct Definition {
        std::size_t start;  // index of the `combine` token
        std::size_t end = 0;  // one past the closing `}` once parsed
        CombineRef combine;
    };

    // Tokens.
    const Token& peek(std::size_t ahead = 0) const;
    const Token& next();
    bool accept(std::string_view punct_or_word);
    const Token& expect(std::string_view punct_or_word, std::string_view context);
    [[noreturn]] void fail(const Token& at, const std::string& expected) const;
    void skip_newlines();
    const Token& expect_name(std::string_view what);
    std::int64_t int_value(const Token& digits, bool negative) const;
    std::int64_t expect_int(std::string_view what, bool allow_negative);

    // Definitions and statements (parser.cpp).
    void collect_combines();
    CombineRef combine_named(const Token& name);
    CombineRef parse_combine();
    ProgramRef parse_program();
    std::vector<NodeRef> parse_params(std::vector<SymbolRef>& symbols);
    std::vector<NodeRef> parse_body(std::string_view owner, SourceLoc& return_loc);
    void parse_statement();
    void parse_scan(const std::vector<const Token*>& targets, const Token& first_target);
    void bind(const Token& name, const NodeRef& value);

    // Expressions and sizes (parse_expr.cpp).
    NodeRef parse_expr();
    template <typename ParseFn>
    auto nested(const Token& at, ParseFn parse) -> decltype(parse());
    NodeRef parse_level(int precedence);
    NodeRef parse_prefix(Op op, int precedence);
    NodeRef parse_primary();
    NodeRef literal(const Token& t, bool negative);
    NodeRef lookup(const Token& name) const;
    NodeRef parse_call(const Token& name);
    std::vector<NodeRef> parse_args(const Token& callee, std::string_view opening);
    NodeRef parse_structural(const Token& name);
    Size parse_size();
    Size parse_size_term();
    Size parse_size_factor();
    std::vector<std::string> function_names() const;

    std::vector<Token> tokens_;
    std::string file_;
    std::size_t pos_ = 0;
    int depth_ = 0;  // nesting of parentheses and prefix operators, bounded against overflow
    Scope* scope_ = nullptr;
    std::vector<Definition> combines_;
    std::unordered_map<std::string, std::size_t> combine_index_;
};

}  // namespace scanc::text
