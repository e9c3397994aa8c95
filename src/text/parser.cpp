// Definitions and statements of the .scan format; expressions are in parse_expr.cpp.
#include "scanc/text/parser.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "parser_impl.h"
#include "suggest.h"

namespace scanc::text {

bool is_reserved(std::string_view word) {
    static constexpr std::string_view kWords[] = {"and", "or",     "not",     "scan", "return",
                                                  "inf", "nan",    "combine", "program", "_"};
    for (auto w : kWords)
        if (word == w) return true;
    return false;
}

}  // namespace scanc::text

namespace scanc {

bool is_text_name(std::string_view name) {
    auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    return !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
           std::all_of(name.begin(), name.end(), word) && !text::is_reserved(name);
}

}  // namespace scanc

namespace scanc::text {

Parser::Parser(std::vector<Token> tokens, std::string file)
    : tokens_(std::move(tokens)), file_(std::move(file)) {}

// ---- tokens ----

const Token& Parser::peek(std::size_t ahead) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
}

const Token& Parser::next() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
}

bool Parser::accept(std::string_view punct_or_word) {
    if (!peek().is(punct_or_word)) return false;
    next();
    return true;
}

const Token& Parser::expect(std::string_view punct_or_word, std::string_view context) {
    if (!peek().is(punct_or_word)) fail(peek(), cat("`", punct_or_word, "`", context));
    return next();
}

void Parser::fail(const Token& at, const std::string& expected) const {
    user_error(at.loc, cat("expected ", expected, ", found ", at.describe()));
}

void Parser::skip_newlines() {
    while (peek().kind == TokenKind::Newline) next();
}

const Token& Parser::expect_name(std::string_view what) {
    const Token& t = peek();
    if (t.kind != TokenKind::Ident) fail(t, std::string(what));
    if (is_reserved(t.text)) fail(t, cat(what, " (`", t.text, "` is a reserved word)"));
    return next();
}

std::int64_t Parser::int_value(const Token& digits, bool negative) const {
    // Accumulate as unsigned so that -9223372036854775808 is representable.
    constexpr std::uint64_t kMax = std::numeric_limits<std::int64_t>::max();
    std::uint64_t limit = negative ? kMax + 1 : kMax, v = 0;
    for (char c : digits.text) {
        std::uint64_t d = static_cast<std::uint64_t>(c - '0');
        if (v > (limit - d) / 10)
            user_error(digits.loc, cat("integer literal `", negative ? "-" : "", digits.text,
                                       "` does not fit in 64 bits (the range of i64)"));
        v = v * 10 + d;
    }
    return negative ? static_cast<std::int64_t>(0 - v) : static_cast<std::int64_t>(v);
}

std::int64_t Parser::expect_int(std::string_view what, bool allow_negative) {
    bool negative = allow_negative && peek().is("-") && peek(1).kind == TokenKind::Int;
    if (negative) next();
    if (peek().kind != TokenKind::Int) fail(peek(), std::string(what));
    return int_value(next(), negative);
}

// ---- definitions ----

Module Parser::parse() {
    collect_combines();
    Module module;
    std::unordered_map<std::string, SourceLoc> programs;
    for (skip_newlines(); peek().kind != TokenKind::End; skip_newlines()) {
        const Token& t = peek();
        if (t.is("combine")) {
            auto it = combine_index_.find(peek(1).text);
            if (peek(1).kind != TokenKind::Ident || it == combine_index_.end()) {
                parse_combine();  // malformed: reports where
                internal_error("a malformed combine definition parsed");
            }
            Definition& def = combines_[it->second];
            if (!def.combine) combine_named(peek(1));
            pos_ = def.end;
        } else if (t.is("program")) {
            const Token& name = peek(1);
            ProgramRef p = parse_program();
            if (auto it = programs.find(p->name); it != programs.end())
                user_error(name.loc, cat("duplicate program `", p->name,
                                         "`: it is already defined at line ", it->second.line));
            programs[p->name] = p->loc;
            module.programs.push_back(p);
        } else {
            fail(t, "`combine` or `program`");
        }
        if (peek().kind != TokenKind::End && peek().kind != TokenKind::Newline)
            fail(peek(), "end of line after `}`");
    }
    if (combines_.empty() && module.programs.empty()) fail(peek(), "`combine` or `program`");
    for (auto& def : combines_) module.combines.push_back(def.combine);
    return module;
}

