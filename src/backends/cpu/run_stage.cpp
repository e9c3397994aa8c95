// Running a Fused stage.
//
// A stage iterates over a shape with one dim `d` walked step by step (the scan dim; the last dim
// for a stage without a scan). Every other coordinate is a *line*. Work is done in groups of up
// to kMaxLanes lanes, each lane a (line, range of steps) with the same step count. Per group, tiles
// of a few steps of every input are gathered into scratch (lanes contiguous), the bytecode runs
// once per step over all lanes, and output tiles are scattered back. Reverse scans walk
// backwards (negative step stride); strides are arbitrary.
//
// One pass over the lanes per step for a plain scan: loads without conversion are register
// pointers at the step's input row, and the combine writes each leaf's new carry straight into
// its output row (or a scratch register), which is then the carry of the next step.
//
// How lines map to lanes and threads (all decided from sizes and the thread count only, so runs
// are bit-identical for a given thread count):
//   - Lines mode: lanes are consecutive lines, each scanned whole and in order (also `ordered`).
//     Groups are split evenly among threads.
//   - Split mode, for few lines (Split-B: lanes are sub-ranges of one line) or few groups of
//     long lines (Split-A: lanes are lines, steps split among threads): reduce-then-scan over
//     superblocks small enough that each thread's part stays in L2, so memory is read about once:
//     phase 1 reduces each lane, a barrier, phase 2 chains the totals in order into each lane's
//     carry-in, phase 3 rescans from L2 with the carry and writes.
//
// Memory behaviour (issue 4): lanes contiguous in memory form groups as wide as a thread's share
// of the lines (rows of up to 8 KiB, which the prefetchers follow); strided lanes form groups of
// 64 (64 streams, a few hundred bytes each per tile, with software prefetch of the next tile).
// Large outputs go out with streaming stores (stream_store.h). A one-op stage (StageCode::
// serial_block) along contiguous lines scans each line, or each thread's part of one, as one
// lane in reassociated blocks, unless `ordered`.
#include "run_stage.h"

#include <algorithm>
#include <barrier>
#include <climits>
#include <cstring>
#include <memory>

#include "buffer_cache.h"
#include "stream_store.h"
#include "thread_pool.h"

namespace scanc::cpu {

namespace {

// Lanes per bytecode dispatch: wide enough that an instruction's call and loop setup amortize
// over many elements. A stage's tiles hold about kTileBytes together (in L2), so each lane's
// part of a tile is a few cache lines: one memory stream per lane. 64 strided lanes measured
// 1.5-3x faster than 256 on the 2-core box although they cost ~25-80% more instructions: the
// memory streams, not the dispatch, were the limit.
constexpr int kTileBytes = 128 << 10;
constexpr int kSubLanes = 64;                     // lanes of strided groups
constexpr int kFewLines = 32;                     // fewer lines than this: split lines
constexpr int kSerialLanes = 4;                   // groups this narrow run serial stages serially
constexpr int kFixLanes = 512;                    // positions per combine in a split's fix-up
constexpr std::int64_t kPortionBytes = 768 << 10;  // per thread per superblock (in + out): L2
constexpr std::int64_t kMinSplitSteps = 2048;      // shorter lines are never split
constexpr std::int64_t kMinWorkPerThread = 32768;  // elements
// Outputs at least this large (all of a stage's together) are written with streaming stores
// where they are written row by row in place: they would not stay in cache anyway, and the
// write-allocate read of each line would add half again to the traffic.
constexpr std::int64_t kStreamBytes = 16 << 20;

struct Slot {
    std::byte* base = nullptr;
    int esize = 1;
    std::vector<std::int64_t> strides;  // per iteration dim; 0 where broadcast
    std::int64_t step = 0;              // element stride of one walking step
    std::int64_t walk0 = 0;             // offset of walking step 0 within a line
    bool tiled = true;
};

struct Layout {
    std::vector<std::int64_t> sizes;
    int d = 0;
    std::int64_t steps = 0, lines = 0;
    int width = kSubLanes;  // lanes per group
    bool stream = false;    // outputs written in place use streaming stores
    bool reassociate = true;  // not RunOptions::ordered: one lane may be scanned in blocks
    std::vector<int> line_dims;  // iteration dims other than d, outer to inner
    std::vector<Slot> in, out;

