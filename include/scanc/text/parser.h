// The .scan text format (DESIGN §2): parsing text into a Module of combines and programs.
//
// Every node is built through ir/builder.h as it is read, so types and shapes are checked on
// the way and each node's `loc` is the place of the token that made it (the operator of a
// binary expression, the name of a call, the `scan` keyword). Decisions beyond DESIGN §2:
//   - combines may be used before they are defined; definitions are listed in file order;
//   - a second combine, program or parameter of one name is an error naming the first's line;
//   - in a program a name means its latest assignment; the first name given to a value becomes
//     its printing hint (Node::name); `b = a` only adds an alias;
//   - param dims are an integer, a size symbol `N`, or `N<=1024` (the bound may be written on any
//     one occurrence); one Symbol per name per program, Program::symbols in order of appearance;
//   - slice bounds are size expressions: integers (negative counts from the end), symbols,
//     `+ -`, integer-constant `*`, `min(a, b)`, `max(a, b)`, `floordiv(a, k)`;
//   - `interleave(dim, even, odd)` is a program-level op like `concat`;
//   - `-` written directly before a number, `inf` or `nan` is part of the literal; `-(2)` is a
//     negation of the literal 2.
// Errors are CompileErrors carrying file:line:col and "expected X, found Y"; the first wins.
// No input crashes or recurses without bound.
#pragma once

#include <string>
#include <string_view>

#include "scanc/ir/node.h"

namespace scanc {

Module parse_module(std::string_view text, const std::string& file = "<string>");
// Reads and parses a file; CompileError naming the file if it cannot be read.
Module load_module(const std::string& path);
// Whether `name` can name a value or a size in the text: an identifier (letters, digits and `_`,
// not starting with a digit) that is not a reserved word.
bool is_text_name(std::string_view name);

}  // namespace scanc
