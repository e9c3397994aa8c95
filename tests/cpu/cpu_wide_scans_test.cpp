// One-op scans of integers and f64 along a contiguous lane in AVX2 registers (ops_serial_wide.inc,
// forty-eighth session): every integer dtype with add, multiply, min, max, and, or and xor, and
// f64 add and multiply, give the reference's values exactly (integer ops associate exactly; the
// f64 inputs keep every association exact) along one line and along rows, on 1-3 threads, for
// lengths around a vector's and a block's; and the kernel itself from any output offset, with
// and without a carry, with and without streaming stores, equals a plain loop.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <type_traits>

#include "bytecode.h"
#include "cpu_test_util.h"

namespace scanc::cpu_test {
namespace {

using namespace scanc::dsl;

struct OpCase {
    Op op;
    const char* name;
};
constexpr OpCase kIntOps[] = {{Op::Add, "add"},    {Op::Mul, "mul"},    {Op::Min, "min"},   {Op::Max, "max"},
                              {Op::BitAnd, "and"}, {Op::BitOr, "or"},   {Op::BitXor, "xor"}};
constexpr DType kInts[] = {DType::I8, DType::U8, DType::I16, DType::I32, DType::I64};

Expr apply(Op op, const Expr& a, const Expr& b) {
    switch (op) {
        case Op::Add: return a + b;
        case Op::Mul: return a * b;
        case Op::Min: return min(a, b);
        case Op::Max: return max(a, b);
        case Op::BitAnd: return a & b;
        case Op::BitOr: return a | b;
        default: return a ^ b;
    }
}

// x[S0, .., S{rank-1}] of `t` scanned along its last dim by `op` (x_left: the new element is the
// left operand).
ProgramRef one_op_program(Op op, DType t, bool x_left, int rank) {
    auto f = trace_combine("f", 1, 0, [&](auto& l, auto& r, auto&) {
        return Exprs{x_left ? apply(op, r[0], l[0]) : apply(op, l[0], r[0])};
    });
    ProgramBuilder pb("p");
    Shape shape;
    for (int k = 0; k < rank; ++k) shape.push_back(pb.symbol(cat("S", k)));
    return pb.build(pb.scan(f, {pb.param("x", t, shape)}, rank - 1));
}

constexpr std::int64_t kLengths[] = {1, 2, 15, 16, 17, 31, 33, 63, 64, 65, 511, 4097, 65537, (1 << 20) + 3};

TEST(CpuWideScans, IntegerScansOfEveryOpAlongALineAndAlongRowsEqualTheReference) {
    std::mt19937_64 rng(48);
    for (DType t : kInts)
        for (const OpCase& o : kIntOps)
            for (bool x_left : {false, true})
                for (std::int64_t n : kLengths) {
                    if (n > 65537 && x_left) continue;  // one long line per op and dtype is enough
                    const int rows = n <= 4097 ? 3 : 1;
                    Inputs in;
                    in.add(t, {rows, n}, Values::SmallInts, Layout::Contiguous, rng);
                    expect_bitwise(one_op_program(o.op, t, x_left, 2), in,
                                   cat(dtype_name(t), " ", o.name, " x_left=", x_left, " ", rows, "x", n), {1, 2, 3});
                }
}

TEST(CpuWideScans, F64SumsOfSmallIntegersAndProductsOfSignsEqualTheReference) {
    std::mt19937_64 rng(49);
    for (Op op : {Op::Add, Op::Mul})
        for (std::int64_t n : kLengths) {
            Inputs in;
            in.add(DType::F64, {2, n}, Values::SmallInts, Layout::Contiguous, rng);
            if (op == Op::Mul) {
                auto* p = static_cast<double*>(in.storage.back().data());
                for (std::int64_t i = 0; i < 2 * n; ++i) p[i] = rng() & 1 ? 1.0 : -1.0;
            }
            expect_bitwise(one_op_program(op, DType::F64, false, 2), in, cat("f64 ", op, " 2x", n), {1, 2, 3});
        }
}

template <typename T>
constexpr DType dtype_of() {
    if constexpr (std::is_same_v<T, std::int8_t>) return DType::I8;
    else if constexpr (std::is_same_v<T, std::uint8_t>) return DType::U8;
    else if constexpr (std::is_same_v<T, std::int16_t>) return DType::I16;
    else if constexpr (std::is_same_v<T, std::int32_t>) return DType::I32;
    else return DType::I64;
}

// The kernel from each output offset in a vector (the scalar head before the aligned body),
// from a carry or not, streamed or not, against a plain loop.
template <typename T>
void expect_kernel_matches_loop(Op op, std::mt19937_64& rng) {
    const cpu::SerialBlockFn fn = cpu::lookup_serial_block({cpu::OpKind::Binary, op, dtype_of<T>()});
    ASSERT_NE(fn, nullptr);
    auto comb = [op](T a, T b) -> T {
        using U = std::make_unsigned_t<T>;
        switch (op) {
            case Op::Add: return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
            case Op::Mul: return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
            case Op::Min: return b < a ? b : a;
            case Op::Max: return a < b ? b : a;
            case Op::BitAnd: return static_cast<T>(a & b);
            case Op::BitOr: return static_cast<T>(a | b);
            default: return static_cast<T>(a ^ b);
        }
    };
    constexpr int kN = 301;
    alignas(64) T x[kN], out[kN + 64], want[kN];
    for (T& v : x) v = static_cast<T>(static_cast<int>(rng() % 17) - (std::is_signed_v<T> ? 8 : 0));
    for (int offset = 0; offset < static_cast<int>(32 / sizeof(T)); ++offset)
        for (bool carried : {false, true})
            for (bool stream : {false, true}) {
                const T carry = static_cast<T>(rng() % 5);
                T c = carried ? comb(carry, x[0]) : x[0];
                want[0] = c;
                for (int i = 1; i < kN; ++i) want[i] = c = comb(c, x[i]);
                T last{};
                fn(carried ? reinterpret_cast<const std::byte*>(&carry) : nullptr, reinterpret_cast<const std::byte*>(x),
                   reinterpret_cast<std::byte*>(out + offset), kN, reinterpret_cast<std::byte*>(&last), false, stream,
                   nullptr);
                ASSERT_EQ(std::memcmp(out + offset, want, sizeof(want)), 0)
                    << dtype_name(dtype_of<T>()) << " " << op << " offset " << offset << " carried " << carried
                    << " stream " << stream;
                ASSERT_EQ(last, want[kN - 1]);
            }
}

TEST(CpuWideScans, TheKernelFromAnyOutputOffsetEqualsAPlainLoop) {
    std::mt19937_64 rng(50);
    for (const OpCase& o : kIntOps) {
        expect_kernel_matches_loop<std::int8_t>(o.op, rng);
        expect_kernel_matches_loop<std::uint8_t>(o.op, rng);
        expect_kernel_matches_loop<std::int16_t>(o.op, rng);
        expect_kernel_matches_loop<std::int32_t>(o.op, rng);
        expect_kernel_matches_loop<std::int64_t>(o.op, rng);
    }
}

}  // namespace
}  // namespace scanc::cpu_test
