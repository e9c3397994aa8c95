#include "cache.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
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

using Clock = std::chrono::steady_clock;

std::mutex mu;  // the maps below and the stats
CacheStats stats;

std::string hash_key(const std::string& source, const std::string& arch) {
    std::uint64_t h = 1469598103934665603ull;  // FNV-1a, 64-bit
    auto mix = [&](const std::string& s) {
        for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
        h = (h ^ 0xff) * 1099511628211ull;
    };
    mix(SCANC_VERSION);
    for (const char* option : kNvrtcFixedOptions) mix(option);
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

// One program's kernel binaries: compiled entry by entry, the entries a launch asks for by the
// asking thread, the others by the background pool; or read whole from the disk cache.
struct Compilation : std::enable_shared_from_this<Compilation> {
    enum class State { queued, compiling, done };

    Compilation(std::string source_, std::string arch_, std::string key_)
        : source(std::move(source_)), arch(std::move(arch_)), key(std::move(key_)),
          names(kernel_entry_names(source)), state(names.size(), State::queued), outs(names.size()),
          errors(names.size()), order(names.size()), left(static_cast<int>(names.size())) {
        for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    }

    // Takes binaries read from the disk cache: nothing left to compile.
    void take_cached(std::vector<std::string> binaries) {
        for (std::size_t i = 0; i < binaries.size(); ++i) {
            outs[i].binary.assign(binaries[i].begin(), binaries[i].end());
            state[i] = State::done;
        }
        left = 0;
        from_disk = handed_over = true;
    }

    // The binaries of `entries`: compiles those no one has begun (in parallel, on this thread and
    // others), waits for those begun elsewhere, then hands the rest to the background pool.
    std::vector<std::string> binaries(const std::vector<int>& entries);
    // Quick builds of `entries` (QuickBuilds), compiled on this thread and others; their full
    // builds go to the background pool ahead of the program's other entries.
    std::vector<std::string> quick_binaries(const std::vector<int>& entries);
    // Whether entry i's full build is done (or failed: binaries() says how).
    bool done(int i) {
        std::lock_guard lock(mu);
        return state[i] == State::done;
    }

    // The next queued entry, marked as compiling; -1 when none is queued.
    int claim_next() {
        std::lock_guard lock(mu);
        for (int i : order)
            if (state[i] == State::queued) return begin(i), i;
        return -1;
    }

    // Records entry i's binary or error; the last entry to finish writes the disk cache.
    void finish(int i, NvrtcOutput out, std::exception_ptr error);

    const std::string source, arch, key;
    const std::vector<std::string> names;  // the kernel of each entry
    // Where the binaries go: the cache folder as it was when the compilation began.
    const std::filesystem::path file = std::filesystem::path(cache_dir()) / (key + ".cubins");
    bool from_disk = false;

private:
    void begin(int i) {  // with mu held
        state[i] = State::compiling;
        if (!started) started = true, start = Clock::now();
    }
    void complete();  // all entries done, none failed
    void hand_over();  // the entries no launch has begun, to the background pool

    std::mutex mu;
    std::condition_variable done_cv;
    std::vector<State> state;
    std::vector<NvrtcOutput> outs;
    std::vector<std::exception_ptr> errors;
    std::vector<int> order;    // the background pool's order of the entries
    int left;                  // entries not done
    bool handed_over = false;  // the rest is the pool's
    bool started = false;
    Clock::time_point start;
};

namespace {

// Threads that compile the kernels no launch has asked for yet, a program at a time in the
// order handed over. The pool drains its queue before its threads end, so a process's exit
// waits for the programs it began and the disk cache receives them. (A child of fork() has none
// of the threads, but no usable CUDA either: the driver's own exit handlers hang in a child that
// leaves with exit() rather than _exit(), as Python's multiprocessing children do.)
class BackgroundCompiles {
public:
    void add(std::shared_ptr<Compilation> c) {
        std::lock_guard lock(mu_);
        if (stop_) return;  // the process is exiting: runs that want the rest compile it themselves
        queue_.push_back(std::move(c));
        if (threads_.empty()) {
            // A stage has at most 7 kernels, and the H200 machine ran about 4 compiles' worth at
            // once (docs/history/cuda-sessions-08-13.md, eleventh session): more threads would
            // only contend.
            int n = std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, 8);
            for (int t = 0; t < n; ++t) threads_.emplace_back([this] { work(); });
        }
        wake_.notify_all();
    }

    void wait_idle() {
        std::unique_lock lock(mu_);
        idle_.wait(lock, [&] { return queue_.empty() && busy_ == 0; });
    }

    ~BackgroundCompiles() {
        {
            std::lock_guard lock(mu_);
            stop_ = true;
        }
        wake_.notify_all();
        for (std::thread& t : threads_) t.join();
    }

private:
    void work() {
        std::unique_lock lock(mu_);
        for (;;) {
            wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
            if (queue_.empty()) return;  // stopping, and nothing left
            std::shared_ptr<Compilation> c = queue_.front();
            int i = c->claim_next();
            if (i < 0) {  // every entry begun: the next program
                queue_.pop_front();
                if (queue_.empty() && busy_ == 0) idle_.notify_all();
                continue;
            }
            ++busy_;
            lock.unlock();
            NvrtcOutput out;
            std::exception_ptr error;
            try {
                out = nvrtc_compile(c->source, c->arch, c->key + ".cu", i);
            } catch (...) {
                error = std::current_exception();
            }
            c->finish(i, std::move(out), error);
            lock.lock();
            if (--busy_ == 0 && queue_.empty()) idle_.notify_all();
        }
    }

    std::mutex mu_;
    std::condition_variable wake_, idle_;
    std::deque<std::shared_ptr<Compilation>> queue_;
    std::vector<std::thread> threads_;
    int busy_ = 0;
    bool stop_ = false;
};

std::atomic<bool> background_made{false};

BackgroundCompiles& background() {
    // NVRTC's own statics are built first, so that the exit destroys (and so joins) the pool
    // before them.
    nvrtc_available();
    static BackgroundCompiles pool;
    background_made = true;
    return pool;
}

// Programs by key (their binaries serve every device), and their kernels per device.
std::map<std::string, std::shared_ptr<Compilation>> compilations;
std::map<std::pair<std::string, int>, std::unique_ptr<ProgramKernels>> programs;

// A new compilation in place of `damaged`, whose cached binaries the driver refused: counted as
// a compile, and the one later devices find.
std::shared_ptr<Compilation> recompile(const Compilation& damaged) {
    std::lock_guard lock(mu);
    ++stats.compiles;
    return compilations[damaged.key] = std::make_shared<Compilation>(damaged.source, damaged.arch, damaged.key);
}

}  // namespace

