// Compiled kernels, cached in memory (per device) and on disk, so a program compiles once per
// machine. The key hashes the generated source (which encodes the program's structure, dtypes,
// layouts and tuning, never sizes), the target arch and the scanc version. The disk cache lives
// in $SCANC_CACHE_DIR, else $XDG_CACHE_HOME/scanc, else ~/.cache/scanc; each entry is
// <key>.cubin with the source beside it as <key>.cu, for reading what runs.
#pragma once

#include <cuda.h>

#include <string>

namespace scanc::cuda {

struct CacheStats {
    int compiles = 0;     // NVRTC compilations
    int disk_hits = 0;    // binaries read from the disk cache
    int memory_hits = 0;  // modules found loaded
};

// The module for `source` on `device` (its primary context must be current), compiling it for
// `arch` ("sm_90") on a miss. RuntimeError with the NVRTC log or the driver's error.
CUmodule load_module(const std::string& source, const std::string& arch, int device);

CacheStats cache_stats();
// The disk cache folder in use (it may not exist yet).
std::string cache_dir();

}  // namespace scanc::cuda
