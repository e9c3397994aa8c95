// Instantiating a dtype-generic combine for one scan.
#pragma once

#include <span>
#include <unordered_map>

#include "scanc/ir/builder.h"

namespace scanc {

struct CombineTypes {
    std::unordered_map<const Node*, ScalarType> of;  // every node of the combine

    ScalarType operator[](const Node* n) const;
};

// Types every node of `combine` for leaves and captured values of these dtypes, and checks that
// each result has its leaf's dtype (a weak result takes it). Errors name `use`, the scan's place.
CombineTypes instantiate_combine(const Combine& combine, std::span<const DType> leaves,
                                 std::span<const DType> captured, const SourceLoc& use);

}  // namespace scanc
