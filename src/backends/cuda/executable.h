// A compiled program on one device: its plan, its kernels, and the look-back state its scans
// share (one stream at a time). See include/scanc/backends/cuda.h for the run semantics.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "codegen/codegen.h"
#include "scanc/runtime/backend.h"

namespace scanc::cuda {

class CudaExecutable : public Executable {
public:
    CudaExecutable(ProgramRef program, int device);
    ~CudaExecutable() override;
    std::vector<Tensor> run(std::span<const TensorView> inputs, const RunOptions& options) override;

private:
    struct Kernels {
        // rows_shared: the rows kernel for rows of one shared tile, several to a tile where they fit
        // (ScanParams::per_tile)
        CUfunction rows = nullptr, rows_shared = nullptr, resident = nullptr, cols = nullptr, map = nullptr;
        // the resident kernel for rows in groups of lanes; this and any kernel the stage's shape
        // cannot reach (reachable_kernels, codegen.h) are null where the program has none
        CUfunction resident_groups = nullptr;
        // the vector rows kernels (rows of whole, aligned vectors of four; null where the
        // module's layout class has none)
        CUfunction rows_vec = nullptr, rows_shared_vec = nullptr;
        Tuning tuning;
        // dynamic shared memory (the transposes)
        unsigned rows_smem = 0, rows_shared_smem = 0, rows_vec_smem = 0, rows_shared_vec_smem = 0, resident_smem = 0;
        int resident_per_sm = 0, resident_groups_per_sm = 0;  // blocks of the resident kernels per SM
    };
    // One compiled layout class of the program (codegen.h): its kernels per stage.
    struct Module {
        Layout layout;
        std::vector<Kernels> kernels;
    };
    class Run;  // one run's allocations and launches (executable.cpp)

    // A module that runs `wanted` (per stage: the class a rows launch needs, or none when any
    // will do), compiling one on a miss with the contiguous class where nothing is wanted.
    const Module& module_for(const std::vector<std::optional<StageLayout>>& wanted);
    Module load(const Layout& layout);

    // The status words and tile counter for `bytes` of look-back state; bumps the epoch.
    void prepare_lookback(std::size_t bytes, std::uint32_t tiles, CUstream stream,
                          std::uint64_t& status, std::uint64_t& counter, std::uint32_t& epoch,
                          std::uint32_t& tile_base);

    ProgramRef program_;
    Plan plan_;
    int device_;
    int sm_count_ = 0, cc_ = 0;
    std::vector<Module> modules_;  // the contiguous class first, then others as runs need them
    std::mutex mu_;
    CUdeviceptr lookback_ = 0;      // [counter (256 bytes)][status words]
    std::size_t lookback_bytes_ = 0;
    std::uint32_t epoch_ = 0, tickets_ = 0;
    CUstream last_stream_ = nullptr;
    bool ran_ = false;
};

}  // namespace scanc::cuda
