// Picks the op table for this CPU once (AVX2 when present, AVX-512 kernels on top), and
// constant registers.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string_view>
#include <vector>

#include "bytecode.h"

namespace scanc::cpu {

namespace {
Isa detect() {
#if defined(__x86_64__)
    // F16C comes with AVX2 on every x86 CPU made; the AVX2 table's f16 conversions use it.
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") || !__builtin_cpu_supports("f16c"))
        return Isa::Baseline;
    return __builtin_cpu_supports("avx512f") ? Isa::Avx512 : Isa::Avx2;
#else
    return Isa::Baseline;
#endif
}
bool has_avx2() { return cpu_isa() != Isa::Baseline; }
}  // namespace

Isa cpu_isa() {
    static const Isa isa = [] {
        Isa best = detect();
        const char* cap = std::getenv("SCANC_CPU_ISA");
        std::string_view c = cap ? cap : "";
        if (c == "baseline") return Isa::Baseline;
        if (c == "avx2" && best == Isa::Avx512) return Isa::Avx2;
        return best;
    }();
    return isa;
}

bool f64_products_pay() {
    static const bool pay = [] {
        if (const char* e = std::getenv("SCANC_CPU_F64_PRODUCTS"); e && (*e == '0' || *e == '1') && !e[1])
            return *e == '1';
        // Products that come out subnormal, of a subnormal and a normal factor (a running
        // product decaying on) and of two normal ones (one just going under), each route at
        // its best of 9 calls, the two routes in turn.
        constexpr int kLanes = 4096;
        std::vector<float> a(kLanes), b(kLanes), d(kLanes);
        for (int l = 0; l < kLanes; ++l) {
            a[l] = l % 2 ? 0x1.8p-130f : 0x1.3p-70f;
            b[l] = l % 2 ? 0.9f : 0x1.1p-60f;
        }
        Frame f;
        f.ptrs = {reinterpret_cast<std::byte*>(a.data()), reinterpret_cast<std::byte*>(b.data()),
                  reinterpret_cast<std::byte*>(d.data())};
        const Instr mul{lookup_op({OpKind::Binary, Op::Mul, DType::F32}), 2, 0, 1};
        double best[2] = {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
        for (int trial = 0; trial < 18; ++trial) {
            f.f64_products = trial % 2;
            auto t0 = std::chrono::steady_clock::now();
            mul.fn(mul, f, 0, kLanes);
            best[trial % 2] = std::min(best[trial % 2], std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        return best[1] < best[0];
    }();
    return pay;
}

OpFn lookup_op(const OpKey& key) {
    // Broadcast variants (the fix-up's phase 3) 16 f32 lanes a vector; the same values.
    if (cpu_isa() == Isa::Avx512 && key.bcast && !key.tee) return lookup_bcast_avx512(key);
    // The arithmetic and f32 exp, log, ... 64 bytes a vector; the same values.
    if (cpu_isa() == Isa::Avx512)
        if (OpFn fn = lookup_lanes_avx512(key)) return fn;
    return has_avx2() ? lookup_op_avx2(key) : lookup_op_baseline(key);
}

SerialFn lookup_serial(const OpKey& key) {
    return has_avx2() ? lookup_serial_avx2(key) : lookup_serial_baseline(key);
}

SerialBlockFn lookup_serial_block(const OpKey& key) {
    return has_avx2() ? lookup_serial_block_avx2(key) : lookup_serial_block_baseline(key);
}

TransposeFn transpose_fn() { return has_avx2() ? transpose_avx2() : transpose_baseline(); }

const MemFns& mem_fns() {
    static const MemFns fns = [] {
        MemFns f = has_avx2() ? mem_fns_avx2() : mem_fns_baseline();
        if (cpu_isa() == Isa::Avx512) {
            f.seg_local = seg_local_avx512();
            f.row_scan = row_scan_avx512();
            f.row_lanes = 16;
        }
        return f;
    }();
    return fns;
}

namespace {
template <typename T>
void fill(std::byte* reg, int lanes, T v) {
    T* r = reinterpret_cast<T*>(reg);
    for (int l = 0; l < lanes; ++l) r[l] = v;
}
}  // namespace

void fill_const(std::byte* reg, DType t, double f, std::int64_t i, int lanes) {
    switch (t) {
        case DType::Bool: fill<std::uint8_t>(reg, lanes, i != 0); break;
        case DType::U8: fill(reg, lanes, static_cast<std::uint8_t>(i)); break;
        case DType::I8: fill(reg, lanes, static_cast<std::int8_t>(i)); break;
        case DType::I16: fill(reg, lanes, static_cast<std::int16_t>(i)); break;
        case DType::I32: fill(reg, lanes, static_cast<std::int32_t>(i)); break;
        case DType::I64: fill(reg, lanes, i); break;
        case DType::F16:
        case DType::BF16:
        case DType::F32: fill(reg, lanes, static_cast<float>(f)); break;
        case DType::F64: fill(reg, lanes, f); break;
    }
}

}  // namespace scanc::cpu
