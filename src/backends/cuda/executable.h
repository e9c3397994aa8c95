// A compiled program on one device: its plan, its kernels, and the look-back state its scans
// share (one stream at a time). See include/scanc/backends/cuda.h for the run semantics.
#pragma once

#include <cuda.h>

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "cache.h"
#include "codegen/codegen.h"
#include "scanc/runtime/backend.h"

namespace scanc::cuda {

class CudaExecutable : public Executable {
public:
    CudaExecutable(ProgramRef program, int device);
    ~CudaExecutable() override;
    std::vector<Tensor> run(std::span<const TensorView> inputs, const RunOptions& options) override;

private:
    // A stage's kernels, by what they serve; the launch chooses one by the stage's shape.
    enum Kernel { kRows, kRowsShared, kRowsVec, kRowsSharedVec, kResident, kResidentGroups, kCols, kColsFewLines, kMap, kNone };
    struct Kernels {
        Tuning tuning;
        // rows_shared: rows of one shared tile, several to a tile where they fit
        // (ScanParams::per_tile); vec: rows of whole, aligned vectors of four; resident_groups:
        // rows in groups of lanes; cols_few_lines: cols launches of few lines. "" where the program has none (the module's layout class
        // lacks it, or the stage's shape cannot reach it: reachable_kernels, codegen.h).
        std::array<std::string, kNone> names;
        std::array<CUfunction, kNone> fns{};  // loaded by the first launch that takes them
        std::array<bool, kNone> quick{};      // fns from a quick build (cache.h: QuickBuilds)
        std::array<unsigned, kNone> smem{};   // dynamic shared memory (the transposes)
        std::array<int, kNone> per_sm{};      // blocks per SM once loaded (the resident grids)
        bool has(Kernel k) const { return !names[k].empty(); }
    };
    // One layout class of the program (codegen.h): its kernels per stage.
    struct Module {
        Layout layout;
        ProgramKernels* program = nullptr;
        std::vector<Kernels> kernels;
    };
    class Run;  // one run's allocations and launches (executable.cpp)

    // A module that runs `wanted` (per stage: the class a rows launch needs, or none when any
    // will do); on a miss, a new one with the contiguous class where nothing is wanted (its
    // kernels compile as launches take them).
    Module& module_for(const std::vector<std::optional<StageLayout>>& wanted);
    Module load(const Layout& layout);
    // Loads (compiling first where needed) the kernel each stage launches with (kNone: none);
    // quick builds where `may_quick` (not inside a graph capture), and the full build in place
    // of a quick one once it is done.
    void load_kernels(Module& module, const std::vector<Kernel>& chosen, bool may_quick);

    // A launch's look-back state: its status words, tile counter, epoch and first ticket.
    struct LookbackWords {
        std::uint64_t status = 0, counter = 0;
        std::uint32_t epoch = 0, tile_base = 0;
    };
    // The executable's words for `bytes` of look-back state (grown on `stream` as needed), with a
    // new epoch, so that no launch needs them zeroed; `tiles` tickets taken.
    LookbackWords prepare_lookback(std::size_t bytes, std::uint32_t tiles, CUstream stream);

    ProgramRef program_;
    Plan plan_;
    // The program's interleaves: their lengths are checked before each run, since a kernel
    // writing a part longer than its place would write past the result.
    std::vector<const Node*> interleaves_;
    int device_;
    int sm_count_ = 0, cc_ = 0;
    std::vector<Module> modules_;  // the contiguous class first, then others as runs need them
    std::mutex mu_;
    CUdeviceptr lookback_ = 0;      // [counter (256 bytes)][status words]
    std::size_t lookback_bytes_ = 0;
    std::uint32_t epoch_ = 0, tickets_ = 0;
    // Recorded after each run outside a graph capture: the next run, on whichever stream, waits
    // for it before it touches the look-back words, and the destructor frees them after it.
    CUevent last_run_ = nullptr;
};

}  // namespace scanc::cuda
