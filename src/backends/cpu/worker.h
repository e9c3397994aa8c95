// One thread's machinery for running a Fused stage (run_stage.cpp, run_fixup.cpp): Worker,
// which evaluates a stage's bytecode over a group of lanes of a Layout (layout.h) step by step,
// moving tiles with tile_moves.h (see the comment at the top of run_stage.cpp for how lines
// map to lanes and threads).
#pragma once

#include <algorithm>
#include <climits>
#include <cstring>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "layout.h"
#include "plan.h"
#include "scratch.h"
#include "scanc/error.h"
#include "scanc/runtime/tensor.h"
#include "stream_store.h"
#include "tile_moves.h"

namespace scanc::cpu {

// One thread's registers, tiles and lane offsets.
class Worker {
public:
    Worker(const StageCode& code, const Layout& L, int width)
        : code_(code), L_(L), width_(width), tile_(tile_steps(L, width)),
          reg_bytes_((width * 8 + 63) / 64 * 64) {
        // Registers, then per leaf two scratch destinations for the carry (alternating) and
        // three for fold().
        int leaves = static_cast<int>(code.carry.size());
        int total = std::max(1, code.num_regs + 5 * leaves);
        // Plus two staging rows per output (streaming stores).
        std::size_t bytes = static_cast<std::size_t>(total + 2 * L.out.size()) * reg_bytes_;
        // Registers are written before they are read, as tiles are (scratch.h): not zeroed.
        regs_.reset(new (std::align_val_t(64)) std::byte[bytes]);
        if (Scratch::poison()) std::memset(regs_.get(), 0xFF, bytes);
        f_.regs = regs_.get();
        for (int r = 0; r < code.num_regs; ++r) f_.ptrs.push_back(f_.regs + r * reg_bytes_);
        scratch_ = f_.regs + static_cast<std::ptrdiff_t>(code.num_regs) * reg_bytes_;
        staging_ = f_.regs + static_cast<std::ptrdiff_t>(total) * reg_bytes_;
        for (auto& [r, s] : code.consts)
            fill_const(f_.regs + r * reg_bytes_, s.dtype, s.f, s.i, width);
        in_off_.assign(L.in.size(), std::vector<std::int64_t>(width));
        out_off_.assign(L.out.size(), std::vector<std::int64_t>(width));
        in_contig_.assign(L.in.size(), false);
        out_contig_.assign(L.out.size(), false);
        in_stride_.assign(L.in.size(), kIrregular);
        out_stride_.assign(L.out.size(), kIrregular);
        // Tiles are sized by run() to the steps it walks (a short scan needs few rows).
        in_tile_.resize(L.in.size());
        out_tile_.resize(L.out.size());
        f_.in_rows.assign(L.in.size(), nullptr);
        f_.out_rows.assign(L.out.size(), nullptr);
        f_.tee_rows.assign(L.out.size(), nullptr);
        f_.in_base.resize(L.in.size());
        f_.lane_off.resize(L.in.size());
        for (std::size_t i = 0; i < L.in.size(); ++i) {
            f_.in_base[i] = L.in[i].base;
            f_.lane_off[i] = in_off_[i].data();
        }
        for (DType t : code.leaf_compute) leaf_bytes_.push_back(static_cast<int>(dtype_size(t)));
        spill_.assign(code.carry.size(), nullptr);
        for (std::size_t k = 0; k < code.carry.size(); ++k)
            carry_next_.emplace_back(&f_.ptrs[code.carry[k]], &f_.ptrs[code.next[k]]);
    }

    int leaves() const { return static_cast<int>(code_.carry.size()); }
    int width() const { return width_; }

    // The layout's base pointers changed (a later run of the same geometry, stage_cache.h):
    // the only ones a Worker keeps are the captured loads'. The next run starts fresh.
    void rebase() {
        for (std::size_t i = 0; i < L_.in.size(); ++i) f_.in_base[i] = L_.in[i].base;
        ahead_ = nullptr;
    }

    static int tile_steps(const Layout& L, int width) {
        int bytes = 0;
        for (auto& s : L.in) bytes += s.tiled ? s.esize : 0;
        for (auto& s : L.out) bytes += s.esize;
        return std::clamp(kTileBytes / (width * std::max(bytes, 1)), 1, 256);
    }

