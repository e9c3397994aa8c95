// What a Fused stage keeps from one run to the next (one StageCache per stage of an executable):
// its Layout and each thread's Workers and buffers. A run whose layout has the same geometry
// (sizes, strides, dtypes, lanes, thread count, `ordered`) reuses them with its own base
// pointers, so a small scan run again and again pays no allocation or register setup per call.
// Reuse changes no result: the path and every partition depend on that geometry only, and a
// Worker is already reused from one group or block to the next within a run.
#pragma once

#include <memory>
#include <vector>

#include "fixup.h"
#include "fused_rows.h"
#include "seg_local.h"

namespace scanc::cpu {

// One thread's machinery for one stage; what a path does not use stays empty.
struct ThreadState {
    std::unique_ptr<Worker> w, fw;  // the stage's lanes; fix-ups (fixup.h)
    std::unique_ptr<LocalScans> local;
    std::unique_ptr<SegLocal> seg;  // the register kernel (thread 0's state keeps it)
    std::unique_ptr<FusedRows> fused;  // rows with a prologue or epilogue
    LaneValues totals, carry;  // run_chain's per-block lane totals and carries
    std::vector<std::uint64_t> run;
    std::vector<const std::uint64_t*> ptrs;

    // `slot` (w or fw) as a Worker of `width` lanes, made on first use, with this run's bases.
    Worker& worker(std::unique_ptr<Worker>& slot, const StageCode& code, const Layout& L,
                   int width) {
        if (!slot || slot->width() != width) slot = std::make_unique<Worker>(code, L, width);
        else slot->rebase();
        return *slot;
    }
    // The register kernel of fix-ups walking `dir` and of whole rows (seg_local.h), made on
    // first use.
    const SegLocal& seg_local(const StageCode& code, const Layout& L, int dir) {
        if (!seg || seg->dir() != dir) seg = std::make_unique<SegLocal>(code, L, dir);
        return *seg;
    }
    // This thread's runner of rows with a prologue or epilogue (fused_rows.h), made on first
    // use; null where it cannot run the stage.
    FusedRows* fused_rows(const StageCode& code, const Layout& L) {
        if (!fused) fused = std::make_unique<FusedRows>(code, L);
        return fused->active() ? fused.get() : nullptr;
    }
    LocalScans& scans(const StageCode& code, const Layout& L, int dir) {
        if (!local || local->dir() != dir) local = std::make_unique<LocalScans>(code, L, dir);
        return *local;
    }
};

struct StageCache {
    Layout L;
    int threads = 0;
    std::vector<ThreadState> states;  // per thread

    // Makes `fresh` (with `threads` threads) the current layout: the kept states stay when the
    // geometry is unchanged (only the base pointers are taken from `fresh`).
    void adopt(Layout&& fresh, int num_threads) {
        if (num_threads == threads && same_geometry(L, fresh)) {
            for (std::size_t i = 0; i < L.in.size(); ++i) L.in[i].base = fresh.in[i].base;
            for (std::size_t o = 0; o < L.out.size(); ++o) L.out[o].base = fresh.out[o].base;
            return;
        }
        states.clear();  // their Workers refer to L
        L = std::move(fresh);
        threads = num_threads;
        states.resize(num_threads);
    }

private:
    static bool same_slots(const std::vector<Slot>& a, const std::vector<Slot>& b) {
        if (a.size() != b.size()) return false;
        for (std::size_t i = 0; i < a.size(); ++i)
            if (a[i].esize != b[i].esize || a[i].strides != b[i].strides ||
                a[i].step != b[i].step || a[i].walk0 != b[i].walk0 || a[i].tiled != b[i].tiled)
                return false;
        return true;
    }
    static bool same_geometry(const Layout& a, const Layout& b) {
        return a.sizes == b.sizes && a.d == b.d && a.width == b.width && a.stream == b.stream &&
               a.reassociate == b.reassociate && same_slots(a.in, b.in) &&
               same_slots(a.out, b.out);
    }
};

}  // namespace scanc::cpu
