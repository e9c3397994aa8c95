// The CUDA backend: kernels generated from the program (combine inlined, elementwise prologue and
// epilogue fused), compiled by NVRTC, launched through the driver API. libcuda and libnvrtc are
// loaded at run time, so one build runs with or without a GPU (compile() then throws
// RuntimeError saying why; cuda_available() tells beforehand).
//
// Semantics and guarantees:
//   - Sizes and strides are kernel arguments: a program compiles once (per device arch) and runs
//     on every size its symbolic shapes admit, any strides, 64-bit indexing.
//   - Deterministic: the same inputs give bit-identical outputs run to run. The cross-tile
//     look-back always folds the same aggregates in the same association (a fixed window), at
//     the cost of waiting for a window's predecessors (docs/benchmarks.md states the cost).
//   - Inputs on a CUDA device are read in place; outputs are allocated on that device, stream
//     ordered (cuMemAllocAsync) on RunOptions::stream, and freed on that stream when the last
//     Tensor referring to them goes (keep the stream alive as long as the outputs).
//   - When every input is on the CPU, inputs are copied to device 0, the program runs there, and
//     the outputs are copied back to new CPU tensors before run() returns.
//   - An Executable runs launches in order on one stream at a time: a run on a different stream
//     first waits for the previous one (the look-back state is per Executable). So the stream an
//     Executable last ran on must outlive it, or its next run on another stream (the executable
//     waits on that stream, and frees its look-back words there when it goes).
//   - A run on a stream that is capturing a CUDA graph throws RuntimeError: a replay would repeat
//     the run's look-back epoch and take the previous replay's look-back words for its own.
//   - Compiled binaries are cached in memory and in $SCANC_CACHE_DIR (default ~/.cache/scanc).
//     A program compiles once, at its first run: the kernels that run launches first (it waits
//     for those only), then the program's others on background threads.
#pragma once

#include <string>
#include <string_view>

#include "scanc/runtime/backend.h"

namespace scanc {

class CudaBackend : public Backend {
public:
    std::string name() const override { return "cuda"; }
    // Plans and generates the program's kernels for the arch of device 0, or finds them in the
    // cache; they compile (NVRTC) at the first run, the ones it launches first, the others in
    // the background (cuda_finish_compiles). RuntimeError when there is no GPU or no NVRTC.
    std::unique_ptr<Executable> compile(const ProgramRef& program) override;
};

// True when a CUDA driver and a device are present (the facade's backend table calls this).
bool cuda_available();
// Why cuda_available() is false ("" when it is true).
std::string cuda_unavailable_reason();

// What `scanc emit --target cuda` writes: the generated CUDA C++ source (`ptx` false), or the
// PTX NVRTC makes of it for `arch` (`ptx` true; needs libnvrtc, not a GPU). `arch` is "sm_90"
// style. It is the source of contiguous inputs: the rows kernels' steps along the scan dim are
// compiled in (STEP_IN/STEP_OUT); inputs with other strides along it run a second class of the
// same program whose steps are kernel arguments. Compiling the source for a real arch needs no GPU either: see cuda_compile_check.
std::string emit_cuda(const ProgramRef& program, std::string_view arch = "sm_90", bool ptx = false);

// Compiles the program's generated source with NVRTC for `arch` and returns the size of the
// binary; RuntimeError with the compile log on failure. For CI on machines without a GPU.
std::size_t cuda_compile_check(const ProgramRef& program, std::string_view arch = "sm_90");

// True when libnvrtc can be loaded.
bool cuda_nvrtc_available();
// Why cuda_nvrtc_available() is false ("" when it is true).
std::string cuda_nvrtc_unavailable_reason();

// Counters of the kernel cache, for tests and benchmarks.
struct CudaCacheStats {
    int compiles = 0;     // programs compiled (each once, however many kernels and shapes)
    int disk_hits = 0;    // programs read from the disk cache
    int memory_hits = 0;  // programs found in this process
    // The latest compile to finish all its kernels: its wall time from the first kernel's start
    // to the last one's end, and its slowest kernel's name, wall and CPU time.
    double last_compile_seconds = 0, slowest_kernel_seconds = 0, slowest_kernel_cpu_seconds = 0;
    std::string slowest_kernel;
};
CudaCacheStats cuda_cache_stats();

// Waits until no kernel compiles in the background. A program compiles at its first run: the
// kernels that run needs first, the program's others after it on background threads (the
// process's exit waits for them, so the disk cache receives whole programs). For benchmarks
// that time a whole compile, and before measuring anything the CPU should have to itself.
void cuda_finish_compiles();

}  // namespace scanc
