#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>

#include "scanc/error.h"
#include "scanc/ir/builder.h"
#include "scanc/ir/size.h"
#include "small_stack.h"

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

// What an emitter computing sizes at run time does with parts(): the same value as evaluate().
std::int64_t evaluate_by_parts(const Size& s, const Bindings& b) {
    std::int64_t v = s.constant_term();
    for (const Size::Part& p : s.parts()) {
        std::int64_t term = 0;
        switch (p.kind) {
            case Size::Part::Kind::Symbol: term = b.at(p.symbol.get()); break;
            case Size::Part::Kind::Min:
                term = std::min(evaluate_by_parts(p.args[0], b), evaluate_by_parts(p.args[1], b));
                break;
            case Size::Part::Kind::Max:
                term = std::max(evaluate_by_parts(p.args[0], b), evaluate_by_parts(p.args[1], b));
                break;
            case Size::Part::Kind::FloorDiv: {
                std::int64_t a = evaluate_by_parts(p.args[0], b);
                term = a / p.divisor - (a % p.divisor < 0);
                break;
            }
        }
        v += p.coefficient * term;
    }
    return v;
}

TEST(Size, PartsSpellOutTheSameValueAsEvaluate) {
    auto ls = Symbol::make("L"), ks = Symbol::make("K");
    Size l = Size::symbol(ls), k = Size::symbol(ks);
    Size s = 2 * l - Size::min(k, l) + Size::floordiv(l - 9, 4) * 3 + Size::max(k - 5, l) + 7;
    for (std::int64_t lv : {0, 1, 2, 7, 31, 65})
        for (std::int64_t kv : {0, 3, 16}) {
            Bindings b{{ls.get(), lv}, {ks.get(), kv}};
            EXPECT_EQ(evaluate_by_parts(s, b), s.evaluate(b)) << "L=" << lv << " K=" << kv;
        }
    EXPECT_EQ(Size(5).parts().size(), 0u);
    EXPECT_EQ(Size(5).constant_term(), 5);
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

namespace scanc {
namespace {

// n-th order differences, x[1:] - x[:-1] taken 60 times: each slice's length is that of the
// last minus one, so the lengths stay one term (T - min(T, k)) where nesting them would double
// the expression per slice (an 8th difference took seconds, a 9th never ended).
TEST(SliceLength, ChainsOfShiftsKeepOneTermAndTheirValue) {
    SymbolRef t = Symbol::make("T");
    Size n = Size::symbol(t);
    for (int k = 1; k <= 60; ++k) {
        const Size front = slice_length(n, 1, Size::symbol(t), 1);   // x[1:T]
        const Size back = slice_length(n, 0, -1, 1);                 // x[:-1]
        ASSERT_TRUE(front.equals(back)) << front.str() << " against " << back.str();
        n = front;
        EXPECT_EQ(n.str(), cat("T - min(T, ", k, ")"));
        for (std::int64_t value : {0, 1, k - 1, k, k + 1, 1000})
            EXPECT_EQ(n.evaluate({{t.get(), value}}), std::max<std::int64_t>(value - k, 0)) << "T = " << value;
    }
}

// Python's slice length for a concrete n: a negative constant bound counts from the end, any
// other bound clamps to [0, n].
std::int64_t python_slice_length(std::int64_t n, std::int64_t start, bool start_constant, std::int64_t stop,
                                 bool stop_constant, std::int64_t step) {
    auto position = [&](std::int64_t v, bool constant) {
        if (constant && v < 0) return std::max<std::int64_t>(n + v, 0);
        return std::clamp<std::int64_t>(v, 0, n);
    };
    const std::int64_t a = position(start, start_constant), b = position(stop, stop_constant);
    return b > a ? (b - a + step - 1) / step : 0;
}

// Chains of 60 slices of one kind, each bound a constant, a symbol or an expression: every
// length agrees with Python's at sizes around the bounds, and its text grows by a few terms a
// slice (clamping both bounds to [0, n] named n twice a slice, so that 30 links took minutes).
TEST(SliceLength, ChainsOfEveryKindOfBoundKeepTheirValueAndGrowLinearly) {
    SymbolRef t = Symbol::make("T"), k = Symbol::make("K");
    const Size T = Size::symbol(t), K = Size::symbol(k);
    struct Link {
        const char* name;
        Size start, stop;
        std::int64_t step;
    };
    const std::vector<Link> links = {
        {"x[1:-1]", 1, -1, 1},        {"x[K:T]", K, T, 1},     {"x[1:K]", 1, K, 1},
        {"x[K:K + 7]", K, K + 7, 1}, {"x[1:T:2]", 1, T, 2},  {"x[K:T:3]", K, T, 3},
        {"x[-5:-1]", -5, -1, 1},      {"x[-3:K]", -3, K, 1},   {"x[K - 2:T]", K - 2, T, 1},
        {"x[2:-3:2]", 2, -3, 2},
    };
    for (const Link& link : links) {
        Size n = T;
        for (int depth = 1; depth <= 60; ++depth) {
            const Size previous = n;
            n = slice_length(n, link.start, link.stop, link.step);
            ASSERT_LT(n.str().size(), 40u * depth + 40) << link.name << " x " << depth << ": " << n.str();
            for (std::int64_t tv : {0, 1, 2, 7, 31, 64, 65, 127, 1000})
                for (std::int64_t kv : {0, 1, 3, 5}) {
                    const Bindings b{{t.get(), tv}, {k.get(), kv}};
                    const std::int64_t expected = python_slice_length(
                        previous.evaluate(b), link.start.evaluate(b), link.start.is_constant(),
                        link.stop.evaluate(b), link.stop.is_constant(), link.step);
                    ASSERT_EQ(n.evaluate(b), expected)
                        << link.name << " x " << depth << " at T = " << tv << ", K = " << kv << ": " << n.str();
                }
        }
    }
}

// x[1:T - 1] of x[1:T - 1] of ...: the stop names the first length, so each link nests the one
// before in a min and a max. Each new term's range comes from the ranges of the terms below
// it, kept with them: walked anew at every link, 1000 links took seconds and 4000 half a
// minute. (1000 here: evaluating recurses through the nesting, and 4000 overflowed the stack
// of an AddressSanitizer build.)
TEST(SliceLength, ChainsWhoseStopNamesTheFirstLengthKeepTheirValueOverAThousandLinks) {
    SymbolRef t = Symbol::make("T");
    const Size T = Size::symbol(t);
    Size n = T;
    for (int depth = 0; depth < 1000; ++depth) n = slice_length(n, 1, T - 1, 1);
    for (std::int64_t tv : {0, 1, 2, 3, 1000, 2001, 2002, 2003, 100000}) {
        std::int64_t expected = tv;
        for (int depth = 0; depth < 1000; ++depth)
            expected = python_slice_length(expected, 1, true, tv - 1, false, 1);
        EXPECT_EQ(n.evaluate({{t.get(), tv}}), expected) << "T = " << tv;
    }
}

// The longest chain a program may hold (kMaxNodeDepth) nests its length that deep: evaluating,
// substituting into, listing the symbols of and freeing it take no recursion (2 MiB of stack
// overflowed in evaluate before), so a thread of 256 KiB does all four.
TEST(SliceLength, ChainsOfTheLongestLengthAreWalkedAndFreedOnASmallStack) {
    constexpr int kLinks = kMaxNodeDepth;
    SymbolRef t = Symbol::make("T"), k = Symbol::make("K");
    const Size T = Size::symbol(t);
    std::int64_t value = -1, expected = 30000, substituted = -1;
    std::size_t symbols = 0;
    bool equal = false;
    for (int depth = 0; depth < kLinks; ++depth)
        expected = python_slice_length(expected, 1, true, 30000 - 1, false, 1);
    on_a_stack_of(256 << 10, [&] {
        Size n = T;
        for (int depth = 0; depth < kLinks; ++depth) n = slice_length(n, 1, T - 1, 1);
        value = n.evaluate({{t.get(), 30000}});
        substituted = n.substitute({{t.get(), Size::symbol(k)}}).evaluate({{k.get(), 30000}});
        symbols = n.symbols().size();
        Size apart = T;
        for (int depth = 0; depth < kLinks; ++depth) apart = slice_length(apart, 1, T - 1, 1);
        equal = n.equals(apart);
    });
    EXPECT_EQ(expected, 30000 - 1 - kLinks);
    EXPECT_EQ(value, expected);
    EXPECT_EQ(substituted, expected);
    EXPECT_EQ(symbols, 1u);
    EXPECT_TRUE(equal);
}

TEST(SliceLength, ChainsThatTrimBothEndsKeepOneTerm) {
    SymbolRef t = Symbol::make("T"), k = Symbol::make("K");
    Size trimmed = Size::symbol(t), dropped = Size::symbol(t);
    for (int depth = 0; depth < 30; ++depth) {
        trimmed = slice_length(trimmed, 1, -1, 1);                            // x[1:-1]
        dropped = slice_length(dropped, Size::symbol(k), Size::symbol(t), 1);  // x[K:T]
    }
    EXPECT_EQ(trimmed.str(), "T - min(T, 60)");
    EXPECT_EQ(dropped.str(), "T - min(T, 30*K)");
}

// A size nested 40 deep (concats of slices of the last: its text doubles a link) evaluates at
// once, and its brief text for messages is cut short.
TEST(Size, DeeplyNestedSizesEvaluateOnceATermAndPrintBriefly) {
    SymbolRef t = Symbol::make("T");
    Size n = Size::symbol(t);
    std::int64_t expected = 100;
    for (int depth = 0; depth < 40; ++depth) {
        n = slice_length(n, 1, -1, 1) + slice_length(n, 0, 1, 1);  // concat(x[1:-1], x[:1])
        expected = std::max<std::int64_t>(expected - 2, 0) + std::min<std::int64_t>(expected, 1);
    }
    EXPECT_EQ(n.evaluate({{t.get(), 100}}), expected);
    EXPECT_EQ(n.substitute({{t.get(), Size(100)}}).constant(), expected);
    EXPECT_EQ(n.symbols().size(), 1u);
    const std::string brief = n.brief();
    EXPECT_LE(brief.size(), 243u);
    EXPECT_EQ(brief.substr(brief.size() - 3), "...");
}

// Slices that name the same elements in different ways are provably as long (what a difference
// or a central difference adds up), on a symbol and on a slice of one.
TEST(SliceLength, SlicesOfTheSameElementsAreProvablyEquallyLong) {
    SymbolRef t = Symbol::make("T"), k = Symbol::make("K");
    const Size T = Size::symbol(t), K = Size::symbol(k);
    for (const Size& n : {T, slice_length(T, K, T, 1), slice_length(T, 3, -2, 1)}) {
        auto expect_same = [&](Size s1, Size e1, std::int64_t step1, Size s2, Size e2, std::int64_t step2) {
            const Size a = slice_length(n, s1, e1, step1), b = slice_length(n, s2, e2, step2);
            EXPECT_TRUE(a.equals(b)) << "n = " << n.str() << ": " << a.str() << " against " << b.str();
        };
        expect_same(1, -1, 1, 2, n, 1);          // x[1:-1], x[2:]
        expect_same(1, -1, 1, 0, -2, 1);         // x[1:-1], x[:-2]
        expect_same(0, -1, 2, 1, n, 2);          // x[:-1:2], x[1::2]
        expect_same(0, -1000, 1, Size(0) - K, -1000, 1);  // a symbolic start clamps at 0
        expect_same(4, -1, 1, 0, -5, 1);         // x[4:-1], x[:-5]
        expect_same(Size(0) - K, -1, 1, 0, -1, 1);        // x[-K:-1], x[:-1]
        expect_same(K, n, 1, 0, n - K, 1);       // x[K:], x[:n - K]
        expect_same(0, n - 1, 1, 0, -1, 1);      // x[:n - 1], x[:-1]
    }
}

// Lengths that no canonical sum shows equal are compared by value over their one symbol: the
// strided slices that split x into d interleaved parts add up to x (Hermite's identity), on a
// symbol and on a slice of one.
TEST(Size, TheLengthsOfTheStridedPartsOfXAddUpToItsLength) {
    SymbolRef t = Symbol::make("T");
    const Size T = Size::symbol(t);
    for (const Size& n : {T, slice_length(T, 3, -2, 1), Size::floordiv(T, 3)}) {
        const Size halves = slice_length(n, 0, n, 2) + slice_length(n, 1, n, 2);
        EXPECT_TRUE(halves.same_value(n)) << halves.str();
        EXPECT_TRUE((Size::floordiv(n + 1, 2) + Size::floordiv(n, 2)).same_value(n));
        Size thirds = 0;
        for (int r = 0; r < 3; ++r) thirds = thirds + slice_length(n, r, n, 3);
        EXPECT_TRUE(thirds.same_value(n)) << thirds.str();
        EXPECT_FALSE(halves.same_value(n + 1));
        EXPECT_FALSE(thirds.same_value(slice_length(n, 1, n, 1)));
    }
}

// Sizes of one symbol equal up to some length, or at every other value, are not equal.
TEST(Size, SizesOfOneSymbolThatDifferAnywhereAreNotEqual) {
    SymbolRef t = Symbol::make("T");
    const Size T = Size::symbol(t);
    EXPECT_FALSE(Size::min(T, 1000).same_value(Size::min(T, 1001)));   // from T = 1001 on
    EXPECT_FALSE((Size::floordiv(T, 2) * 2).same_value(T));              // at odd T
    EXPECT_FALSE(Size::floordiv(T, 2).same_value(Size::floordiv(T + 1, 2)));
    EXPECT_FALSE(Size::floordiv(T, 6).same_value(Size::floordiv(Size::floordiv(T, 2), 4)));
    EXPECT_TRUE(Size::floordiv(T, 8).same_value(Size::floordiv(Size::floordiv(T, 2), 4)));
    EXPECT_TRUE((Size::max(T, 3) - 3).same_value(T - Size::min(T, 3)));
    EXPECT_TRUE(Size::min(T * 2, T + 7).same_value(T + Size::min(T, 7)));
}

// A bound is a promise about every run: sizes equal up to it are equal.
TEST(Size, SizesOfABoundedSymbolAreEqualWhereTheyAgreeUpToTheBound) {
    const Size bounded = Size::symbol(Symbol::make("T", 4)), T = Size::symbol(Symbol::make("T"));
    EXPECT_TRUE(Size::floordiv(bounded + 3, 4).same_value(Size::min(bounded, 1)));  // 1 from T = 1 to 4
    EXPECT_FALSE(Size::floordiv(T + 3, 4).same_value(Size::min(T, 1)));              // 2 at T = 5
    EXPECT_FALSE(Size::floordiv(bounded + 2, 4).same_value(Size::min(bounded, 1)));  // 0 at T = 1
}

// Over two symbols only canonical forms decide: the same identity in T + K is left unequal.
TEST(Size, SizesOfTwoSymbolsAreComparedByTheirCanonicalFormsAlone) {
    const Size n = Size::symbol(Symbol::make("T")) + Size::symbol(Symbol::make("K"));
    EXPECT_FALSE((Size::floordiv(n + 1, 2) + Size::floordiv(n, 2)).same_value(n));
}

// A random size of T: sums, multiples, min, max, floordiv and ceildiv with small constants.
Size random_size(std::mt19937_64& rng, const Size& T, int depth) {
    auto draw = [&](std::int64_t lo, std::int64_t hi) {
        return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
    };
    auto below = [&] { return random_size(rng, T, depth - 1); };
    switch (draw(0, depth > 0 ? 6 : 1)) {
        case 0: return T + draw(-3, 3);
        case 1: return Size(draw(0, 9));
        case 2: return below() + below();
        case 3: return below() * draw(-2, 3);
        case 4: return Size::min(below(), below());
        case 5: return Size::max(below(), below());
        default: return draw(0, 1) ? Size::floordiv(below(), draw(2, 4)) : Size::ceildiv(below(), draw(2, 4));
    }
}

// equals(a, b) is exactly "a and b agree at every T" on random sizes of T: each against the same
// value written another way (split by Hermite's identity, or scaled and floor-divided back), and
// against that plus a size that is 0 up to some length, or at every other T, and not elsewhere.
// So they differ, if anywhere, at T = 1 or past c < 40: T in [0, 200] shows whether they agree.
TEST(Size, RandomSizesOfOneSymbolAreEqualExactlyWhereTheirValuesAgree) {
    SymbolRef t = Symbol::make("T");
    const Size T = Size::symbol(t);
    std::mt19937_64 rng(29);
    int equal = 0, unequal = 0;
    for (int trial = 0; trial < 400; ++trial) {
        const Size a = random_size(rng, T, 3);
        const std::int64_t d = 2 + static_cast<std::int64_t>(rng() % 3), c = static_cast<std::int64_t>(rng() % 40);
        Size b = 0;
        switch (rng() % 3) {
            case 0:
                for (std::int64_t r = 0; r < d; ++r) b = b + Size::floordiv(a + r, d);
                break;
            case 1: b = Size::floordiv(a * d + c % d, d); break;
            default: b = Size::ceildiv(a * d - c % d, d); break;
        }
        switch (rng() % 3) {
            case 0: b = b + Size::min(T, c) - Size::min(T, c + 1); break;      // -1 from T = c + 1
            case 1: b = b + Size::floordiv(T, 2) * 2 - T; break;            // -1 at odd T
            default: break;
        }
        bool agree = true;
        for (std::int64_t v = 0; v <= 200 && agree; ++v)
            agree = a.evaluate({{t.get(), v}}) == b.evaluate({{t.get(), v}});
        EXPECT_EQ(a.same_value(b), agree) << a.str() << " against " << b.str();
        ++(agree ? equal : unequal);
    }
    EXPECT_GT(equal, 100);
    EXPECT_GT(unequal, 100);
}

}  // namespace
}  // namespace scanc