std::vector<std::string> Compilation::binaries(const std::vector<int>& entries) {
    std::vector<int> mine;
    {
        std::lock_guard lock(mu);
        for (int i : entries)
            if (state[i] == State::queued) begin(i), mine.push_back(i);
    }
    if (!mine.empty()) {
        std::vector<NvrtcOutput> compiled;
        std::exception_ptr error;
        try {
            compiled = nvrtc_compile_entries(source, arch, key + ".cu", mine);
        } catch (...) {
            error = std::current_exception();
        }
        for (std::size_t k = 0; k < mine.size(); ++k)
            finish(mine[k], error ? NvrtcOutput{} : std::move(compiled[k]), error);
    }
    std::unique_lock lock(mu);
    done_cv.wait(lock, [&] {
        return std::all_of(entries.begin(), entries.end(), [&](int i) { return state[i] == State::done; });
    });
    std::vector<std::string> out;
    for (int i : entries) {
        if (errors[i]) std::rethrow_exception(errors[i]);
        out.emplace_back(outs[i].binary.begin(), outs[i].binary.end());
    }
    lock.unlock();
    hand_over();
    return out;
}

std::vector<std::string> Compilation::quick_binaries(const std::vector<int>& entries) {
    {
        std::lock_guard lock(mu);
        std::stable_partition(order.begin(), order.end(), [&](int i) {
            return std::find(entries.begin(), entries.end(), i) != entries.end();
        });
    }
    std::vector<std::string> out;
    for (NvrtcOutput& o : nvrtc_compile_entries(source, arch, key + ".cu", entries, /*quick=*/true))
        out.emplace_back(o.binary.begin(), o.binary.end());
    // The full builds begin once the quick ones are done: not beside them, which slowed the quick
    // ones (the H200 machine), and never before the process's first NVRTC compile, whose statics
    // must outlive the pool's threads at exit (background()).
    hand_over();
    return out;
}

