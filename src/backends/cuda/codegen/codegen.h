// CUDA code generation (internal to the cuda backend).
//
// make_plan splits a program into stages, one kernel each:
//   - a scan stage per Scan node: its leaves and captured values are computed in the kernel from
//     the program inputs (the fused prologue), and results that are elementwise functions of the
//     scan's outputs with the scan's shape are computed before the store (the fused epilogue);
//   - a map stage per value that must be materialized otherwise (a result that no scan can
//     compute, each part of a concat or interleave, the input of a slice of an expression).
// Every tensor a stage reads is an Access: a program input or a buffer of an earlier stage, seen
// through slices and broadcast to the stage's shape, whose pointer and strides are kernel
// arguments computed at run time. Generated kernels therefore depend on the program's structure
// and dtypes only, never on sizes or strides.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "scanc/ir/node.h"
#include "tuning.h"

namespace scanc::cuda {

struct Access {
    const Node* node = nullptr;       // the value read: a Param, Project, Concat, ... or Slice
    int input = -1;                   // a program parameter, or
    int buffer = -1;                  // an intermediate buffer
    std::vector<const Node*> slices;  // applied to the source, nearest the source first
    DType dtype = DType::F32;
};

// Where a stage output goes: a program result or a buffer, whole, or as part `part` of the
// Concat/Interleave node `parent` that the buffer holds.
struct Target {
    int result = -1;
    int buffer = -1;
    const Node* parent = nullptr;
    int part = 0;
};

struct StageOutput {
    const Node* value = nullptr;
    Target target;
};

struct Stage {
    bool is_scan = false;
    const Node* node = nullptr;  // the Scan node, or the value a map stage computes
    int rank = 0;                // of the iteration space (scan/value shape)
    int dim = -1;                // scan dim
    bool reverse = false;
    std::vector<Access> inputs;
    std::vector<StageOutput> outputs;
    int id = 0;  // kernel names: scanc_rows_<id>, scanc_cols_<id>, scanc_map_<id>
};

struct Buffer {
    const Node* node = nullptr;  // contiguous, with this node's type
};

struct Plan {
    ProgramRef program;
    std::vector<Buffer> buffers;
    std::vector<Stage> stages;
};

Plan make_plan(const ProgramRef& program);

// The iteration shape of a stage: the scan's (every leaf has it) or the value's.
inline const Shape& stage_shape(const Stage& s) { return s.node->types[0].shape; }

// The tuning of a stage on compute capability `cc` (chosen by its state size and its combine's
// weight).
Tuning stage_tuning(const Stage& stage, int cc);
// The state words of a scan stage (sum over leaves of state_words).
int stage_state_words(const Stage& stage);
// About what one combine costs in instructions: kTranscendentalWeight per transcendental
// function (exp, log, logaddexp, pow, tanh, ...), 8 per division or root, 1 per other op.
int combine_weight(const Combine& combine);

// A layout class: per stage, each access's and output's byte step along the scan dim as the
// rows kernels take it, fixed at compile time so that a thread's loads and stores are immediate
// offsets from one pointer; kRuntimeStep reads the stride from the kernel arguments instead. A
// row that is contiguous steps by its element size, a broadcast one by 0. The other kernels
// always read strides from the arguments, so any class runs them.
inline constexpr std::int64_t kRuntimeStep = -1;
struct StageLayout {
    std::vector<std::int64_t> in, out;  // per access, per output (empty for map stages)
    bool operator==(const StageLayout&) const = default;
};
using Layout = std::vector<StageLayout>;  // per stage

// Whether an access of a scan stage is broadcast along the scan dim (rank too short, or an
// extent of constant 1): one value per line, read once per line by the kernels.
bool invariant_along_scan(const Stage& stage, const Access& access);

// The class of contiguous inputs, read off the program alone: an access steps by its element
// size times the steps of its slices along the scan dim, or 0 where it is broadcast along it
// (rank too short, or an extent of constant 1).
Layout contiguous_layout(const Plan& plan);

// The complete CUDA C++ source of a plan in layout class `layout` for compute capability `cc`:
// prelude, one K struct per stage, extern "C" kernels.
std::string generate_source(const Plan& plan, int cc, const Layout& layout);
// The kernels of a generated source, in the order of their entries. Entry i alone compiles with
// -DSCANC_ONLY_ENTRY=i, so a program's kernels compile as separate NVRTC programs in parallel.
std::vector<std::string> kernel_entry_names(const std::string& source);
// The steps that generate_source compiles into stage `stage`'s rows kernels: its entry of
// `layout`, or nullptr where every step is a kernel argument (a map stage, tuning fixsteps=0).
const StageLayout* fixed_layout(const Stage& stage, const Tuning& tuning, const Layout& layout);
// Whether the source has the stage's vector rows kernels, which read four consecutive elements
// of each access at once: every access steps by its element size or 0 (broadcast), every output
// by its element size, the tuning asks for them and its row items are a multiple of 4.
bool has_vector_rows(const Stage& stage, const Tuning& tuning, const StageLayout* layout);
// The look-back rows kernel of a stage: `shared` for one-tile rows that share a tile, `vec` for
// rows of whole vectors of four (emitted where the layout class lets every access step by its
// element size or 0: K::VEC).
std::string rows_kernel_name(int stage, bool shared, bool vec);
// The kernels of a scan stage that its shape can reach, as the executable chooses them: rows
// (inner extent 1) or cols; among rows, the resident kernels for rows of at most 32 x res_items
// (in lane groups up to 16 x res_items, where the tuning has them), else the shared and
// look-back rows kernels. Constant extents settle some choices; an extent known only at run
// time keeps every kernel that some value of it would take. Only these are compiled.
struct ReachableKernels {
    bool rows = true;             // the shared and look-back rows kernels (scalar and vector)
    bool resident = true;         // resident rows, whole warps
    bool resident_groups = true;  // resident rows in lane groups
    bool cols = true;             // cols, and cols for few lines where the tuning has them
};
ReachableKernels reachable_kernels(const Stage& stage, const Tuning& tuning);
// The resident rows kernel of a stage: whole warps per row, or (`groups`) rows of at most 16 x
// res_items in groups of lanes (emitted where the tuning has res_groups).
std::string resident_kernel_name(int stage, bool groups);
// The cols kernel of a stage: lines of the tuning's col_lanes, or (`few_lines`, where the tuning
// has few_lines_lanes) its kernel for launches of few lines.
std::string cols_kernel_name(int stage, bool few_lines);

std::string_view cuda_prelude();  // scalar semantics, arguments, cursors, look-back words
std::string_view cuda_kernels();  // the kernel templates (rows, resident rows, cols, map)

// C++ type a dtype computes in (f16/bf16: float) and is stored as (f16/bf16: unsigned short).
std::string_view compute_ctype(DType t);
std::string_view storage_ctype(DType t);
// Number of 32-bit words of a value computed in `t` (look-back status words).
int state_words(DType t);

}  // namespace scanc::cuda
