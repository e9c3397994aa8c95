#include "nvrtc.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <glob.h>
#include <link.h>
#include <unistd.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <sstream>
#include <thread>

#include "scanc/error.h"

namespace scanc::cuda {

namespace {

// The few NVRTC entry points we use, declared here so no NVRTC header is needed to build.
using Result = int;
using Program = struct _nvrtcProgram*;
struct Nvrtc {
    Result (*create)(Program*, const char*, const char*, int, const char* const*,
                     const char* const*) = nullptr;
    Result (*compile)(Program, int, const char* const*) = nullptr;
    Result (*log_size)(Program, size_t*) = nullptr;
    Result (*log)(Program, char*) = nullptr;
    Result (*ptx_size)(Program, size_t*) = nullptr;
    Result (*ptx)(Program, char*) = nullptr;
    Result (*cubin_size)(Program, size_t*) = nullptr;
    Result (*cubin)(Program, char*) = nullptr;
    Result (*destroy)(Program*) = nullptr;
    const char* (*error_string)(Result) = nullptr;
    Result (*version)(int*, int*) = nullptr;
    // Optional (NVRTC 11.2+): the real archs this NVRTC compiles for.
    Result (*num_archs)(int*) = nullptr;
    Result (*archs)(int*) = nullptr;
};

std::vector<std::string> candidates() {
    std::vector<std::string> out;
    if (const char* env = std::getenv("SCANC_NVRTC_PATH"); env && *env) {
        std::filesystem::path p(env);
        if (std::filesystem::is_directory(p)) {
            for (const char* n : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"})
                out.push_back((p / n).string());
        } else {
            out.push_back(p.string());
        }
    }
    for (const char* n : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}) out.push_back(n);
    std::vector<std::string> patterns = {
        "/usr/local/cuda/lib64/libnvrtc.so*",
        "/usr/local/cuda/targets/*/lib/libnvrtc.so*",
        "/usr/local/cuda-*/lib64/libnvrtc.so*",
    };
    // pip's nvidia-cuda-nvrtc: nvidia/cu13/lib (CUDA 13) or nvidia/cuda_nvrtc/lib (CUDA 12).
    std::vector<std::string> roots = {"/usr/lib/python3*/site-packages", "/usr/lib/python3/dist-packages",
                                      "/usr/local/lib/python3*/*-packages", "/opt/*/.venv/lib/python3*/site-packages",
                                      "/root/.pyenv/versions/*/lib/python3*/site-packages"};
    for (const char* env : {"VIRTUAL_ENV", "CONDA_PREFIX"})
        if (const char* v = std::getenv(env)) roots.push_back(cat(v, "/lib/python3*/site-packages"));
    if (const char* home = std::getenv("HOME"))
        roots.push_back(cat(home, "/.local/lib/python3*/site-packages"));
    for (auto& r : roots) {
        patterns.push_back(r + "/nvidia/cu13/lib/libnvrtc.so*");
        patterns.push_back(r + "/nvidia/cuda_nvrtc/lib/libnvrtc.so*");
    }
    for (auto& pattern : patterns) {
        glob_t g;
        if (glob(pattern.c_str(), 0, nullptr, &g) == 0)
            for (size_t i = 0; i < g.gl_pathc; ++i) {
                std::string path = g.gl_pathv[i];
                if (path.find("builtins") == std::string::npos && path.find(".alt.") == std::string::npos)
                    out.push_back(path);
            }
        globfree(&g);
    }
    return out;
}

// Asks the kernel to read a file ahead into the page cache (without waiting for it): on a
// machine's first process, NVRTC's first compile otherwise faults its code in from disk a
// page range at a time.
void read_ahead(const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);
    close(fd);
}

// libnvrtc's own file and the builtins beside it, read ahead.
void read_ahead_nvrtc(void* lib) {
    link_map* map = nullptr;
    if (dlinfo(lib, RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_name || !*map->l_name) return;
    const std::filesystem::path path(map->l_name);
    read_ahead(path.string());
    glob_t g;
    if (glob((path.parent_path() / "libnvrtc-builtins.so*").c_str(), 0, nullptr, &g) == 0)
        for (size_t i = 0; i < g.gl_pathc; ++i) read_ahead(g.gl_pathv[i]);
    globfree(&g);
}

struct Loaded {
    Nvrtc api;
    bool ok = false;
    std::string why;
};

Loaded load() {
    Loaded l;
    void* lib = nullptr;
    auto paths = candidates();
    for (auto& p : paths) {
        // NVRTC opens libnvrtc-builtins by name; outside the loader's path (a pip wheel) it
        // only finds it if it is loaded already, so load the one beside libnvrtc first.
        auto dir = std::filesystem::path(p).parent_path();
        if (!dir.empty()) {
            glob_t g;
            if (glob((dir / "libnvrtc-builtins.so*").c_str(), 0, nullptr, &g) == 0)
                for (size_t i = 0; i < g.gl_pathc; ++i)
                    if (!std::strstr(g.gl_pathv[i], ".alt.")) dlopen(g.gl_pathv[i], RTLD_NOW | RTLD_GLOBAL);
            globfree(&g);
        }
        if ((lib = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL))) break;
    }
    if (lib) read_ahead_nvrtc(lib);
    if (!lib) {
        l.why = "libnvrtc not found (set SCANC_NVRTC_PATH, install the CUDA toolkit, or "
                "`pip install nvidia-cuda-nvrtc==13.0.88`)";
        return l;
    }
    auto sym = [&](auto& fn, const char* name) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
        if (!fn && l.why.empty()) l.why = cat("libnvrtc lacks ", name);
    };
    sym(l.api.create, "nvrtcCreateProgram");
    sym(l.api.compile, "nvrtcCompileProgram");
    sym(l.api.log_size, "nvrtcGetProgramLogSize");
    sym(l.api.log, "nvrtcGetProgramLog");
    sym(l.api.ptx_size, "nvrtcGetPTXSize");
    sym(l.api.ptx, "nvrtcGetPTX");
    sym(l.api.cubin_size, "nvrtcGetCUBINSize");
    sym(l.api.cubin, "nvrtcGetCUBIN");
    sym(l.api.destroy, "nvrtcDestroyProgram");
    sym(l.api.error_string, "nvrtcGetErrorString");
    sym(l.api.version, "nvrtcVersion");
    l.ok = l.why.empty();
    l.api.num_archs = reinterpret_cast<Result (*)(int*)>(dlsym(lib, "nvrtcGetNumSupportedArchs"));
    l.api.archs = reinterpret_cast<Result (*)(int*)>(dlsym(lib, "nvrtcGetSupportedArchs"));
    return l;
}

