#include "cache.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <unistd.h>

#include "driver.h"
#include "nvrtc.h"
#include "scanc/error.h"

#ifndef SCANC_VERSION
#define SCANC_VERSION "0"
#endif

namespace scanc::cuda {

namespace {

std::mutex mu;
CacheStats stats;
std::map<std::pair<std::string, int>, CUmodule> modules;

std::string hash_key(const std::string& source, const std::string& arch) {
    std::uint64_t h = 1469598103934665603ull;  // FNV-1a, 64-bit
    auto mix = [&](const std::string& s) {
        for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
        h = (h ^ 0xff) * 1099511628211ull;
    };
    mix(SCANC_VERSION);
    mix(arch);
    mix(source);
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return cat(arch, "-", buf);
}

std::string read_file(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) return {};
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// Best effort: a cache that cannot be written only costs a recompile next time.
void write_file(const std::filesystem::path& p, const char* data, std::size_t size) {
    std::error_code ec;
    std::filesystem::create_directories(p.parent_path(), ec);
    auto tmp = p;
    tmp += cat(".tmp", getpid());
    {
        std::ofstream out(tmp, std::ios::binary);
        if (!out) return;
        out.write(data, static_cast<std::streamsize>(size));
        if (!out) return;
    }
    std::filesystem::rename(tmp, p, ec);  // atomic: readers see all of it or nothing
    if (ec) std::filesystem::remove(tmp, ec);
}

}  // namespace

std::string cache_dir() {
    if (const char* d = std::getenv("SCANC_CACHE_DIR"); d && *d) return d;
    if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return cat(d, "/scanc");
    if (const char* d = std::getenv("HOME"); d && *d) return cat(d, "/.cache/scanc");
    return "/tmp/scanc-cache";
}

CUmodule load_module(const std::string& source, const std::string& arch, int device) {
    std::string key = hash_key(source, arch);
    std::lock_guard lock(mu);
    if (auto it = modules.find({key, device}); it != modules.end()) {
        ++stats.memory_hits;
        return it->second;
    }
    std::filesystem::path file = std::filesystem::path(cache_dir()) / (key + ".cubin");
    std::string binary = read_file(file);
    CUmodule module = nullptr;
    if (!binary.empty() && driver().cuModuleLoadData(&module, binary.data()) == CUDA_SUCCESS) {
        ++stats.disk_hits;
    } else {
        NvrtcOutput out = nvrtc_compile(source, arch, key + ".cu");
        ++stats.compiles;
        SCANC_CU(cuModuleLoadData, &module, out.binary.data());
        write_file(file, out.binary.data(), out.binary.size());
        auto src = file;
        src.replace_extension(".cu");
        write_file(src, source.data(), source.size());
    }
    modules[{key, device}] = module;
    return module;
}

CacheStats cache_stats() {
    std::lock_guard lock(mu);
    return stats;
}

}  // namespace scanc::cuda
