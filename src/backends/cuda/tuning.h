// Tuning as data: plain structs chosen at run time by layout class, state size and arch, never
// by sizes. A kernel's tuning is compiled into it and is part of the cache key.
#pragma once

#include <cstdint>
#include <string>

namespace scanc::cuda {

struct Tuning {
    // rows (inner extent 1): tiles of row_threads x row_items elements, look-back window (a
    // multiple of 32) that bounds how far a tile folds predecessor aggregates.
    int row_threads = 256;
    int row_items = 16;
    int row_window = 256;
    // Rows of at most one tile of row_threads x shared_items (0: row_items) run without look-back
    // in the shared rows kernel, several to a tile where they fit in half of it, at
    // shared_min_blocks per SM (0: min_blocks): long rows want long tiles, rows of one tile a
    // full SM of them.
    int shared_items = 0;
    int shared_min_blocks = 0;
    int shared_row_items() const { return shared_items ? shared_items : row_items; }
    // Items of the scalar (not vector) look-back rows kernel (0: row_items): it serves unaligned
    // and strided rows, and its fully unrolled loads, transposes and stores are what NVRTC
    // spends longest on, so it may take shorter tiles than the vector kernel.
    int scalar_items = 0;
    int scalar_row_items() const { return scalar_items ? scalar_items : row_items; }
    int shared_rows_min_blocks() const { return shared_min_blocks ? shared_min_blocks : min_blocks; }
    // Copies of each window end's inclusive prefix, in separate arrays: the tiles of a window
    // poll them in turn, so their polls spread over several places in L2.
    int row_pcopies = 1;
    // Window ends publish F = (the fold of their window's aggregates, their own aggregate) too,
    // so that a window's tiles can make the last window end's prefix from the one before it
    // (the same bits: wait_window_prefix in kernels.cpp) when it is late.
    bool row_skip = false;
    // Look-back tiles prefetch, into L2, the inputs of the tile this many ahead (it starts about
    // one tile life later), so that DRAM stays busy while resident tiles wait on their look-back
    // (0: none). Contiguous inputs only; sm_90's bulk prefetch.
    int row_prefetch = 0;
    // Look-back tiles in chunk-major order (chunk c of every row before chunk c + 1 of any), so
    // that the rows' look-back chains advance side by side, within bands of row_band rows, one
    // band after another (0: one band of every row; 1: row-major).
    int row_band = 0;
    // cols (inner extent > 1): tiles of [col_warps x (32 / lanes) x col_rows steps] x lanes
    // columns, a line being `lanes` columns (8, 16 or 32). A warp reads 32 / lanes runs of steps
    // at once. Narrower lines make taller tiles of the same size, so that fewer of a line's tiles
    // run at once and wait on each other's look-back, at the cost of shorter runs in memory.
    int col_warps = 8;
    int col_rows = 16;
    int col_lanes = 32;
    // Where lines of col_lanes are few against the resident tiles (few_lines in
    // executable.cpp), a second cols kernel takes lines of few_lines_lanes (0: none).
    int few_lines_lanes = 0;
    int col_steps(int lanes) const { return col_warps * (32 / lanes) * col_rows; }
    int col_window = 16;
    int map_threads = 256;
    // __launch_bounds__ minimum blocks per SM of the scan kernels (caps registers).
    int min_blocks = 1;
    // The same for the cols kernel; 0: min_blocks.
    int col_min_blocks = 0;
    int cols_min_blocks() const { return col_min_blocks ? col_min_blocks : min_blocks; }
    // Resident rows kernel (rows of at most 32 x res_items elements, a warp's segment; no
    // look-back): a grid of resident blocks whose warps prefetch their next rows; its own
    // registers budget. Longer rows take the look-back rows kernel.
    int res_threads = 256;
    int res_items = 16;
    int res_min_blocks = 2;
    // Rows of at most 16 x res_items share a warp in lane groups (false: a warp each, as a
    // measurement of what the groups give).
    bool res_groups = true;
    // The longest row the resident kernels take, and the lanes (2^lw) a row of `len` of them
    // gets: the fewest whose res_items hold it, or 5 (a whole warp, scanc_resident_N) without
    // lane groups. The executable launches by these and reachable_kernels prunes by them.
    std::int64_t resident_len() const { return 32 * std::int64_t{res_items}; }
    int resident_lane_bits(std::int64_t len) const {
        int lw = 5;
        while (res_groups && lw > 0 && (std::int64_t{res_items} << (lw - 1)) >= len) --lw;
        return lw;
    }
    // Tile ids from an atomic ticket instead of blockIdx.x (forward progress that does not rely
    // on blocks starting in index order; costs a round trip before a tile's loads).
    bool tickets = false;
    // Measurement only: a look-back that starts at the nearest published prefix, so its
    // association depends on timing (not bit-identical run to run). What determinism costs.
    bool nondeterministic = false;
    // The rows kernels' steps along the scan dim compiled in where the layout class fixes them
    // (codegen.h; false: every step a kernel argument, as a measurement of what that gives).
    bool fixed_steps = true;
    // The vector rows kernels (four elements per access) where the layout class allows them.
    bool vector_rows = false;
    // Measurement only: look-back rows tiles record when each of their phases ends (per-tile
    // global times and SM cycles after the look-back words); SCANC_CUDA_STAMPS=FILE receives
    // the last such launch's records (stamps.h, read by bench/lookback_stamps.py).
    bool stamps = false;

    std::string str() const;  // "rows 256x16 w256, cols 8x16 w16, map 256, ..."
};

// The tuning for a state of `state_words` 32-bit words on compute capability `cc` (90 = sm_90).
// SCANC_CUDA_TUNING overrides fields of the table's choice, for tuning sweeps: comma-separated
// key=value with keys rows=TxI, sitems=I, scitems=I, smb=N, window=W, pcopies=C (1-32), cols=WxR, clanes=L, flanes=L|0 (L: 8, 16, 32), cwin=W, mb=N, cmb=N,
// res=TxI, rmb=N, rgroups=0|1, cmajor=0|1, rband=N, tickets=0|1, nondet=0|1, stamps=0|1, fixsteps=0|1, vec=0|1,
// skip=0|1, prefetch=N (e.g. "rows=128x32,mb=4");
// RuntimeError if it does not parse. `combine_weight` (codegen's combine_weight) at
// kHeavyCombine or more takes shorter look-back rows tiles.
inline constexpr int kTranscendentalWeight = 32, kHeavyCombine = kTranscendentalWeight;
// A heavy combine's look-back tiles hold at most this many state words a thread, and under the
// table's sm_90 rows its look-back rows kernels run at least this many blocks an SM, its cols
// kernel this many over the state's words.
inline constexpr int kHeavyCombineWords = 64, kHeavyCombineMinBlocks = 4;
Tuning choose_tuning(int state_words, int cc, int combine_weight = 1);

// Bytes of dynamic shared memory of a rows transpose: one padded segment of 32 x items words
// per warp and state word, padded by one word per 32 (by four for the vector rows kernels:
// `vec`). Above 48 KB the launch must opt in.
int transpose_smem_bytes(int threads, int items, int state_words, bool vec = false);

}  // namespace scanc::cuda