    std::int64_t line_offset(const Slot& s, std::int64_t line) const {
        std::int64_t off = s.walk0;
        for (std::size_t k = line_dims.size(); k-- > 0;) {
            std::int64_t n = sizes[line_dims[k]];
            off += (line % n) * s.strides[line_dims[k]];
            line /= n;
        }
        return off;
    }
};

Slot make_slot(const TensorView& v, const Layout& L, bool reverse) {
    Slot s;
    s.base = static_cast<std::byte*>(v.data);
    s.esize = static_cast<int>(dtype_size(v.dtype));
    int r = static_cast<int>(L.sizes.size()), rv = v.rank();
    s.strides.assign(r, 0);
    for (int k = 0; k < r; ++k) {
        int j = k - (r - rv);
        if (j >= 0 && !(v.sizes[j] == 1 && L.sizes[k] != 1)) s.strides[k] = v.strides[j];
    }
    s.step = s.strides[L.d];
    if (reverse) {
        s.walk0 = (L.steps - 1) * s.step;
        s.step = -s.step;
    }
    return s;
}

// Copies a tile of `len` steps x `n` lanes between memory and scratch (lanes contiguous).
template <int E, bool Gather>
void move_tile(int width, std::byte* tile, std::byte* base, const std::int64_t* off, int n, std::int64_t step,
               std::int64_t t0, int len, bool lanes_contiguous) {
    if (lanes_contiguous) {
        for (int j = 0; j < len; ++j) {
            std::byte* mem = base + (off[0] + (t0 + j) * step) * E;
            std::byte* row = tile + static_cast<std::ptrdiff_t>(j) * width * E;
            if constexpr (Gather) std::memcpy(row, mem, static_cast<std::size_t>(n) * E);
            else std::memcpy(mem, row, static_cast<std::size_t>(n) * E);
        }
        return;
    }
    for (int l = 0; l < n; ++l) {
        std::byte* mem = base + (off[l] + t0 * step) * E;
        std::byte* row = tile + static_cast<std::ptrdiff_t>(l) * E;
        for (int j = 0; j < len; ++j) {
            if constexpr (Gather) std::memcpy(row + j * width * E, mem + j * step * E, E);
            else std::memcpy(mem + j * step * E, row + j * width * E, E);
        }
    }
}

constexpr std::int64_t kIrregular = INT64_MIN;  // lane offsets not an arithmetic sequence

template <bool Gather>
void move_tile(int esize, int width, std::byte* tile, std::byte* base, const std::int64_t* off,
               int n, std::int64_t step, std::int64_t t0, int len, bool contiguous,
               std::int64_t lane_stride) {
    if (!contiguous && lane_stride != kIrregular && (step == 1 || step == -1)) {
        // Lanes are rows of memory: a blocked transpose through SIMD registers.
        static const TransposeFn transpose = transpose_fn();
        std::int64_t first = off[0] + t0 * step - (step < 0 ? len - 1 : 0);
        std::byte* mem = base + first * esize;
        std::int64_t rows = step < 0 ? -width : width;
        std::byte* t = tile + (step < 0 ? static_cast<std::ptrdiff_t>(len - 1) * width * esize : 0);
        if constexpr (Gather) transpose(esize, mem, lane_stride, t, rows, n, len);
        else transpose(esize, t, rows, mem, lane_stride, len, n);
        return;
    }
    switch (esize) {
        case 1: return move_tile<1, Gather>(width, tile, base, off, n, step, t0, len, contiguous);
        case 2: return move_tile<2, Gather>(width, tile, base, off, n, step, t0, len, contiguous);
        case 4: return move_tile<4, Gather>(width, tile, base, off, n, step, t0, len, contiguous);
        default: return move_tile<8, Gather>(width, tile, base, off, n, step, t0, len, contiguous);
    }
}

// Carry values of lanes, 8 bytes per leaf, for chaining totals between lanes and threads.
struct LaneValues {
    int leaves = 0;
    std::vector<std::uint64_t> v;
    std::vector<std::uint8_t> has;

    void resize(int n) {
        v.assign(static_cast<std::size_t>(n) * leaves, 0);
        has.assign(n, 0);
    }
    std::uint64_t* at(int i) { return v.data() + static_cast<std::size_t>(i) * leaves; }
};

// Local: a scan without carries whose carries (every leaf, compute dtype) go to the local
// buffers given by Worker::set_local instead of the outputs (phase 1 of a fix-up split).
enum class Mode { Map, Reduce, Scan, Local };

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
        regs_.reset(new (std::align_val_t(64)) std::byte[bytes]);
        std::memset(regs_.get(), 0, bytes);
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
        for (auto& s : L.in) in_tile_.emplace_back(s.tiled ? tile_ * width * s.esize : 0);
        for (auto& s : L.out) out_tile_.emplace_back(tile_ * width * s.esize);
        f_.in_rows.assign(L.in.size(), nullptr);
        f_.out_rows.assign(L.out.size(), nullptr);
        f_.in_base.resize(L.in.size());
        f_.lane_off.resize(L.in.size());
        for (std::size_t i = 0; i < L.in.size(); ++i) {
            f_.in_base[i] = L.in[i].base;
            f_.lane_off[i] = in_off_[i].data();
        }
        for (DType t : code.leaf_compute) leaf_bytes_.push_back(static_cast<int>(dtype_size(t)));
        spill_.assign(code.carry.size(), nullptr);
    }

