// The fix-up scheme for generic stages (see worker.h): eligibility, the local scan buffers and
// phase 3 of a piece.
#include "fixup.h"

namespace scanc::cpu {

int fixup_dir(const StageCode& code, const Layout& L) {
    // An epilogue computes from the carry and may load inputs at each step (not positions of
    // a fix-up); one-op stages have their own blocked paths.
    if (code.serial || !code.epilogue.empty() || L.out.empty() || !L.reassociate) return 0;
    std::int64_t dir = L.out[0].step;
    for (auto& s : L.out)
        if (s.step != dir) return 0;
    return dir == 1 || dir == -1 ? static_cast<int>(dir) : 0;
}

std::int64_t portion_steps(const StageCode& code, const Layout& L, bool split_b, int lanes,
                           std::int64_t budget) {
    std::int64_t bytes_per_step = 0;
    for (auto& s : L.in) bytes_per_step += s.tiled && s.step ? s.esize : 0;
    for (auto& s : L.out) bytes_per_step += s.esize;
    bytes_per_step = std::max<std::int64_t>(bytes_per_step, 1);
    std::int64_t job_lanes = split_b ? 1 : L.width;
    std::int64_t portion = std::max<std::int64_t>(4 * Worker::tile_steps(L, L.width),
                                                  budget / (bytes_per_step * job_lanes));
    if (split_b) portion = portion * lanes / kSubLanes;
    // Split-B of many lanes: a whole number of split_range's lanes (odd multiples of 16 steps),
    // so a thread's part of a full superblock is one piece, not one plus a piece of short lanes
    // (whose per-lane costs, chaining and fix-up runs, were half of all per-lane work).
    const std::int64_t kLaneGrain = 16 * lanes;
    if (split_b && !code.serial) portion = ((portion / kLaneGrain - 1) | 1) * kLaneGrain;
    return portion;
}

LocalScans::LocalScans(const StageCode& code, const Layout& L, int dir)
    : code_(code), L_(L), dir_(dir), buf_(code.carry.size()), base_(code.carry.size()),
      at_(code.carry.size()), out_at_(L.out.size()) {
    for (DType t : code.leaf_compute) bytes_.push_back(static_cast<int>(dtype_size(t)));
}

void LocalScans::cover(std::int64_t a, std::int64_t b) {
    origin_ = dir_ > 0 ? -a : b - 1;
    for (std::size_t k = 0; k < buf_.size(); ++k) {
        std::size_t need = static_cast<std::size_t>(b - a) * bytes_[k];
        if (buf_[k].size() < need) buf_[k].resize(need);
        base_[k] = buf_[k].data();
    }
}

void LocalScans::fix_lanes(Worker& fw, std::int64_t line, std::int64_t s0, std::int64_t n,
                           int lanes, const std::uint64_t* const* carries) {
    std::int64_t low = dir_ > 0 ? s0 : s0 + n * lanes - 1;  // walking step at the lowest address
    for (std::size_t k = 0; k < buf_.size(); ++k)
        at_[k] = base_[k] + (origin_ + dir_ * low) * bytes_[k];
    for (std::size_t o = 0; o < L_.out.size(); ++o) {
        const Slot& s = L_.out[o];
        out_at_[o] = s.base + (L_.line_offset(s, line) + low * s.step) * s.esize;
    }
    ahead_at_ = ahead_;
    for (auto& [p, bytes] : ahead_at_) p += (origin_ + dir_ * low) * bytes;
    if (carries) {
        runs_.resize(lanes);
        for (int l = 0; l < lanes; ++l) runs_[dir_ > 0 ? l : lanes - 1 - l] = carries[l];
    }
    fw.fixup(carries ? runs_.data() : nullptr, n, at_.data(), out_at_.data(), n * lanes, ahead_at_);
}

void LocalScans::prefetch_next(std::int64_t line, std::int64_t a2, std::int64_t b2) {
    ahead_.clear();
    if (a2 >= b2) return;
    // Position 0 of a part's buffers is its lowest address (cover): the next part's lowest
    // address of each input read along the line, its first walking step going forward.
    for (const Slot& s : L_.in)
        if (s.tiled && (s.step == 1 || s.step == -1))
            ahead_.emplace_back(
                s.base + (L_.line_offset(s, line) + (s.step > 0 ? a2 : b2 - 1) * s.step) * s.esize,
                s.esize);
}

// Phase 3 of a piece whose lanes' carries are `carry` entries `i`.. (`has` unset only for a
// line's first lane, which is then fixed up alone).
void fix_piece(LocalScans& local, Worker& fw, std::int64_t line, const Piece& pc, LaneValues& carry,
               int i, std::vector<const std::uint64_t*>& ptrs) {
    int l = 0;
    if (!carry.has[i]) local.fix_lanes(fw, line, pc.start, pc.steps, 1, nullptr), l = 1;
    ptrs.clear();
    for (int j = l; j < pc.lanes; ++j) ptrs.push_back(carry.at(i + j));
    if (l < pc.lanes)
        local.fix_lanes(fw, line, pc.start + l * pc.steps, pc.steps, pc.lanes - l, ptrs.data());
}

}  // namespace scanc::cpu
