// Non-temporal ("streaming") copies for outputs that are large and written once.
//
// An ordinary store to a line not in cache first reads the line (write-allocate), so a scan with
// ordinary stores moves 12 bytes of DRAM traffic per f32 element where a copy with streaming
// stores moves 8. stream_copy writes the aligned body of `dst` with streaming stores (the
// unaligned head and tail with ordinary ones). Streaming stores are weakly ordered:
// stream_fence() must run before another thread may read the data (before a barrier or the
// end of a thread's work). Without SSE2 both are a plain memcpy and nothing.
//
// Internal linkage on purpose: this header is compiled once per instruction set (the AVX2 op
// table uses 32-byte stores), and an inline function with external linkage would let the linker
// keep the AVX2 copy for every caller. Code built without AVX2 (the runner) reaches the best
// copy for this CPU through mem_fns() (bytecode.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace scanc::cpu {
namespace {

inline void stream_copy(void* dst, const void* src, std::size_t bytes) {
#if defined(__SSE2__)
#if defined(__AVX2__)
    constexpr std::size_t kAlign = 32;
#else
    constexpr std::size_t kAlign = 16;
#endif
    auto* d = static_cast<char*>(dst);
    const auto* s = static_cast<const char*>(src);
    std::size_t misalign = reinterpret_cast<std::uintptr_t>(d) & (kAlign - 1);
    std::size_t head = (kAlign - misalign) & (kAlign - 1);
    if (head >= bytes) {
        std::memcpy(d, s, bytes);
        return;
    }
    std::memcpy(d, s, head);
    d += head, s += head, bytes -= head;
    std::size_t body = bytes & ~std::size_t{63};
    for (std::size_t i = 0; i < body; i += 64) {
#if defined(__AVX2__)
        __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i));
        __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 32));
        _mm256_stream_si256(reinterpret_cast<__m256i*>(d + i), a);
        _mm256_stream_si256(reinterpret_cast<__m256i*>(d + i + 32), b);
#else
        __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
        __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
        __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
        __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
        _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), a);
        _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), b);
        _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), c);
        _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), e);
#endif
    }
    for (; body + 16 <= bytes; body += 16)
        _mm_stream_si128(reinterpret_cast<__m128i*>(d + body),
                         _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + body)));
    std::memcpy(d + body, s + body, bytes - body);
#else
    std::memcpy(dst, src, bytes);
#endif
}

}  // namespace

inline void stream_fence() {
#if defined(__SSE2__)
    _mm_sfence();
#endif
}

}  // namespace scanc::cpu
