// One pass with a decoupled carry (run_chain.cpp) for split lines, instead of superblocks whose
// read-only and write-only phases alternate in lockstep behind a barrier.
//
// Each line is cut into blocks, dealt round-robin to the threads in line order (a generic line
// that fits in one block is cut into about one block per thread, so mid-size lines use them all). A thread first
// does the part of its block that needs no carry, which reads the block from memory into L2:
//   - a one-op stage (StageCode::serial_block, read and written contiguously): reduce the
//     block to its total; blocks of kChainBlockBytes of input;
//   - a generic stage fixed up (fixup.h): scan its lanes locally into L2 buffers and take
//     their totals; blocks of portion_steps();
//   - rows through the row scan (SegLocal::scan_span) or with a prologue or epilogue
//     (FusedRows): the block's total by the same kernels storing nothing.
// It then waits for the inclusive prefix of the block before it (published by the previous
// thread), publishes its own, prefix(b) = prefix(b - 1) (+) the block's lane totals folded in
// lane order, and only then writes the block from L2 with streaming stores, starting from
// prefix(b - 1) (the one-op scan, or the fix-up carry ∘ local). The chain is one fixed sequence
// of folds in block order and block boundaries depend only on sizes and the thread count, so
// results are bit-identical run to run whatever the timing. The first `threads` blocks of the
// run grow from 1/threads of a block to a whole one, so the threads start out of phase: while
// one reads (its first part), another writes (its second), and both directions of the memory
// system stay busy.
//
// Waits spin with pause, then yield; a thread that fails marks the run failed, and the others
// stop waiting and return (the pool rethrows the failure).
#pragma once

#include "stage_cache.h"

namespace scanc::cpu {

// Bytes of input per block of a one-op stage: it must stay in L2 between its reduce and its
// scan. 128, 256 and 512 KiB were within the noise of each other (sum 1-D 2^26, 2 threads).
inline constexpr std::int64_t kChainBlockBytes = 256 << 10;

// Whether run_chain can run `code` over `L`: a one-op stage read and written contiguously,
// fewer than kFewLines lines of a stage that can be fixed up, or rows with a prologue or
// epilogue that FusedRows runs (t0: thread 0's state, which keeps it); unordered runs only.
bool chain_eligible(const StageCode& code, const Layout& L, ThreadState& t0);

// Every line of `L`, by `threads` threads, as above; ts[p]: thread p's kept state.
void run_chain(const StageCode& code, const Layout& L, int threads, std::vector<ThreadState>& ts);

}  // namespace scanc::cpu
