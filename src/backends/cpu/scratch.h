// Scratch bytes for a worker's tiles, which are always written before they are read: they start
// undefined, where a std::vector would zero them (zeroing ~256 KiB of tiles per run was most of
// a small scan's time). Under SCANC_CPU_POISON=1 (the CPU tests set it) new bytes start as 0xFF
// instead, so that a read before a write shows as NaN or all-ones bits in the results.
// resize keeps the first min(old, new) bytes, as std::vector::resize does.
#pragma once

#include <algorithm>
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
            std::unique_ptr<std::byte[]> p(new std::byte[n]);  // default-initialized: no zeroing
            if (size_) std::memcpy(p.get(), p_.get(), size_);
            p_ = std::move(p);
            cap_ = n;
        }
        if (n > size_ && poison()) std::memset(p_.get() + size_, 0xFF, n - size_);
        size_ = n;
    }
    std::byte* data() { return p_.get(); }
    const std::byte* data() const { return p_.get(); }
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
    std::unique_ptr<std::byte[]> p_;
    std::size_t size_ = 0, cap_ = 0;
};

}  // namespace scanc::cpu
