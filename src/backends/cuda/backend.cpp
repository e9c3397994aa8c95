// CudaBackend and the free functions of include/scanc/backends/cuda.h.
#include "scanc/backends/cuda.h"

#include <algorithm>
#include <cstring>

#include "cache.h"
#include "codegen/codegen.h"
#include "driver.h"
#include "executable.h"
#include "nvrtc.h"

namespace scanc {

namespace {

// The compute capability of `sm_NN`, `sm_NNN`, `compute_NN` (an `a` or `f` suffix allowed),
// or 0 for anything else.
int cc_of(std::string_view arch) {
    std::string_view digits = arch.substr(arch.find('_') == std::string_view::npos ? arch.size() : arch.find('_') + 1);
    if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f')) digits.remove_suffix(1);
    if (digits.size() < 2 || digits.size() > 3) return 0;
    int cc = 0;
    for (char c : digits) {
        if (c < '0' || c > '9') return 0;
        cc = cc * 10 + (c - '0');
    }
    return cc;
}

void check_arch(std::string_view arch) {
    const int cc = cc_of(arch);
    // The kernels use sm_80's warp reductions (__reduce_max_sync).
    if ((arch.rfind("sm_", 0) != 0 && arch.rfind("compute_", 0) != 0) || cc < 80)
        user_error({}, cat("unknown CUDA arch `", arch, "`; expected sm_NN with NN >= 80, e.g. sm_90"));
    const std::vector<int> known = cuda::nvrtc_supported_archs();
    if (!known.empty() && std::find(known.begin(), known.end(), cc) == known.end()) {
        std::string list;
        for (int k : known) list += cat(list.empty() ? "" : " ", "sm_", k);
        user_error({}, cat("CUDA arch `", arch, "` is not one this NVRTC (", cuda::nvrtc_version(),
                           ") compiles for: ", list));
    }
}

// What runs for contiguous inputs (the layout class executables compile first).
std::string contiguous_source(const ProgramRef& program, std::string_view arch) {
    cuda::Plan plan = cuda::make_plan(program);
    return cuda::generate_source(plan, cc_of(arch), cuda::contiguous_layout(plan));
}

}  // namespace

bool cuda_available() { return cuda::gpu_available(); }

std::string cuda_unavailable_reason() {
    std::string why;
    cuda::try_driver(&why);
    return why;
}

bool cuda_nvrtc_available() { return cuda::nvrtc_available(); }

std::string cuda_nvrtc_unavailable_reason() {
    std::string why;
    cuda::nvrtc_available(&why);
    return why;
}

std::unique_ptr<Executable> CudaBackend::compile(const ProgramRef& program) {
    return std::make_unique<cuda::CudaExecutable>(program, 0);
}

std::string emit_cuda(const ProgramRef& program, std::string_view arch, bool ptx) {
    check_arch(arch);
    std::string source = contiguous_source(program, arch);
    if (!ptx) return source;
    auto out = cuda::nvrtc_compile(source, cat("compute_", cc_of(arch)), program->name + ".cu");
    return std::string(out.binary.data(), strnlen(out.binary.data(), out.binary.size()));
}

std::size_t cuda_compile_check(const ProgramRef& program, std::string_view arch) {
    check_arch(arch);
    std::string source = contiguous_source(program, arch);
    return cuda::nvrtc_compile(source, std::string(arch), program->name + ".cu").binary.size();
}

CudaCacheStats cuda_cache_stats() {
    auto s = cuda::cache_stats();
    return {s.compiles,        s.disk_hits,          s.memory_hits,    s.last_seconds, s.slowest_seconds,
            s.slowest_cpu_seconds, s.slowest_kernel, s.quick_builds, s.upgrades};
}

void cuda_finish_compiles() { cuda::finish_compiles(); }

}  // namespace scanc
