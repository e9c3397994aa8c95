// Scratch bytes for a worker's tiles, which are always written before they are read: they start
// undefined, where a std::vector would zero them (zeroing ~256 KiB of tiles per run was most of
// a small scan's time). Under SCANC_CPU_POISON=1 (the CPU tests set it) new bytes start as 0xFF
// instead, so that a read before a write shows as NaN or all-ones bits in the results.
// resize keeps the first min(old, new) bytes, as std::vector::resize does.
//
// Data starts 64-byte aligned (whole vectors never straddle a cache line) at a different offset
// within a 4 KiB page for each buffer: large allocations all start 16 bytes into a page, so the
// same row of two tiles (an input tile and the tile a combine writes) had the same low 12
// address bits, and each load of one waited on the store to the other just before it (4K
// aliasing).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace scanc::cpu {

class Scratch {
public:
    Scratch() = default;
    explicit Scratch(std::size_t n) { resize(n); }

    void resize(std::size_t n) {
        if (n > cap_) {
            // Default-initialized: no zeroing. The data starts at its page offset whatever the
            // allocation's own (mmap'd blocks start 16 bytes into a page, heap blocks anywhere).
            std::unique_ptr<std::byte[]> p(new std::byte[n + kPage]);
            auto at = reinterpret_cast<std::uintptr_t>(p.get());
            std::byte* d = p.get() + (next_offset() + kPage - at % kPage) % kPage;
            if (size_) std::memcpy(d, data_, size_);
            p_ = std::move(p);
            data_ = d;
            cap_ = n;
        }
        if (n > size_ && poison()) std::memset(data_ + size_, 0xFF, n - size_);
        size_ = n;
    }
    std::byte* data() { return data_; }
    const std::byte* data() const { return data_; }
    std::size_t size() const { return size_; }

    // Whether SCANC_CPU_POISON=1: new scratch bytes start as 0xFF.
    static bool poison() {
        static const bool on = [] {
            const char* e = std::getenv("SCANC_CPU_POISON");
            return e && *e == '1';
        }();
        return on;
    }

private:
    static constexpr std::size_t kPage = 4096, kLine = 64;
    // Page offsets of successive buffers, 17 lines apart modulo a page: 64 distinct ones.
    static std::size_t next_offset() {
        static std::atomic<unsigned> n{0};
        return (n.fetch_add(1, std::memory_order_relaxed) * 17 % (kPage / kLine)) * kLine;
    }

    std::unique_ptr<std::byte[]> p_;
    std::byte* data_ = nullptr;
    std::size_t size_ = 0, cap_ = 0;
};

}  // namespace scanc::cpu
