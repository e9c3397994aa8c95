// The facade: one table of backends, and compile() = verify + associativity check + backend.
#include "scanc/scanc.h"

#include <mutex>

#include "scanc/backends/cpu.h"
#include "scanc/backends/reference.h"
#ifdef SCANC_HAVE_CUDA
#include "scanc/backends/cuda.h"
#endif

namespace scanc {
namespace {

struct BackendEntry {
    std::string_view name;
    bool (*is_available)();
    std::unique_ptr<Backend> (*make)();
};

bool always() { return true; }

template <typename B>
std::unique_ptr<Backend> make() {
    return std::make_unique<B>();
}

// Every backend, in the order "auto" prefers them (the first available wins): cuda, cpu,
// reference. Adding a backend is one line here (plus its #include above), e.g.
//   {"cpu", always, make<CpuBackend>},
//   {"cuda", cuda_available, make<CudaBackend>},
constexpr BackendEntry kBackends[] = {
#ifdef SCANC_HAVE_CUDA
    {"cuda", cuda_available, make<CudaBackend>},
#endif
    {"cpu", always, make<CpuBackend>},
    {"reference", always, make<ReferenceBackend>},
};

std::string join(const std::vector<std::string>& names) {
    std::string out;
    for (auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
}

const BackendEntry* find_backend(std::string_view name) {
    for (auto& entry : kBackends)
        if (entry.name == name) return &entry;
    return nullptr;
}

// One instance per backend for the whole process: backends own caches (compiled kernels, a
// device context) that their executables may keep using.
Backend& instance(const BackendEntry& entry) {
    static std::mutex mutex;
    static std::unique_ptr<Backend> instances[std::size(kBackends)];
    std::lock_guard lock(mutex);
    auto& slot = instances[&entry - kBackends];
    if (!slot) slot = entry.make();
    return *slot;
}

}  // namespace

std::vector<std::string> available_backends() {
    std::vector<std::string> names;
    for (auto& entry : kBackends)
        if (entry.is_available()) names.emplace_back(entry.name);
    return names;
}

std::string default_backend() {
    for (auto& entry : kBackends)
        if (entry.is_available()) return std::string(entry.name);
    internal_error("no backend is available, not even the reference executor");
}

std::unique_ptr<Executable> compile(const ProgramRef& program, std::string_view backend) {
    if (!program) user_error({}, "compile() needs a program, got a null ProgramRef");
    std::string name = backend == "auto" ? default_backend() : std::string(backend);
    const BackendEntry* entry = find_backend(name);
    if (!entry)
        user_error({}, cat("unknown backend `", backend, "`; available: auto, ",
                           join(available_backends())));
    if (!entry->is_available())
        user_error({}, cat("backend `", backend, "` is not available on this machine; available: ",
                           "auto, ", join(available_backends())));
    verify(*program);
    check_program_associative(*program);
    return instance(*entry).compile(program);
}

void finish_compiles() {
#ifdef SCANC_HAVE_CUDA
    cuda_finish_compiles();
#endif
}

}  // namespace scanc
