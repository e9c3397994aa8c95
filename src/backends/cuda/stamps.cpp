#include "stamps.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

#include "driver.h"
#include "scanc/error.h"

namespace scanc::cuda {

void dump_tile_stamps(CUdeviceptr records, const StampsHeader& h, CUstream stream) {
    const char* path = std::getenv("SCANC_CUDA_STAMPS");
    if (!path || !*path) return;
    std::vector<std::uint64_t> words(8 + static_cast<std::size_t>(h.tiles) * 8);
    std::memcpy(words.data(), "SCSTAMP1", 8);
    const std::int64_t head[] = {h.tiles, h.chunks, h.outer, h.len, h.window, h.tile_elements, h.state_words};
    for (int j = 0; j < 7; ++j) words[1 + j] = static_cast<std::uint64_t>(head[j]);
    SCANC_CU(cuMemcpyDtoHAsync, words.data() + 8, records, (words.size() - 8) * 8, stream);
    SCANC_CU(cuStreamSynchronize, stream);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(words.data()), static_cast<std::streamsize>(words.size() * 8));
    if (!out) throw RuntimeError(cat("SCANC_CUDA_STAMPS: cannot write `", path, "`"));
}

}  // namespace scanc::cuda
