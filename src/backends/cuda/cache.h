// Compiled kernels, cached in memory (per device) and on disk, so a program compiles once per
// machine. The key hashes the generated source (which encodes the program's structure, dtypes,
// layouts and tuning, never sizes), the target arch and the scanc version. The disk cache lives
// in $SCANC_CACHE_DIR, else $XDG_CACHE_HOME/scanc, else ~/.cache/scanc; each entry is
// <key>.cubins (the binaries of the program's kernel entries) with the source beside it as
// <key>.cu, for reading what runs.
#pragma once

#include <cuda.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "nvrtc.h"

namespace scanc::cuda {

struct CacheStats {
    int compiles = 0;     // programs compiled by NVRTC (each once, however many kernels)
    int disk_hits = 0;    // programs whose binaries were read from the disk cache
    int memory_hits = 0;  // programs found in this process already
    // The latest compile to finish all its kernels: its wall time from the first kernel's start
    // to the last one's end, and its slowest kernel's name, wall and CPU time.
    double last_seconds = 0, slowest_seconds = 0, slowest_cpu_seconds = 0;
    std::string slowest_kernel;
    int quick_builds = 0;  // kernels a launch ran from a quick build (below)
    int upgrades = 0;      // of those, the kernels later loaded from their full build
};

// Quick builds (SCANC_CUDA_QUICK): a launch that needs a kernel whose full build is not done
// compiles a quick build of it (kNvrtcQuickOption: about half the compile time, a kernel several
// times slower, the same results), runs that, and lets the full build compile in the background
// first; later launches load the full build once it is done. Launches captured into a CUDA graph
// always wait for the full build (a graph keeps the kernels it captured).
enum class QuickBuilds {
    first,   // "1" or unset: as above
    off,     // "0": a launch waits for the full build
    always,  // "always": quick builds only, never the full one (tests and measurements)
};
QuickBuilds quick_builds();

struct Compilation;  // one program's binaries, shared by the devices (cache.cpp)

// A generated program's kernels on one device. Nothing compiles until a launch asks for
// kernels: those compile first (in parallel, one NVRTC program each; quick builds, above, where
// allowed), then the program's others in the background, so a first launch waits for its own
// kernels only. It is still one compilation per program: each kernel's full build compiles once,
// and the disk cache receives them all together when the last is done (quick builds never).
class ProgramKernels {
public:
    explicit ProgramKernels(std::shared_ptr<Compilation> compilation);
    struct Loaded {
        CUfunction fn = nullptr;  // null for a name the program lacks (reachable_kernels left it out)
        bool quick = false;       // from a quick build: load it again once full_ready
    };
    // The kernels `names` loaded on the device (its context current), compiled first where they
    // are not yet: quick builds where quick_builds() allows and `may_quick` (the launch is not
    // captured into a graph), else full ones. RuntimeError with the NVRTC log or the driver's
    // error.
    std::vector<Loaded> load(const std::vector<std::string>& names, bool may_quick);
    // Whether the program has kernel `name` (compiles nothing).
    bool has(const std::string& name) const;
    // Whether a kernel loaded quick should be loaded again: its full build is done, and
    // quick_builds() is not `always`.
    bool full_ready(const std::string& name) const;

private:
    int entry(const std::string& name) const;  // -1 when the program lacks it

    std::shared_ptr<Compilation> compilation_;
    std::mutex mu_;
    std::vector<CUmodule> modules_, quick_modules_;  // per kernel entry; null until loaded
};

// The kernels of generated `source` on `device`, compiled for `arch` ("sm_90") as launches ask
// for them, or read from the disk cache. The reference stays valid for the process's life.
ProgramKernels& program_kernels(const std::string& source, const std::string& arch, int device);

// Waits until no kernel compiles in the background (a benchmark timing a whole compile; the
// process's exit waits too, so that the disk cache receives every program it compiled).
void finish_compiles();

// The disk format of a program's binaries (<key>.cubins): for each kernel entry, its size (8
// bytes, this machine's order) and then its bytes. unpack_binaries returns none unless the file
// holds exactly `entries` whole binaries (a missing or torn file: the program recompiles).
std::string pack_binaries(const std::vector<NvrtcOutput>& outs);
std::vector<std::string> unpack_binaries(const std::string& packed, int entries);

CacheStats cache_stats();
// The disk cache folder in use (it may not exist yet).
std::string cache_dir();

}  // namespace scanc::cuda