const Loaded& loaded() {
    static const Loaded l = load();
    return l;
}

double thread_cpu_seconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

const Nvrtc& api() {
    const Loaded& l = loaded();
    if (!l.ok) throw RuntimeError("NVRTC unavailable: " + l.why);
    return l.api;
}

void check(Result r, const char* what, const std::string& log = {}) {
    if (r == 0) return;
    throw RuntimeError(cat("NVRTC error ", api().error_string(r), " in ", what,
                           log.empty() ? "" : "\ncompile log:\n", log));
}

// The options a generated source names on its options line (codegen.h), if it has one.
std::vector<std::string> options_in(const std::string& source) {
    const std::size_t header = source.find("\n#");  // the line is among the leading comments
    const std::size_t at = source.substr(0, header).find(kNvrtcOptionsLine);
    if (at == std::string::npos) return {};
    const std::size_t begin = at + std::strlen(kNvrtcOptionsLine), end = source.find('\n', begin);
    std::istringstream words(source.substr(begin, end - begin));
    std::vector<std::string> out;
    for (std::string w; words >> w;) out.push_back(w);
    return out;
}

}  // namespace

bool nvrtc_available(std::string* why) {
    const Loaded& l = loaded();
    if (!l.ok && why) *why = l.why;
    return l.ok;
}

