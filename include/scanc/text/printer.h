// Canonical text of combines and programs. print(parse(print(m))) == print(m), and parsing the
// text gives the same DAG with the same types.
//
// Layout: 2-space indentation, one blank line between definitions, combines first. A value is
// a statement when it has a name hint, is used more than once, is a scan, or nests deeper than
// a limit; everything else is inlined with the fewest parentheses the precedence table needs.
// Hints are made into identifiers (`2nd value` -> `v2nd_value`, `not` -> `not_`); a repeated
// hint gets a suffix (`a_1`); unnamed values get `t0`, `t1`, ... never colliding with a hint.
// Floats print in the shortest form that reads back exactly and always look like floats
// (`2.0`, `1e-300`, `inf`); sizes print with Size::str(), which reads back.
// Limits: a param dim must be a constant or a symbol; two distinct Symbols of one name in one
// program print as one.
#pragma once

#include <string>

#include "scanc/ir/node.h"

namespace scanc {

// Combines in module order, then any combine a program uses that the module does not list;
// combines or programs that share a name are told apart by a suffix.
std::string print_module(const Module& module);
std::string print_combine(const Combine& combine);
// A program refers to combines by name; print_module prints them first.
std::string print_program(const Program& program);

}  // namespace scanc
