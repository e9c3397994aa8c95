// Compiled kernels, cached in memory (per device) and on disk, so a program compiles once per
// machine. The key hashes the generated source (which encodes the program's structure, dtypes,
// layouts and tuning, never sizes), the target arch and the scanc version. The disk cache lives
// in $SCANC_CACHE_DIR, else $XDG_CACHE_HOME/scanc, else ~/.cache/scanc; each entry is
// <key>.cubins (the binaries of the program's kernel entries) with the source beside it as
// <key>.cu, for reading what runs.
#pragma once

#include <cuda.h>

#include <string>
#include <vector>

#include "nvrtc.h"

namespace scanc::cuda {

struct CacheStats {
    int compiles = 0;     // NVRTC compilations
    int disk_hits = 0;    // binaries read from the disk cache
    int memory_hits = 0;  // modules found loaded
    // The latest compile: its wall time, and its slowest kernel entry's name, wall and CPU time
    // (a first compile takes about that kernel's time; more means the compiles contended).
    double last_seconds = 0, slowest_seconds = 0, slowest_cpu_seconds = 0;
    std::string slowest_kernel;
};

// A generated program's kernels: one module per kernel entry, compiled in parallel
// (nvrtc_compile_entries).
struct Modules {
    std::vector<CUmodule> parts;
    std::vector<std::string> names;  // the kernel in each part
    // The kernel `name`; RuntimeError when no part has it.
    CUfunction function(const std::string& name) const;
    // The kernel `name`, or null when the program has none (reachable_kernels left it out).
    CUfunction find(const std::string& name) const;
};

// The modules of generated `source` on `device` (its primary context must be current),
// compiling it for `arch` ("sm_90") on a miss. RuntimeError with the NVRTC log or the driver's
// error. The reference stays valid for the process's life.
const Modules& load_modules(const std::string& source, const std::string& arch, int device);

// The disk format of a program's binaries (<key>.cubins): for each kernel entry, its size (8
// bytes, this machine's order) and then its bytes. unpack_binaries returns none unless the file
// holds exactly `entries` whole binaries (a missing or torn file: the program recompiles).
std::string pack_binaries(const std::vector<NvrtcOutput>& outs);
std::vector<std::string> unpack_binaries(const std::string& packed, int entries);

CacheStats cache_stats();
// The disk cache folder in use (it may not exist yet).
std::string cache_dir();

}  // namespace scanc::cuda
