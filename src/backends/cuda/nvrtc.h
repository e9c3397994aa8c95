// NVRTC, loaded at run time. Finds libnvrtc through SCANC_NVRTC_PATH (a file or a folder), the
// system's library path, /usr/local/cuda, and the pip package nvidia-cuda-nvrtc
// (site-packages/nvidia/cu13/lib), so kernels can be compiled on machines without a GPU.
#pragma once

#include <string>
#include <vector>

namespace scanc::cuda {

// A source may name options of its own on a line starting with this, among its leading
// comments (before its first preprocessor line); nvrtc_compile adds them.
inline constexpr const char* kNvrtcOptionsLine = "// nvrtc options: ";

// The options every compile takes, besides the arch and a source's own. --fmad=false: no
// multiply and add is contracted into an FMA, so each op rounds once as in scalar_eval.h, and
// prologues and epilogues give the reference executor's bits (docs/semantics.md). Part of the
// kernel-cache key.
inline constexpr const char* kNvrtcFixedOptions[] = {"--std=c++17", "-default-device", "--fmad=false"};

// What a quick build adds (cache.h): NVRTC and ptxas optimise less, so a kernel compiles in
// about half the time and runs several times slower. Optimisation levels do not change results:
// every op's rounding is fixed in the PTX (--fmad=false above, no fast-math), which ptxas keeps.
inline constexpr const char* kNvrtcQuickOption = "--Ofast-compile=mid";

struct NvrtcOutput {
    std::vector<char> binary;  // CUBIN for a real arch (sm_90), PTX text for a virtual one
    bool is_ptx = false;
    std::string log;
    double seconds = 0, cpu_seconds = 0;  // wall and thread CPU time of the compile
};

// Compiles CUDA C++ `source` for `arch` ("sm_90" -> CUBIN, "compute_90" -> PTX): all of it, or
// only kernel entry `entry` of a generated source (-DSCANC_ONLY_ENTRY, codegen.h).
// `quick`: a quick build (kNvrtcQuickOption). RuntimeError with the compile log when NVRTC is
// missing or compilation fails.
NvrtcOutput nvrtc_compile(const std::string& source, const std::string& arch,
                          const std::string& name = "scanc.cu", int entry = -1, bool quick = false);
// Kernel entries `entries` of a generated source, each compiled alone, on as many threads as
// the machine has (the calling thread one of them), in the order given: the kernels take about
// the slowest one's time, not the sum (H200 machine, the sum program: 1.2 s as one program with
// --split-compile).
std::vector<NvrtcOutput> nvrtc_compile_entries(const std::string& source, const std::string& arch,
                                               const std::string& name, const std::vector<int>& entries,
                                               bool quick = false);

// True when libnvrtc can be loaded; `why` gets the places searched otherwise.
bool nvrtc_available(std::string* why = nullptr);
// "13.0", or "" when NVRTC is unavailable. Part of the kernel-cache key.
std::string nvrtc_version();
// The compute capabilities this NVRTC compiles for (75, 80, ..., 120), or none where NVRTC is
// unavailable or too old to say.
std::vector<int> nvrtc_supported_archs();

}  // namespace scanc::cuda
