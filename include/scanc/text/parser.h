// The .scan text format (DESIGN §2). Errors are CompileErrors carrying file:line:col and what
// was expected.
#pragma once

#include <string>
#include <string_view>

#include "scanc/ir/node.h"

namespace scanc {

Module parse_module(std::string_view text, const std::string& file = "<string>");
// Reads and parses a file; CompileError naming the file if it cannot be read.
Module load_module(const std::string& path);

}  // namespace scanc
