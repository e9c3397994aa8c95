// Non-temporal ("streaming") copies for outputs that are large and written once.
//
// An ordinary store to a line not in cache first reads the line (write-allocate), so a scan with
// ordinary stores moves 12 bytes of DRAM traffic per f32 element where a copy with streaming
// stores moves 8. stream_copy writes the 16-byte-aligned body of `dst` with streaming stores
// (the unaligned head and tail with ordinary ones). Streaming stores are weakly ordered:
// stream_fence() must run before another thread may read the data (before a barrier or the
// end of a thread's work). Without SSE2 both are a plain memcpy and nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace scanc::cpu {

inline void stream_copy(void* dst, const void* src, std::size_t bytes) {
#if defined(__SSE2__)
    auto* d = static_cast<char*>(dst);
    const auto* s = static_cast<const char*>(src);
    std::size_t head = (16 - (reinterpret_cast<std::uintptr_t>(d) & 15)) & 15;
    if (head >= bytes) {
        std::memcpy(d, s, bytes);
        return;
    }
    std::memcpy(d, s, head);
    d += head, s += head, bytes -= head;
    std::size_t body = bytes & ~std::size_t{63};
    for (std::size_t i = 0; i < body; i += 64) {
        __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
        __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
        __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
        __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
        _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), a);
        _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), b);
        _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), c);
        _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), e);
    }
    for (; body + 16 <= bytes; body += 16)
        _mm_stream_si128(reinterpret_cast<__m128i*>(d + body),
                         _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + body)));
    std::memcpy(d + body, s + body, bytes - body);
#else
    std::memcpy(dst, src, bytes);
#endif
}

inline void stream_fence() {
#if defined(__SSE2__)
    _mm_sfence();
#endif
}

}  // namespace scanc::cpu
