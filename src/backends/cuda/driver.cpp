#include "driver.h"

#include <dlfcn.h>

#include <map>
#include <mutex>
#include <thread>

#include "nvrtc.h"
#include "scanc/error.h"

namespace scanc::cuda {

namespace {

struct Loaded {
    Driver driver;
    bool ok = false;
    std::string why;
};

Loaded load() {
    Loaded l;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        l.why = "libcuda.so.1 not found (no NVIDIA driver on this machine)";
        return l;
    }
#define SCANC_LOAD(member, symbol)                                                   \
    l.driver.member = reinterpret_cast<decltype(l.driver.member)>(dlsym(lib, symbol)); \
    if (!l.driver.member) {                                                          \
        l.why = cat("libcuda lacks ", symbol, " (driver too old)");                  \
        return l;                                                                    \
    }
    SCANC_CUDA_DRIVER_FUNCTIONS(SCANC_LOAD)
#undef SCANC_LOAD
    // NVRTC loads (and its files are read ahead) while cuInit runs, 0.2-0.4 s on a fresh
    // machine, so the first compile finds it in memory (docs/history/cuda-sessions-21-37.md,
    // thirty-seventh session: compile + first run 495 -> 260 ms). Joined on return.
    std::jthread load_nvrtc([] { nvrtc_available(); });
    if (CUresult r = l.driver.cuInit(0); r != CUDA_SUCCESS) {
        l.why = cat("cuInit failed with error ", static_cast<int>(r), " (no usable GPU)");
        return l;
    }
    int count = 0;
    if (l.driver.cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
        l.why = "no CUDA device";
        return l;
    }
    l.ok = true;
    return l;
}

const Loaded& loaded() {
    static const Loaded l = load();
    return l;
}

}  // namespace

const Driver* try_driver(std::string* why) {
    const Loaded& l = loaded();
    if (!l.ok && why) *why = l.why;
    return l.ok ? &l.driver : nullptr;
}

const Driver& driver() {
    std::string why;
    const Driver* d = try_driver(&why);
    if (!d) throw RuntimeError("cuda backend unavailable: " + why);
    return *d;
}

bool gpu_available() { return try_driver() != nullptr; }

void check(CUresult result, const char* what) {
    if (result == CUDA_SUCCESS) return;
    const char* name = nullptr;
    if (const Driver* d = try_driver(); d && d->cuGetErrorName(result, &name) != CUDA_SUCCESS)
        name = nullptr;
    throw RuntimeError(cat("CUDA error ", name ? name : std::to_string(result).c_str(), " in ",
                           what));
}

ContextGuard::ContextGuard(int device) {
    static std::mutex mu;
    static std::map<int, CUcontext> contexts;
    CUcontext ctx;
    {
        std::lock_guard lock(mu);
        auto it = contexts.find(device);
        if (it == contexts.end()) {
            CUdevice dev;
            SCANC_CU(cuDeviceGet, &dev, device);
            SCANC_CU(cuDevicePrimaryCtxRetain, &ctx, dev);
            it = contexts.emplace(device, ctx).first;
        }
        ctx = it->second;
    }
    SCANC_CU(cuCtxPushCurrent, ctx);
}

ContextGuard::~ContextGuard() {
    CUcontext popped;
    driver().cuCtxPopCurrent(&popped);  // cannot throw from a destructor; nothing to undo
}

const DeviceInfo& device_info(int device) {
    static std::mutex mu;
    static std::map<int, DeviceInfo> infos;
    std::lock_guard lock(mu);
    auto it = infos.find(device);
    if (it != infos.end()) return it->second;
    CUdevice dev;
    SCANC_CU(cuDeviceGet, &dev, device);
    DeviceInfo info;
    info.index = device;
    SCANC_CU(cuDeviceGetAttribute, &info.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    SCANC_CU(cuDeviceGetAttribute, &info.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    SCANC_CU(cuDeviceGetAttribute, &info.sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    SCANC_CU(cuDeviceGetAttribute, &info.smem_optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
             dev);
    return infos.emplace(device, info).first->second;
}

}  // namespace scanc::cuda