void Compilation::hand_over() {
    {
        std::lock_guard lock(mu);
        if (handed_over || left == 0) return;
        handed_over = true;
    }
    background().add(shared_from_this());
}

void Compilation::finish(int i, NvrtcOutput out, std::exception_ptr error) {
    bool all_done;
    {
        std::lock_guard lock(mu);
        outs[i] = std::move(out);
        errors[i] = error;
        state[i] = State::done;
        all_done = --left == 0 && std::none_of(errors.begin(), errors.end(), [](auto& e) { return bool(e); });
    }
    done_cv.notify_all();
    if (all_done) complete();  // no entry changes any more: outs is read without the lock
}

void Compilation::complete() {
    auto slowest = std::max_element(outs.begin(), outs.end(), [](auto& a, auto& b) { return a.seconds < b.seconds; });
    {
        std::lock_guard lock(cuda::mu);
        stats.last_seconds = std::chrono::duration<double>(Clock::now() - start).count();
        if (slowest != outs.end()) {
            stats.slowest_seconds = slowest->seconds, stats.slowest_cpu_seconds = slowest->cpu_seconds;
            stats.slowest_kernel = names[slowest - outs.begin()];
        }
    }
    std::string packed = pack_binaries(outs);
    write_file(file, packed.data(), packed.size());
    auto src = file;
    src.replace_extension(".cu");
    write_file(src, source.data(), source.size());
}

QuickBuilds quick_builds() {
    const char* v = std::getenv("SCANC_CUDA_QUICK");
    if (!v || !*v || std::strcmp(v, "1") == 0) return QuickBuilds::first;
    if (std::strcmp(v, "0") == 0) return QuickBuilds::off;
    if (std::strcmp(v, "always") == 0) return QuickBuilds::always;
    throw RuntimeError(cat("SCANC_CUDA_QUICK=", v, ": expected 1, 0 or always"));
}

ProgramKernels::ProgramKernels(std::shared_ptr<Compilation> compilation)
    : compilation_(std::move(compilation)), modules_(compilation_->names.size(), nullptr),
      quick_modules_(modules_.size(), nullptr) {}

int ProgramKernels::entry(const std::string& name) const {
    const auto& names = compilation_->names;
    auto it = std::find(names.begin(), names.end(), name);
    return it == names.end() ? -1 : static_cast<int>(it - names.begin());
}

bool ProgramKernels::has(const std::string& name) const { return entry(name) >= 0; }

bool ProgramKernels::full_ready(const std::string& name) const {
    const int i = entry(name);
    return i >= 0 && quick_builds() != QuickBuilds::always && compilation_->done(i);
}