    // Lane l covers `line(l)` from walking step `start(l)`.
    template <typename LineFn, typename StartFn>
    void set_lanes(int n, LineFn line, StartFn start) {
        // The tiles hold width_ lanes: more would write past them.
        SCANC_INTERNAL_CHECK(n <= width_, "a group of ", n, " lanes for a worker of ", width_);
        n_ = n;
        start_.resize(n);
        lines_.resize(n);
        runs_.clear();
        for (int l = 0; l < n; ++l) {
            start_[l] = start(l), lines_[l] = line(l);
            if (l == 0 || lines_[l] != lines_[l - 1] + 1) runs_.push_back(l);
        }
        runs_.push_back(n);
        auto fill = [&](const std::vector<Slot>& slots, std::vector<std::vector<std::int64_t>>& off,
                        std::vector<bool>& contig, std::vector<std::int64_t>& stride) {
            for (std::size_t s = 0; s < slots.size(); ++s) {
                bool c = true;
                std::int64_t* o = off[s].data();
                // A run of consecutive lines at a time (line_offsets).
                for (std::size_t k = 0; k + 1 < runs_.size(); ++k)
                    L_.line_offsets(slots[s], lines_[runs_[k]], runs_[k + 1] - runs_[k], start_.data() + runs_[k],
                                    o + runs_[k]);
                std::int64_t ls = n > 1 ? o[1] - o[0] : 1;
                for (int l = 1; l < n; ++l) {
                    c = c && o[l] == o[l - 1] + 1;
                    if (o[l] - o[l - 1] != ls) ls = kIrregular;
                }
                contig[s] = c;
                stride[s] = ls;
            }
        };
        fill(L_.in, in_off_, in_contig_, in_stride_);
        fill(L_.out, out_off_, out_contig_, out_stride_);
        run_code(code_.captured, f_, 0, n_);
        // The ops run over whole vectors of 16 lanes where every row they touch is scratch
        // (tiles and registers, width_ lanes each): 63 lanes ran a scalar tail per op and step
        // (welford along 127 rows on 2 threads, groups of 64 and 63: 6.4 ms against 4.4 for
        // 120). The extra lanes compute on stale scratch and are never moved out.
        bool scratch_only = true;
        for (std::size_t s = 0; s < L_.in.size(); ++s)
            scratch_only = scratch_only && !(L_.in[s].tiled && read_in_place(s));
        for (std::size_t o = 0; o < L_.out.size(); ++o) scratch_only = scratch_only && !out_contig_[o];
        ops_n_ = scratch_only ? std::min(width_, (n + 15) / 16 * 16) : n;
    }