    int leaves() const { return static_cast<int>(code_.carry.size()); }

    static int tile_steps(const Layout& L, int width) {
        int bytes = 0;
        for (auto& s : L.in) bytes += s.tiled ? s.esize : 0;
        for (auto& s : L.out) bytes += s.esize;
        return std::clamp(kTileBytes / (width * std::max(bytes, 1)), 1, 256);
    }

    // Lane l covers `line(l)` from walking step `start(l)`.
    template <typename LineFn, typename StartFn>
    void set_lanes(int n, LineFn line, StartFn start) {
        n_ = n;
        start_.resize(n);
        for (int l = 0; l < n; ++l) start_[l] = start(l);
        auto fill = [&](const std::vector<Slot>& slots, std::vector<std::vector<std::int64_t>>& off,
                        std::vector<bool>& contig, std::vector<std::int64_t>& stride) {
            for (std::size_t s = 0; s < slots.size(); ++s) {
                bool c = true;
                std::int64_t* o = off[s].data();
                for (int l = 0; l < n; ++l) {
                    o[l] = L_.line_offset(slots[s], line(l)) + start(l) * slots[s].step;
                    c = c && o[l] == o[0] + l;
                }
                contig[s] = c;
                std::int64_t ls = n > 1 ? o[1] - o[0] : 1;
                for (int l = 2; l < n && ls != kIrregular; ++l)
                    if (o[l] - o[l - 1] != ls) ls = kIrregular;
                stride[s] = ls;
            }
        };
        fill(L_.in, in_off_, in_contig_, in_stride_);
        fill(L_.out, out_off_, out_contig_, out_stride_);
        run_code(code_.captured, f_, 0, n_);
    }