std::string nvrtc_version() {
    if (!nvrtc_available()) return "";
    int major = 0, minor = 0;
    api().version(&major, &minor);
    return cat(major, ".", minor);
}

std::vector<int> nvrtc_supported_archs() {
    if (!nvrtc_available()) return {};
    const Nvrtc& n = api();
    int count = 0;
    if (!n.num_archs || !n.archs || n.num_archs(&count) != 0 || count <= 0) return {};
    std::vector<int> archs(static_cast<std::size_t>(count));
    if (n.archs(archs.data()) != 0) return {};
    return archs;
}

NvrtcOutput nvrtc_compile(const std::string& source, const std::string& arch, const std::string& name,
                          int entry, bool quick) {
    const Nvrtc& n = api();
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = thread_cpu_seconds();
    Program prog = nullptr;
    check(n.create(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr), "nvrtcCreateProgram");
    std::string arch_opt = "--gpu-architecture=" + arch, entry_opt = cat("-DSCANC_ONLY_ENTRY=", entry);
    std::vector<const char*> opts = {arch_opt.c_str()};
    opts.insert(opts.end(), std::begin(kNvrtcFixedOptions), std::end(kNvrtcFixedOptions));
    const std::vector<std::string> source_opts = options_in(source);
    for (const std::string& o : source_opts) opts.push_back(o.c_str());
    if (quick) opts.push_back(kNvrtcQuickOption);
    if (entry >= 0) {
        opts.push_back(entry_opt.c_str());
    } else {
        // A whole program: NVRTC 12.4+ optimizes and assembles its kernels on all cores (same
        // code; the sum program 1.48 -> 1.02 s on 2 cores).
        int major = 0, minor = 0;
        n.version(&major, &minor);
        if (major > 12 || (major == 12 && minor >= 4)) opts.push_back("--split-compile=0");
    }
    Result r = n.compile(prog, static_cast<int>(opts.size()), opts.data());
    NvrtcOutput out;
    size_t size = 0;
    n.log_size(prog, &size);
    out.log.resize(size);
    if (size) n.log(prog, out.log.data());
    while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n')) out.log.pop_back();
    try {
        check(r, "nvrtcCompileProgram", out.log);
        out.is_ptx = arch.rfind("compute_", 0) == 0;
        if (out.is_ptx) {
            check(n.ptx_size(prog, &size), "nvrtcGetPTXSize");
            out.binary.resize(size);
            check(n.ptx(prog, out.binary.data()), "nvrtcGetPTX");
        } else {
            check(n.cubin_size(prog, &size), "nvrtcGetCUBINSize");
            out.binary.resize(size);
            check(n.cubin(prog, out.binary.data()), "nvrtcGetCUBIN");
        }
    } catch (...) {
        n.destroy(&prog);
        throw;
    }
    n.destroy(&prog);
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    out.cpu_seconds = thread_cpu_seconds() - cpu_start;
    return out;
}

std::vector<NvrtcOutput> nvrtc_compile_entries(const std::string& source, const std::string& arch,
                                               const std::string& name, const std::vector<int>& entries,
                                               bool quick) {
    const int count = static_cast<int>(entries.size());
    std::vector<NvrtcOutput> outs(entries.size());
    std::vector<std::exception_ptr> errors(entries.size());
    std::atomic<int> next{0};
    auto work = [&] {
        for (int i; (i = next++) < count;) {
            try {
                outs[i] = nvrtc_compile(source, arch, name, entries[i], quick);
            } catch (...) {
                errors[i] = std::current_exception();
            }
        }
    };
    int threads = std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, std::max(count, 1));
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (std::thread& t : pool) t.join();
    for (const std::exception_ptr& e : errors)
        if (e) std::rethrow_exception(e);
    return outs;
}

}  // namespace scanc::cuda