    // Runs `steps` steps of the current lanes. Scan with `carry_in`: lanes whose `has` is set
    // start from that carry; the others start from their first element.
    void run(std::int64_t steps, Mode mode, LaneValues* carry_in = nullptr) {
        end_fold();
        size_tiles(static_cast<int>(std::min<std::int64_t>(tile_, steps)), mode == Mode::Local);
        bool any_carry = false, all_carry = true;
        if (carry_in) {
            // Into the scratch the next step does not write.
            for (int k = 0; k < leaves(); ++k) f_.ptrs[code_.carry[k]] = scratch(k, flip_ ^ 1);
            for (int l = 0; l < n_; ++l) {
                all_carry = all_carry && carry_in->has[l];
                if (!carry_in->has[l]) continue;
                any_carry = true;
                write_lane(code_.carry, l, carry_in->at(l));
            }
        }
        // Reduce mode writes the outputs too (phase 3 overwrites them): the serial op needs rows.
        // Lanes read and written in place run serially too, rows at a time, where the rows are
        // apart (each a run of a wider row) and the group has kWideRowsLanes lanes or more, or
        // where they follow each other and are narrow (a narrow matrix along dim 0, its steps
        // split among the threads). Wide rows that follow each other are one stream already,
        // which reading several at once slowed (sum along the middle dim of (8, 2048, 1024), 2
        // threads: 38-41 against 41-45 GB/s); groups of fewer lanes apart (half the rows of
        // 100000x100 along dim 0) lost too (2.6-2.8 against 3.8-4.2 GB/s).
        // in_place: x read and the carry stored in memory rows, no tiles.
        const int xs = code_.serial_x_slot, os = code_.serial ? code_.store_alias[0] : -1;
        const bool in_place = code_.serial && in_contig_[xs] && L_.in[xs].step && out_contig_[os];
        bool rows = in_place && (mode == Mode::Scan || mode == Mode::Reduce) &&
                    (std::abs(L_.in[xs].step) == n_ ? n_ * leaf_bytes_[0] <= kRowsChunkBytes
                                                    : n_ >= kWideRowsLanes);
        bool serial = code_.serial && mode != Mode::Map && mode != Mode::Local &&
                      (n_ <= kSerialLanes || rows) && (all_carry || !any_carry);
        // One contiguous lane, reassociation allowed: the whole run in one blocked call.
        if (serial && n_ == 1 && code_.serial_block && L_.reassociate && L_.in[xs].step == 1 &&
            in_contig_[xs] && L_.out[os].step == 1) {
            run_block(steps, mode, any_carry);
            return;
        }
        // Streaming: rows written in place go through a staging row (two per output,
        // alternating, so this step's carry is never the row being written) and are then
        // copied out with streaming stores. The serial path writes memory itself.
        bool writes = mode == Mode::Map || mode == Mode::Scan;  // to the outputs
        bool stream = L_.stream && !serial && writes;
        // Serial over rows in place: no tiles to fill (x is a serial stage's only tiled input
        // and its one output is stored in place), so one call covers many steps.
        std::int64_t tile = tile_;
        if (serial && in_place) tile = 1 << 20;
        for (std::int64_t t0 = 0; t0 < steps; t0 += tile) {
            if (t0 > 0) subnormals_ = fp_flags_met_subnormals();  // the tile before this one's
            f_.f64_products = subnormals_ && f64_products_pay();
            clear_fp_flags();
            int len = static_cast<int>(std::min<std::int64_t>(tile, steps - t0));
            for (std::size_t s = 0; s < L_.in.size(); ++s) {
                const Slot& slot = L_.in[s];
                if (!slot.tiled || read_in_place(s)) continue;
                move_tile<true>(slot.esize, width_, in_tile_[s].data(), slot.base, in_off_[s].data(), n_,
                                slot.step, slot.step ? t0 : 0, slot.step ? len : 1, in_contig_[s],
                                in_stride_[s]);
                if (slot.step == 1 && t0 + tile < steps)
                    prefetch_rows(slot, in_off_[s].data(), t0 + tile);
            }
            int flip0 = flip_;
            tee_ = false;
            if (!serial) walk_rows(t0, mode, stream);
            // Locals, not members: every op is an opaque call, after which members would be
            // reloaded from memory at each step.
            std::span<const PtrWalk> walks(walks_), nexts(next_walks_);
            std::span<const Staged> staged(staged_), ahead(ahead_rows_);
            // A scan from a carry skips what only span totals read (StageCode::scan_combine).
            const bool pruned = mode == Mode::Scan && code_.scan_prunes;
            std::span<const Instr> step_code(code_.step),
                combine(tee_ ? (pruned ? code_.scan_combine_tee : code_.combine_tee)
                             : (pruned ? code_.scan_combine : code_.combine)),
                epilogue(code_.epilogue);
            std::span<const std::pair<std::byte**, std::byte**>> carry_next(carry_next_);
            for (int j = 0; j < len; ++j) {
                if (serial) {
                    run_serial(t0, len, t0 == 0 && !any_carry);
                    break;
                }
                for (const PtrWalk& w : walks) *w.dst = w.at(j);
                // Into L2 only (prefetcht1): a row's worth of prefetcht0 at each step held the
                // L1's miss buffers from the step's own loads (sum dim 0 of 4096x4096, AMD VM,
                // ms: 1 thread 12.7-14.4 -> 7.8-8.6, 2 threads 5.8-6.9 -> 4.2-4.3; none at all
                // 10.5-13.1 and 5.9-7.1).
                for (const Staged& w : ahead)
                    for (std::size_t b = 0; b < w.bytes; b += 64)
                        __builtin_prefetch(w.mem.at(j) + b, 0, 2);
                run_code(step_code, f_, 0, ops_n_);
                if (mode != Mode::Map) {
                    // A step's carry destination can be the previous carry only at a tile's
                    // first step (a one-step tile reuses its row): point_next checks there.
                    bool spilled =
                        j == 0 && point_next(mode == Mode::Scan, mode == Mode::Local ? 0 : -1);
                    if (j > 0)
                        for (const PtrWalk& w : nexts) *w.dst = w.at(j);
                    if (t0 + j > 0) {
                        run_code(combine, f_, 0, ops_n_);
                    } else if (!any_carry) {
                        run_code(code_.init, f_, 0, ops_n_);
                    } else {
                        run_code(code_.combine, f_, 0, ops_n_);
                        for (int l = 0; l < n_; ++l)
                            if (!carry_in->has[l]) copy_lane(code_.x, code_.next, l);
                    }
                    for (auto [carry, next] : carry_next) *carry = *next;
                    if (spilled) unspill();
                }
                if (!writes) continue;
                run_code(epilogue, f_, 0, ops_n_);
                for (const Staged& w : staged)
                    if (!w.teed || t0 + j == 0) mem_.stream_copy(w.mem.at(j), *w.row, w.bytes);
            }
            if (!serial && mode != Mode::Map) flip_ = flip0 ^ (len & 1);
            if (mode == Mode::Local) {
                for (int k = 0; k < leaves(); ++k)
                    move_tile<false>(leaf_bytes_[k], width_, local_tile_[k].data(), local_base_[k],
                                     local_off_.data(), n_, local_dir_, t0, len, false,
                                     n_ > 1 ? local_off_[1] - local_off_[0] : 1);
            }
            if (!writes) continue;
            for (std::size_t o = 0; o < L_.out.size(); ++o) {
                const Slot& slot = L_.out[o];
                if (out_contig_[o]) continue;  // written in place
                if (stream && slot.step == 1 && out_stride_[o] != kIrregular) {
                    scatter_stream(o, t0, len);
                    continue;
                }
                move_tile<false>(slot.esize, width_, out_tile_[o].data(), slot.base, out_off_[o].data(), n_,
                                 slot.step, t0, len, out_contig_[o], out_stride_[o]);
            }
        }
        subnormals_ = fp_flags_met_subnormals();
        if (stream || (rows && L_.stream)) stream_fence();
    }

