#include <gtest/gtest.h>

#include <limits>

#include "scanc/error.h"
#include "scanc/ir/size.h"

namespace scanc {
namespace {

TEST(Size, SumsOfTheSameSymbolsAreProvablyEqualInAnyOrder) {
    Size l = Size::symbol(Symbol::make("L")), b = Size::symbol(Symbol::make("B"));
    EXPECT_TRUE(((l + b) - 3).equals((b - 1) + (l - 2)));
    EXPECT_FALSE((l + 1).equals(l));
    EXPECT_EQ((l - l).constant(), 0);
}

TEST(Size, MinOfSizesThatDifferByAConstantSimplifies) {
    Size l = Size::symbol(Symbol::make("L"));
    EXPECT_TRUE(Size::min(l, l + 4).equals(l));
    EXPECT_TRUE(Size::max(l - 1, l).equals(l));
    EXPECT_FALSE(Size::min(l, Size(4)).is_constant());
}

TEST(Size, EvaluatesWithBindingsAndFloorDivides) {
    auto sym = Symbol::make("L", 100);
    Size l = Size::symbol(sym);
    Bindings b{{sym.get(), 7}};
    EXPECT_EQ(Size::ceildiv(l, 2).evaluate(b), 4);
    EXPECT_EQ(Size::floordiv(l - 9, 2).evaluate(b), -1);
    EXPECT_EQ(Size::min(l, Size(5)).evaluate(b), 5);
    EXPECT_EQ((l * 2 + 1).upper_bound(), 201);
    EXPECT_EQ(Size::floordiv(l * 4 + 8, 4).str(), "L + 2");
}

TEST(Size, UnboundSymbolIsAUserError) {
    Size l = Size::symbol(Symbol::make("L"));
    EXPECT_THROW(l.evaluate({}), CompileError);
    EXPECT_EQ(l.upper_bound(), std::nullopt);
}

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

TEST(Size, ArithmeticPast64BitsIsASizeOverflowNotAWrappedValue) {
    auto sym = Symbol::make("N", 34);
    Size n = Size::symbol(sym);
    EXPECT_THROW(n + kMax + 1, SizeOverflow);
    EXPECT_THROW(n * kMax * 2, SizeOverflow);
    EXPECT_THROW(Size(kMax) + Size(kMax), SizeOverflow);
    EXPECT_THROW((n * 2).evaluate({{sym.get(), kMax}}), SizeOverflow);
    // A bound that overflows proves nothing: N * big is not below N.
    EXPECT_EQ(Size::min(n * (kMax / 2), n).evaluate({{sym.get(), 5}}), 5);
    EXPECT_EQ((n * (kMax / 2)).upper_bound(), std::nullopt);
}

TEST(Size, CeildivByAHugeDivisorIsExact) {
    auto sym = Symbol::make("L");
    Size l = Size::symbol(sym);
    EXPECT_EQ(Size::ceildiv(Size(5), kMax).constant(), 1);
    EXPECT_EQ(Size::ceildiv(l + 3, kMax).evaluate({{sym.get(), 7}}), 1);
    EXPECT_EQ(Size::ceildiv(l, kMax).evaluate({{sym.get(), 0}}), 0);
}

TEST(Size, SubstituteReplacesSymbolsInsideMinMaxAndFloorDiv) {
    auto n = Symbol::make("N"), m = Symbol::make("M", 9);
    // floordiv(min(X, 4) + M, 2) - X for X = N, 17 and M.
    auto with = [&](const Size& x) {
        return Size::floordiv(Size::min(x, Size(4)) + Size::symbol(m), 2) - x;
    };
    Size s = with(Size::symbol(n));
    EXPECT_EQ(s.substitute({{n.get(), Size(17)}}).str(), "floordiv(M + 4, 2) - 17");
    EXPECT_TRUE(s.substitute({{n.get(), Size::symbol(m)}}).equals(with(Size::symbol(m))));
}

}  // namespace
}  // namespace scanc
