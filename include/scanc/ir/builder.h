// Making IR nodes. Every function checks its operands and infers the result's type and
// symbolic shape as it builds, so a mistake is reported where it is made (CompileError at
// `loc`). Program nodes (typed operands) get Types; combine nodes (untyped operands) stay
// generic. The same rules re-check whole programs in passes/verify.
#pragma once

#include <optional>
#include <string>
#include <span>
#include <unordered_map>
#include <vector>

#include "scanc/ir/node.h"

namespace scanc {

// The dtype-level typing rule of one elementwise op, shared by programs and combines.
struct ScalarType {
    DType dtype;
    bool weak = false;  // literal-derived: adopts the other operand's dtype

    bool operator==(const ScalarType&) const = default;
};

// Result type of `op` applied to `args`; `cast_to` is the target of a Cast.
// CompileError at `loc` names the op and the offending dtypes.
ScalarType elementwise_type(Op op, std::span<const ScalarType> args, std::optional<DType> cast_to,
                            const SourceLoc& loc);

// NumPy broadcasting of two symbolic shapes; CompileError naming both sizes if they can't agree.
Shape broadcast_shapes(const Shape& a, const Shape& b, const SourceLoc& loc);

// Normalizes a possibly negative dim for a tensor of `rank` dims; CompileError if out of range.
int normalize_dim(std::int64_t dim, int rank, const SourceLoc& loc);

// Number of elements `slice` keeps of a dimension of size `n` (Python semantics, clamped).
Size slice_length(const Size& n, const Size& start, const Size& stop, std::int64_t step);
// The same at run time, for a dimension `n` long and these bindings: a bound's index (a
// negative constant counts from the end, then everything is clamped to [0, n]), and the
// slice's first index and length. SizeOverflow if a bound's value leaves int64.
std::int64_t slice_bound(const Size& bound, std::int64_t n, const Bindings& bindings);
struct SliceExtent {
    std::int64_t start, length;
};
SliceExtent slice_extent(const SliceAttr& slice, std::int64_t n, const Bindings& bindings);

// `type` is given for program params and omitted for combine params.
NodeRef make_param(ParamRole role, int index, std::string name, std::optional<Type> type,
                   SourceLoc loc = {});
// `typed`: a program-level literal (a weak 0-d tensor) rather than a combine constant.
NodeRef make_literal(LiteralAttr value, bool typed, SourceLoc loc = {});
NodeRef make_elementwise(Op op, std::vector<NodeRef> args, SourceLoc loc = {},
                         std::optional<DType> cast_to = std::nullopt);
// A scan node with one output per leaf; take them with make_project or scan_outputs.
NodeRef make_scan(CombineRef combine, std::vector<NodeRef> leaves, std::vector<NodeRef> captured,
                  std::int64_t dim, bool reverse, SourceLoc loc = {});
NodeRef make_project(NodeRef multi, int index, SourceLoc loc = {});
std::vector<NodeRef> scan_outputs(const NodeRef& scan);
NodeRef make_slice(NodeRef x, std::int64_t dim, Size start, Size stop, std::int64_t step = 1,
                   SourceLoc loc = {});
NodeRef make_concat(std::int64_t dim, std::vector<NodeRef> xs, SourceLoc loc = {});
// Lengths along `dim` must satisfy len(even) - len(odd) in {0, 1}; checked here when both are
// constant, else at run time by check_interleave_lengths (one message for both).
NodeRef make_interleave(std::int64_t dim, NodeRef even, NodeRef odd, SourceLoc loc = {});
void check_interleave_lengths(const SourceLoc& loc, int dim, std::int64_t even, std::int64_t odd);

// Rebuilds `node` over new inputs with the same op and attributes, re-inferring types; a
// slice's bounds get the symbols in `sizes` replaced (as its inputs' shapes had theirs).
// Passes use it to rewrite a DAG.
NodeRef rebuild(const Node& node, std::vector<NodeRef> inputs,
                const std::unordered_map<const Symbol*, Size>& sizes = {});

}  // namespace scanc