    // Where a one-contiguous-lane run (SerialBlockFn) prefetches: `p` + its offsets, the part a
    // later pass reads (so this pass's writes overlap those reads); null: just ahead of itself.
    void set_ahead(const std::byte* p) { ahead_ = p; }

    // Where Mode::Local puts each leaf's local scan: walking step t of the current lanes at
    // element origin + dir * t of base[k] (compute dtype). Call after set_lanes.
    void set_local(std::byte* const* base, std::int64_t origin, int dir) {
        local_tile_.resize(leaves());  // sized by run()
        local_base_.assign(base, base + leaves());
        local_off_.resize(n_);
        for (int l = 0; l < n_; ++l) local_off_[l] = origin + dir * start_[l];
        local_dir_ = dir;
    }

    // A fix-up worker's line: its lanes are positions of `line`, which only captured values
    // (the same for every position) need.
    void set_line(std::int64_t line) {
        if (!code_.captured.empty()) set_lanes(width_, [&](int) { return line; }, [](int) { return 0; });
    }

    // Phase 3 of a fix-up: result = carry ∘ local at `count` consecutive positions (memory
    // order), `local[k]` each leaf's local scan there, `out[o]` each output's memory there
    // (every output stores a leaf unchanged). Positions [r * run, (r + 1) * run) take
    // carries[r]; a null `carries` means none: the local scan is the result. The lanes are
    // positions (set_line, so captured values apply), width_ at a time.
    //
    // `ahead`: memory (pointer at this call's position 0, bytes per position) a later pass reads,
    // prefetched chunk by chunk so these writes overlap those reads.
    using Ahead = std::vector<std::pair<const std::byte*, int>>;
    // The fix-up's combine reading each run's carry in place as a broadcast value (where every
    // op reading it has that variant), or empty: the carry is then filled across a register.
    static const Code& fixup_bcast(const StageCode& code, const Layout& L) {
        bool direct = L.stream && !code.combine_stream.empty();
        return direct ? code.combine_stream_bcast : code.combine_bcast;
    }
    void fixup(const std::uint64_t* const* carries, std::int64_t run, std::byte* const* local,
               std::byte* const* out, std::int64_t count, const Ahead& ahead) {
        auto put = [&](std::byte* dst, const std::byte* src, std::size_t bytes) {
            if (L_.stream) mem_.stream_copy(dst, src, bytes);
            else std::memcpy(dst, src, bytes);
        };
        if (!carries) {
            for (int k = 0; k < leaves(); ++k)
                if (int o = code_.store_alias[k]; o >= 0)
                    put(out[o], local[k], static_cast<std::size_t>(count) * leaf_bytes_[k]);
            return;
        }
        // Streaming outputs: written by the combine's streaming variant when it has one, else
        // through a staging row and a streaming copy.
        bool direct = L_.stream && !code_.combine_stream.empty();
        const Code& bcast = fixup_bcast(code_, L_);
        std::span<const Instr> combine(!bcast.empty() ? bcast
                                       : direct       ? code_.combine_stream
                                                      : code_.combine);
        // Chunks never straddle two runs, so each run's carry is filled once (for its first chunk,
        // as wide as any of its chunks).
        for (std::int64_t i = 0, next = 0; i < count; i = next) {
            std::int64_t r = i / run, run_end = std::min(count, (r + 1) * run);
            next = std::min(run_end, i + width_);
            int m = static_cast<int>(next - i);
            // The next block's inputs, into L2 only (prefetcht1), where its phase 1 reads them:
            // not into L1, whose lines this chunk needs (affine 1-D 2^24, 1 thread, AMD VM, ms:
            // 24.9-31.5 -> 21.1-25.5; affine_h 27.7-34.4 -> 20.7-23.0, five pairs each).
            for (auto [p, bytes] : ahead) {
                const std::byte *q = p + i * bytes, *end = p + next * bytes;
#pragma GCC unroll 4
                for (; q < end; q += 64) __builtin_prefetch(q, 0, 2);
            }
            if (i == r * run && bcast.empty()) {
                int wide = static_cast<int>(std::min<std::int64_t>(width_, run_end - i));
                for (int k = 0; k < leaves(); ++k)
                    mem_.fill(scratch(k, 2), leaf_bytes_[k], carries[r][k], wide);
            }
            for (int k = 0; k < leaves(); ++k) {
                std::ptrdiff_t at = static_cast<std::ptrdiff_t>(i) * leaf_bytes_[k];
                int o = code_.store_alias[k];
                // The broadcast ops read the value's low bytes (little-endian, AVX2 only).
                f_.ptrs[code_.carry[k]] =
                    bcast.empty() ? scratch(k, 2)
                                  : reinterpret_cast<std::byte*>(
                                        const_cast<std::uint64_t*>(carries[r] + k));
                f_.ptrs[code_.x[k]] = local[k] + at;
                f_.ptrs[code_.next[k]] = o < 0                   ? scratch(k, 0)
                                         : L_.stream && !direct ? staging(o, 0)
                                                                : out[o] + at;
            }
            run_code(combine, f_, 0, m);
            for (int k = 0; L_.stream && !direct && k < leaves(); ++k)
                if (int o = code_.store_alias[k]; o >= 0)
                    mem_.stream_copy(out[o] + static_cast<std::ptrdiff_t>(i) * leaf_bytes_[k],
                                     staging(o, 0), static_cast<std::size_t>(m) * leaf_bytes_[k]);
        }
    }