// Programs may use combines defined further down, so find every combine first.
void Parser::collect_combines() {
    int braces = 0;
    for (std::size_t i = 0; i + 1 < tokens_.size(); ++i) {
        const Token& t = tokens_[i];
        if (t.is("{")) ++braces;
        if (t.is("}") && braces > 0) --braces;
        if (braces != 0 || !t.is("combine") || tokens_[i + 1].kind != TokenKind::Ident) continue;
        const Token& name = tokens_[i + 1];
        if (auto it = combine_index_.find(name.text); it != combine_index_.end())
            user_error(name.loc, cat("duplicate combine `", name.text,
                                     "`: it is already defined at line ",
                                     tokens_[combines_[it->second].start].loc.line));
        combine_index_[name.text] = combines_.size();
        combines_.push_back({i, 0, nullptr});
    }
}

CombineRef Parser::combine_named(const Token& name) {
    auto it = combine_index_.find(name.text);
    if (it == combine_index_.end()) {
        std::vector<std::string> known;
        for (auto& def : combines_) known.push_back(tokens_[def.start + 1].text);
        user_error(name.loc, cat("unknown combine `", name.text, "`",
                                 did_you_mean(name.text, known)));
    }
    Definition& def = combines_[it->second];
    if (!def.combine) {
        // Parse it where it is written, then come back.
        std::size_t saved_pos = pos_;
        Scope* saved_scope = scope_;
        int saved_depth = depth_;
        pos_ = def.start;
        depth_ = 0;
        def.combine = parse_combine();
        def.end = pos_;
        pos_ = saved_pos;
        scope_ = saved_scope;
        depth_ = saved_depth;
    }
    return def.combine;
}

CombineRef Parser::parse_combine() {
    Scope scope;
    scope.in_combine = true;
    scope_ = &scope;
    auto combine = std::make_shared<Combine>();
    combine->loc = next().loc;  // `combine`
    combine->name = expect_name("a combine name").text;
    expect("(", cat(" after `combine ", combine->name, "`"));
    auto param_list = [&](ParamRole role, std::vector<NodeRef>& out, std::string_view side) {
        do {
            const Token& name = expect_name(cat("a ", side, " parameter name"));
            if (auto it = scope.defined_at.find(name.text); it != scope.defined_at.end())
                user_error(name.loc, cat("duplicate parameter `", name.text,
                                         "`: it is already a parameter at line ",
                                         it->second.line, ":", it->second.col));
            out.push_back(make_param(role, static_cast<int>(out.size()), name.text,
                                     std::nullopt, name.loc));
            scope.values[name.text] = out.back();
            scope.defined_at[name.text] = name.loc;
        } while (accept(","));
    };
    param_list(ParamRole::Left, combine->left, "left");
    const Token& bar = expect("|", " between the left and the right parameters");
    param_list(ParamRole::Right, combine->right, "right");
    if (accept(";")) param_list(ParamRole::Captured, combine->captured, "captured");
    if (combine->left.size() != combine->right.size())
        user_error(bar.loc, cat("combine `", combine->name, "` has ", combine->left.size(),
                                " left and ", combine->right.size(),
                                " right parameters; each side takes one per leaf"));
    expect(")", " after the parameters");
    SourceLoc return_loc;
    combine->results = parse_body(cat("combine `", combine->name, "`"), return_loc);
    if (combine->results.size() != combine->left.size())
        user_error(return_loc,
                   cat("combine `", combine->name, "` returns ", combine->results.size(),
                       " value", combine->results.size() == 1 ? "" : "s", " but has ",
                       combine->left.size(), " lea", combine->left.size() == 1 ? "f" : "ves",
                       "; it must return one value per leaf"));
    scope_ = nullptr;
    return combine;
}

ProgramRef Parser::parse_program() {
    Scope scope;
    scope_ = &scope;
    auto program = std::make_shared<Program>();
    program->loc = next().loc;  // `program`
    program->name = expect_name("a program name").text;
    expect("(", cat(" after `program ", program->name, "`"));
    program->params = parse_params(program->symbols);
    SourceLoc return_loc;
    program->results = parse_body(cat("program `", program->name, "`"), return_loc);
    scope_ = nullptr;
    return program;
}

