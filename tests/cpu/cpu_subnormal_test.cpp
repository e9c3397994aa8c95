// Round 14 of issue 4: f32 products that come out subnormal take a microcode assist on Intel
// cores, so the fix-up's multiplies by a tiny broadcast carry (below 2^-64) and single-lane
// multiplies (the carry chains' folds) go through f64, which rounds the exact product once
// (ops_impl.inc, mul_f64). That the ops give the f32 multiply's bits for every kind of value
// on either route, and that long product scans whose carries sit among the subnormals are exact.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "bytecode.h"
#include "cpu_test_util.h"

namespace scanc::cpu_test {
namespace {

using cpu::Frame;
using cpu::Instr;
using cpu::OpKey;
using cpu::OpKind;

// The same bits, or both NaN (which NaN an op returns is not part of the contract).
bool same(float want, float got) {
    if (std::isnan(want)) return std::isnan(got);
    return std::bit_cast<std::uint32_t>(want) == std::bit_cast<std::uint32_t>(got);
}

// Broadcast values on both sides of the f64 route's threshold (2^-64), and zero.
const float kBroadcasts[] = {0x1p-149f, -0x1p-140f, 0x1.8p-127f, 0x1p-100f, -0x1.fffffep-65f,
                             0x1p-64f, 0x1p-63f, 0.999f, -3.0f, 0.0f, -0.0f};

// Runs the op for `key` over lanes [l0, l1) of three operand registers and a destination, the
// broadcast operands (key.bcast) holding `s`, and checks every lane against `want`.
template <typename Want>
void expect_op(OpKey key, float s, int l0, int l1, std::size_t dst_shift, Want want,
               std::mt19937_64& rng) {
    cpu::OpFn fn = cpu::lookup_op(key);
    if (!fn) return;  // a variant this CPU lacks (no AVX2): the runner never asks for it
    constexpr int kLanes = 600;
    std::vector<float> reg[3], dst(kLanes + 16, 1.0f);
    for (auto& r : reg) {
        r.resize(kLanes);
        for (float& v : r) v = any_value(rng);
    }
    for (int k = 0; k < 3; ++k)
        if (key.bcast & (1 << k)) reg[k][0] = s;  // a broadcast operand is the value at its pointer
    Frame f;
    for (auto& r : reg) f.ptrs.push_back(reinterpret_cast<std::byte*>(r.data()));
    float* d = dst.data() + dst_shift;  // streaming stores start where d is 32-byte aligned
    f.ptrs.push_back(reinterpret_cast<std::byte*>(d));
    Instr in{fn, 3, 0, 1, 2};
    fn(in, f, l0, l1);
#if defined(__x86_64__)
    if (key.stream) _mm_sfence();
#endif
    for (int l = l0; l < l1; ++l) {
        auto at = [&](int k) { return key.bcast & (1 << k) ? s : reg[k][l]; };
        float w = want(at(0), at(1), at(2));
        ASSERT_TRUE(same(w, d[l])) << "lane " << l << " of [" << l0 << ", " << l1 << "): "
                                   << at(0) << ", " << at(1) << ", " << at(2) << " gave "
                                   << d[l] << ", not " << w;
    }
}

// The f32 ops themselves, each rounded on its own (volatile: never fused or widened).
float mul(float a, float b, float) {
    volatile float p = a * b;
    return p;
}
float mul_add(float a, float b, float c) { return mul(a, b, 0) + c; }
float add_mul(float a, float b, float c) { return c + mul(a, b, 0); }

TEST(CpuSubnormal, BroadcastMultipliesGiveTheF32ProductsBitsOnEitherRoute) {
    std::mt19937_64 rng(14);
    for (bool stream : {false, true})
        for (unsigned char mask : {1, 2})
            for (float s : kBroadcasts)
                for (auto [l0, l1] : {std::pair{0, 64}, {0, 512}, {3, 597}, {5, 6}})
                    for (std::size_t shift : {0, 3})
                        expect_op({OpKind::Binary, Op::Mul, DType::F32, DType::F32, stream, mask},
                                  s, l0, l1, shift, mul, rng);
}

TEST(CpuSubnormal, BroadcastMultiplyAddsRoundTheProductThenTheSumOnEitherRoute) {
    std::mt19937_64 rng(15);
    for (OpKind kind : {OpKind::MulAdd, OpKind::AddMul})
        for (bool stream : {false, true})
            for (unsigned char mask : {1, 2, 3, 4, 5})
                for (float s : kBroadcasts)
                    for (auto [l0, l1] : {std::pair{0, 512}, {3, 597}})
                        expect_op({kind, Op::Add, DType::F32, DType::F32, stream, mask}, s, l0,
                                  l1, 3, kind == OpKind::MulAdd ? mul_add : add_mul, rng);
}

TEST(CpuSubnormal, SingleLaneMultipliesGiveTheF32ProductsBits) {
    std::mt19937_64 rng(16);
    for (int rep = 0; rep < 2000; ++rep) {
        int l = static_cast<int>(rng() % 64);
        expect_op({OpKind::Binary, Op::Mul, DType::F32}, 0, l, l + 1, 0, mul, rng);
        expect_op({OpKind::MulAdd, Op::Add, DType::F32}, 0, l, l + 1, 0, mul_add, rng);
        expect_op({OpKind::AddMul, Op::Add, DType::F32}, 0, l, l + 1, 0, add_mul, rng);
    }
}

// Affine over a line whose a's are powers of two walking the prefix product down among the
// subnormals (exponents -148..-127 after a descent) and b = 1, 0, 0, ...: both leaves are that
// prefix product, exact in any association (every partial product is a power of two in range),
// so the blocks' carries are subnormal and the results must equal the reference's bit for bit.
Inputs subnormal_walk(std::int64_t n, std::mt19937_64& rng) {
    Inputs in;
    for (int leaf = 0; leaf < 2; ++leaf) {
        Tensor t = Tensor::empty(DType::F32, {n});
        auto* p = static_cast<float*>(t.data());
        int e = 0;
        for (std::int64_t i = 0; i < n; ++i) {
            int step = -1;  // the descent, then a walk reflected at the band's edges
            if (e <= -140) step = rng() & 1 ? 1 : -1;
            if (e <= -140 && (e + step > -127 || e + step < -148)) step = -step;
            e += step;
            p[i] = leaf == 0 ? (step > 0 ? 2.0f : 0.5f) : (i == 0 ? 1.0f : 0.0f);
        }
        in.storage.push_back(t);
        in.views.push_back(t.view());
    }
    return in;
}

TEST(CpuSubnormal, ProductScansWhoseCarriesAreSubnormalAreExact) {
    std::mt19937_64 rng(17);
    ProgramRef p = scan_program(affine_combine(), DType::F32, 1, 0);
    // Large outputs stream (the streaming broadcast variants), smaller ones do not.
    for (std::int64_t n : {std::int64_t{4099}, std::int64_t{100003}, (std::int64_t{1} << 21) + 3}) {
        Inputs in = subnormal_walk(n, rng);
        std::vector<Tensor> ref = run_reference(p, in);
        const float* a = static_cast<const float*>(ref[0].data());
        ASSERT_EQ(std::fpclassify(a[n - 1]), FP_SUBNORMAL) << "the walk stays subnormal";
        expect_bitwise(p, in, cat("n=", n), {1, 2, 3});
    }
}

}  // namespace
}  // namespace scanc::cpu_test