    void read_carry(int l, std::uint64_t* out) {
        end_fold();
        read_lane(code_.carry, l, out);
    }

    // running = running ∘ total, evaluated at lane l (whose captured values apply). Carry, x
    // and next point at fold's own scratch until the next run(): x may be an input row read
    // in place, and a chain of folds then costs one combine on one lane each.
    void fold(int l, std::uint64_t* running, const std::uint64_t* total) {
        if (!folding_) {
            int k = leaves();
            fold_saved_.clear();
            for (const auto* regs : {&code_.carry, &code_.x, &code_.next})
                for (int i = 0; i < k; ++i) fold_saved_.push_back(f_.ptrs[(*regs)[i]]);
            for (int i = 0; i < k; ++i) {
                f_.ptrs[code_.carry[i]] = scratch(i, 2);
                f_.ptrs[code_.x[i]] = scratch(i, 3);
                f_.ptrs[code_.next[i]] = scratch(i, 4);
            }
            folding_ = true;
        }
        write_lane(code_.carry, l, running);
        write_lane(code_.x, l, total);
        run_code(code_.combine, f_, l, l + 1);
        read_lane(code_.next, l, running);
    }

private:
    // Tiles of `rows` steps (grown only): rows the tile loop of run() walks at most.
    void size_tiles(int rows, bool local) {
        auto grow = [&](Scratch& t, std::size_t esize) {
            std::size_t need = static_cast<std::size_t>(rows) * width_ * esize;
            if (t.size() < need) t.resize(need);
        };
        for (std::size_t s = 0; s < L_.in.size(); ++s)
            if (L_.in[s].tiled) grow(in_tile_[s], L_.in[s].esize);
        for (std::size_t o = 0; o < L_.out.size(); ++o) grow(out_tile_[o], L_.out[o].esize);
        for (std::size_t k = 0; local && k < local_tile_.size(); ++k)
            grow(local_tile_[k], leaf_bytes_[k]);
    }
    // Input slot s is read in place: its lanes are contiguous in memory and it walks the steps
    // (a slot constant along them is one tile row).
    bool read_in_place(std::size_t s) const { return in_contig_[s] && L_.in[s].step; }
    // This step's row of input slot s / output slot o: in memory when lanes are contiguous there,
    // else in the tile.
    std::byte* in_row(std::size_t s, std::int64_t t0, int j) const {
        const Slot& slot = L_.in[s];
        return read_in_place(s)
                   ? slot.base + (in_off_[s][0] + (t0 + j) * slot.step) * slot.esize
                   : const_cast<std::byte*>(in_tile_[s].data()) + (slot.step ? j : 0) * width_ * slot.esize;
    }
    // Lanes are rows of memory (many streams, a few lines each per tile): the hardware
    // prefetchers do not follow that many, so ask for the next tile's lines while this one runs.
    void prefetch_rows(const Slot& slot, const std::int64_t* off, std::int64_t t) const {
        int bytes = static_cast<int>(std::min<std::int64_t>(tile_, L_.steps - t)) * slot.esize;
        for (int l = 0; l < n_; ++l) {
            const std::byte* p = slot.base + (off[l] + t) * slot.esize;
            for (int b = 0; b < bytes; b += 64) __builtin_prefetch(p + b);
        }
    }
    // move_tile's scatter with streaming stores: 8 lanes at a time are transposed into rows
    // of `len` steps in L1, and each row goes out whole (full lines for the write combiners);
    // 4-byte values with AVX2 go straight from registers to memory, 64 bytes per row at a time.
    void scatter_stream(std::size_t o, std::int64_t t0, int len) {
        static const TransposeFn transpose = transpose_fn();
        const Slot& slot = L_.out[o];
        std::size_t row = static_cast<std::size_t>(len) * slot.esize;
        if (rows_.size() < 8 * row) rows_.resize(8 * row);
        for (int l0 = 0; l0 < n_; l0 += 8) {
            int k = std::min(8, n_ - l0);
            if (k == 8 && slot.esize == 4 && mem_.scatter8_f32) {
                // 4-byte values of any dtype, moved as bit patterns straight to memory.
                float* rows[8];
                for (int c = 0; c < 8; ++c)
                    rows[c] = reinterpret_cast<float*>(slot.base + (out_off_[o][l0 + c] + t0) * 4);
                const float* tile = reinterpret_cast<const float*>(out_tile_[o].data()) + l0;
                mem_.scatter8_f32(tile, width_, rows, len);
                continue;
            }
            transpose(slot.esize, out_tile_[o].data() + static_cast<std::size_t>(l0) * slot.esize,
                      width_, rows_.data(), len, len, k);
            for (int c = 0; c < k; ++c)
                mem_.stream_copy(slot.base + (out_off_[o][l0 + c] + t0) * slot.esize,
                                 rows_.data() + c * row, row);
        }
    }
    // Pointers the step loop sets, *dst = p0 + (j & mask) * d at step j of a tile: the rows of
    // tiled inputs (and registers reading them in place), of outputs when writing, and of each
    // leaf's carry destination (next_walks_, from step 1 on; see point_next). Computed once per
    // tile rather than per step and slot; mask 1 alternates between two rows (staging, scratch).
    struct PtrWalk {
        std::byte** dst;
        std::byte* p0;
        std::ptrdiff_t d;
        std::ptrdiff_t mask;
        std::byte* at(int j) const { return p0 + (j & mask) * d; }
    };
    // A staged output: its step-j row in memory, and the staging row the step wrote.
    struct Staged {
        PtrWalk mem;
        std::byte* const* row;
        std::size_t bytes;
        bool teed = false;  // written by combine_tee from the second step on: no copy
    };
    static PtrWalk walk(std::byte** dst, std::byte* a, std::byte* b, std::ptrdiff_t mask) {
        return {dst, a, b - a, mask};
    }
    void walk_rows(std::int64_t t0, Mode mode, bool stream) {
        walks_.clear();
        next_walks_.clear();
        staged_.clear();
        ahead_rows_.clear();
        for (std::size_t s = 0; s < L_.in.size(); ++s) {
            if (!L_.in[s].tiled) continue;
            std::byte *a = in_row(s, t0, 0), *b = in_row(s, t0, 1);
            walks_.push_back(walk(const_cast<std::byte**>(&f_.in_rows[s]), a, b, -1));
            for (auto [r, slot] : code_.in_alias)
                if (slot == static_cast<int>(s)) walks_.push_back(walk(&f_.ptrs[r], a, b, -1));
            // Rows read in place (lanes along a contiguous dim) are one strided stream each,
            // which crosses a page every row or two: ask for the row kAheadBytes on.
            if (read_in_place(s) && b != a) {
                std::size_t bytes = static_cast<std::size_t>(n_) * L_.in[s].esize;
                std::ptrdiff_t rows =
                    std::max<std::ptrdiff_t>(1, kAheadBytes / static_cast<std::ptrdiff_t>(bytes));
                ahead_rows_.push_back({{nullptr, a + rows * (b - a), b - a, -1}, nullptr, bytes});
            }
        }
        bool writes = mode == Mode::Map || mode == Mode::Scan;
        // Stored leaves whose rows are all staged: the combine's tee variant writes each step's
        // carry to the staging row and streams it to memory itself (no copy).
        tee_ = stream && mode == Mode::Scan && !code_.combine_tee.empty();
        for (int o : code_.store_alias) tee_ = tee_ && (o < 0 || out_contig_[o]);
        std::vector<PtrWalk> out(writes ? L_.out.size() : 0);
        for (std::size_t o = 0; o < out.size(); ++o) {
            std::byte** dst = &f_.out_rows[o];
            if (stream && out_contig_[o]) {
                out[o] = walk(dst, staging(o, t0), staging(o, t0 + 1), 1);
                bool teed = tee_ && std::find(code_.store_alias.begin(), code_.store_alias.end(),
                                              static_cast<int>(o)) != code_.store_alias.end();
                PtrWalk mem = walk(nullptr, out_row(o, t0, 0), out_row(o, t0, 1), -1);
                staged_.push_back({mem, dst, static_cast<std::size_t>(n_) * L_.out[o].esize, teed});
                if (teed) walks_.push_back({&f_.tee_rows[o], mem.p0, mem.d, mem.mask});
            } else {
                out[o] = walk(dst, out_row(o, t0, 0), out_row(o, t0, 1), -1);
            }
            walks_.push_back(out[o]);
        }
        if (mode == Mode::Map) return;
        // As point_next chooses: the local tile's row, the output row, or alternating scratch.
        for (int k = 0; k < leaves(); ++k) {
            std::byte** dst = &f_.ptrs[code_.next[k]];
            int o = code_.store_alias[k];
            if (mode == Mode::Local) {
                std::byte* row = local_tile_[k].data();
                next_walks_.push_back(walk(dst, row, row + width_ * leaf_bytes_[k], -1));
            } else if (mode == Mode::Scan && o >= 0) {
                next_walks_.push_back(out[o]);
                next_walks_.back().dst = dst;
            } else {
                next_walks_.push_back(walk(dst, scratch(k, flip_), scratch(k, flip_ ^ 1), 1));
            }
        }
    }
    std::byte* staging(std::size_t o, std::int64_t step) const {
        return staging_ + static_cast<std::ptrdiff_t>(2 * o + (step & 1)) * reg_bytes_;
    }
    std::byte* out_row(std::size_t o, std::int64_t t0, int j) const {
        const Slot& slot = L_.out[o];
        return out_contig_[o] ? slot.base + (out_off_[o][0] + (t0 + j) * slot.step) * slot.esize
                              : const_cast<std::byte*>(out_tile_[o].data()) + j * width_ * slot.esize;
    }

