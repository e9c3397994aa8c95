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
//   - Inputs on a CUDA device are read in place. Outputs go where RunOptions::outputs says, or
//     are allocated on that device, stream ordered (cuMemAllocAsync) on RunOptions::stream, and
//     freed on that stream when the last Tensor referring to them goes (keep the stream alive as
//     long as such outputs).
//   - When every input is on the CPU, inputs are copied to device 0, the program runs there, and
//     the outputs are copied back to new CPU tensors before run() returns (unless
//     RunOptions::outputs puts them in device memory).
//   - An Executable's runs are ordered: each waits (on the device, through an event) for the
//     previous one, whatever their streams, since they share the executable's look-back words.
//     No stream needs to outlive the executable.
//   - A run may be captured into a CUDA graph (any capture mode): its launches then use look-back
//     words of their own, which the graph allocates, zeroes and frees around them, so every
//     replay computes from its current inputs. Its inputs must be in device memory. Outputs it
//     allocates are the graph's (CUDA graph memory nodes: free them before the next launch, or
//     instantiate with CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH); RunOptions::outputs
//     writes into memory the caller owns instead. A first run inside a capture compiles and loads
//     its kernels there (they are not stream work). Captured runs are not ordered against the
//     executable's other runs: the graph's launches carry their own order.
//   - Compiled binaries are cached in memory and in $SCANC_CACHE_DIR (default ~/.cache/scanc).
//     SCANC_NVRTC_OPTIONS adds NVRTC options (for measurements; none by default): the source
//     names them on a line of its own, so they are part of its cache key.
//     A program compiles once, at its first run: the kernels that run launches first (it waits
//     for those only), then the program's others on background threads. The first run's kernels
//     are quick builds (NVRTC's --Ofast-compile=mid: half the compile time, kernels several times
//     slower, the same results) while their full builds compile first in the background; runs
//     load the full builds once they are done, and a run captured into a CUDA graph waits for
//     them. SCANC_CUDA_QUICK=0 makes every run wait for full builds; SCANC_CUDA_QUICK=always
//     runs quick builds only (for tests and measurements).
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
    int quick_builds = 0;  // kernels runs launched from a quick build
    int upgrades = 0;      // of those, the kernels later loaded from their full build
};
CudaCacheStats cuda_cache_stats();

// Waits until no kernel compiles in the background. A program compiles at its first run: the
// kernels that run needs first, the program's others after it on background threads (the
// process's exit waits for them, so the disk cache receives whole programs). For benchmarks
// that time a whole compile, and before measuring anything the CPU should have to itself.
void cuda_finish_compiles();

}  // namespace scanc
