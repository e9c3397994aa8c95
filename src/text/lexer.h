// Tokens of the .scan format (DESIGN §2). Private to src/text.
//
// A newline is a token because it ends a statement, but the lexer drops it where a statement
// cannot end: inside ( ) or [ ], and after a comma, `=` or an operator. Runs of newlines and
// comment-only lines collapse into one token.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "scanc/error.h"

namespace scanc::text {

enum class TokenKind { Ident, Int, Float, Punct, Newline, End };

struct Token {
    TokenKind kind;
    std::string text;  // spelling; empty for Newline and End
    SourceLoc loc;

    bool is(std::string_view punct_or_word) const {
        return (kind == TokenKind::Punct || kind == TokenKind::Ident) && text == punct_or_word;
    }
    // "`x`", "end of line", "end of file": for "expected X, found Y" messages.
    std::string describe() const;
};

// The whole text as tokens, ending with one End token. CompileError on a character that
// starts no token.
std::vector<Token> lex(std::string_view text, const std::string& file);

}  // namespace scanc::text