    // A tile of a StageCode::serial stage: the op runs step after step in one call. The first
    // step of a scan without a carry is its element (init).
    void run_serial(std::int64_t t0, int len, bool first) {
        int xs = code_.serial_x_slot, os = code_.store_alias[0];
        int carry = code_.carry[0];
        std::size_t bytes = static_cast<std::size_t>(n_) * leaf_bytes_[0];
        int j0 = 0;
        if (first) {
            std::memcpy(out_row(os, t0, 0), in_row(xs, t0, 0), bytes);
            f_.ptrs[carry] = out_row(os, t0, 0);
            j0 = 1;
        }
        if (len > j0) {
            std::byte* x = in_row(xs, t0, j0);
            std::byte* out = out_row(os, t0, j0);
            std::ptrdiff_t xstride = len > j0 + 1 ? in_row(xs, t0, j0 + 1) - x : 0;
            std::ptrdiff_t ostride = len > j0 + 1 ? out_row(os, t0, j0 + 1) - out : 0;
            code_.serial(f_.ptrs[carry], x, xstride, out, ostride, len - j0, n_, code_.serial_x_left,
                         L_.stream);
        }
        f_.ptrs[carry] = out_row(os, t0, len - 1);
    }

    // One contiguous lane of a serial stage in one call (SerialBlockFn); Reduce mode only reads.
    void run_block(std::int64_t steps, Mode mode, bool has_carry) {
        int carry = code_.carry[0];
        std::byte* last = scratch(0, flip_);
        flip_ ^= 1;
        std::byte* out = mode == Mode::Reduce ? nullptr : out_row(code_.store_alias[0], 0, 0);
        const std::byte* x = in_row(code_.serial_x_slot, 0, 0);
        code_.serial_block(has_carry ? f_.ptrs[carry] : nullptr, x, out, steps, last,
                           code_.serial_x_left, L_.stream && out,
                           ahead_ ? ahead_ : x + kAheadBytes);
        f_.ptrs[carry] = last;
    }

