#include "lexer.h"

#include <cctype>

namespace scanc::text {

namespace {

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// After these a statement cannot end, so a following newline is not a token.
bool continues_line(const Token& t) {
    static constexpr std::string_view kOps[] = {",",  "=",  "+",  "-",  "*",  "/",  "%",
                                                "&",  "|",  "^",  "<<", ">>", "<",  "<=",
                                                ">",  ">=", "==", "!=", "and", "or", "not"};
    for (auto op : kOps)
        if (t.is(op)) return true;
    return false;
}

class Lexer {
public:
    Lexer(std::string_view text, const std::string& file) : text_(text), file_(file) {}

    std::vector<Token> run() {
        while (pos_ < text_.size()) {
            char c = text_[pos_];
            if (c == '\n') {
                newline();
            } else if (c == ' ' || c == '\t' || c == '\r') {
                advance(1);
            } else if (c == '#') {
                while (pos_ < text_.size() && text_[pos_] != '\n') advance(1);
            } else if (ident_start(c)) {
                std::size_t end = pos_;
                while (end < text_.size() && ident_char(text_[end])) ++end;
                emit(TokenKind::Ident, end - pos_);
            } else if (digit(c) || (c == '.' && digit(peek(1)))) {
                number();
            } else {
                punct();
            }
        }
        SourceLoc end = here();
        // Inside an open `(` the file ends mid-statement: report "end of file", not a newline.
        if (depth_ == 0 && !tokens_.empty() && tokens_.back().kind != TokenKind::Newline)
            tokens_.push_back({TokenKind::Newline, "", end});
        tokens_.push_back({TokenKind::End, "", end});
        return std::move(tokens_);
    }

private:
    char peek(std::size_t ahead) const {
        return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
    }
    SourceLoc here() const { return {file_, line_, col_}; }
    void advance(std::size_t n) {
        pos_ += n;
        col_ += static_cast<int>(n);
    }
    void emit(TokenKind kind, std::size_t length) {
        tokens_.push_back({kind, std::string(text_.substr(pos_, length)), here()});
        advance(length);
    }

    void newline() {
        bool wanted = depth_ == 0 && !tokens_.empty() &&
                      tokens_.back().kind != TokenKind::Newline && !continues_line(tokens_.back());
        if (wanted) tokens_.push_back({TokenKind::Newline, "", here()});
        ++pos_;
        ++line_;
        col_ = 1;
    }

    void number() {
        std::size_t end = pos_;
        bool is_float = false;
        while (end < text_.size() && digit(text_[end])) ++end;
        if (end < text_.size() && text_[end] == '.') {
            is_float = true;
            ++end;
            while (end < text_.size() && digit(text_[end])) ++end;
        }
        if (end < text_.size() && (text_[end] == 'e' || text_[end] == 'E')) {
            is_float = true;
            ++end;
            if (end < text_.size() && (text_[end] == '+' || text_[end] == '-')) ++end;
            std::size_t digits = end;
            while (end < text_.size() && digit(text_[end])) ++end;
            if (end == digits) malformed(end);
        }
        if (end < text_.size() && (ident_char(text_[end]) || text_[end] == '.')) malformed(end);
        emit(is_float ? TokenKind::Float : TokenKind::Int, end - pos_);
    }

    [[noreturn]] void malformed(std::size_t end) {
        while (end < text_.size() && (ident_char(text_[end]) || text_[end] == '.')) ++end;
        user_error(here(), cat("malformed number `", text_.substr(pos_, end - pos_),
                               "`; expected digits with an optional `.` and exponent (`1e-3`)"));
    }

    void punct() {
        static constexpr std::string_view kTwo[] = {"<=", ">=", "==", "!=", "<<", ">>"};
        for (auto op : kTwo)
            if (text_.substr(pos_, 2) == op) return emit(TokenKind::Punct, 2);
        char c = text_[pos_];
        if (std::string_view("()[]{},:;|=<>+-*/%&^").find(c) == std::string_view::npos) {
            std::string hint = c == '!' ? "; write `not` for logical negation"
                               : c == '~' ? "; write `x ^ -1` for bitwise not"
                                          : "";
            int byte = static_cast<unsigned char>(c);
            std::string shown = std::isprint(byte) ? cat("`", c, "`") : cat("byte 0x", std::hex, byte);
            user_error(here(), cat("unexpected character ", shown, hint));
        }
        if (c == '(' || c == '[') ++depth_;
        if ((c == ')' || c == ']') && depth_ > 0) --depth_;
        // Outside parentheses `;` ends a statement as a newline does (one-line combines, such as
        // the text scanc.torch traces); inside them it separates a combine's captured parameters.
        if (c == ';' && depth_ == 0) {
            if (!tokens_.empty() && tokens_.back().kind != TokenKind::Newline)
                tokens_.push_back({TokenKind::Newline, ";", here()});
            return advance(1);
        }
        emit(TokenKind::Punct, 1);
    }

    std::string_view text_;
    const std::string& file_;
    std::size_t pos_ = 0;
    int line_ = 1, col_ = 1;
    int depth_ = 0;
    std::vector<Token> tokens_;
};

}  // namespace

std::string Token::describe() const {
    switch (kind) {
        case TokenKind::Newline: return text == ";" ? "`;`" : "end of line";
        case TokenKind::End: return "end of file";
        case TokenKind::Int:
        case TokenKind::Float: return cat("number `", text, "`");
        default: return cat("`", text, "`");
    }
}

std::vector<Token> lex(std::string_view text, const std::string& file) {
    return Lexer(text, file).run();
}

}  // namespace scanc::text
