// The split machinery around Worker (worker.h): a thread's pieces of a superblock, and the
// fix-up scheme for split lines of generic stages (run_fixup.cpp).
#pragma once

#include <utility>
#include <vector>

#include "worker.h"

namespace scanc::cpu {

// A thread's part of a superblock: groups of lanes in chain order.
struct Piece {
    int lanes;
    std::int64_t start, steps;  // lane l covers [start + l*steps, start + (l+1)*steps)
};

// Split-B: sub-ranges of one line, as many lanes as fit. Lane lengths are odd multiples of 16
// elements when long, so the lanes' addresses fall in different cache sets.
inline std::vector<Piece> split_range(std::int64_t a, std::int64_t b, int max_lanes = kSubLanes) {
    std::vector<Piece> pieces;
    for (std::int64_t n = b - a; n > 0;) {
        int lanes = static_cast<int>(std::clamp<std::int64_t>(n / 16, 1, max_lanes));
        std::int64_t c = n / lanes;
        if (lanes == max_lanes && lanes > 1 && c >= 32) c = ((c / 16 - 1) | 1) * 16;
        pieces.push_back({lanes, a, c});
        a += lanes * c;
        n -= lanes * c;
    }
    return pieces;
}

// Split-B pieces of walking steps [a, b) of a line. A `short_line` (one that fits in one block
// or superblock of its split) gets about sqrt(n / 4) lanes (a multiple of 8 above 8) for n
// steps: each lane costs ~700 instructions (its total's fold, its fix-up call, its offsets) and
// each step ~200 (one dispatch per op), and split_range's lanes of 16-48 steps spent twice the
// instructions at 1024-4096 steps. Longer lines keep split_range's pieces (and results).
inline std::vector<Piece> split_line(std::int64_t a, std::int64_t b, bool short_line,
                                     int max_lanes = kSubLanes) {
    if (!short_line) return split_range(a, b, max_lanes);
    int lanes = 1;
    while (lanes < max_lanes && 4 * (lanes + 1) * (lanes + 1) <= b - a) ++lanes;
    if (lanes > 8) lanes &= ~7;  // whole vectors in the ops and 8x8 transposes
    std::int64_t c = (b - a) / lanes, rest = (b - a) - lanes * c;
    // The remainder (fewer steps than lanes) is one more lane, run as a piece of its own.
    std::vector<Piece> pieces{{lanes, a, c}};
    if (rest > 0) pieces.push_back({1, a + lanes * c, rest});
    return pieces;
}

// Walking steps per thread and superblock of a split (or per block of a chained split,
// chain.h): about `budget` bytes of the stage's memory traffic per lane, so a thread's part
// stays in L2. Split-B with `lanes` lanes per piece (kSubLanes or kWideLanes): the portion is
// scaled by lanes / kSubLanes, so the lanes keep their length.
std::int64_t portion_steps(const StageCode& code, const Layout& L, bool split_b,
                           int lanes = kSubLanes, std::int64_t budget = kPortionBytes);

// The fix-up scheme (run_fixup.cpp), for a split line of a generic (not one-op) stage whose
// outputs all store leaves unchanged: phase 1 scans each lane without a carry into a local
// buffer in L2 (Mode::Local), the lanes' totals are chained in order, and each lane's result is
// then carry ∘ local over contiguous positions (Worker::fixup): no tile transposes and no
// per-step dispatch in phase 3. Reassociates, so never for `ordered` runs.

// The direction of the outputs along the walking dim (+1 or -1; all alike) when the stage can
// be fixed up, else 0.
int fixup_dir(const StageCode& code, const Layout& L);

// One thread's local scans: per leaf, `steps` positions of its compute dtype, walking step t at
// element origin + dir * t (Worker::set_local).
class LocalScans {
public:
    LocalScans(const StageCode& code, const Layout& L, int dir);
    // Buffers for walking steps [a, b).
    void cover(std::int64_t a, std::int64_t b);
    // For set_local.
    std::byte* const* bases() const { return base_.data(); }
    std::int64_t origin() const { return origin_; }
    int dir() const { return dir_; }
    // Phase 3 of `lanes` consecutive lanes of `n` walking steps from s0 on `line`, lane l with
    // carries[l] (all set), or of one lane without a carry (the line's first: carries null).
    void fix_lanes(Worker& fw, std::int64_t line, std::int64_t s0, std::int64_t n, int lanes,
                   const std::uint64_t* const* carries);
    // While fixing up the current part of `line`, prefetch the inputs' walking steps [a2, b2)
    // (the next superblock's part) at the same offsets from its lowest address; a2 == b2: none.
    void prefetch_next(std::int64_t line, std::int64_t a2, std::int64_t b2);

private:
    const StageCode& code_;
    const Layout& L_;
    int dir_;
    std::int64_t origin_ = 0;
    std::vector<Scratch> buf_;  // written before read (phase 1), so never zeroed
    std::vector<std::byte*> base_, at_, out_at_;
    std::vector<const std::uint64_t*> runs_;  // carries in memory order
    Worker::Ahead ahead_, ahead_at_;  // prefetch_next: at the part's lowest address; per call
    std::vector<int> bytes_;
};

// Lanes of a fix-up Worker whose fix-ups cover at most `positions` positions: `max_lanes`, or
// fewer for short lines (a worker's registers are set up for all of its lanes).
inline int fix_width(std::int64_t positions, int max_lanes = kFixLanes) {
    return static_cast<int>(std::clamp<std::int64_t>((positions + 63) / 64 * 64, 64, max_lanes));
}

// Phase 3 of a piece whose lanes' carries are `carry` entries i.. (`has` unset only for a
// line's first lane).
void fix_piece(LocalScans& local, Worker& fw, std::int64_t line, const Piece& pc, LaneValues& carry,
               int i, std::vector<const std::uint64_t*>& ptrs);

}  // namespace scanc::cpu
