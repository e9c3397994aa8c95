// Equality of sizes over one symbol by what they compute rather than how they are written
// (size_periodic.cpp): Size::equals falls back to it where canonical forms differ.
#pragma once

#include "scanc/ir/size.h"

namespace scanc::detail {

// Whether a and b have the same value for every value of the one symbol they mention (within
// its bound). False where that is not decided: sizes of several symbols, or whose period or
// threshold (see the .cpp) is too long to check.
bool equal_over_one_symbol(const Size& a, const Size& b);

}  // namespace scanc::detail
