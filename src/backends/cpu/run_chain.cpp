// One pass with a decoupled carry for split lines (see chain.h).
#include "chain.h"

#include <array>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <span>
#include <thread>

#include "fixup.h"
#include "seg_local.h"
#include "thread_pool.h"

namespace scanc::cpu {

namespace {

struct Block {
    std::int64_t line, start, steps;
};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

// The blocks of a run in chain order and their published inclusive prefixes.
class Chain {
public:
    // Lines in order, each cut into blocks of `len` steps; the first `threads` blocks of the
    // run are len * (k + 1) / threads long (k = 0..threads-1), which puts the threads out of
    // phase from the start (see chain.h).
    // Every block but a line's last is a multiple of `quantum` steps (len is one).
    Chain(const Layout& L, std::int64_t len, int threads, int leaves, std::int64_t quantum = 1)
        : leaves_(leaves) {
        for (std::int64_t line = 0; line < L.lines; ++line)
            for (std::int64_t s = 0; s < L.steps;) {
                std::int64_t k = static_cast<std::int64_t>(blocks.size());
                std::int64_t n = k < threads ? std::max(quantum, len * (k + 1) / threads / quantum * quantum)
                                             : len;
                n = std::min(n, L.steps - s);
                blocks.push_back({line, s, n});
                s += n;
            }
        ready_.reset(new Ready[blocks.size()]);
        values_.assign(blocks.size() * leaves, 0);
    }

    // Waits for block b's prefix: spins with pause, then yields. Null when the run failed.
    const std::uint64_t* wait(std::size_t b) const {
        for (int spins = 0; !ready_[b].flag.load(std::memory_order_acquire); ++spins) {
            if (failed_.load(std::memory_order_relaxed)) return nullptr;
            if (spins < 256) cpu_relax();
            else std::this_thread::yield();
        }
        return &values_[b * leaves_];
    }
    void publish(std::size_t b, std::span<const std::uint64_t> value) {  // the chain's leaves
        std::copy(value.begin(), value.end(), values_.begin() + b * leaves_);
        ready_[b].flag.store(1, std::memory_order_release);
    }
    // Runs fn(p, b) for thread p's blocks b = p, p + threads, ...; a failure stops the waits.
    template <typename Fn>
    void run(int threads, Fn fn) {
        ThreadPool::instance().run(threads, [&](int p) {
            try {
                for (std::size_t b = p; b < blocks.size(); b += threads)
                    if (!fn(p, b)) return;
            } catch (...) {
                failed_.store(true, std::memory_order_relaxed);
                throw;
            }
        });
    }

