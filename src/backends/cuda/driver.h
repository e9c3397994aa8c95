// The CUDA driver API, loaded at run time (dlopen of libcuda.so.1) so that one build runs with
// or without a GPU. Every call goes through `check`, which turns a failure into a RuntimeError
// naming the call and the driver's error name.
#pragma once

#include <cuda.h>

#include <string>

namespace scanc::cuda {

// One entry per driver function we use: X(member, exported symbol).
#define SCANC_CUDA_DRIVER_FUNCTIONS(X)                  \
    X(cuInit, "cuInit")                                 \
    X(cuGetErrorName, "cuGetErrorName")                 \
    X(cuDeviceGetCount, "cuDeviceGetCount")             \
    X(cuDeviceGet, "cuDeviceGet")                       \
    X(cuDeviceGetAttribute, "cuDeviceGetAttribute")     \
    X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") \
    X(cuCtxPushCurrent, "cuCtxPushCurrent_v2")          \
    X(cuCtxPopCurrent, "cuCtxPopCurrent_v2")            \
    X(cuModuleLoadData, "cuModuleLoadData")             \
    X(cuModuleUnload, "cuModuleUnload")                 \
    X(cuModuleGetFunction, "cuModuleGetFunction")       \
    X(cuFuncGetAttribute, "cuFuncGetAttribute")         \
    X(cuFuncSetAttribute, "cuFuncSetAttribute")         \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor") \
    X(cuLaunchKernel, "cuLaunchKernel")                 \
    X(cuMemAlloc, "cuMemAlloc_v2")                      \
    X(cuMemFree, "cuMemFree_v2")                        \
    X(cuMemGetInfo, "cuMemGetInfo_v2")                  \
    X(cuMemAllocAsync, "cuMemAllocAsync")               \
    X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2")        \
    X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2")        \
    X(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2")        \
    X(cuMemsetD8Async, "cuMemsetD8Async")               \
    X(cuStreamSynchronize, "cuStreamSynchronize")       \
    X(cuPointerGetAttribute, "cuPointerGetAttribute")   \
    X(cuMemFreeAsync, "cuMemFreeAsync")                 \
    X(cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool") \
    X(cuMemPoolSetAttribute, "cuMemPoolSetAttribute")   \
    X(cuStreamIsCapturing, "cuStreamIsCapturing")       \
    X(cuThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode") \
    X(cuStreamWaitEvent, "cuStreamWaitEvent")           \
    X(cuEventCreate, "cuEventCreate")                   \
    X(cuEventRecord, "cuEventRecord")                   \
    X(cuEventDestroy, "cuEventDestroy_v2")              \
    /* the capture tests' */                             \
    X(cuStreamCreate, "cuStreamCreate")                 \
    X(cuStreamDestroy, "cuStreamDestroy_v2")            \
    X(cuStreamBeginCapture, "cuStreamBeginCapture_v2")  \
    X(cuStreamEndCapture, "cuStreamEndCapture")         \
    X(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags") \
    X(cuGraphLaunch, "cuGraphLaunch")                   \
    X(cuGraphExecDestroy, "cuGraphExecDestroy")         \
    X(cuGraphDestroy, "cuGraphDestroy")

struct Driver {
#define SCANC_DECLARE(member, symbol) decltype(&::member) member = nullptr;
    SCANC_CUDA_DRIVER_FUNCTIONS(SCANC_DECLARE)
#undef SCANC_DECLARE
};

// The driver, loaded and initialized once; nullptr (with the reason in `why`) when there is no
// libcuda or no device. Thread-safe.
const Driver* try_driver(std::string* why = nullptr);
// The driver, or a RuntimeError saying why there is none.
const Driver& driver();
// True when a driver and at least one CUDA device are present.
bool gpu_available();

// Throws RuntimeError("CUDA error CUDA_ERROR_X in <what>") unless `result` is CUDA_SUCCESS.
void check(CUresult result, const char* what);

// Checked call: SCANC_CU(cuMemAlloc, &p, n).
#define SCANC_CU(fn, ...) ::scanc::cuda::check(::scanc::cuda::driver().fn(__VA_ARGS__), #fn)

// Makes the primary context of `device` current for the scope (PyTorch uses the same one).
class ContextGuard {
public:
    explicit ContextGuard(int device);
    ~ContextGuard();
    ContextGuard(const ContextGuard&) = delete;
    ContextGuard& operator=(const ContextGuard&) = delete;
};

// Attributes of a device, read once.
struct DeviceInfo {
    int index = 0;
    int cc_major = 0, cc_minor = 0;
    int sm_count = 0;
    int smem_optin = 48 * 1024;  // shared memory a block may opt in to (static + dynamic)
    std::string arch() const { return "sm_" + std::to_string(cc_major * 10 + cc_minor); }
};
const DeviceInfo& device_info(int device);

}  // namespace scanc::cuda
