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
//   - Split mode, for few lines (Split-B: lanes are sub-ranges of one line, or of the few lines
//     after the walking dim side by side, split_b_lines) or few groups of long lines (Split-A:
//     lanes are lines, steps split among threads): reduce-then-scan over
//     superblocks small enough that each thread's part stays in L2, so memory is read about once:
//     phase 1 reduces each lane, a barrier, phase 2 chains the totals in order into each lane's
//     carry-in, phase 3 rescans from L2 with the carry and writes. Split-B of a generic stage
//     whose outputs all store leaves along a contiguous dim instead fixes up (run_fixup.cpp):
//     phase 1 keeps each lane's local scan in L2, phase 3 is carry ∘ local over contiguous
//     positions, with no transposes and no per-step dispatch.
//   - Threads: one per kMinWorkPerThread elements of a one-op stage, kMinGenericWorkPerThread of
//     a generic one (below that, the caller's thread alone: waking a thread costs more).
//   - Short lines (issue 4, small scans): fewer than kFewLines lines of a generic stage are
//     split from kMinShortSplitSteps (64) steps on, into about sqrt(n / 4) lanes when a line
//     fits in one block (fixup.h, split_line): scanned whole, each would be a lane of its own,
//     one dispatch per op and step for a single element (~350 instructions per element).
//     Few one-op rows along a contiguous dim are a row per lane (serial_block) from 64 steps on.
//   - Chained (chain.h, round 5): split lines of one-op stages read and written contiguously,
//     and Split-B lines that fix up, run as blocks dealt round-robin to the threads with a
//     decoupled carry: no barriers, and the threads' read and write phases overlap. The
//     superblocks above remain for the other split stages (reverse or strided one-op lines,
//     epilogues, Split-A of generic stages).
//
// Memory behaviour (issue 4): lanes contiguous in memory form groups as wide as a thread's share
// of the lines (rows of up to 8 KiB, which the prefetchers follow); strided lanes form groups of
// 64 (64 streams, up to 1 KiB each per tile, with software prefetch of the next tile; round 7's
// 128 for generic stages with large outputs was slower once the scatter was fixed, round 11).
// A scan along such contiguous rows with large outputs writes each step's carry row and
// streams its output row in one op (StageCode::combine_tee), where its ops have that variant.
// Large outputs go out with streaming stores (stream_store.h). A one-op stage (StageCode::
// serial_block) along contiguous lines scans each line, or each thread's part of one, as one
// lane in reassociated blocks, unless `ordered`.
//
// What a run sets up (the layout, each thread's Workers and buffers) stays in the stage's
// StageCache for the next run of the same geometry (stage_cache.h).
#include "run_stage.h"

#include <algorithm>
#include <barrier>
#include <climits>
#include <cstring>
#include <memory>

#include "buffer_cache.h"
#include "chain.h"
#include "thread_pool.h"
#include "fixup.h"
#include "stage_cache.h"

