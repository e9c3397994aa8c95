#include "buffer_cache.h"

#include <sys/mman.h>

#include <cstdlib>
#include <map>
#include <mutex>

#include "scanc/error.h"

namespace scanc::cpu {

namespace {

constexpr std::size_t kMinCached = std::size_t{1} << 20;
constexpr std::size_t kGranule = std::size_t{2} << 20;  // a huge page

class BufferCache {
public:
    void* take(std::size_t bytes) {
        {
            std::lock_guard lock(mutex_);
            auto it = free_.find(bytes);
            if (it != free_.end()) {
                void* p = it->second;
                free_.erase(it);
                cached_ -= bytes;
                return p;
            }
        }
        void* p = std::aligned_alloc(kGranule, bytes);
        if (!p) throw RuntimeError(cat("out of memory allocating ", bytes, " bytes"));
#ifdef MADV_HUGEPAGE
        madvise(p, bytes, MADV_HUGEPAGE);
#endif
        return p;
    }

    void give_back(void* p, std::size_t bytes) {
        {
            std::lock_guard lock(mutex_);
            if (cached_ + bytes <= kMaxCachedBytes) {
                free_.emplace(bytes, p);
                cached_ += bytes;
                return;
            }
        }
        std::free(p);
    }

private:
    std::mutex mutex_;
    std::multimap<std::size_t, void*> free_;
    std::size_t cached_ = 0;
};

BufferCache& cache() {
    static auto* c = new BufferCache;  // never destroyed: tensors may outlive static teardown
    return *c;
}

}  // namespace

Tensor alloc_output(DType dtype, std::vector<std::int64_t> sizes) {
    std::int64_t n = 1;
    for (auto s : sizes) n *= s;
    std::size_t bytes = static_cast<std::size_t>(n) * dtype_size(dtype);
    if (bytes < kMinCached) return Tensor::empty(dtype, std::move(sizes));
    std::size_t rounded = (bytes + kGranule - 1) / kGranule * kGranule;
    void* p = cache().take(rounded);
    TensorView v;
    v.data = p;
    v.dtype = dtype;
    v.strides = contiguous_strides(sizes);
    v.sizes = std::move(sizes);
    return Tensor::wrap(std::move(v), std::shared_ptr<void>(p, [rounded](void* q) {
                            cache().give_back(q, rounded);
                        }));
}

}  // namespace scanc::cpu
