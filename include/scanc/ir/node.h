// The program IR. One node type serves both levels:
//   - a Program is a DAG of tensor ops (elementwise with NumPy broadcasting, scan, slice, concat)
//     over typed parameters with symbolic shapes; every program node carries its Type(s);
//   - a Combine is a DAG of scalar elementwise ops over left/right/captured parameters. It is
//     generic in dtype: its nodes carry no type until a scan instantiates it (combine_types.h).
// Nodes are immutable and shared; values are identified by object, never by name (names are
// printing hints only). Build nodes through builder.h, which checks types as it goes.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "scanc/error.h"
#include "scanc/ir/dtype.h"
#include "scanc/ir/op.h"
#include "scanc/ir/size.h"

namespace scanc {

struct Node;
using NodeRef = std::shared_ptr<const Node>;
struct Combine;
using CombineRef = std::shared_ptr<const Combine>;

// The type of a program value. `weak` marks a value derived only from literals: it has no
// dtype of its own and takes the dtype of the other operand where it is used (then `dtype` is
// I64 for integer literals and F64 for float ones, the dtype it has if used alone).
struct Type {
    DType dtype = DType::F32;
    Shape shape;
    bool weak = false;

    std::string str() const;  // "f32[B, L]"
};

enum class ParamRole : unsigned char { Program, Left, Right, Captured };

struct ParamAttr {
    ParamRole role;
    int index;  // position among the params of that role
    std::string name;
};

struct LiteralAttr {
    bool is_float;  // as written: `2` is an integer literal, `2.0`, `inf`, `nan` are float
    double f;       // the value if is_float
    std::int64_t i;  // the value if !is_float

    double as_double() const { return is_float ? f : static_cast<double>(i); }
};

struct CastAttr {
    DType to;
};

struct ScanAttr {
    CombineRef combine;
    int num_leaves;  // inputs = leaves..., captured...
    int dim;         // normalized: 0 <= dim < rank
    bool reverse;
};

struct SliceAttr {
    int dim;  // normalized
    // Python semantics: a negative constant counts from the end; then both are clamped to
    // [0, size]. Symbolic bounds are taken as they are, clamped.
    Size start, stop;
    std::int64_t step;  // >= 1
};

struct ConcatAttr {
    int dim;  // normalized
};

// interleave(dim, even, odd): out[2i] = even[i], out[2i+1] = odd[i] along dim; even has the same
// length as odd or one more. The one op a work-efficient lowering needs besides slice/concat.
struct InterleaveAttr {
    int dim;  // normalized
};

struct ProjectAttr {
    int index;  // which output of a multi-output node (a scan)
};

using NodeAttr = std::variant<std::monostate, ParamAttr, LiteralAttr, CastAttr, ScanAttr,
                              SliceAttr, ConcatAttr, InterleaveAttr, ProjectAttr>;

// The longest chain of operations a value may sit on (params and literals are depth 1). Passes
// walk the DAG recursively, so the builder refuses a deeper one rather than let a long chain
// overflow the stack (freeing a chain takes no recursion: ~Node).
constexpr int kMaxNodeDepth = 10000;

struct Node {
    Op op;
    std::vector<NodeRef> inputs;
    int depth = 1;  // 1 + the deepest input's depth
    NodeAttr attr;
    // Program nodes: one Type per output (a scan has one per leaf; everything else one).
    // Combine nodes: empty.
    std::vector<Type> types;
    // Printing hint, may be empty. Mutable: `a = expr` names a node after it is built.
    mutable std::string name;
    SourceLoc loc;

    // Frees the inputs only this node holds one after another, where their destructors would
    // nest as deep as the chain (kMaxNodeDepth) does.
    ~Node();

    const Type& type() const;  // the single output's type
    int num_outputs() const { return types.empty() ? 1 : static_cast<int>(types.size()); }

    template <typename T>
    const T& as() const {
        return std::get<T>(attr);
    }
};

// combine NAME(left | right; captured) { ...; return results }
struct Combine {
    std::string name;
    std::vector<NodeRef> left, right, captured;  // Param nodes, roles Left/Right/Captured
    std::vector<NodeRef> results;                // one per leaf
    SourceLoc loc;

    int num_leaves() const { return static_cast<int>(left.size()); }
    int num_captured() const { return static_cast<int>(captured.size()); }
};

// program NAME(params) { ...; return results }
struct Program {
    std::string name;
    std::vector<NodeRef> params;   // Param nodes, role Program, typed
    std::vector<NodeRef> results;  // single-output typed nodes
    std::vector<SymbolRef> symbols;  // every size symbol of the params, in order of appearance
    SourceLoc loc;
};
using ProgramRef = std::shared_ptr<const Program>;

// A parsed file: combines and programs in order of definition.
struct Module {
    std::vector<CombineRef> combines;
    std::vector<ProgramRef> programs;

    CombineRef find_combine(std::string_view name) const;
    ProgramRef find_program(std::string_view name) const;
    // The named program, or the only one when `name` is empty. CompileError otherwise.
    ProgramRef program(std::string_view name) const;
};

// Every node reachable from `roots`, inputs before users, each once.
std::vector<const Node*> topo_order(std::span<const NodeRef> roots);

}  // namespace scanc
