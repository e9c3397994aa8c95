// Compiling a program for the CPU backend: the program is cut into stages, each compiled once
// (never per shape).
//
// Materialized values (tensors in memory) are the program's params and results, the inputs and
// outputs of slice/concat/interleave, and scan outputs that something other than their own
// scan's epilogue reads. Every other elementwise node is inlined into the stages that use it:
//   - a Fused stage with a scan evaluates the scan's prologue (the elementwise DAGs from
//     materialized values to its leaves and captured values), the combine, and its epilogue
//     (elementwise results of the same shape that read only this scan's outputs and
//     materialized values) block by block, so none of those intermediates reach memory;
//   - a Fused stage without a scan evaluates one elementwise result;
//   - Slice (a view, no copy), Concat and Interleave move data.
// An elementwise value read by two stages is recomputed in each rather than stored.
#pragma once

#include <unordered_map>
#include <vector>

#include "bytecode.h"
#include "scanc/ir/node.h"
#include "scanc/ir/scalar_eval.h"

namespace scanc::cpu {

// The bytecode of one fused stage. Registers are numbered from 0; `consts` are filled once.
struct StageCode {
    int num_regs = 0;
    std::vector<std::pair<int, Scalar>> consts;  // register, value in its compute dtype
    Code captured;  // once per block of lanes: captured values (constant along the scan)
    Code step;      // per step: loads and prologue -> leaf registers `x`
    Code init;      // first step without a carry: next = x
    Code combine;   // next = f(carry, x); the runner then points `carry` at `next` (no copy)
    // The combine with the last write of every leaf stored unchanged done by its streaming
    // variant (OpKey::stream), for Worker::fixup's large outputs: no staging row, no copy.
    // Empty when some stored leaf's last write has no such variant.
    Code combine_stream;
    // combine and combine_stream with every read of a carry register by its broadcast variant
    // (OpKey::bcast), for Worker::fixup: a run's carry is then read in place, one value, instead
    // of filled across a register. Only what the stored leaves need is computed (a leaf no
    // output stores is dead there). Empty when some such read has no broadcast variant.
    Code combine_bcast, combine_stream_bcast;
    // The combine with every stored leaf's last write by its tee variant (OpKey::tee): the
    // carry row as usual, and the output row in memory with streaming stores (Worker::run, for
    // large outputs whose lanes are contiguous). Empty when some such write has none.
    Code combine_tee;
    // combine and combine_tee less what only span totals read (Codegen::find_scan_combine): a
    // scan from a carry (Worker::run, Mode::Scan) makes the leaves its outputs store, and reads
    // back only the carries those need; the others (affine's running product when only h is
    // returned) matter only where spans are combined. Set where that leaves something out.
    bool scan_prunes = false;
    Code scan_combine, scan_combine_tee;
    Code epilogue;  // per step: outputs from the carry and loads -> stores
    std::vector<int> carry, x, next;  // per leaf
    // Loads that need no conversion are not instructions: the register points at the step's
    // row of the input slot. (register, input slot)
    std::vector<std::pair<int, int>> in_alias;
    // Per leaf: the output slot that stores its carry unchanged, or -1. The runner points
    // `next` at that slot's row, so the combine writes the output itself (no Store pass).
    std::vector<int> store_alias;
    // Set when the whole step is `next = op(carry, x)` of one leaf, x read in place and the carry
    // stored in place: the runner may run it serially (SerialFn) for groups of few lanes.
    SerialFn serial = nullptr;
    SerialBlockFn serial_block = nullptr;  // the same op for one contiguous lane, reassociated
    // The same for a one-leaf combine of one op whatever the step code and epilogue (which
    // FusedRows runs around it), else null. serial_x_left: for either, x is op's left operand.
    SerialBlockFn one_op_block = nullptr;
    bool serial_x_left = false;
    int serial_x_slot = -1;
    std::vector<DType> leaf_compute;  // per leaf: the carry registers' compute dtype
    std::vector<bool> slot_tiled;     // per input slot: read by `step`/`epilogue` loads
};

struct Stage {
    enum class Kind { Fused, Slice, Concat, Interleave };
    Kind kind = Kind::Fused;
    const Node* node = nullptr;  // the scan, the elementwise result, or the structural op
    bool has_scan = false;
    int dim = 0;
    bool reverse = false;
    Shape shape;              // Fused: the iteration space (the scan's shape or the result's)
    std::vector<int> inputs;  // value ids; a Fused stage's input slots
    std::vector<int> outputs;  // value ids; a Fused stage's output slots
    StageCode code;
};

struct Plan {
    std::vector<const Node*> values;  // value id -> the node whose tensor it is
    std::vector<Stage> stages;        // in execution order
    std::vector<int> results;         // value id of each program result
    int num_params = 0;               // values 0..num_params-1 are the params, in order
};

Plan make_plan(const Program& program);

// Compiles a Fused stage's bytecode (plan_codegen.cpp) and fills stage.inputs. `outputs` and
// the program nodes in `value_of` (the materialized values) must be set; nodes this stage
// produces (its outputs) are computed, other materialized nodes are loaded.
StageCode compile_stage(Stage& stage, const std::vector<const Node*>& values,
                        const std::unordered_map<const Node*, int>& value_of);

}  // namespace scanc::cpu