    void end_fold() {
        if (!folding_) return;
        int j = 0;
        for (const auto* regs : {&code_.carry, &code_.x, &code_.next})
            for (int i = 0; i < leaves(); ++i) f_.ptrs[(*regs)[i]] = fold_saved_[j++];
        folding_ = false;
    }

    std::byte* scratch(int leaf, int which) const {
        return scratch_ + static_cast<std::ptrdiff_t>(5 * leaf + which) * reg_bytes_;
    }

    // Points each leaf's `next` at where this step's carry goes: its output row when the carry
    // is stored unchanged (Scan mode), else the scratch the previous step did not write. A
    // destination that is the previous carry itself (a tile row reused by a 1-step tile) goes
    // through scratch and is copied afterwards (unspill): a combine may read its carry after
    // writing a result. Returns whether any leaf was spilled.
    // Mode::Local (`local_row` >= 0): the carry goes to that row of the leaf's local tile.
    bool point_next(bool to_outputs, int local_row) {
        bool spilled = false;
        for (int k = 0; k < leaves(); ++k) {
            std::byte* dst = scratch(k, flip_);
            int o = code_.store_alias[k];
            spill_[k] = nullptr;
            std::byte* row = nullptr;
            if (local_row >= 0)
                row = local_tile_[k].data() +
                      static_cast<std::ptrdiff_t>(local_row) * width_ * leaf_bytes_[k];
            else if (to_outputs && o >= 0)
                row = f_.out_rows[o];
            if (row) {
                if (row != f_.ptrs[code_.carry[k]]) {
                    dst = row;
                } else {
                    spill_[k] = row;
                    spilled = true;
                }
            }
            f_.ptrs[code_.next[k]] = dst;
        }
        flip_ ^= 1;
        return spilled;
    }
    void unspill() {
        for (int k = 0; k < leaves(); ++k) {
            if (!spill_[k]) continue;
            std::memcpy(spill_[k], f_.ptrs[code_.next[k]], static_cast<std::size_t>(n_) * leaf_bytes_[k]);
            f_.ptrs[code_.next[k]] = f_.ptrs[code_.carry[k]] = spill_[k];
        }
    }

