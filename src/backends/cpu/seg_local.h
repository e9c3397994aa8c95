// Phase 1 of a fix-up (fixup.h) in SIMD registers (issue 4, round 13): for a stage whose
// combine over f32 leaves is made only of + - * /, multiply-adds and copies, whose step code is
// empty (every leaf read in place from an f32 input walked forward) and which captures nothing,
// a piece of 8k lanes of 8m steps runs through SegLocalFn (ops_seg_local.inc) instead of
// Worker::run(Mode::Local): no input or local tiles in memory and no dispatch per step. Same
// lanes, same sequence of ops per lane, so the same local scans and totals bit for bit (which
// NaN an op returns when both operands are NaN aside); every other stage or piece keeps
// Worker's path. Round 14: the same kernel scans whole rows of memory (strided groups of
// run_stage.cpp, whose outputs all store leaves) straight into the outputs: no tiles, gathers
// or scatters.
#pragma once

#include <set>

#include "fixup.h"
#include "seg_jit.h"

namespace scanc::cpu {

// Per-block budget of chained fix-ups whose phase 1 runs here (kPortionBytes: Worker's).
inline constexpr std::int64_t kSegPortionBytes = 256 << 10;

// `combine` as `prog`'s ops (each constant taken where an op first reads it, each leaf's
// result an op's own register); false where some instruction is not one the register kernels
// run. `ready`: the registers holding a value before it (carries, elements). A leaf the
// combine does not make (scan_combine leaves it out) keeps its carry where `keep_unmade`,
// else fails.
bool take_seg_ops(const StageCode& code, const Code& combine, std::set<int> ready, bool keep_unmade,
                  SegProgram& prog);
// The pairing levels a span's total takes (SegProgram::row_fold): as many as fit in AVX-512's
// registers beside the row scan's own (row_scan_registers), up to kSpanFold; none for 8-lane
// rows.
int span_fold(const SegProgram& p);
// The leaves some output stores unchanged (StageCode::store_alias), as a mask: what the row
// and column scans' machine code stores.
unsigned stored_leaves(const StageCode& code);
// Whether combines may become machine code (seg_jit.h): unless the environment sets
// SCANC_CPU_JIT=0.
bool cpu_jit_allowed();

class SegLocal {
public:
    // Unusable (usable() false for every piece) when the stage or the CPU does not qualify.
    // `compile`: the combine as machine code (seg_jit.h) where it can be, unless the
    // environment sets SCANC_CPU_JIT=0; else interpreted (the same results).
    SegLocal(const StageCode& code, const Layout& L, int dir, bool compile = true);
    bool compiled() const { return prog_.jit != nullptr; }
    bool rows_compiled() const { return prog_.row_jit != nullptr; }  // the row scan's code

    bool active() const { return fn_ != nullptr; }
    int dir() const { return dir_; }
    bool usable(const Piece& pc) const {
        return fn_ && pc.lanes % 8 == 0 && pc.steps % 8 == 0 && pc.lanes > 0 && pc.steps > 0;
    }
    // Phase 1 of piece `pc` of `line`: local scans into `local`'s buffers (cover()ed for it),
    // lane totals into `totals` entries i...
    void run(std::int64_t line, const Piece& pc, const LocalScans& local, LaneValues& totals,
             int i) const;

    // Lines first.. first + n - 1 scanned whole into the outputs (Mode::Scan; issue 4, round 14):
    // reassociated, row by row in registers (RowScanArgs, round 24), else (`ordered` runs) up
    // to 32 lines and 16 steps at a time in Worker's order; the last steps by `w` from the
    // carries. False, with nothing done, when the stage, its outputs or these lines' strides do
    // not allow it.
    bool run_rows(std::int64_t first, int n, Worker& w, LaneValues& totals) const;
    // The same for lines side by side in memory whose steps are apart (a scan along dim 0 or a
    // middle dim; issue 4, round 24), by ColScanArgs' machine code: chunks of lanes through a
    // few steps at a time from their carries, each lane combined in order (Worker's bits, so
    // `ordered` runs too); the lanes past the last whole chunk by `w`. False, with nothing
    // done, without machine code or when the stage or the lines do not allow it.
    bool run_cols(std::int64_t first, int n, Worker& w) const;

    // Whether scan_span runs this stage: reassociated lines of contiguous steps, every output
    // a stored leaf (the row scan's conditions).
    bool spans() const { return rows_ && L_.reassociate && mem_fns().row_scan; }
    int span_lanes() const { return mem_fns().row_lanes; }
    bool spans_compiled() const { return prog_.row_jit && folded_.row_jit; }  // scan_span's code
    // Steps [start, start + vectors * span_lanes()) of `line` as one row of the row scan (a
    // block of a chained line, run_chain.cpp): from `carry` (per leaf, as the chain holds
    // values; null: none), into the outputs when `store`; its last scanned value per leaf into
    // `last`. The inputs at step `ahead` of line `ahead_line` on are prefetched in step.
    void scan_span(std::int64_t line, std::int64_t start, std::int64_t vectors,
                   const std::uint64_t* carry, bool store, std::int64_t ahead_line,
                   std::int64_t ahead, std::uint64_t* last) const;

private:
    bool scan_rows(std::int64_t first, int n, Worker& w, LaneValues& totals) const;
    // Steps head.. of the lines by `w`, from the carries in `totals`.
    void finish_rows(std::int64_t first, int n, std::int64_t head, Worker& w, LaneValues& totals) const;

    const Layout& L_;
    int dir_;
    SegLocalFn fn_ = nullptr;
    SegProgram prog_;
    SegProgram totals_, folded_;  // prog_ storing nothing (scan_span's totals), and paired up
    int slot_[kSegMaxLeaves] = {};  // per leaf: the input slot its x reads
    int out_of_[kSegMaxLeaves] = {};  // per leaf: the output storing it, or -1
    bool rows_ = false;  // run_rows may run
    const ColScanFns* cols_ = nullptr;  // run_cols' code
};

}  // namespace scanc::cpu
