// Round 16 of issue 4: on AVX-512 CPUs the fix-ups' register kernel runs 16 lanes a vector and
// their phase 3's broadcast ops 64 bytes a vector (ops_avx512.cpp). That the level in use is the
// CPU's best unless SCANC_CPU_ISA caps it (ctest runs the kernel and op tests again capped at
// AVX2), and that the wide kernel and ops give the AVX2 ones' bits exactly (the same ops on the
// same operands in the same order), NaN for NaN: which NaN an op with two NaN-making operands
// returns follows the operand order the compiler picked (the ASan build's differed).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "bytecode.h"
#include "cpu_test_util.h"

namespace scanc::cpu_test {
namespace {

using cpu::Isa;

bool cpu_has_avx512() {
#if defined(__x86_64__)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("avx512f");
#else
    return false;
#endif
}

TEST(CpuIsa, TheLevelInUseIsTheCpusBestUnlessTheEnvironmentCapsIt) {
    const char* cap = std::getenv("SCANC_CPU_ISA");
    std::string c = cap ? cap : "";
    bool avx2 = false;
#if defined(__x86_64__)
    avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    Isa want = !avx2 || c == "baseline"           ? Isa::Baseline
               : cpu_has_avx512() && c != "avx2" ? Isa::Avx512
                                                  : Isa::Avx2;
    EXPECT_EQ(cpu::cpu_isa(), want) << "SCANC_CPU_ISA=" << c;
    // The 16-lane kernel serves exactly at the AVX-512 level.
    EXPECT_EQ(cpu::mem_fns().seg_local == cpu::seg_local_avx512(), want == Isa::Avx512);
}

// Three leaves whose combine takes every kind of SegOp: (a, b, c) ∘ (x, y, z) = (a x, x b + y,
// min(max(z + (c / 0.5) (z - c) copied, y), 0.5) plus 0.5).
cpu::SegProgram every_op_program() {
    using cpu::SegOp;
    cpu::SegProgram p;
    p.leaves = 3;
    for (int k = 0; k < 3; ++k) p.carry[k] = k, p.x[k] = 3 + k, p.next[k] = 6 + k;
    p.consts = {{9, 0.5f}};
    p.ops = {{SegOp::Mul, 6, 0, 3, 0},    {SegOp::MulAdd, 7, 3, 1, 4}, {SegOp::Div, 10, 2, 9, 0},
             {SegOp::Sub, 11, 5, 2, 0},   {SegOp::AddMul, 12, 10, 11, 5},
             {SegOp::Copy, 13, 12, 12, 12}, {SegOp::Max, 14, 13, 4, 0}, {SegOp::Min, 15, 14, 9, 0},
             {SegOp::Add, 8, 15, 9, 0}};
    return p;
}

// Runs `fn` over `lanes` lanes of `steps` steps (rows mode or a fix-up's phase 1) on the same
// inputs; returns the outputs and totals as bits (NaNs canonical). `shift`: elements the outputs start past
// a 64-byte boundary; `pad`: extra elements between lanes.
std::vector<std::uint32_t> run_kernel(cpu::SegLocalFn fn, bool rows, bool stream, int lanes,
                                      int steps, int shift, int pad, std::uint64_t seed) {
    cpu::SegProgram p = every_op_program();
    std::mt19937_64 rng(seed);
    std::int64_t stride = steps + pad, n = lanes * stride;
    std::vector<float> in[3];
    struct alignas(64) Line {
        float v[16];
    };
    std::vector<Line> out_mem[3];
    cpu::SegArgs a{};
    for (int k = 0; k < 3; ++k) {
        in[k].resize(n);
        for (float& v : in[k]) v = any_value(rng);
        out_mem[k].assign((n + shift) / 16 + 1, Line{});
        a.in[k] = in[k].data();
        a.out[k] = out_mem[k][0].v + shift;
    }
    std::vector<std::uint64_t> totals(std::size_t(lanes) * 3, 0);
    a.in_stride = a.out_stride = stride;
    a.steps = steps;
    a.lanes = lanes;
    a.totals = totals.data();
    a.rows = rows;
    a.stream = stream;
    fn(p, a);
#if defined(__x86_64__)
    _mm_sfence();
#endif
    // raw bits, every NaN as the one quiet NaN (see the top of the file)
    auto canonical = [](std::uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u ? 0x7fc00000u : u; };
    std::vector<std::uint32_t> bits;
    for (int k = 0; k < 3; ++k)
        for (std::int64_t l = 0; l < lanes; ++l)
            for (std::int64_t t = 0; t < steps; ++t) {
                std::uint32_t u;
                std::memcpy(&u, a.out[k] + l * stride + t, 4);
                bits.push_back(canonical(u));
            }
    for (std::uint64_t t : totals) bits.push_back(canonical(static_cast<std::uint32_t>(t)));
    return bits;
}

// Both comparisons run where the 16-lane code is in use (the AVX2-capped run has nothing new).
bool wide_in_use() { return cpu::cpu_isa() == Isa::Avx512; }

TEST(CpuIsa, SixteenLaneKernelGivesTheEightLaneKernelsBitsInFixUpsAndRows) {
    if (!wide_in_use()) GTEST_SKIP() << "the 16-lane kernel is not in use";
    cpu::SegLocalFn wide = cpu::seg_local_avx512(), narrow = cpu::mem_fns_avx2().seg_local;
    ASSERT_NE(narrow, nullptr);
    std::uint64_t seed = 16;
    // Fix-ups: whole 64-lane groups and the 32- and 8-lane rest; steps in whole 16x16
    // transposes, and 24 and 8 (not: the 8-lane kernel alone).
    for (int lanes : {8, 64, 136, 200})
        for (int steps : {8, 16, 24, 48, 752}) {
            ++seed;
            EXPECT_EQ(run_kernel(wide, false, false, lanes, steps, 0, 0, seed),
                      run_kernel(narrow, false, false, lanes, steps, 0, 0, seed))
                << lanes << " lanes x " << steps << " steps";
        }
    // Rows: 32-row passes and the 16- and 8-row rest; rows on 64-byte lines, on 32-byte ones
    // only (the 8-lane kernel streams those), and plain stores.
    for (int lanes : {8, 40, 56, 64, 96})
        for (int steps : {16, 48})
            for (auto [stream, shift, pad] : {std::tuple{true, 0, 0}, {true, 8, 0}, {true, 0, 8},
                                              {false, 3, 5}}) {
                ++seed;
                EXPECT_EQ(run_kernel(wide, true, stream, lanes, steps, shift, pad, seed),
                          run_kernel(narrow, true, stream, lanes, steps, shift, pad, seed))
                    << lanes << " rows x " << steps << " steps, stream " << stream << ", shift "
                    << shift << ", pad " << pad;
            }
}

// The op for `key` over lanes [l0, l1) of random operands (broadcast ones, where key.bcast
// says, holding `s`), its destination `shift` elements past a 64-byte boundary; the destination's
// raw bits, and for a tee op (key.tee: dst a register, the tee row that destination) then dst's.
// `tiny`: f32 operands of any binade down to the subnormals (so that products and inputs are
// often subnormal), and the op run with Frame::f64_products as `f64_products` says.
template <typename T>
std::vector<T> run_op(cpu::OpFn fn, T s, int l0, int l1, int shift, cpu::OpKey key, std::uint64_t seed,
                      bool tiny = false, bool f64_products = false) {
    std::mt19937_64 rng(seed);
    constexpr int kLanes = 600;
    std::vector<T> reg[3];
    std::uniform_int_distribution<int> binade(-160, 20);
    for (auto& r : reg) {
        r.resize(kLanes);
        for (T& v : r) v = static_cast<T>(tiny ? std::ldexp(any_value(rng), binade(rng)) : any_value(rng));
    }
    for (int k = 0; k < 3; ++k)
        if (key.bcast & (1 << k)) reg[k][0] = s;
    struct alignas(64) Line {
        T v[64 / sizeof(T)];
    };
    std::vector<Line> dst(kLanes * sizeof(T) / 64 + 2, Line{});
    T* d = dst[0].v + shift;
    std::vector<T> carry(kLanes, T(0));
    cpu::Frame f;
    f.f64_products = f64_products;
    for (auto& r : reg) f.ptrs.push_back(reinterpret_cast<std::byte*>(r.data()));
    f.ptrs.push_back(reinterpret_cast<std::byte*>(key.tee ? carry.data() : d));
    cpu::Instr in{fn, 3, 0, 1, 2};
    if (key.tee) {
        in.tee = 0;
        f.tee_rows = {reinterpret_cast<std::byte*>(d)};
    }
    fn(in, f, l0, l1);
#if defined(__x86_64__)
    _mm_sfence();
#endif
    std::vector<T> out(d, d + kLanes);
    if (key.tee) out.insert(out.end(), carry.begin(), carry.end());
    return out;
}

// The 64-byte op `wide` against the AVX2 table's op for `key`, over random operands (broadcast
// ones, where key.bcast says, taking each of a few awkward values).
template <typename T>
void expect_same_ops(cpu::OpKey key, cpu::OpFn wide, std::uint64_t& seed) {
    const T kBroadcasts[] = {T(0x1p-149f), T(-0x1p-140f), T(0x1p-100f), T(-0x1.fffffep-65f),
                             T(0x1p-63f), T(0.999f), T(-3.0f), T(0.0f)};
    cpu::OpFn narrow = cpu::lookup_op_avx2(key);
    ASSERT_NE(wide, nullptr);
    ASSERT_NE(narrow, nullptr);
    for (T s : kBroadcasts)
        for (auto [l0, l1] : {std::pair{0, 64}, {0, 512}, {3, 597}, {5, 6}})
            for (int shift : {0, 3, 8}) {
                ++seed;
                std::vector<T> x = run_op(wide, s, l0, l1, shift, key, seed);
                std::vector<T> y = run_op(narrow, s, l0, l1, shift, key, seed);
                // Bit for bit, or both NaN: the lanes before a whole vector are scalar ops,
                // and which NaN those return is the compiler's operand order.
                int differ = 0;
                for (std::size_t i = 0; i < x.size(); ++i)
                    differ += std::memcmp(&x[i], &y[i], sizeof(T)) != 0 &&
                              !(std::isnan(x[i]) && std::isnan(y[i]));
                ASSERT_EQ(differ, 0)
                    << "op " << int(key.op) << " kind " << int(key.kind) << " mask "
                    << int(key.bcast) << " stream " << key.stream << " broadcast " << s
                    << " lanes [" << l0 << ", " << l1 << ") shift " << shift;
            }
}

template <typename T>
void expect_same_bcast_ops(cpu::OpKey key, std::uint64_t& seed) {
    expect_same_ops<T>(key, cpu::lookup_bcast_avx512(key), seed);
}

TEST(CpuIsa, WideBroadcastOpsGiveTheAvx2OpsBitsOnEitherRoute) {
    if (!wide_in_use()) GTEST_SKIP() << "the wide ops are not in use";
    using cpu::OpKind;
    std::uint64_t seed = 160;
    for (bool stream : {false, true}) {
        for (Op op : {Op::Add, Op::Sub, Op::Mul, Op::Div})
            for (unsigned char mask : {1, 2, 3}) {
                expect_same_bcast_ops<float>({OpKind::Binary, op, DType::F32, DType::F32, stream, mask},
                                             seed);
                expect_same_bcast_ops<double>({OpKind::Binary, op, DType::F64, DType::F64, stream, mask},
                                              seed);
            }
        for (OpKind kind : {OpKind::MulAdd, OpKind::AddMul})
            for (unsigned char mask = 1; mask < 8; ++mask) {
                expect_same_bcast_ops<float>({kind, Op::Add, DType::F32, DType::F32, stream, mask},
                                             seed);
                expect_same_bcast_ops<double>({kind, Op::Add, DType::F64, DType::F64, stream, mask},
                                              seed);
            }
    }
}

// The op table hands out the 64-byte lane loop for `key` at the AVX-512 level, and it gives the
// AVX2 op's bits.
template <typename T>
void expect_wide_lanes(cpu::OpKey key, std::uint64_t& seed) {
    cpu::OpFn wide = cpu::lookup_lanes_avx512(key);
    ASSERT_NE(wide, nullptr) << "op " << int(key.op) << " kind " << int(key.kind);
    EXPECT_EQ(cpu::lookup_op(key), wide) << "op " << int(key.op) << " kind " << int(key.kind);
    expect_same_ops<T>(key, wide, seed);
}

// An elementwise prologue's arithmetic and transcendentals (scanc's own f32 and f64 functions)
// run 64 bytes a vector, with the AVX2 ones' bits, and the op table hands them out at the
// AVX-512 level.
TEST(CpuIsa, WideLaneLoopsOfArithmeticAndScancsOwnTranscendentalsGiveTheAvx2OpsBits) {
    if (!wide_in_use()) GTEST_SKIP() << "the wide ops are not in use";
    using cpu::OpKind;
    std::uint64_t seed = 320;
    auto expect_same = [&](cpu::OpKey key, auto type) { expect_wide_lanes<decltype(type)>(key, seed); };
    for (Op op : {Op::Exp, Op::Exp2, Op::Log, Op::Log2, Op::Log10, Op::Log1p, Op::Expm1, Op::Tanh, Op::Sigmoid, Op::Softplus,
                   Op::Sin, Op::Cos, Op::Erf, Op::Erfc, Op::Atan}) {
        expect_same({OpKind::Unary, op, DType::F32}, float{});
        expect_same({OpKind::Unary, op, DType::F64}, double{});
    }
    for (Op op : {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::LogAddExp, Op::Atan2}) {
        expect_same({OpKind::Binary, op, DType::F32}, float{});
        expect_same({OpKind::Binary, op, DType::F64}, double{});
    }
    for (OpKind kind : {OpKind::MulAdd, OpKind::AddMul}) {
        expect_same({kind, Op::Add, DType::F32}, float{});
        expect_same({kind, Op::Add, DType::F64}, double{});
    }
    // The other ops stay with the AVX2 table.
    EXPECT_EQ(cpu::lookup_lanes_avx512({OpKind::Unary, Op::Sqrt, DType::F32}), nullptr);
    EXPECT_EQ(cpu::lookup_lanes_avx512({OpKind::Binary, Op::Max, DType::F32}), nullptr);
    EXPECT_EQ(cpu::lookup_lanes_avx512({OpKind::Binary, Op::Add, DType::I32}), nullptr);
}

// The arithmetic that writes a scan's carry and its output row in one pass (OpKey::tee) and the
// arithmetic that streams a large output (OpKey::stream) also run 64 bytes a vector, with the
// AVX2 ops' bits in every row they write.
TEST(CpuIsa, WideTeeAndStreamingArithmeticGiveTheAvx2OpsBitsInEveryRow) {
    if (!wide_in_use()) GTEST_SKIP() << "the wide ops are not in use";
    using cpu::OpKind;
    std::uint64_t seed = 480;
    for (auto [stream, tee] : {std::pair{true, false}, {false, true}}) {
        for (Op op : {Op::Add, Op::Sub, Op::Mul, Op::Div}) {
            expect_wide_lanes<float>({OpKind::Binary, op, DType::F32, DType::F32, stream, 0, tee}, seed);
            expect_wide_lanes<double>({OpKind::Binary, op, DType::F64, DType::F64, stream, 0, tee}, seed);
        }
        for (OpKind kind : {OpKind::MulAdd, OpKind::AddMul}) {
            expect_wide_lanes<float>({kind, Op::Add, DType::F32, DType::F32, stream, 0, tee}, seed);
            expect_wide_lanes<double>({kind, Op::Add, DType::F64, DType::F64, stream, 0, tee}, seed);
        }
    }
    // A tee of broadcast operands has no variant at either level.
    EXPECT_EQ(cpu::lookup_op({OpKind::Binary, Op::Add, DType::F32, DType::F32, false, 1, true}), nullptr);
}

// A tile that follows one which met subnormals multiplies through f64 (Frame::f64_products, set
// by Worker::run): every f32 op with a product gives the f32 multiply's bits either way, on
// operands from every binade down to the subnormals, in each ISA's table (plain, streaming and
// tee variants; NaNs compare as NaN).
TEST(CpuIsa, ProductsThroughF64GiveTheF32MultiplysBits) {
    using cpu::OpKind;
    std::uint64_t seed = 640;
    std::vector<cpu::OpFn (*)(const cpu::OpKey&)> tables = {&cpu::lookup_op_baseline};
    if (cpu::cpu_isa() != Isa::Baseline) tables.push_back(&cpu::lookup_op_avx2);
    if (wide_in_use()) tables.push_back(&cpu::lookup_lanes_avx512);
    for (auto table : tables)
        for (OpKind kind : {OpKind::Binary, OpKind::MulAdd, OpKind::AddMul})
            for (auto [stream, tee] : {std::pair{false, false}, {true, false}, {false, true}}) {
                cpu::OpKey key{kind, Op::Mul, DType::F32, DType::F32, stream, 0, tee};
                if (kind != OpKind::Binary) key.op = Op::Add;
                cpu::OpFn fn = table(key);
                if (!fn) continue;  // the baseline table has no streaming or tee variants
                for (auto [l0, l1] : {std::pair{0, 64}, {0, 512}, {3, 597}, {5, 6}}) {
                    ++seed;
                    std::vector<float> plain = run_op<float>(fn, 0.f, l0, l1, 3, key, seed, true, false);
                    std::vector<float> f64 = run_op<float>(fn, 0.f, l0, l1, 3, key, seed, true, true);
                    int differ = 0, subnormal = 0;
                    for (std::size_t i = 0; i < plain.size(); ++i) {
                        differ += std::memcmp(&plain[i], &f64[i], 4) != 0 && !(std::isnan(plain[i]) && std::isnan(f64[i]));
                        subnormal += std::fpclassify(plain[i]) == FP_SUBNORMAL;
                    }
                    EXPECT_EQ(differ, 0) << "kind " << int(kind) << " stream " << stream << " tee " << tee << " lanes ["
                                         << l0 << ", " << l1 << ")";
                    if (l1 - l0 > 100) {
                        EXPECT_GT(subnormal, 0) << "the operands give no subnormal product";
                    }
                }
            }
}

}  // namespace
}  // namespace scanc::cpu_test
