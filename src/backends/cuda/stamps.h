// Measurement only: the per-tile phase records of a look-back rows launch compiled with tuning
// stamps=1 (TileStamps in codegen/kernels.cpp), written to the file SCANC_CUDA_STAMPS names.
// File: 8 little-endian u64 header words {magic "SCSTAMP1", tiles, chunks, outer, len,
// window, tile elements, state words}, then 8 words per tile in launch order:
//   [0] global ns at dispatch, [1] at its P publish (0: none), [2] at its end,
//   [3] SM id | cycles to LOADED << 32, [4] BARRIER1 | WINDOW << 32,
//   [5] PREFIX | PUBLISHED << 32, [6] BARRIER2 | STORED << 32,
//   [7] chunk | (chunk - window start) << 32 | A rounds << 48 | P rounds << 56
// (cycles from dispatch on the tile's SM; 0 where a phase did not run; rounds: how many rounds
// of polls the window's aggregates A (the most of any lane) and the previous window's prefix P
// took after the first loads, at most 255).
#pragma once

#include <cuda.h>

#include <cstdint>

namespace scanc::cuda {

struct StampsHeader {
    std::int64_t tiles, chunks, outer, len, window, tile_elements, state_words;
};

// Waits for `stream`, then writes the records at `records` to SCANC_CUDA_STAMPS (if set);
// a file that cannot be written is a RuntimeError.
void dump_tile_stamps(CUdeviceptr records, const StampsHeader& header, CUstream stream);

}  // namespace scanc::cuda
