// The CPU backend: the embedded default. Compiles a program once into fused stages (each scan
// with its elementwise prologue and epilogue, evaluated block by block so no intermediate tensor
// reaches memory) and runs them on its own thread pool (std::thread; no OpenMP, so it coexists
// with PyTorch or NumPy in one process).
//
// Semantics are the reference executor's (include/scanc/ir/scalar_eval.h). Results are
// bit-identical run to run for a given thread count: work is partitioned by sizes and thread
// count only, never by timing. Floats may be reassociated when one scan line is split across
// lanes or threads; RunOptions::ordered forbids that (each line combined strictly in order, so
// floats match the reference bitwise) at the cost of parallelism within a line.
//
// An executable keeps what its last run set up (bindings, layouts, each thread's registers,
// tiles and buffers) and reuses it when the next run's inputs have the same dtypes, sizes and
// strides, thread count and `ordered`: a small scan run repeatedly pays no setup per call.
// Runs of one executable from several threads at once stay safe (one of them sets up afresh).
//
// On x86-64 a run reads and clears the SSE exception status flags (MXCSR) of the threads that
// do its work, the calling thread among them: a block whose ops met subnormal floats makes the
// next block's f32 products go through f64 (the same bits, no microcode assists). Read any
// flags of your own before a run.
#pragma once

#include "scanc/runtime/backend.h"

namespace scanc {

class CpuBackend : public Backend {
public:
    std::string name() const override { return "cpu"; }
    std::unique_ptr<Executable> compile(const ProgramRef& program) override;
};

// The process-wide default thread count of the CPU backend, used when RunOptions::num_threads
// is 0. `n` <= 0 restores the default: SCANC_NUM_THREADS if set, else every core.
void set_cpu_num_threads(int n);
// The thread count a run with RunOptions::num_threads == 0 uses now.
int cpu_num_threads();

}  // namespace scanc