// `x: f32[B, L<=1024, 4], ...)`. Symbols are made once every bound is known.
std::vector<NodeRef> Parser::parse_params(std::vector<SymbolRef>& symbols) {
    struct RawDim {
        std::optional<std::int64_t> constant;
        const Token* symbol = nullptr;
        std::optional<std::int64_t> bound;
        SourceLoc bound_loc;
    };
    struct RawParam {
        const Token* name;
        DType dtype;
        std::vector<RawDim> dims;
    };
    std::vector<RawParam> raw;
    std::vector<std::string> dtype_names;
    for (DType t : kAllDTypes) dtype_names.emplace_back(dtype_name(t));
    while (!peek().is(")")) {
        if (!raw.empty()) expect(",", " or `)` after a parameter");
        RawParam p{&expect_name("a parameter name"), DType::F32, {}};
        if (auto it = scope_->defined_at.find(p.name->text); it != scope_->defined_at.end())
            user_error(p.name->loc, cat("duplicate parameter `", p.name->text,
                                        "`: it is already a parameter at line ", it->second.line,
                                        ":", it->second.col));
        scope_->defined_at[p.name->text] = p.name->loc;
        expect(":", cat(" and a type after `", p.name->text, "` (e.g. `", p.name->text,
                        ": f32[N]`)"));
        const Token& dt = peek();
        if (dt.kind != TokenKind::Ident) fail(dt, "a dtype (bool, i8, ..., f32, f64)");
        auto parsed = parse_dtype(dt.text);
        if (!parsed)
            user_error(dt.loc, cat("unknown dtype `", dt.text, "`",
                                   did_you_mean(dt.text, dtype_names),
                                   " (dtypes: bool i8 i16 i32 i64 u8 f16 bf16 f32 f64)"));
        p.dtype = *parsed;
        next();
        expect("[", " after the dtype (a scalar is `f32[]`)");
        while (!peek().is("]")) {
            if (!p.dims.empty()) expect(",", " or `]` after a dim");
            RawDim d;
            const Token& t = peek();
            if (t.kind == TokenKind::Int) {
                d.constant = int_value(next(), false);
            } else if (t.kind == TokenKind::Ident && !is_reserved(t.text)) {
                d.symbol = &next();
                if (accept("<=")) {
                    d.bound_loc = peek().loc;
                    d.bound = expect_int("an integer bound after `<=`", false);
                }
            } else {
                fail(t, "a dim (an integer, a size symbol `N`, or a bounded symbol `N<=1024`)");
            }
            p.dims.push_back(d);
        }
        next();  // `]`
        raw.push_back(std::move(p));
    }
    next();  // `)`

    // One Symbol per name, carrying the bound written on any one of its occurrences.
    std::map<std::string, const RawDim*> bounded;
    for (auto& p : raw)
        for (auto& d : p.dims) {
            if (!d.bound) continue;
            auto [it, fresh] = bounded.emplace(d.symbol->text, &d);
            if (!fresh && *it->second->bound != *d.bound)
                user_error(d.bound_loc,
                           cat("size `", d.symbol->text, "` has two different bounds: ", *d.bound,
                               " here and ", *it->second->bound, " at line ",
                               it->second->bound_loc.line, ":", it->second->bound_loc.col));
        }
    std::vector<NodeRef> params;
    for (auto& p : raw) {
        Shape shape;
        for (auto& d : p.dims) {
            if (d.constant) {
                shape.push_back(*d.constant);
                continue;
            }
            SymbolRef& sym = scope_->sizes[d.symbol->text];
            if (!sym) {
                auto b = bounded.find(d.symbol->text);
                sym = Symbol::make(d.symbol->text,
                                   b == bounded.end() ? std::nullopt : b->second->bound);
                symbols.push_back(sym);
            }
            shape.push_back(Size::symbol(sym));
        }
        params.push_back(make_param(ParamRole::Program, static_cast<int>(params.size()),
                                    p.name->text, Type{p.dtype, std::move(shape), false},
                                    p.name->loc));
        scope_->values[p.name->text] = params.back();
    }
    return params;
}

// `{ statements; return exprs }`
std::vector<NodeRef> Parser::parse_body(std::string_view owner, SourceLoc& return_loc) {
    skip_newlines();
    expect("{", cat(" to open the body of ", owner));
    for (skip_newlines(); !peek().is("return"); skip_newlines()) {
        if (peek().is("}")) fail(peek(), cat("`return` before the end of ", owner));
        if (peek().kind == TokenKind::End) fail(peek(), cat("`}` to close ", owner));
        parse_statement();
    }
    return_loc = next().loc;
    std::vector<NodeRef> results;
    do {
        results.push_back(parse_expr());
    } while (accept(","));
    skip_newlines();
    expect("}", cat(" after the `return` of ", owner));
    return results;
}

