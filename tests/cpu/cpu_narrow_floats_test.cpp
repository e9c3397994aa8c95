// f16 and bf16 loads, stores and roundings convert a row of lanes at a time in SIMD
// (ops_narrow.inc): they give half.cpp's scalar conversions bit for bit, NaNs included (an f16
// signalling NaN widens quiet, as F16C widens it), over
// every f16 and bf16 pattern and over f32 values at every rounding boundary, whatever lanes
// [l0, l1) a call covers. ctest runs them again at the baseline level (one value at a time).
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <random>
#include <vector>

#include "bytecode.h"
#include "scanc/ir/scalar_eval.h"

namespace scanc::cpu_test {
namespace {

using cpu::OpKind;

std::vector<std::uint16_t> every_narrow_pattern() {
    std::vector<std::uint16_t> v(1 << 16);
    for (std::uint32_t b = 0; b < v.size(); ++b) v[b] = static_cast<std::uint16_t>(b);
    return v;
}

// f32 values where the narrow formats round differently: each f16 and bf16 value, the midpoints
// beside it and one ulp either side of those (ties to even, carries into the exponent, overflow
// at 65520, f16's subnormals), signed zeros, infinities, quiet and signalling NaNs with payloads,
// f32 subnormals, and random bit patterns.
std::vector<float> rounding_boundaries() {
    std::vector<std::uint32_t> bits = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                                       0xffc00001u, 0x7f800001u, 0xff812345u, 0x7fbfffffu, 0x00000001u,
                                       0x807fffffu, 0x477fe000u, 0x477fefffu, 0x477ff000u, 0x7f7fffffu};
    for (std::uint32_t h = 0; h < (1u << 16); h += 7) {
        const std::uint32_t f16 = std::bit_cast<std::uint32_t>(f16_from_bits(static_cast<std::uint16_t>(h)));
        const std::uint32_t bf16 = h << 16;
        for (std::uint32_t base : {f16, bf16})
            for (std::uint32_t off : {0u, 1u, 0x0fffu, 0x1000u, 0x1001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu})
                bits.push_back(base + off), bits.push_back(base - off);
    }
    std::mt19937 rng(48);
    for (int i = 0; i < 100000; ++i) bits.push_back(rng());
    std::vector<float> v;
    for (std::uint32_t b : bits) v.push_back(std::bit_cast<float>(b));
    return v;
}

// Runs op `key` with register 0 as its source (or input slot 0 for a load) and register 1 as its
// destination (or output slot 0 for a store), over lanes [l0, l1) in pieces of `piece` lanes.
void run_op(const cpu::OpKey& key, const void* src, void* dst, int lanes, int piece) {
    const cpu::OpFn fn = cpu::lookup_op(key);
    ASSERT_NE(fn, nullptr);
    cpu::Frame f;
    f.ptrs = {static_cast<std::byte*>(const_cast<void*>(src)), static_cast<std::byte*>(dst)};
    f.in_rows = {static_cast<const std::byte*>(src)};
    f.out_rows = {static_cast<std::byte*>(dst)};
    const cpu::Instr in{fn, key.kind == OpKind::Store ? 0 : 1, 0};
    for (int l0 = 0; l0 < lanes; l0 += piece) fn(in, f, l0, std::min(lanes, l0 + piece));
}

// Pieces of these many lanes: a vector's tail at either end of every piece.
constexpr int kPieces[] = {1, 7, 8, 15, 17, 2048};

class NarrowFloats : public ::testing::TestWithParam<DType> {
protected:
    bool bf16() const { return GetParam() == DType::BF16; }
    float widen(std::uint16_t b) const { return bf16() ? bf16_from_bits(b) : f16_from_bits(b); }
    std::uint16_t narrow(float x) const { return bf16() ? bf16_bits(x) : f16_bits(x); }
};

TEST_P(NarrowFloats, LoadsWidenEveryPatternAsTheScalarConversion) {
    const std::vector<std::uint16_t> in = every_narrow_pattern();
    for (int piece : kPieces) {
        std::vector<float> out(in.size());
        run_op({OpKind::Load, Op::Add, GetParam()}, in.data(), out.data(), static_cast<int>(in.size()), piece);
        for (std::size_t i = 0; i < in.size(); ++i)
            ASSERT_EQ(std::bit_cast<std::uint32_t>(out[i]), std::bit_cast<std::uint32_t>(widen(in[i])))
                << "pattern 0x" << std::hex << in[i] << " in pieces of " << std::dec << piece;
    }
}

TEST_P(NarrowFloats, StoresRoundEveryBoundaryAsTheScalarConversion) {
    const std::vector<float> in = rounding_boundaries();
    for (int piece : kPieces) {
        std::vector<std::uint16_t> out(in.size());
        run_op({OpKind::Store, Op::Add, GetParam()}, in.data(), out.data(), static_cast<int>(in.size()), piece);
        for (std::size_t i = 0; i < in.size(); ++i)
            ASSERT_EQ(out[i], narrow(in[i])) << "f32 0x" << std::hex << std::bit_cast<std::uint32_t>(in[i])
                                             << " in pieces of " << std::dec << piece;
    }
}

TEST_P(NarrowFloats, RoundingInRegistersGivesTheNarrowValueBackAsF32) {
    const std::vector<float> in = rounding_boundaries();
    for (OpKind kind : {OpKind::RoundNarrow, OpKind::CastNarrow}) {
        std::vector<float> out(in.size());
        run_op({kind, Op::Add, DType::F32, GetParam()}, in.data(), out.data(), static_cast<int>(in.size()), 17);
        for (std::size_t i = 0; i < in.size(); ++i)
            ASSERT_EQ(std::bit_cast<std::uint32_t>(out[i]), std::bit_cast<std::uint32_t>(widen(narrow(in[i]))))
                << "f32 0x" << std::hex << std::bit_cast<std::uint32_t>(in[i]);
    }
}

INSTANTIATE_TEST_SUITE_P(Formats, NarrowFloats, ::testing::Values(DType::F16, DType::BF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace scanc::cpu_test