std::vector<ProgramKernels::Loaded> ProgramKernels::load(const std::vector<std::string>& names, bool may_quick) {
    std::lock_guard lock(mu_);
    const QuickBuilds mode = quick_builds();
    std::vector<int> entries(names.size(), -1), missing, quick_missing;
    std::vector<char> quick(names.size(), 0);
    auto add = [](std::vector<int>& list, int i) {
        if (std::find(list.begin(), list.end(), i) == list.end()) list.push_back(i);
    };
    for (std::size_t k = 0; k < names.size(); ++k) {
        const int i = entries[k] = entry(names[k]);
        if (i < 0) continue;
        // The full build where it is loaded or done (or wanted), else a quick one.
        quick[k] = mode == QuickBuilds::always ||
                   (mode == QuickBuilds::first && may_quick && !modules_[i] && !compilation_->done(i));
        if (quick[k] ? !quick_modules_[i] : !modules_[i]) add(quick[k] ? quick_missing : missing, i);
    }
    if (!quick_missing.empty()) {
        std::vector<std::string> binaries;
        try {
            binaries = compilation_->quick_binaries(quick_missing);
        } catch (const RuntimeError&) {
            // An NVRTC without the quick option: these launches wait for the full builds.
            if (mode == QuickBuilds::always) throw;
            for (std::size_t k = 0; k < names.size(); ++k)
                if (quick[k]) quick[k] = 0, add(missing, entries[k]);
            quick_missing.clear();
        }
        for (std::size_t k = 0; k < quick_missing.size(); ++k)
            SCANC_CU(cuModuleLoadData, &quick_modules_[quick_missing[k]], binaries[k].data());
        std::lock_guard stats_lock(cuda::mu);
        stats.quick_builds += static_cast<int>(quick_missing.size());
    }
    int upgrades = 0;
    for (int i : missing) upgrades += quick_modules_[i] != nullptr;
    for (bool loaded = missing.empty(); !loaded;) {
        std::vector<std::string> binaries = compilation_->binaries(missing);
        loaded = true;
        for (std::size_t k = 0; k < missing.size() && loaded; ++k) {
            CUresult r = driver().cuModuleLoadData(&modules_[missing[k]], binaries[k].data());
            if (r == CUDA_SUCCESS) continue;
            if (!compilation_->from_disk) check(r, "cuModuleLoadData");
            // A cached binary the driver refuses (damaged on disk): the program compiles again.
            compilation_ = recompile(*compilation_);
            for (CUmodule& m : modules_)
                if (m) driver().cuModuleUnload(m), m = nullptr;
            loaded = false;
        }
    }
    if (upgrades) {
        std::lock_guard stats_lock(cuda::mu);
        stats.upgrades += upgrades;
    }
    std::vector<Loaded> fns(names.size());
    for (std::size_t k = 0; k < names.size(); ++k) {
        if (entries[k] < 0) continue;
        CUmodule m = quick[k] ? quick_modules_[entries[k]] : modules_[entries[k]];
        SCANC_CU(cuModuleGetFunction, &fns[k].fn, m, names[k].c_str());
        fns[k].quick = quick[k];
    }
    return fns;
}

ProgramKernels& program_kernels(const std::string& source, const std::string& arch, int device) {
    std::string key = hash_key(source, arch);
    std::lock_guard lock(mu);
    if (auto it = programs.find({key, device}); it != programs.end()) {
        ++stats.memory_hits;
        return *it->second;
    }
    std::shared_ptr<Compilation>& c = compilations[key];
    if (c) {
        ++stats.memory_hits;  // another device's
    } else {
        c = std::make_shared<Compilation>(source, arch, key);
        auto cached = unpack_binaries(read_file(c->file), static_cast<int>(c->names.size()));
        if (!cached.empty()) {
            c->take_cached(std::move(cached));
            ++stats.disk_hits;
        } else {
            ++stats.compiles;  // it begins at the first launch
        }
    }
    auto& slot = programs[{key, device}];
    slot = std::make_unique<ProgramKernels>(c);
    return *slot;
}

// With no pool yet, nothing was ever handed to it: return without loading NVRTC for it (a cold
// load of the library took 2 s on a busy CI box).
void finish_compiles() {
    if (background_made) background().wait_idle();
}

CacheStats cache_stats() {
    std::lock_guard lock(mu);
    return stats;
}

}  // namespace scanc::cuda
