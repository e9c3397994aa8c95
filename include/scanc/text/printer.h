// Canonical text of combines and programs. parse(print(m)) prints identically.
#pragma once

#include <string>

#include "scanc/ir/node.h"

namespace scanc {

std::string print_module(const Module& module);
std::string print_combine(const Combine& combine);
// A program refers to combines by name; print_module prints them first.
std::string print_program(const Program& program);

}  // namespace scanc