    std::byte* lane_ptr(int reg, int k, int l) const {
        return f_.ptrs[reg] + l * leaf_bytes_[k];
    }
    // memcpy of 1, 2, 4 or 8 bytes, inlined (these run once per lane in carry chains).
    static void copy_value(void* d, const void* s, int bytes) {
        switch (bytes) {
            case 1: std::memcpy(d, s, 1); break;
            case 2: std::memcpy(d, s, 2); break;
            case 4: std::memcpy(d, s, 4); break;
            default: std::memcpy(d, s, 8); break;
        }
    }
    void read_lane(const std::vector<int>& regs, int l, std::uint64_t* out) const {
        for (std::size_t k = 0; k < regs.size(); ++k) {
            out[k] = 0;
            copy_value(&out[k], lane_ptr(regs[k], static_cast<int>(k), l), leaf_bytes_[k]);
        }
    }
    void write_lane(const std::vector<int>& regs, int l, const std::uint64_t* in) {
        for (std::size_t k = 0; k < regs.size(); ++k)
            copy_value(lane_ptr(regs[k], static_cast<int>(k), l), &in[k], leaf_bytes_[k]);
    }
    void copy_lane(const std::vector<int>& from, const std::vector<int>& to, int l) {
        for (std::size_t k = 0; k < from.size(); ++k)
            copy_value(lane_ptr(to[k], static_cast<int>(k), l),
                       lane_ptr(from[k], static_cast<int>(k), l), leaf_bytes_[k]);
    }

    struct AlignedDelete {
        void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t(64)); }
    };

    const StageCode& code_;
    const Layout& L_;
    const MemFns& mem_ = mem_fns();
    int width_;  // lanes per group; the tiles' row length
    int tile_;   // steps per gathered tile
    int reg_bytes_;  // bytes per register: width_ lanes of 8 bytes, 64-byte aligned
    std::byte* staging_ = nullptr;  // two rows per output slot, for streaming stores
    Scratch rows_;                  // scatter_stream's 8 rows
    std::unique_ptr<std::byte[], AlignedDelete> regs_;
    std::byte* scratch_ = nullptr;  // 5 registers per leaf after the code's registers
    int flip_ = 0;                  // which carry scratch the next step writes
    bool subnormals_ = false;       // the last tile run met subnormals (fp_flags_met_subnormals)
    std::vector<std::byte*> spill_;  // per leaf: output row to copy the carry to, or null
    std::vector<std::byte*> fold_saved_;  // carry, x, next pointers while folding
    bool folding_ = false;
    Frame f_;
    int n_ = 0;
    int ops_n_ = 0;  // lanes the ops run over: n_, or n_ rounded up to whole vectors (set_lanes)
    std::vector<std::int64_t> start_;  // per lane: walking step of its first element
    std::vector<std::int64_t> lines_;  // per lane: its line
    std::vector<int> runs_;            // first lanes of runs of consecutive lines, then n
    const std::byte* ahead_ = nullptr;  // set_ahead
    std::vector<PtrWalk> walks_, next_walks_;
    std::vector<Staged> staged_, ahead_rows_;  // ahead_rows_: in-place input rows to prefetch
    bool tee_ = false;  // this tile's steps run combine_tee (walk_rows)
    std::vector<Scratch> local_tile_;  // Mode::Local: per leaf, a tile of carries
    std::vector<std::byte*> local_base_;
    std::vector<std::int64_t> local_off_;
    int local_dir_ = 1;
    std::vector<std::vector<std::int64_t>> in_off_, out_off_;
    std::vector<bool> in_contig_, out_contig_;
    std::vector<std::int64_t> in_stride_, out_stride_;  // lane stride, or kIrregular
    std::vector<Scratch> in_tile_, out_tile_;
    std::vector<int> leaf_bytes_;
    std::vector<std::pair<std::byte**, std::byte**>> carry_next_;  // per leaf: &carry, &next
};

}  // namespace scanc::cpu
