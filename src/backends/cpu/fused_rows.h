// Rows whose scan has an elementwise prologue or epilogue, or narrow floats to convert
// (forty-eighth session). The register kernels and one-op row loops (seg_local.h, SerialBlockFn)
// need every leaf read in place and every output a stored leaf; anything else went to Worker,
// whose lanes are lines: one bytecode dispatch per op and step for a group of rows, and tiles
// transposed in and out, 3-6x slower than the plain scan (`y = scan add(x * 2.0)`, `+ 1.0`
// after it; an f16 sum 10x). Here a row goes block by block of kFusedLanes steps, each step a
// lane: the prologue's bytecode over the block's positions (contiguous, so loads and stores
// are plain vector loops), the scan of the block's leaves from the carry by a register kernel
// or one-op loop in L1, then the epilogue's bytecode over the same positions into the outputs.
// The scan is reassociated as those kernels' are, so only unordered runs take it. Plain
// one-op scans of rows that run_stage.cpp groups as lanes (shorter than kMinSplitSteps) come
// here too: each row through the same kernels is faster than Worker's groups.
#pragma once

#include <cstdint>
#include <vector>

#include "layout.h"
#include "plan.h"
#include "scratch.h"

namespace scanc::cpu {

// Steps a block: the prologue's values and the leaves' scans of a block stay in L1 and L2
// while each op's dispatch is spread over this many elements.
inline constexpr int kFusedLanes = 1024;
// Lines shorter than this keep Worker, whose one dispatch serves a group of lines (`x * 2`
// summed, `+ 1` after, 2^22 f32 elements, 2 threads, GB/s Worker against here: 32 steps 10.7
// against 9.7, 64 steps 14.0 against 19.3; an f16 sum 7.2 against 5.2 and 8.0 against 10.0).
inline constexpr std::int64_t kFusedMinSteps = 64;

// One thread's runner (its registers are its own).
class FusedRows {
public:
    // Inactive where the stage has nothing to fuse, the combine has no kernel here, or some
    // input or output is not contiguous along the scan dim (or broadcast along it, for inputs).
    FusedRows(const StageCode& code, const Layout& L);
    bool active() const { return engine_ != Engine::None; }

    // What a scan does with the leaves its prologue makes: Save (a total, store false) keeps
    // them; Reuse (the scan of the same steps right after) takes those instead of running the
    // prologue again. Only where keeps().
    enum class Keep { None, Save, Reuse };
    // Whether the epilogue reads nothing that only the prologue makes (the leaves aside), so a
    // Reuse scan may skip the prologue.
    bool keeps() const { return keeps_; }

    // Walking steps [start, start + steps) of `line`: from `carry` (per leaf, its compute value's
    // bytes; null: none), into the outputs where `store`; each leaf's last scanned value into
    // `last`. Each block prefetches the inputs of the next one, or given `next` (steps [start,
    // start + steps) of a line: the caller's next span, where this one's inputs are in L2 from
    // its total) those at the same place there.
    struct Span {
        std::int64_t line, start, steps;
    };
    void scan(std::int64_t line, std::int64_t start, std::int64_t steps, const std::uint64_t* carry,
              bool store, std::uint64_t* last, Keep keep = Keep::None, const Span* next = nullptr);

private:
    enum class Engine { None, OneOp, Registers };
    // Engine::Registers: `n` elements of each leaf from xs[k] into out[k] (null: not stored;
    // streamed where `stream` and aligned) from `carry` (`has`), the last into `carry`; memory
    // from ahead[k] on (where not null) prefetched in step.
    void scan_registers(const float* const* xs, float* const* out, const std::byte* const* ahead, bool stream,
                        int n, bool& has, std::uint64_t* carry);
    // The line's memory at walking step `t`, per slot: its base there and its step.
    std::byte* at(const Slot& s, std::int64_t line, std::int64_t t) const {
        return s.base + (L_.line_offset(s, line) + t * s.step) * s.esize;
    }
    // The bytecode frame's registers, kFusedLanes lanes of 8 bytes each (as Worker's); register
    // r's own row.
    static constexpr std::size_t kRegBytes = kFusedLanes * 8;
    std::byte* own_row(int r) { return regs_.data() + r * kRegBytes; }

    const StageCode& code_;
    const Layout& L_;
    Engine engine_ = Engine::None;
    int leaves_ = 0;
    int dir_ = 1;  // +1: walking steps go up in memory; -1: down (a reverse scan)
    std::vector<int> leaf_bytes_;
    bool direct_ = false;  // the scans written straight into the outputs (no epilogue)
    bool keeps_ = false;
    bool save_direct_ = false;  // a Save's prologue may write the leaves into kept_ itself
    Scratch kept_;  // Keep::Save's leaves, walking order, leaf after leaf
    // Engine::Registers: storing every leaf, none (and its vectors paired up first), and those
    // the outputs store.
    SegProgram prog_, totals_, folded_, direct_prog_;
    Code epilogue_;  // the epilogue less the Stores that copy bytes as they are (copies_)
    std::vector<std::pair<int, int>> copies_;  // (output slot, register): copied out as it is
    std::vector<int> staged_;  // output slots that epilogue_'s Stores convert into a staging row
    Frame f_;
    std::vector<std::byte*> out_mem_;  // per output, the current block's memory
    Scratch regs_, leaves_buf_, scans_buf_, staging_, broadcast_;
    std::vector<std::vector<std::int64_t>> lane_off_;  // per input slot, captured loads' offsets
};

}  // namespace scanc::cpu
