// The iteration layout of a Fused stage as one thread walks it: lines along the scan dim d,
// each tensor's Slot (its strides per iteration dim, the walking step), the tuning constants
// of lanes, tiles and splits, and the carries passed between lanes (see the comment at the top
// of run_stage.cpp for how lines map to lanes and threads). Worker (worker.h) runs over it.
#pragma once

#include <cstdint>
#include <vector>

#include "bytecode.h"
#include "scanc/runtime/tensor.h"

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

namespace scanc::cpu {

// Lanes per bytecode dispatch: wide enough that an instruction's call and loop setup amortize
// over many elements. A stage's tiles hold about kTileBytes together (in L2), so each lane's
// part of a tile is a few cache lines: one memory stream per lane. 64 strided lanes measured
// 1.5-3x faster than 256 on the 2-core box although they cost ~25-80% more instructions: the
// memory streams, not the dispatch, were the limit. 256 KiB of tiles (half this box's L2; 1 KiB
// per lane and input for a 64-lane affine) beat 128 KiB in every one of 7 back-to-back pairs
// (last dim, 1-D and dim 0 affine, round 4): longer runs per stream. Round 7: generic stages
// with large outputs use kWideLanes (128) in chained fix-ups (run_chain.cpp), 256 was slower;
// strided groups went back to 64 in round 11 (run_stage.cpp).
inline constexpr int kTileBytes = 256 << 10;
inline constexpr int kSubLanes = kGroupLanes;  // lanes of strided groups (64)
inline constexpr int kFewLines = 32;     // fewer lines than this: split lines
inline constexpr int kMinShareLanes = 16;  // narrowest strided group that spares a split
inline constexpr int kMaxShareLanes = 80;  // widest even share of strided lanes (64 + 1/4)
inline constexpr int kGroupCost = 32;      // a group's per-step dispatch, in lanes (balanced_width)
inline constexpr int kSerialLanes = 4;   // groups this narrow run serial stages serially
inline constexpr int kFixLanes = kChunkLanes;  // positions per combine in a fix-up (512)
inline constexpr std::int64_t kPortionBytes = 768 << 10;  // per thread per superblock: L2
inline constexpr std::int64_t kMinSplitSteps = 2048;      // shorter lines are never split...
inline constexpr std::int64_t kMinShortSplitSteps = 64;   // ...but few lines of generic stages
// Elements per thread, at least (fewer threads below). Measured, 2 threads against 1 (best of
// 5, `cpu_bench --one`): sum 65536 32 against 18 us, 262144 58 against 65; affine 1-D 16384
// 42-48 against 39-51, 32768 72-75 against 83-91 us.
inline constexpr std::int64_t kMinWorkPerThread = 131072;        // a one-op stage
inline constexpr std::int64_t kMinGenericWorkPerThread = 16384;  // ~5x the instructions each
// Outputs at least this large (all of a stage's together) are written with streaming stores
// where they are written row by row in place: they would not stay in cache anyway, and the
// write-allocate read of each line would add half again to the traffic.
inline constexpr std::int64_t kStreamBytes = 16 << 20;

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

    // Lines in one run of the dims after d (consecutive lines, side by side in memory where the
    // tensors are contiguous).
    std::int64_t run_lines() const {
        std::int64_t run = 1;
        for (std::size_t k = d + 1; k < sizes.size(); ++k) run *= sizes[k];
        return run;
    }
    std::int64_t line_offset(const Slot& s, std::int64_t line) const {
        std::int64_t off = s.walk0;
        for (std::size_t k = line_dims.size(); k-- > 0;) {
            std::int64_t n = sizes[line_dims[k]];
            off += (line % n) * s.strides[line_dims[k]];
            line /= n;
        }
        return off;
    }
    // line_offset of `count` consecutive lines from `line` on, plus start[i] steps, into out:
    // the divisions once, then an odometer over the line dims (a group of many one-step lines
    // spent 80% of its time in the divisions: Mamba with L = 1;
    // docs/history/cpu-sessions-25-35.md, thirty-fourth session).
    void line_offsets(const Slot& s, std::int64_t line, int count, const std::int64_t* start,
                      std::int64_t* out) const {
        constexpr std::size_t kDigits = 8;
        const std::size_t dims = line_dims.size();
        if (dims > kDigits || count == 1) {
            for (int i = 0; i < count; ++i) out[i] = line_offset(s, line + i) + start[i] * s.step;
            return;
        }
        // The decomposition is line_offset's, written out: sharing it through a digit pointer
        // cost Mamba with L = 1 15% (thirty-fourth session's review).
        std::int64_t digit[kDigits];
        std::int64_t off = s.walk0;
        for (std::size_t k = dims; k-- > 0;) {
            std::int64_t n = sizes[line_dims[k]];
            digit[k] = line % n;
            off += digit[k] * s.strides[line_dims[k]];
            line /= n;
        }
        for (int i = 0; i < count; ++i) {
            out[i] = off + start[i] * s.step;
            for (std::size_t k = dims; k-- > 0;) {  // the next line: the innermost digit up, carries out
                off += s.strides[line_dims[k]];
                if (++digit[k] < sizes[line_dims[k]]) break;
                off -= sizes[line_dims[k]] * s.strides[line_dims[k]];
                digit[k] = 0;
            }
        }
    }
};

inline Slot make_slot(const TensorView& v, const Layout& L, bool reverse) {
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

// The SSE status flags of a denormal operand (DE) and of underflow (UE): whether the ops since
// the flags were cleared met subnormals, which take microcode assists in f32 multiplies on some
// cores; the next tile then multiplies through f64 (Frame::f64_products) where that is faster
// (f64_products_pay). Elsewhere than x86-64, never.
inline void clear_fp_flags() {
#if defined(__x86_64__)
    _mm_setcsr(_mm_getcsr() & ~0x3fu);
#endif
}
inline bool fp_flags_met_subnormals() {
#if defined(__x86_64__)
    return (_mm_getcsr() & 0x12u) != 0;
#else
    return false;
#endif
}

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace scanc::cpu