    std::vector<Block> blocks;

private:
    // One cache line per flag: the thread waiting on block b - 1 never shares a line with the
    // thread publishing block b.
    struct alignas(64) Ready {
        std::atomic<int> flag{0};
    };
    int leaves_;
    std::unique_ptr<Ready[]> ready_;
    std::vector<std::uint64_t> values_;
    std::atomic<bool> failed_{false};
};

bool one_op_eligible(const StageCode& code, const Layout& L) {
    return code.serial_block && L.reassociate && L.in[code.serial_x_slot].step == 1 &&
           L.out[code.store_alias[0]].step == 1;
}

// A one-op stage: each block reduced, then scanned from L2 with the previous prefix while
// the next block is prefetched.
void run_one_op(const StageCode& code, const Layout& L, int threads, std::vector<ThreadState>& ts) {
    const Slot& x = L.in[code.serial_x_slot];
    Chain chain(L, std::max<std::int64_t>(kChainBlockBytes / x.esize, 1), threads, 1);
    std::vector<Worker*> workers(threads);
    chain.run(threads, [&](int p, std::size_t b) {
        if (!workers[p]) workers[p] = &ts[p].worker(ts[p].w, code, L, 1);
        Worker& w = *workers[p];
        const Block& blk = chain.blocks[b];
        w.set_lanes(1, [&](int) { return blk.line; }, [&](int) { return blk.start; });
        w.set_ahead(nullptr);
        // The block's total: reading it brings the block into L2 for the scan below.
        w.run(blk.steps, Mode::Reduce);
        std::uint64_t total = 0;
        w.read_carry(0, &total);
        LaneValues carry{1, {}, {}};
        carry.resize(1);
        carry.has[0] = blk.start > 0;
        if (carry.has[0]) {
            const std::uint64_t* prev = chain.wait(b - 1);
            if (!prev) return false;
            *carry.at(0) = *prev;
            std::uint64_t running = *prev;
            w.fold(0, &running, &total);
            total = running;
        }
        chain.publish(b, {&total, 1});
        // The scan brings this thread's next block into L2 (a prefetch per line it writes), so
        // that block's reduce reads L2, not DRAM, and the reads overlap these writes (Intel
        // VM, 2 threads, 2^26: 14.9-15.8 -> 12.4-13.6 ms). The last block: ahead of itself.
        w.set_ahead(nullptr);
        if (b + threads < chain.blocks.size()) {
            const Block& nb = chain.blocks[b + threads];
            w.set_ahead(x.base + (L.line_offset(x, nb.line) + nb.start * x.step) * x.esize);
        }
        w.run(blk.steps, Mode::Scan, &carry);
        if (L.stream && b + threads >= chain.blocks.size()) stream_fence();
        return true;
    });
}

// Blocks of whole `quantum`s of steps, up to kChainBlockBytes of input each (no sliver of a
// last block), chained: each block's total first, where the line's next block waits for it
// (`total(p, blk, out)`, which reads the block into L2), then, from the previous block's prefix,
// its scan into the outputs (`scan(p, blk, prefix or null, next, totalled)`, `next`: this
// thread's next block or null, to prefetch; `totalled`: total ran on it just before). A line
// shorter than one block is one block a thread.
template <typename Total, typename Scan>
void chain_spans(const StageCode& code, const Layout& L, int threads, std::int64_t quantum,
                 std::vector<ThreadState>& ts, Total total, Scan scan) {
    const int leaves = static_cast<int>(code.carry.size());
    std::int64_t step_bytes = 0;
    for (const Slot& s : L.in) step_bytes += s.step ? s.esize : 0;
    const std::int64_t most =
        std::max<std::int64_t>(kChainBlockBytes / std::max<std::int64_t>(step_bytes, 1) / quantum, 1) * quantum;
    const std::int64_t blocks = L.steps <= most ? threads : ceil_div(L.steps, most);
    const std::int64_t len = ceil_div(ceil_div(L.steps, blocks), quantum) * quantum;
    Chain chain(L, len, threads, leaves, quantum);
    chain.run(threads, [&](int p, std::size_t b) {
        ThreadState& st = ts[p];
        Worker& w = st.worker(st.w, code, L, 1);
        const Block& blk = chain.blocks[b];
        std::array<std::uint64_t, kSegMaxLeaves> own{}, prefix{};
        const bool wanted = b + 1 < chain.blocks.size() && chain.blocks[b + 1].line == blk.line;
        if (wanted) total(p, blk, own.data());
        const bool has = blk.start > 0;
        if (has) {
            const std::uint64_t* prev = chain.wait(b - 1);
            if (!prev) return false;
            std::copy(prev, prev + leaves, prefix.begin());
        }
        const auto& first = has ? prefix : own;
        st.run.assign(first.begin(), first.begin() + leaves);
        if (has && wanted) w.fold(0, st.run.data(), own.data());
        chain.publish(b, st.run);
        scan(p, blk, has ? prefix.data() : nullptr, b + threads < chain.blocks.size() ? &chain.blocks[b + threads] : nullptr,
             wanted);
        if (L.stream && b + threads >= chain.blocks.size()) stream_fence();
        return true;
    });
}

// A generic stage through the row scan (SegLocal::scan_span; issue 4, round 31), as the one-op
// path: each block's total its vectors paired up, then scanned storing nothing; its scan
// prefetching this thread's next block, so these writes overlap its reads. A fix-up ran a
// transposing local scan, then the combine per element (sum_generic 1-D 2^26 from DRAM, ms:
// 1 thread 41 -> 34, 2 threads 21.5 -> 18.3).
void run_spans(const StageCode& code, const Layout& L, int threads, const SegLocal& seg,
               std::vector<ThreadState>& ts) {
    const int leaves = static_cast<int>(code.carry.size()), W = seg.span_lanes();
    auto total = [&](int, const Block& blk, std::uint64_t* out) {
        // Read from L2 (this thread's previous scan prefetched it), the inputs a little ahead
        // prefetched too.
        seg.scan_span(blk.line, blk.start, blk.steps / W, nullptr, false, blk.line, blk.start + kAheadBytes / 4, out);
    };
    auto scan = [&](int p, const Block& blk, const std::uint64_t* prefix, const Block* next, bool) {
        const std::int64_t vectors = blk.steps / W;
        std::array<std::uint64_t, kSegMaxLeaves> last{};
        const std::int64_t ahead_line = next ? next->line : blk.line;
        const std::int64_t ahead = next ? next->start : blk.start + kAheadBytes / 4;
        if (vectors > 0) seg.scan_span(blk.line, blk.start, vectors, prefix, true, ahead_line, ahead, last.data());
        if (const std::int64_t head = vectors * W; head < blk.steps) {  // the line's last steps
            LaneValues from{leaves, {}, {}};
            from.resize(1);
            from.has[0] = prefix || vectors > 0;
            std::copy_n(vectors > 0 ? last.data() : prefix ? prefix : last.data(), leaves, from.at(0));
            Worker& w = *ts[p].w;
            w.set_lanes(1, [&](int) { return blk.line; }, [&](int) { return blk.start + head; });
            w.set_ahead(nullptr);
            w.run(blk.steps - head, Mode::Scan, &from);
        }
    };
    chain_spans(code, L, threads, W, ts, total, scan);
}

// Rows with a prologue or epilogue (fused_rows.h) the same way: each block's total by its
// prologue and the scan storing nothing, its leaves kept in L2 where the epilogue allows; then
// from the prefix the scan of those leaves (else of the prologue run again) and the epilogue
// (Mamba's `exp(dt * A)` along 3 x 2^24, 2 threads: 7.5 GB/s with the prologue run twice, 10.6
// fixed up).
void run_fused_spans(const StageCode& code, const Layout& L, int threads, std::vector<ThreadState>& ts) {
    using Keep = FusedRows::Keep;
    auto total = [&](int p, const Block& blk, std::uint64_t* out) {
        FusedRows& f = *ts[p].fused_rows(code, L);
        f.scan(blk.line, blk.start, blk.steps, nullptr, false, out, f.keeps() ? Keep::Save : Keep::None);
    };
    auto scan = [&](int p, const Block& blk, const std::uint64_t* prefix, const Block* next, bool totalled) {
        FusedRows& f = *ts[p].fused_rows(code, L);
        std::array<std::uint64_t, kSegMaxLeaves> last{};
        // After its total (this block's inputs in L2), the scan prefetches this thread's next
        // block for that one's total.
        const FusedRows::Span span = next ? FusedRows::Span{next->line, next->start, next->steps} : FusedRows::Span{};
        f.scan(blk.line, blk.start, blk.steps, prefix, true, last.data(), totalled && f.keeps() ? Keep::Reuse : Keep::None,
               totalled && next ? &span : nullptr);
    };
    chain_spans(code, L, threads, 1, ts, total, scan);
}

// A generic stage fixed up (fixup.h): each block's lanes scanned locally into L2, their totals
// chained in order from the previous block's prefix, then carry ∘ local written out.
void run_fixed(const StageCode& code, const Layout& L, int threads, int dir,
               std::vector<ThreadState>& ts) {
    int leaves = static_cast<int>(code.carry.size());
    // A line that fits in one block is shared among the threads (mid-size lines would
    // otherwise run on one); longer lines keep their blocks (and results).
    // Lines with large outputs: kWideLanes lanes per block (affine 1-D: 10.6 -> 9.3
    // instructions per element); smaller ones keep the small-scan tuning of kSubLanes.
    int lanes = L.stream ? kWideLanes : kSubLanes;
    // Phase 1 in SIMD registers where the stage allows (seg_local.h; the same results), for
    // large outputs on blocks of a third of the budget: its compute got cheaper than the
    // block's trips out of L2 (affine 1-D 2^26, 2 threads, ms: 768 KiB 85-112, 384 KiB 72-97,
    // 256 KiB 66-106 (mostly 74-87), 192 KiB 77-97; Worker's path 90-123 alongside).
    const SegLocal& seg = ts[0].seg_local(code, L, dir);
    if (dir == 1 && seg.spans()) return run_spans(code, L, threads, seg, ts);
    std::int64_t budget = seg.active() && L.stream ? kSegPortionBytes : kPortionBytes;
    std::int64_t portion = portion_steps(code, L, true, lanes, budget);
    bool short_line = L.steps <= portion;
    std::int64_t len = short_line ? ceil_div(L.steps, threads) : portion;
    Chain chain(L, len, threads, leaves);
    // Broadcast carries need no fill, so a fix-up worker as wide as a lane's run costs
    // nothing more and takes one chunk per run (affine 1-D: 8.52 -> 8.15 instructions per
    // element).
    int max_fix = Worker::fixup_bcast(code, L).empty() ? kFixLanes : 2 * kFixLanes;
    int fix_lanes = fix_width(std::min(len, L.steps), max_fix);
    std::vector<char> ready(threads, 0);  // thread p's workers rebased for this run
    chain.run(threads, [&](int p, std::size_t b) {
        ThreadState& st = ts[p];
        if (!ready[p]) {
            st.worker(st.w, code, L, lanes);
            st.worker(st.fw, code, L, fix_lanes);
            st.scans(code, L, dir);
            ready[p] = 1;
        }
        Worker& w = *st.w;
        const Block& blk = chain.blocks[b];
        std::vector<Piece> pieces = split_line(blk.start, blk.start + blk.steps, short_line, lanes);
        st.fw->set_line(blk.line);
        st.local->cover(blk.start, blk.start + blk.steps);
        st.totals.leaves = st.carry.leaves = leaves;
        int items = 0;
        for (auto& pc : pieces) items += pc.lanes;
        st.totals.resize(items);
        w.set_ahead(nullptr);
        for (int i = 0; auto& pc : pieces) {
            if (seg.usable(pc)) {
                seg.run(blk.line, pc, *st.local, st.totals, i);
                i += pc.lanes;
                continue;
            }
            w.set_lanes(pc.lanes, [&](int) { return blk.line; },
                        [&](int l) { return pc.start + l * pc.steps; });
            w.set_local(st.local->bases(), st.local->origin(), dir);
            w.run(pc.steps, Mode::Local);
            for (int l = 0; l < pc.lanes; ++l, ++i) w.read_carry(l, st.totals.at(i));
        }
        // The chain: lane i's carry is prefix(b - 1) ∘ total(0) ∘ ... ∘ total(i - 1), folded
        // in this order (the line's captured values are the same at every lane).
        st.run.resize(leaves);
        bool has = blk.start > 0;
        if (has) {
            const std::uint64_t* prev = chain.wait(b - 1);
            if (!prev) return false;
            std::copy(prev, prev + leaves, st.run.begin());
        }
        st.carry.resize(items);
        for (int i = 0; i < items; ++i) {
            std::copy(st.run.begin(), st.run.end(), st.carry.at(i));
            st.carry.has[i] = has;
            if (has) w.fold(0, st.run.data(), st.totals.at(i));
            else std::copy(st.totals.at(i), st.totals.at(i) + leaves, st.run.begin());
            has = true;
        }
        chain.publish(b, st.run);
        // Phase 3, prefetching this thread's next block so these writes overlap its reads.
        if (b + threads < chain.blocks.size()) {
            const Block& nb = chain.blocks[b + threads];
            st.local->prefetch_next(nb.line, nb.start, nb.start + nb.steps);
        } else {
            st.local->prefetch_next(blk.line, 0, 0);
        }
        for (int i = 0; auto& pc : pieces) {
            fix_piece(*st.local, *st.fw, blk.line, pc, st.carry, i, st.ptrs);
            i += pc.lanes;
        }
        if (L.stream && b + threads >= chain.blocks.size()) stream_fence();
        return true;
    });
}

}  // namespace

bool chain_eligible(const StageCode& code, const Layout& L, ThreadState& t0) {
    return one_op_eligible(code, L) || (L.lines < kFewLines && fixup_dir(code, L) != 0) ||
           t0.fused_rows(code, L) != nullptr;
}

void run_chain(const StageCode& code, const Layout& L, int threads, std::vector<ThreadState>& ts) {
    if (one_op_eligible(code, L)) run_one_op(code, L, threads, ts);
    // A fix-up's phase 1 runs a prologue by Worker, lanes across the block (f32 `scan add(x * 2)`
    // along 3 x 2^24, 2 threads: 22 GB/s fixed up).
    else if (ts[0].fused_rows(code, L)) run_fused_spans(code, L, threads, ts);
    else run_fixed(code, L, threads, fixup_dir(code, L), ts);
}

}  // namespace scanc::cpu
