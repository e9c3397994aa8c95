#include <gtest/gtest.h>

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

}  // namespace
}  // namespace scanc
