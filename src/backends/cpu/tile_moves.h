// Moving tiles between memory and lane-contiguous scratch ([step][lane], `width` lanes per
// row): row copies when the lanes are contiguous in memory, 8x8 SIMD transposes when they are
// rows of memory (lanes an arithmetic sequence of offsets, steps contiguous), element by
// element otherwise. Used by Worker (worker.h) for its input, output and local tiles.
#pragma once

#include <climits>
#include <cstdint>
#include <cstring>

#include "bytecode.h"

namespace scanc::cpu {

// memcpy of a run of r lanes of E bytes, the common sizes known to the compiler (inline moves
// instead of a call).
template <int E>
inline void copy_run(std::byte* dst, const std::byte* src, int r) {
    if (r == 1) return void(std::memcpy(dst, src, E));
    switch (r * E) {
        case 8: std::memcpy(dst, src, 8); return;
        case 16: std::memcpy(dst, src, 16); return;
        case 32: std::memcpy(dst, src, 32); return;
        case 64: std::memcpy(dst, src, 64); return;
        default: std::memcpy(dst, src, static_cast<std::size_t>(r) * E);
    }
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
    // Runs of lanes next to each other in memory (a split's sub-ranges of several neighbouring
    // lines, run_stage.cpp) move a run at a time.
    for (int l = 0; l < n;) {
        int r = 1;
        while (l + r < n && off[l + r] == off[l] + r) ++r;
        std::byte* mem = base + (off[l] + t0 * step) * E;
        std::byte* row = tile + static_cast<std::ptrdiff_t>(l) * E;
        for (int j = 0; j < len; ++j) {
            if constexpr (Gather) copy_run<E>(row + j * width * E, mem + j * step * E, r);
            else copy_run<E>(mem + j * step * E, row + j * width * E, r);
        }
        l += r;
    }
}

inline constexpr std::int64_t kIrregular = INT64_MIN;  // lane offsets not an arithmetic sequence

template <bool Gather>
inline void move_tile(int esize, int width, std::byte* tile, std::byte* base, const std::int64_t* off,
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

}  // namespace scanc::cpu