namespace scanc::cpu {

namespace {

// Lines mode: each thread takes an equal share of the groups of L.width lines.
void run_lines(const StageCode& code, const Layout& L, int threads, Mode mode,
               std::vector<ThreadState>& ts) {
    std::int64_t groups = ceil_div(L.lines, L.width);
    // Generic stages along rows of memory (strided lanes), or across them (steps apart), in
    // SIMD registers where the stage allows (seg_local.h, run_rows and run_cols): no tiles,
    // gathers or scatters.
    const SegLocal* seg = mode == Mode::Scan && !code.serial ? &ts[0].seg_local(code, L, 1) : nullptr;
    ThreadPool::instance().run(threads, [&](int p) {
        Worker& w = ts[p].worker(ts[p].w, code, L, L.width);
        // Rows with a prologue or epilogue, a row at a time (fused_rows.h).
        FusedRows* fused = mode == Mode::Scan ? ts[p].fused_rows(code, L) : nullptr;
        std::uint64_t last[kSegMaxLeaves];
        for (std::int64_t g = groups * p / threads; g < groups * (p + 1) / threads; ++g) {
            int n = static_cast<int>(std::min<std::int64_t>(L.width, L.lines - g * L.width));
            if (fused) {
                for (int l = 0; l < n; ++l) fused->scan(g * L.width + l, 0, L.steps, nullptr, true, last);
                continue;
            }
            if (seg && (seg->run_rows(g * L.width, n, w, ts[p].totals) || seg->run_cols(g * L.width, n, w)))
                continue;
            w.set_lanes(n, [&](int l) { return g * L.width + l; }, [](int) { return 0; });
            w.run(L.steps, mode);
        }
        if (L.stream) stream_fence();  // the one-op rows path leaves its streaming stores open
    });
}

// Lines of a Split-B job: the lines after the walking dim (side by side in memory where the
// tensors are contiguous), so that each piece of a line has them all as neighbouring lanes and a
// tile row reads them as one run. One line at a time, a split along dim 1 of [1, 2^20, 16] read
// the whole tensor once per line, element by element (296 ms, 2 threads;
// docs/history/cpu-sessions-25-35.md, thirty-fourth session). One line where the stage fixes up
// (the walking dim is then the contiguous one) and for one-op stages (their own serial path scans
// a lane at a time).
int split_b_lines(const StageCode& code, const Layout& L, bool fix) {
    if (fix || code.serial) return 1;
    const std::int64_t run = L.run_lines();
    return run > 1 && run <= kSubLanes && L.lines % run == 0 ? static_cast<int>(run) : 1;
}

// Split modes. Lines at a time (Split-A: a group; Split-B: split_b_lines) are processed by all
// threads together, superblock by superblock.
void run_split(const StageCode& code, const Layout& L, int threads, Mode mode, bool split_b,
               std::vector<ThreadState>& ts) {
    int leaves = static_cast<int>(code.carry.size());

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
    int dir = split_b ? fixup_dir(code, L) : 0;
    bool fix = dir != 0;
    // Split-B: G lines a job, lane l of a piece walking line l % G from the piece's sub-range
    // l / G, so item i of a thread's pieces belongs to line i % G.
    const int G = split_b ? split_b_lines(code, L, fix) : 1;
    std::int64_t jobs = split_b ? L.lines / G : ceil_div(L.lines, L.width);
    // A superblock's steps, a G-th of one line's where a job walks G lines: a thread's part
    // stays in L2 and its sub-ranges keep their length.
    std::int64_t sb_steps = std::max<std::int64_t>(1, portion_steps(code, L, split_b) * threads / G);

    // Thread p's walking steps [a, b) of superblock `sb` (empty past the last).
    auto part = [&](std::int64_t sb, int p) -> std::pair<std::int64_t, std::int64_t> {
        std::int64_t A = std::min(L.steps, sb * sb_steps), B = std::min(L.steps, A + sb_steps);
        return {A + (B - A) * p / threads, A + (B - A) * (p + 1) / threads};
    };
    // Where that part starts in a one-op stage's input (null when empty): phase 3 of a
    // superblock prefetches the next one's part, so its writes overlap the next phase 1's reads.
    auto part_of = [&](std::int64_t sb, std::int64_t line, int p) -> const std::byte* {
        auto [a, b] = part(sb, p);
        if (!code.serial_block || a >= b) return nullptr;
        const Slot& x = L.in[code.serial_x_slot];
        return x.base + (L.line_offset(x, line) + a * x.step) * x.esize;
    };
    // Split-B's pieces have up to kSubLanes lanes (G a serial stage's), whatever L.width is: 24
    // lines on 2 threads have groups of 16 (balanced_width), and their pieces overran a worker
    // that narrow (an internal error, found by the forty-eighth session's fuzzing).
    const int piece_lanes = split_b ? (code.serial ? 1 : kSubLanes / G) * G : L.width;
    const int width = std::max(L.width, piece_lanes);
    ThreadPool::instance().run(threads, [&](int p) {
        Worker& w = ts[p].worker(ts[p].w, code, L, width);
        Worker* fw = fix ? &ts[p].worker(ts[p].fw, code, L, fix_width(std::min(L.steps, sb_steps)))
                         : nullptr;
        LocalScans& local = ts[p].scans(code, L, dir);
        std::vector<const std::uint64_t*> carry_ptrs;
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
            int lanes = split_b ? G
                                : static_cast<int>(std::min<std::int64_t>(L.width, L.lines - job * L.width));
            std::int64_t first_line = split_b ? job * G : job * L.width;
            auto select = [&](const Piece& pc) {
                if (split_b)
                    w.set_lanes(pc.lanes, [&](int l) { return first_line + l % G; },
                                [&](int l) { return pc.start + l / G * pc.steps; });
                else
                    w.set_lanes(pc.lanes, [&](int l) { return first_line + l; },
                                [&](int) { return pc.start; });
            };
            // Captured values of this job's lines, for the chain even if this thread's part
            // of a superblock is empty.
            select(Piece{lanes, 0, 0});
            if (fix) fw->set_line(first_line);
            if (p == 0) carry[0].resize(lanes);  // no carry before the first element
            std::int64_t sbs = ceil_div(L.steps, sb_steps);
            for (std::int64_t sb = 0; sb < sbs; ++sb) {
                int par = static_cast<int>(sb & 1);
                auto [a, b] = part(sb, p);
                std::vector<Piece> pieces;
                // A serial stage scans its part as one lane (SerialFn), others as many lanes.
                if (b > a)
                    pieces = split_b ? split_line(a, b, L.steps <= sb_steps, piece_lanes / G)
                                     : std::vector<Piece>{{lanes, a, b - a}};
                if (split_b)
                    for (auto& pc : pieces) pc.lanes *= G;
                w.set_ahead(nullptr);
                // Phase 1: reduce every lane of this thread's part (fix-up: scan it locally).
                LaneValues& mine = totals[par][p];
                int items = 0;
                for (auto& pc : pieces) items += pc.lanes;
                mine.resize(items);
                if (fix) local.cover(a, b);
                for (int i = 0; auto& pc : pieces) {
                    select(pc);
                    if (fix) w.set_local(local.bases(), local.origin(), dir);
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
                for (int l = 0; l < lanes; ++l) {
                    std::copy(prev.at(l), prev.at(l) + leaves, run.data());
                    has = prev.has[l];
                    for (int q = 0; q < threads && (q <= p || last); ++q) {
                        LaneValues& t = totals[par][q];
                        int n = static_cast<int>(t.has.size());
                        if (split_b) {  // line l's items, evaluated at lane l (line l)
                            for (int i = l; i < n; i += G) {
                                if (q == p) keep(carry_in, i);
                                fold(l, t.at(i));
                            }
                        } else {
                            if (q == p) keep(carry_in, l);
                            if (n > 0 && (q < p || last)) fold(l, t.at(l));
                        }
                    }
                    if (last) keep(next, l);
                }
                // Phase 3: rescan from L2 starting from the carries (or fix up), and write.
                if (fix) {
                    auto [a2, b2] = part(sb + 1, p);
                    local.prefetch_next(first_line, a2, b2);
                    for (int i = 0; auto& pc : pieces) {
                        fix_piece(local, *fw, first_line, pc, carry_in, i, carry_ptrs);
                        i += pc.lanes;
                    }
                    if (L.stream) stream_fence();
                    continue;
                }
                if (split_b && code.serial_block && G == 1) w.set_ahead(part_of(sb + 1, first_line, p));
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
        if (L.stream) stream_fence();  // as in run_lines
    });
}

// A stage without a scan over few long lines: each thread maps its share of every line.
void run_map_split(const StageCode& code, const Layout& L, int threads,
                   std::vector<ThreadState>& ts) {
    ThreadPool::instance().run(threads, [&](int p) {
        Worker& w = ts[p].worker(ts[p].w, code, L, L.width);
        for (std::int64_t line = 0; line < L.lines; ++line) {
            // Pieces of at most the worker's lanes: L.width may be an even share below 64.
            for (auto& pc : split_range(L.steps * p / threads, L.steps * (p + 1) / threads, L.width)) {
                w.set_lanes(pc.lanes, [&](int) { return line; },
                            [&](int l) { return pc.start + l * pc.steps; });
                w.run(pc.steps, Mode::Map);
            }
        }
    });
}

// The busiest thread's work when `lines` are dealt as groups of `width` (run_lines: each thread
// an equal count of consecutive groups): its lanes, plus kGroupCost lanes' worth for each of
// its groups (a group walks every step, a dispatch per op and step whatever its width).
std::int64_t busiest_cost(std::int64_t lines, std::int64_t width, int threads) {
    const std::int64_t groups = ceil_div(lines, width);
    std::int64_t most = 0;
    for (int p = 0; p < threads; ++p) {
        const std::int64_t g0 = groups * p / threads, g1 = groups * (p + 1) / threads;
        const std::int64_t lanes = std::min(g1 * width, lines) - std::min(g0 * width, lines);
        most = std::max(most, lanes + (g1 - g0) * kGroupCost);
    }
    return most;
}

// Groups of `width` lanes, or of an even share of each thread's lines split into k groups (a
// multiple of 8 from kMinShareLanes up to kMaxShareLanes) where that leaves no thread without a
// group and costs the busiest one least. 64 rows on 2 threads were one group of 64 and split
// every line instead (Split-A computes a generic stage's prologue and combine twice, phases 1
// and 3): cumsum(tanh(x)) of 64 x 65536 ran no faster than on one thread; 65 rows were groups
// of 64 and 1, one thread idle; 130 rows groups of 64, 64 and 2, and the thread with two groups
// took 1.6x as long as with one (welford along rows of 16384). Strided lanes only: lanes read in
// place (Mamba's [1, 65536, 64] along dim 1) are bound by the per-step dispatch at 64 lanes,
// and groups of 32 on 2 threads ran 5.5 -> 7.5-8.3 ms.
int balanced_width(std::int64_t lines, int threads, int width) {
    const std::int64_t share = ceil_div(lines, threads);
    std::int64_t best = width, best_cost = busiest_cost(lines, width, threads);
    for (std::int64_t k = 1; k <= 4; ++k) {
        const std::int64_t even = (ceil_div(share, k) + 7) / 8 * 8;
        if (even < kMinShareLanes || even > kMaxShareLanes || ceil_div(lines, even) < threads) continue;
        const std::int64_t cost = busiest_cost(lines, even, threads);
        if (cost < best_cost) best = even, best_cost = cost;
    }
    return static_cast<int>(best);
}

}  // namespace

void run_fused(const Stage& stage, const Plan& plan, std::vector<Tensor>& values,
               const Bindings& bindings, const RunConfig& config, StageCache& cache) {
    std::vector<std::int64_t> sizes = evaluate_shape(stage.shape, bindings);
    for (int v : stage.outputs)  // made already: a caller's output (CpuExecutable::run)
        if (!values[v].defined()) values[v] = alloc_output(plan.values[v]->type().dtype, sizes);
    std::int64_t numel = 1;
    for (auto s : sizes) numel *= s;
    if (numel == 0) return;

    Layout L;  // moved into the stage's cache below; `kept` from there on
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

    std::int64_t min_work = stage.code.serial ? kMinWorkPerThread : kMinGenericWorkPerThread;
    int threads = static_cast<int>(std::clamp<std::int64_t>(
        std::min<std::int64_t>(config.threads, numel / min_work), 1, config.threads));
    // Lanes along a contiguous inner dim are read in place, each thread's groups as wide as its
    // share of the lines (up to 8 KiB of f32 per row): one long run per step, which the
    // prefetchers follow, with the carry row still in L1/L2. Strided lanes go through tiles.
    bool inner_lanes = L.d + 1 < static_cast<int>(L.sizes.size()) && L.sizes.back() > 1;
    std::int64_t out_bytes = 0;
    for (auto& s : L.out) out_bytes += numel * s.esize;
    L.stream = out_bytes >= kStreamBytes;
    // Strided lanes form groups of kSubLanes rows (or fewer, balanced_width). Round 7 took
    // kWideLanes (128) for generic stages with large outputs (fewer instructions per element);
    // once round 10 had made the streaming scatter cheap, the gathers of 2 x 128 rows bounded
    // it, and 64 rows ran affine last dim 4096x4096 10-15% faster (round 11; 32 rows cost more
    // in dispatch than they saved, where every thread had groups of 64 to take).
    L.width = inner_lanes ? static_cast<int>(std::clamp<std::int64_t>(
                                (ceil_div(L.lines, threads) + 63) / 64 * 64, kSubLanes, kMaxLanes))
                          : balanced_width(L.lines, threads, kSubLanes);
    // Lines are contiguous only within the dims after d: a group spanning two of those runs
    // is not, and its tiles moved element by element (Mamba's [B, L, D] along L, 2 threads:
    // groups of 512 lines over runs of 256, 18 ms). Groups as wide as a run, or an even share
    // of one, read in place.
    if (inner_lanes) {
        const std::int64_t run = L.run_lines();
        const std::int64_t parts = ceil_div(run, L.width);
        if (run >= kSubLanes && run % parts == 0) L.width = static_cast<int>(run / parts);
    }
    L.reassociate = !config.ordered;
    // A one-op stage along contiguous rows: a row per lane, each scanned in blocks at the op's
    // throughput (SerialBlockFn) straight from memory, no transposes. Few rows (a group of
    // kSerialLanes to kFewLines lanes would run the interpreter, a dispatch per step) from
    // kMinShortSplitSteps steps on: sum 8x1024 took 25 instructions per element that way.
    const StageCode& code = stage.code;
    std::int64_t min_row_steps = L.lines < kFewLines ? kMinShortSplitSteps : kMinSplitSteps;
    if (!inner_lanes && code.serial_block && L.reassociate && L.steps >= min_row_steps &&
        L.in[code.serial_x_slot].step == 1 && L.out[code.store_alias[0]].step == 1)
        L.width = 1;
    std::int64_t groups = ceil_div(L.lines, L.width);
    // Whole lines when the groups share out evenly enough (at most 1/3 idle); splitting lines
    // reassociates floats and costs a second read from L2.
    bool balanced = groups >= threads && 3 * groups >= 2 * ceil_div(groups, threads) * threads;
    // One thread scanning one-op rows (width 1) reads each row once in one pass; splitting
    // would read it twice for no parallelism.
    // Few lines of a generic stage are split from kMinShortSplitSteps on: whole, each line would
    // be one lane, a dispatch per op and step for one element (~350 instructions per element).
    std::int64_t min_split = code.serial || L.lines >= kFewLines ? kMinSplitSteps
                                                                 : kMinShortSplitSteps;
    bool whole_lines = (L.lines >= kFewLines && (balanced || threads == 1)) ||
                       (threads == 1 && L.width == 1) || L.steps < min_split ||
                       (config.ordered && stage.has_scan);
    cache.adopt(std::move(L), threads);
    const Layout& kept = cache.L;  // this run's layout, with the kept workers
    std::vector<ThreadState>& ts = cache.states;
    if (whole_lines) {
        run_lines(code, kept, threads, stage.has_scan ? Mode::Scan : Mode::Map, ts);
    } else if (!stage.has_scan) {
        run_map_split(code, kept, threads, ts);
    } else if (chain_eligible(code, kept, ts[0])) {
        run_chain(code, kept, threads, ts);
    } else {
        // Few lines: each split into lanes of its own (Split-B), unless they are 8 or more lanes
        // of a one-op stage side by side in memory (along dim 0 of a narrow matrix), where
        // Split-B reads every row once per line (sum along dim 0 of 1000000x16, 2 threads:
        // 0.8-1.0 -> 12.6-14.2 GB/s; 4 and 2 lines lost: 5.2 -> 2.0 and 7.8 -> 1.8-3.3).
        bool split_b = kept.lines < kFewLines && !(inner_lanes && code.serial && kept.lines >= 8);
        run_split(code, kept, threads, Mode::Scan, split_b, ts);
    }
}

}  // namespace scanc::cpu