    // Runs `steps` steps of the current lanes. Scan with `carry_in`: lanes whose `has` is set
    // start from that carry; the others start from their first element.
    void run(std::int64_t steps, Mode mode, LaneValues* carry_in = nullptr) {
        end_fold();
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
        bool serial = code_.serial && mode != Mode::Map && mode != Mode::Local && n_ <= kSerialLanes &&
                      (all_carry || !any_carry);
        // One contiguous lane, reassociation allowed: the whole run in one blocked call.
        if (serial && n_ == 1 && code_.serial_block && L_.reassociate &&
            L_.in[code_.serial_x_slot].step == 1 && in_contig_[code_.serial_x_slot] &&
            L_.out[code_.store_alias[0]].step == 1) {
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
        if (serial && in_contig_[code_.serial_x_slot] && L_.in[code_.serial_x_slot].step &&
            out_contig_[code_.store_alias[0]])
            tile = 1 << 20;
        for (std::int64_t t0 = 0; t0 < steps; t0 += tile) {
            int len = static_cast<int>(std::min<std::int64_t>(tile, steps - t0));
            for (std::size_t s = 0; s < L_.in.size(); ++s) {
                const Slot& slot = L_.in[s];
                if (!slot.tiled || (in_contig_[s] && slot.step)) continue;  // read in place
                move_tile<true>(slot.esize, width_, in_tile_[s].data(), slot.base, in_off_[s].data(), n_,
                                slot.step, slot.step ? t0 : 0, slot.step ? len : 1, in_contig_[s],
                                in_stride_[s]);
                if (slot.step == 1 && t0 + tile < steps)
                    prefetch_rows(slot, in_off_[s].data(), t0 + tile);
            }
            for (int j = 0; j < len; ++j) {
                if (serial) {
                    run_serial(t0, len, t0 == 0 && !any_carry);
                    break;
                }
                for (std::size_t s = 0; s < L_.in.size(); ++s)
                    if (L_.in[s].tiled) f_.in_rows[s] = in_row(s, t0, j);
                for (auto [r, s] : code_.in_alias) f_.ptrs[r] = const_cast<std::byte*>(f_.in_rows[s]);
                if (writes) {
                    for (std::size_t o = 0; o < L_.out.size(); ++o)
                        f_.out_rows[o] =
                            stream && out_contig_[o] ? staging(o, t0 + j) : out_row(o, t0, j);
                }
                run_code(code_.step, f_, 0, n_);
                if (mode != Mode::Map) {
                    bool spilled = point_next(mode == Mode::Scan, mode == Mode::Local ? j : -1);
                    if (t0 + j > 0) {
                        run_code(code_.combine, f_, 0, n_);
                    } else if (!any_carry) {
                        run_code(code_.init, f_, 0, n_);
                    } else {
                        run_code(code_.combine, f_, 0, n_);
                        for (int l = 0; l < n_; ++l)
                            if (!carry_in->has[l]) copy_lane(code_.x, code_.next, l);
                    }
                    for (int k = 0; k < leaves(); ++k) f_.ptrs[code_.carry[k]] = f_.ptrs[code_.next[k]];
                    if (spilled) unspill();
                }
                if (!writes) continue;
                run_code(code_.epilogue, f_, 0, n_);
                for (std::size_t o = 0; stream && o < L_.out.size(); ++o)
                    if (out_contig_[o])
                        stream_copy(out_row(o, t0, j), f_.out_rows[o],
                                    static_cast<std::size_t>(n_) * L_.out[o].esize);
            }
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
        if (stream) stream_fence();
    }

    // Where Mode::Local puts each leaf's local scan: walking step t of the current lanes at
    // element origin + dir * t of base[k] (compute dtype). Call after set_lanes.
    void set_local(std::byte* const* base, std::int64_t origin, int dir) {
        local_tile_.resize(leaves());
        local_base_.assign(base, base + leaves());
        for (int k = 0; k < leaves(); ++k)
            local_tile_[k].resize(static_cast<std::size_t>(tile_) * width_ * leaf_bytes_[k]);
        local_off_.resize(n_);
        for (int l = 0; l < n_; ++l) local_off_[l] = origin + dir * start_[l];
        local_dir_ = dir;
    }

    // Phase 3 of a fix-up split: result = carry ∘ local at `count` consecutive positions (memory
    // order), `local[k]` each leaf's local scan there, `out[o]` each output's memory there
    // (every output stores a leaf unchanged). Without a carry the local scan is the result. The
    // lanes are positions (set_lanes on one line, so captured values apply), width_ at a time.
    void fixup(const std::uint64_t* carry, std::byte* const* local, std::byte* const* out,
               std::int64_t count) {
        auto put = [&](std::byte* dst, const std::byte* src, std::size_t bytes) {
            if (L_.stream) stream_copy(dst, src, bytes);
            else std::memcpy(dst, src, bytes);
        };
        if (!carry) {
            for (int k = 0; k < leaves(); ++k)
                if (int o = code_.store_alias[k]; o >= 0)
                    put(out[o], local[k], static_cast<std::size_t>(count) * leaf_bytes_[k]);
            return;
        }
        int first = static_cast<int>(std::min<std::int64_t>(width_, count));
        for (int k = 0; k < leaves(); ++k) fill_lanes(scratch(k, 2), leaf_bytes_[k], carry[k], first);
        for (std::int64_t i = 0; i < count; i += width_) {
            int m = static_cast<int>(std::min<std::int64_t>(width_, count - i));
            for (int k = 0; k < leaves(); ++k) {
                std::ptrdiff_t at = static_cast<std::ptrdiff_t>(i) * leaf_bytes_[k];
                int o = code_.store_alias[k];
                f_.ptrs[code_.carry[k]] = scratch(k, 2);
                f_.ptrs[code_.x[k]] = local[k] + at;
                f_.ptrs[code_.next[k]] = o < 0 ? scratch(k, 0) : L_.stream ? staging(o, 0) : out[o] + at;
            }
            run_code(code_.combine, f_, 0, m);
            for (int k = 0; L_.stream && k < leaves(); ++k)
                if (int o = code_.store_alias[k]; o >= 0)
                    stream_copy(out[o] + static_cast<std::ptrdiff_t>(i) * leaf_bytes_[k], staging(o, 0),
                                static_cast<std::size_t>(m) * leaf_bytes_[k]);
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
    // This step's row of input slot s / output slot o: in memory when lanes are contiguous there,
    // else in the tile.
    std::byte* in_row(std::size_t s, std::int64_t t0, int j) const {
        const Slot& slot = L_.in[s];
        return in_contig_[s] && slot.step
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
    // of `len` steps in L1, and each row goes out whole (full lines for the write combiners).
    void scatter_stream(std::size_t o, std::int64_t t0, int len) {
        static const TransposeFn transpose = transpose_fn();
        const Slot& slot = L_.out[o];
        std::size_t row = static_cast<std::size_t>(len) * slot.esize;
        if (rows_.size() < 8 * row) rows_.resize(8 * row);
        for (int l0 = 0; l0 < n_; l0 += 8) {
            int k = std::min(8, n_ - l0);
            transpose(slot.esize, out_tile_[o].data() + static_cast<std::size_t>(l0) * slot.esize,
                      width_, rows_.data(), len, len, k);
            for (int c = 0; c < k; ++c)
                stream_copy(slot.base + (out_off_[o][l0 + c] + t0) * slot.esize,
                            rows_.data() + c * row, row);
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
            code_.serial(f_.ptrs[carry], x, xstride, out, ostride, len - j0, n_, code_.serial_x_left);
        }
        f_.ptrs[carry] = out_row(os, t0, len - 1);
    }

    // One contiguous lane of a serial stage in one call (SerialBlockFn); Reduce mode only reads.
    void run_block(std::int64_t steps, Mode mode, bool has_carry) {
        int carry = code_.carry[0];
        std::byte* last = scratch(0, flip_);
        flip_ ^= 1;
        std::byte* out = mode == Mode::Reduce ? nullptr : out_row(code_.store_alias[0], 0, 0);
        code_.serial_block(has_carry ? f_.ptrs[carry] : nullptr, in_row(code_.serial_x_slot, 0, 0),
                           out, steps, last, code_.serial_x_left, L_.stream && out);
        f_.ptrs[carry] = last;
    }

    void end_fold() {
        if (!folding_) return;
        int j = 0;
        for (const auto* regs : {&code_.carry, &code_.x, &code_.next})
            for (int i = 0; i < leaves(); ++i) f_.ptrs[(*regs)[i]] = fold_saved_[j++];
        folding_ = false;
    }

    template <typename T>
    static void fill_typed(std::byte* reg, std::uint64_t v, int n) {
        T x;
        std::memcpy(&x, &v, sizeof(T));
        std::fill_n(reinterpret_cast<T*>(reg), n, x);
    }
    static void fill_lanes(std::byte* reg, int bytes, std::uint64_t v, int n) {
        switch (bytes) {
            case 1: return fill_typed<std::uint8_t>(reg, v, n);
            case 2: return fill_typed<std::uint16_t>(reg, v, n);
            case 4: return fill_typed<std::uint32_t>(reg, v, n);
            default: return fill_typed<std::uint64_t>(reg, v, n);
        }
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
    int width_;  // lanes per group; the tiles' row length
    int tile_;   // steps per gathered tile
    int reg_bytes_;  // bytes per register: width_ lanes of 8 bytes, 64-byte aligned
    std::byte* staging_ = nullptr;  // two rows per output slot, for streaming stores
    std::vector<std::byte> rows_;   // scatter_stream's 8 rows
    std::unique_ptr<std::byte[], AlignedDelete> regs_;
    std::byte* scratch_ = nullptr;  // 5 registers per leaf after the code's registers
    int flip_ = 0;                  // which carry scratch the next step writes
    std::vector<std::byte*> spill_;  // per leaf: output row to copy the carry to, or null
    std::vector<std::byte*> fold_saved_;  // carry, x, next pointers while folding
    bool folding_ = false;
    Frame f_;
    int n_ = 0;
    std::vector<std::int64_t> start_;  // per lane: walking step of its first element
    std::vector<std::vector<std::byte>> local_tile_;  // Mode::Local: per leaf, a tile of carries
    std::vector<std::byte*> local_base_;
    std::vector<std::int64_t> local_off_;
    int local_dir_ = 1;
    std::vector<std::vector<std::int64_t>> in_off_, out_off_;
    std::vector<bool> in_contig_, out_contig_;
    std::vector<std::int64_t> in_stride_, out_stride_;  // lane stride, or kIrregular
    std::vector<std::vector<std::byte>> in_tile_, out_tile_;
    std::vector<int> leaf_bytes_;
};

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Lines mode: each thread takes an equal share of the groups of L.width lines.
void run_lines(const StageCode& code, const Layout& L, int threads, Mode mode) {
    std::int64_t groups = ceil_div(L.lines, L.width);
    ThreadPool::instance().run(threads, [&](int p) {
        Worker w(code, L, L.width);
        for (std::int64_t g = groups * p / threads; g < groups * (p + 1) / threads; ++g) {
            int n = static_cast<int>(std::min<std::int64_t>(L.width, L.lines - g * L.width));
            w.set_lanes(n, [&](int l) { return g * L.width + l; }, [](int) { return 0; });
            w.run(L.steps, mode);
        }
    });
}

// A thread's part of a superblock: groups of lanes in chain order.
struct Piece {
    int lanes;
    std::int64_t start, steps;  // lane l covers [start + l*steps, start + (l+1)*steps)
};

// Split-B: sub-ranges of one line, as many lanes as fit. Lane lengths are odd multiples of 16
// elements when long, so the lanes' addresses fall in different cache sets.
std::vector<Piece> split_range(std::int64_t a, std::int64_t b, int max_lanes = kSubLanes) {
    std::vector<Piece> pieces;
    for (std::int64_t n = b - a; n > 0;) {
        int lanes = static_cast<int>(std::clamp<std::int64_t>(n / 16, 1, max_lanes));
        std::int64_t c = n / lanes;
        if (lanes == kSubLanes && c >= 32) c = ((c / 16 - 1) | 1) * 16;
        pieces.push_back({lanes, a, c});
        a += lanes * c;
        n -= lanes * c;
    }
    return pieces;
}

// Split modes. `lines_per_job` lines at a time (Split-A: a group; Split-B: one line) are
// processed by all threads together, superblock by superblock.
void run_split(const StageCode& code, const Layout& L, int threads, Mode mode, bool split_b) {
    int leaves = static_cast<int>(code.carry.size());
    std::int64_t bytes_per_step = 0;
    for (auto& s : L.in) bytes_per_step += s.tiled && s.step ? s.esize : 0;
    for (auto& s : L.out) bytes_per_step += s.esize;
    bytes_per_step = std::max<std::int64_t>(bytes_per_step, 1);
    std::int64_t job_lanes = split_b ? 1 : L.width;
    std::int64_t portion = std::max<std::int64_t>(4 * Worker::tile_steps(L, L.width), kPortionBytes / (bytes_per_step * job_lanes));
    std::int64_t sb_steps = portion * threads;
    std::int64_t jobs = split_b ? L.lines : ceil_div(L.lines, L.width);

    // totals[parity][thread], carry[parity]: double-buffered so one barrier per superblock
    // suffices (see the phase comments below).
    std::vector<LaneValues> totals[2];
    LaneValues carry[2];
    for (auto& t : totals) t.assign(threads, LaneValues{leaves, {}, {}});
    for (auto& c : carry) c.leaves = leaves;
    std::barrier<> barrier(threads);
    // Fix-up (Split-B of a generic stage whose outputs all store leaves along a contiguous dim):
    // phase 1 keeps each lane's local scan in an L2 buffer (transposed out once), and phase 3
    // combines the carry with it over contiguous positions: no tile transposes and no per-step
    // dispatch in phase 3. result(t) = carry ∘ local(t) by associativity.
    int dir = L.out.empty() ? 0 : static_cast<int>(L.out[0].step);
    bool fix = split_b && !code.serial && code.epilogue.empty() && (dir == 1 || dir == -1);
    for (auto& s : L.out) fix = fix && s.step == dir;

    ThreadPool::instance().run(threads, [&](int p) {
        Worker w(code, L, L.width);
        std::unique_ptr<Worker> fw(fix ? new Worker(code, L, kFixLanes) : nullptr);
        std::vector<std::vector<std::byte>> local(fix ? leaves : 0);  // per leaf
        std::vector<std::byte*> local_at(leaves), out_at(L.out.size());
        LaneValues carry_in{leaves, {}, {}};
        std::vector<std::uint64_t> run(leaves);
        bool has = false;
        // run = run ∘ total (or total when there is no carry yet), evaluated at `lane`.
        auto fold = [&](int lane, const std::uint64_t* total) {
            if (has) w.fold(lane, run.data(), total);
            else std::copy(total, total + leaves, run.data());
            has = true;
        };
        auto keep = [&](LaneValues& to, int i) {
            std::copy(run.begin(), run.end(), to.at(i));
            to.has[i] = has;
        };
        for (std::int64_t job = 0; job < jobs; ++job) {
            int lanes = split_b ? 1
                                : static_cast<int>(std::min<std::int64_t>(L.width, L.lines - job * L.width));
            std::int64_t first_line = split_b ? job : job * L.width;
            auto select = [&](const Piece& pc) {
                if (split_b)
                    w.set_lanes(pc.lanes, [&](int) { return first_line; },
                                [&](int l) { return pc.start + l * pc.steps; });
                else
                    w.set_lanes(pc.lanes, [&](int l) { return first_line + l; },
                                [&](int) { return pc.start; });
            };
            // Captured values of this job's lines, for the chain even if this thread's part
            // of a superblock is empty.
            select(Piece{lanes, 0, 0});
            if (fix) fw->set_lanes(kFixLanes, [&](int) { return first_line; }, [](int) { return 0; });
            if (p == 0) carry[0].resize(lanes);  // no carry before the first element
            std::int64_t sbs = ceil_div(L.steps, sb_steps);
            for (std::int64_t sb = 0; sb < sbs; ++sb) {
                int par = static_cast<int>(sb & 1);
                std::int64_t A = sb * sb_steps, B = std::min(L.steps, A + sb_steps);
                std::int64_t a = A + (B - A) * p / threads, b = A + (B - A) * (p + 1) / threads;
                std::vector<Piece> pieces;
                                // A serial stage scans its part as one lane (SerialFn), others as many lanes.
                if (b > a)
                    pieces = split_b ? split_range(a, b, code.serial ? 1 : kSubLanes)
                                     : std::vector<Piece>{{lanes, a, b - a}};
                // Phase 1: reduce every lane of this thread's part.
                LaneValues& mine = totals[par][p];
                int items = 0;
                for (auto& pc : pieces) items += pc.lanes;
                mine.resize(items);
                for (int k = 0; fix && k < leaves; ++k) {
                    local[k].resize(static_cast<std::size_t>(b - a) * dtype_size(code.leaf_compute[k]));
                    local_at[k] = local[k].data();
                }
                for (int i = 0; auto& pc : pieces) {
                    select(pc);
                    if (fix) w.set_local(local_at.data(), dir > 0 ? -a : b - 1, dir);
                    w.run(pc.steps, fix ? Mode::Local : Mode::Reduce);
                    for (int l = 0; l < pc.lanes; ++l, ++i) {
                        w.read_carry(l, mine.at(i));
                        mine.has[i] = 1;
                    }
                }
                // After this barrier every total of this superblock is written, and every
                // thread is done reading the other parity's buffers (the previous phase 2).
                barrier.arrive_and_wait();
                // Phase 2: chain carries in line order, each thread up to its own items (the
                // last thread to the end, for the next superblock). Split-B chains all items
                // of all threads; Split-A chains each lane (a line) across threads.
                LaneValues& prev = carry[par];
                LaneValues& next = carry[par ^ 1];
                bool last = p == threads - 1;
                carry_in.resize(std::max(items, lanes));
                if (last) next.resize(lanes);
                for (int l = 0; l < (split_b ? 1 : lanes); ++l) {
                    std::copy(prev.at(l), prev.at(l) + leaves, run.data());
                    has = prev.has[l];
                    for (int q = 0; q < threads && (q <= p || last); ++q) {
                        LaneValues& t = totals[par][q];
                        int n = static_cast<int>(t.has.size());
                        if (split_b) {
                            for (int i = 0; i < n; ++i) {
                                if (q == p) keep(carry_in, i);
                                fold(0, t.at(i));
                            }
                        } else {
                            if (q == p) keep(carry_in, l);
                            if (n > 0 && (q < p || last)) fold(l, t.at(l));
                        }
                    }
                    if (last) keep(next, l);
                }
                // Phase 3: rescan from L2 starting from the carries (or fix up), and write.
                auto fix_lane = [&](int i, std::int64_t s0, std::int64_t n) {
                    std::int64_t lo = dir > 0 ? s0 - a : b - s0 - n;  // lowest address's index
                    for (int k = 0; k < leaves; ++k)
                        local_at[k] = local[k].data() + lo * dtype_size(code.leaf_compute[k]);
                    for (std::size_t o = 0; o < L.out.size(); ++o) {
                        const Slot& s = L.out[o];
                        std::int64_t t = dir > 0 ? s0 : s0 + n - 1;
                        out_at[o] = s.base + (L.line_offset(s, first_line) + t * s.step) * s.esize;
                    }
                    fw->fixup(carry_in.has[i] ? carry_in.at(i) : nullptr, local_at.data(),
                              out_at.data(), n);
                };
                if (fix) {
                    for (int i = 0; auto& pc : pieces)
                        for (int l = 0; l < pc.lanes; ++l, ++i)
                            fix_lane(i, pc.start + l * pc.steps, pc.steps);
                    if (L.stream) stream_fence();
                    continue;
                }
                for (int i = 0; auto& pc : pieces) {
                    select(pc);
                    LaneValues lane_carry{leaves, {}, {}};
                    lane_carry.resize(pc.lanes);
                    for (int l = 0; l < pc.lanes; ++l, ++i) {
                        std::copy(carry_in.at(i), carry_in.at(i) + leaves, lane_carry.at(l));
                        lane_carry.has[l] = carry_in.has[i];
                    }
                    w.run(pc.steps, mode, &lane_carry);
                }
            }
            // Everyone is done with this job's carries before thread 0 resets them.
            barrier.arrive_and_wait();
        }
    });
}

// A stage without a scan over few long lines: each thread maps its share of every line.
void run_map_split(const StageCode& code, const Layout& L, int threads) {
    ThreadPool::instance().run(threads, [&](int p) {
        Worker w(code, L, L.width);
        for (std::int64_t line = 0; line < L.lines; ++line) {
            for (auto& pc : split_range(L.steps * p / threads, L.steps * (p + 1) / threads)) {
                w.set_lanes(pc.lanes, [&](int) { return line; },
                            [&](int l) { return pc.start + l * pc.steps; });
                w.run(pc.steps, Mode::Map);
            }
        }
    });
}

}  // namespace

void run_fused(const Stage& stage, const Plan& plan, std::vector<Tensor>& values,
               const Bindings& bindings, const RunConfig& config) {
    std::vector<std::int64_t> sizes = evaluate_shape(stage.shape, bindings);
    for (int v : stage.outputs) values[v] = alloc_output(plan.values[v]->type().dtype, sizes);
    std::int64_t numel = 1;
    for (auto s : sizes) numel *= s;
    if (numel == 0) return;

    Layout L;
    L.sizes = sizes.empty() ? std::vector<std::int64_t>{1} : sizes;
    L.d = stage.has_scan ? stage.dim : static_cast<int>(L.sizes.size()) - 1;
    L.steps = L.sizes[L.d];
    L.lines = numel / L.steps;
    for (int k = 0; k < static_cast<int>(L.sizes.size()); ++k)
        if (k != L.d) L.line_dims.push_back(k);
    for (std::size_t i = 0; i < stage.inputs.size(); ++i) {
        const TensorView& v = values[stage.inputs[i]].view();
        if (v.device.kind != DeviceKind::CPU)
            throw CompileError({}, "the cpu backend needs CPU tensors");
        L.in.push_back(make_slot(v, L, stage.reverse));
        L.in.back().tiled = stage.code.slot_tiled[i];
    }
    for (int v : stage.outputs) L.out.push_back(make_slot(values[v].view(), L, stage.reverse));

    int threads = static_cast<int>(std::clamp<std::int64_t>(
        std::min<std::int64_t>(config.threads, numel / kMinWorkPerThread), 1, config.threads));
    // Lanes along a contiguous inner dim are read in place, each thread's groups as wide as its
    // share of the lines (up to 8 KiB of f32 per row): one long run per step, which the
    // prefetchers follow, with the carry row still in L1/L2. Strided lanes go through tiles.
    bool inner_lanes = L.d + 1 < static_cast<int>(L.sizes.size()) && L.sizes.back() > 1;
    L.width = inner_lanes ? static_cast<int>(std::clamp<std::int64_t>(
                                (ceil_div(L.lines, threads) + 63) / 64 * 64, kSubLanes, kMaxLanes))
                          : kSubLanes;
    std::int64_t out_bytes = 0;
    for (auto& s : L.out) out_bytes += numel * s.esize;
    L.stream = out_bytes >= kStreamBytes;
    L.reassociate = !config.ordered;
    // A one-op stage along contiguous rows: a row per lane, each scanned in blocks at the op's
    // throughput (SerialBlockFn) straight from memory, no transposes.
    const StageCode& code = stage.code;
    if (!inner_lanes && code.serial_block && L.reassociate && L.steps >= kMinSplitSteps &&
        L.in[code.serial_x_slot].step == 1 && L.out[code.store_alias[0]].step == 1)
        L.width = 1;
    std::int64_t groups = ceil_div(L.lines, L.width);
    // Whole lines when the groups share out evenly enough (at most 1/3 idle); splitting lines
    // reassociates floats and costs a second read from L2.
    bool balanced = groups >= threads && 3 * groups >= 2 * ceil_div(groups, threads) * threads;
    bool whole_lines = (L.lines >= kFewLines && (balanced || threads == 1)) ||
                       L.steps < kMinSplitSteps || (config.ordered && stage.has_scan);
    if (whole_lines) {
        run_lines(stage.code, L, threads, stage.has_scan ? Mode::Scan : Mode::Map);
    } else if (!stage.has_scan) {
        run_map_split(stage.code, L, threads);
    } else {
        run_split(stage.code, L, threads, Mode::Scan, L.lines < kFewLines);
    }
}

}  // namespace scanc::cpu
