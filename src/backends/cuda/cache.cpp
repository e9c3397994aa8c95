#include "cache.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <unistd.h>

#include "codegen/codegen.h"
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
std::map<std::pair<std::string, int>, Modules> modules;

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

CUfunction Modules::function(const std::string& name) const {
    CUfunction f = find(name);
    if (!f) throw RuntimeError(cat("CUDA: no kernel `", name, "` in the compiled program"));
    return f;
}

CUfunction Modules::find(const std::string& name) const {
    auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) return nullptr;
    CUfunction f = nullptr;
    SCANC_CU(cuModuleGetFunction, &f, parts[it - names.begin()], name.c_str());
    return f;
}

std::string pack_binaries(const std::vector<NvrtcOutput>& outs) {
    std::string packed;
    for (const NvrtcOutput& o : outs) {
        std::uint64_t size = o.binary.size();
        packed.append(reinterpret_cast<const char*>(&size), sizeof size);
        packed.append(o.binary.data(), o.binary.size());
    }
    return packed;
}

std::vector<std::string> unpack_binaries(const std::string& packed, int entries) {
    std::vector<std::string> parts;
    std::size_t at = 0;
    while (at + sizeof(std::uint64_t) <= packed.size()) {
        std::uint64_t size = 0;
        std::memcpy(&size, packed.data() + at, sizeof size);
        at += sizeof size;
        if (size > packed.size() - at) return {};
        parts.push_back(packed.substr(at, size));
        at += size;
    }
    if (at != packed.size() || static_cast<int>(parts.size()) != entries) return {};
    return parts;
}

const Modules& load_modules(const std::string& source, const std::string& arch, int device) {
    std::string key = hash_key(source, arch);
    std::lock_guard lock(mu);
    if (auto it = modules.find({key, device}); it != modules.end()) {
        ++stats.memory_hits;
        return it->second;
    }
    Modules loaded;
    loaded.names = kernel_entry_names(source);
    int entries = static_cast<int>(loaded.names.size());
    std::filesystem::path file = std::filesystem::path(cache_dir()) / (key + ".cubins");
    auto load_all = [&](const std::vector<std::string>& binaries) {
        for (const std::string& b : binaries) {
            CUmodule m = nullptr;
            if (driver().cuModuleLoadData(&m, b.data()) != CUDA_SUCCESS) return false;
            loaded.parts.push_back(m);
        }
        return true;
    };
    std::vector<std::string> cached = unpack_binaries(read_file(file), entries);
    if (!cached.empty() && load_all(cached)) {
        ++stats.disk_hits;
    } else {
        for (CUmodule m : loaded.parts) driver().cuModuleUnload(m);
        loaded.parts.clear();
        const auto start = std::chrono::steady_clock::now();
        std::vector<NvrtcOutput> outs = nvrtc_compile_entries(source, arch, key + ".cu", entries);
        ++stats.compiles;
        stats.last_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        auto slowest =
            std::max_element(outs.begin(), outs.end(), [](auto& a, auto& b) { return a.seconds < b.seconds; });
        if (slowest != outs.end()) {
            stats.slowest_seconds = slowest->seconds, stats.slowest_cpu_seconds = slowest->cpu_seconds;
            stats.slowest_kernel = loaded.names[slowest - outs.begin()];
        }
        for (const NvrtcOutput& o : outs) {
            CUmodule m = nullptr;
            SCANC_CU(cuModuleLoadData, &m, o.binary.data());
            loaded.parts.push_back(m);
        }
        std::string packed = pack_binaries(outs);
        write_file(file, packed.data(), packed.size());
        auto src = file;
        src.replace_extension(".cu");
        write_file(src, source.data(), source.size());
    }
    return modules.emplace(std::pair{key, device}, std::move(loaded)).first->second;
}

CacheStats cache_stats() {
    std::lock_guard lock(mu);
    return stats;
}

}  // namespace scanc::cuda