// `name = expr`, `name = scan ...` or `(a, _, c) = scan ...`
void Parser::parse_statement() {
    const Token& first = peek();
    if (first.is("(")) {
        next();
        std::vector<const Token*> targets;
        do {
            const Token& t = peek();
            if (t.is("_")) {
                targets.push_back(&next());
            } else {
                targets.push_back(&expect_name("a name or `_` to assign a scan result to"));
            }
        } while (accept(","));
        expect(")", " after the names assigned to");
        expect("=", " after the names assigned to");
        if (!peek().is("scan"))
            fail(peek(), "`scan` (only a scan gives several results to assign)");
        parse_scan(targets, first);
    } else if (first.kind == TokenKind::Ident) {
        const Token& name = expect_name("a statement (`name = expr`) or `return`");
        expect("=", cat(" after `", name.text, "` (a statement is `name = expr`)"));
        if (peek().is("scan"))
            parse_scan({&name}, name);
        else
            bind(name, parse_expr());
    } else {
        fail(first, "a statement (`name = expr`) or `return`");
    }
    if (!peek().is("}") && peek().kind != TokenKind::Newline)
        fail(peek(), "end of line after the statement");
}

// `scan NAME(leaves...) dim=K [reverse] [with (captured...)]`
void Parser::parse_scan(const std::vector<const Token*>& targets, const Token& first_target) {
    const Token& kw = next();
    if (scope_->in_combine)
        user_error(kw.loc, "`scan` is not allowed inside a combine: a combine works on scalars");
    const Token& name = peek();
    if (name.kind != TokenKind::Ident) fail(name, "a combine name after `scan`");
    CombineRef combine = combine_named(next());
    std::vector<NodeRef> leaves =
        parse_args(name, cat(" and the leaves after `scan ", combine->name, "`"));
    std::vector<NodeRef> captured;
    if (!peek().is("dim")) fail(peek(), "`dim=K` after the leaves of the scan");
    next();
    expect("=", " after `dim`");
    std::int64_t dim = expect_int("an integer dim after `dim=`", true);
    bool reverse = false, with = false;
    while (true) {
        if (!reverse && accept("reverse")) {
            reverse = true;
        } else if (!with && peek().is("with")) {
            const Token& w = next();
            captured = parse_args(w, " after `with`");
            with = true;
        } else {
            break;
        }
    }
    NodeRef scan = make_scan(combine, std::move(leaves), std::move(captured), dim, reverse, kw.loc);
    int n = combine->num_leaves();
    if (static_cast<int>(targets.size()) != n) {
        std::string names;
        for (int i = 0; i < n; ++i) names += cat(i ? ", " : "", "y", i + 1);
        user_error(first_target.loc,
                   cat("scan of combine `", combine->name, "` gives ", n, " result",
                       n == 1 ? "" : "s", " but ", targets.size(), " name",
                       targets.size() == 1 ? " is" : "s are", " assigned; write ",
                       n == 1 ? "`y1" : cat("`(", names, ")"), " = scan ...` (`_` skips one)"));
    }
    for (int i = 0; i < n; ++i)
        if (!targets[i]->is("_")) bind(*targets[i], make_project(scan, i, targets[i]->loc));
}

void Parser::bind(const Token& name, const NodeRef& value) {
    // The first name a value gets is its printing hint; `b = a` only adds an alias.
    if (value->name.empty()) value->name = name.text;
    scope_->values[name.text] = value;
}

}  // namespace scanc::text

namespace scanc {

Module parse_module(std::string_view text, const std::string& file) {
    return text::Parser(text::lex(text, file), file).parse();
}

Module load_module(const std::string& path) {
    // A directory opens as a stream that reads nothing, which would parse as an empty module.
    if (std::error_code ec; std::filesystem::is_directory(path, ec))
        user_error({path, 0, 0}, "cannot read the file: it is a directory");
    std::ifstream in(path, std::ios::binary);
    if (!in) user_error({path, 0, 0}, cat("cannot read the file: ", std::strerror(errno)));
    // Read in blocks up to a cap, so that a device that never ends (/dev/zero) is an error
    // rather than all the memory there is; a .scan file of 50,000 statements is about 1 MB.
    constexpr std::size_t kMaxBytes = std::size_t{64} << 20;
    std::string text;
    char block[1 << 16];
    while (in.read(block, sizeof block) || in.gcount() > 0) {
        text.append(block, static_cast<std::size_t>(in.gcount()));
        if (text.size() > kMaxBytes)
            user_error({path, 0, 0}, "cannot read the file: it is larger than 64 MiB (a .scan file is text)");
    }
    if (in.bad()) user_error({path, 0, 0}, "cannot read the file");
    return parse_module(text, path);
}

}  // namespace scanc
