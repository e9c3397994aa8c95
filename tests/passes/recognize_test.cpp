#include <gtest/gtest.h>

#include <random>

#include "combines.h"
#include "scanc/passes/passes.h"

namespace scanc {
namespace {

using namespace dsl;
using test::binary;
using test::pair;
using E = Expr;

Pattern pattern_of(const CombineRef& c) { return recognize(*c).pattern; }

TEST(Recognize, FindsEachOneLeafPatternInSeveralSpellings) {
    struct Spelling {
        Pattern want;
        CombineRef combine;
    };
    std::vector<Spelling> spellings = {
        {Pattern::Sum, binary("s1", [](Expr x, Expr y) { return x + y; })},
        {Pattern::Sum, binary("s2", [](Expr x, Expr y) { return y + x; })},
        {Pattern::Prod, binary("p1", [](Expr x, Expr y) { return x * y; })},
        {Pattern::Prod, binary("p2", [](Expr x, Expr y) { return y * x; })},
        {Pattern::Max, binary("m1", [](Expr x, Expr y) { return max(x, y); })},
        {Pattern::Max, binary("m2", [](Expr x, Expr y) { return max(y, x); })},
        {Pattern::Max, binary("m3", [](Expr x, Expr y) { return where(x > y, x, y); })},
        {Pattern::Max, binary("m4", [](Expr x, Expr y) { return where(x >= y, x, y); })},
        {Pattern::Max, binary("m5", [](Expr x, Expr y) { return where(y < x, x, y); })},
        {Pattern::Max, binary("m6", [](Expr x, Expr y) { return where(x < y, y, x); })},
        {Pattern::Max, binary("m7", [](Expr x, Expr y) { return where(y >= x, y, x); })},
        {Pattern::Max, binary("m8", [](Expr x, Expr y) { return x || y; })},
        {Pattern::Min, binary("n1", [](Expr x, Expr y) { return min(x, y); })},
        {Pattern::Min, binary("n2", [](Expr x, Expr y) { return min(y, x); })},
        {Pattern::Min, binary("n3", [](Expr x, Expr y) { return where(x < y, x, y); })},
        {Pattern::Min, binary("n4", [](Expr x, Expr y) { return where(x > y, y, x); })},
        {Pattern::Min, binary("n5", [](Expr x, Expr y) { return where(y <= x, y, x); })},
        {Pattern::Min, binary("n6", [](Expr x, Expr y) { return y && x; })},
        {Pattern::LogAddExp, binary("l1", [](Expr x, Expr y) { return logaddexp(x, y); })},
        {Pattern::LogAddExp, binary("l2", [](Expr x, Expr y) { return logaddexp(y, x); })},
        {Pattern::LogAddExp, binary("l3", [](Expr x, Expr y) { return log(exp(y) + exp(x)); })},
    };
    for (const auto& s : spellings) {
        Recognized r = recognize(*s.combine);
        EXPECT_EQ(r.pattern, s.want) << s.combine->name;
        EXPECT_TRUE(r.commutative) << s.combine->name;
        EXPECT_EQ(r.description, pattern_name(s.want)) << s.combine->name;
    }
}

TEST(Recognize, LeavesNearMissesOfOneLeafPatternsUnknown) {
    std::vector<CombineRef> near_misses = {
        binary("sub", [](Expr x, Expr y) { return x - y; }),
        binary("avg", [](Expr x, Expr y) { return (x + y) / 2; }),
        binary("double_left", [](Expr x, Expr) { return x + x; }),
        binary("square_right", [](Expr, Expr y) { return y * y; }),
        binary("max_plus_one", [](Expr x, Expr y) { return max(x, y) + 1; }),
        binary("select_left", [](Expr x, Expr y) { return where(x > y, x, x); }),
        binary("select_eq", [](Expr x, Expr y) { return where(x == y, x, y); }),
        binary("compare_other", [](Expr x, Expr y) { return where(x > 0, x, y); }),
        binary("log_sum", [](Expr x, Expr y) { return log(exp(x) + y); }),
        binary("mul_add", [](Expr x, Expr y) { return x * y + x; }),
        binary("right", [](Expr, Expr y) { return y; }),
        trace_combine("scaled_sum", 1, 1,
                      [](const Exprs& l, const Exprs& r, const Exprs& c) {
                          return Exprs{l[0] + r[0] * c[0]};
                      }),
        trace_combine("sum3", 3, 0, [](const Exprs& l, const Exprs& r, const Exprs&) {
            return Exprs{l[0] + r[0], l[1] + r[1], l[2] + r[2]};
        }),
    };
    for (const auto& c : near_misses) {
        Recognized r = recognize(*c);
        EXPECT_EQ(r.pattern, Pattern::Unknown) << c->name;
        EXPECT_FALSE(identity(r, std::vector<DType>(c->num_leaves(), DType::F32)).has_value());
    }
}

TEST(Recognize, FindsTheAffineRecurrenceInAnyOperandOrderAndEitherLeafOrder) {
    struct Spelling {
        CombineRef combine;
        int a_leaf;
    };
    std::vector<Spelling> spellings = {
        {test::affine(), 0},
        {pair("af2", [](E a1, E b1, E a2, E b2) { return Exprs{a2 * a1, b2 + b1 * a2}; }), 0},
        {pair("af3", [](E a1, E b1, E a2, E b2) { return Exprs{a1 * a2, b1 * a2 + b2}; }), 0},
        {pair("af4", [](E a1, E b1, E a2, E b2) { return Exprs{a2 * a1, b2 + a2 * b1}; }), 0},
        // Leaves in the order (b, a): the params called a1/a2 here hold the offsets.
        {pair("fa1", [](E b1, E a1, E b2, E a2) { return Exprs{a2 * b1 + b2, a1 * a2}; }), 1},
        {pair("fa2", [](E b1, E a1, E b2, E a2) { return Exprs{b2 + b1 * a2, a2 * a1}; }), 1},
    };
    for (const auto& s : spellings) {
        Recognized r = recognize(*s.combine);
        ASSERT_EQ(r.pattern, Pattern::Affine) << s.combine->name;
        EXPECT_EQ(r.a_leaf, s.a_leaf) << s.combine->name;
        EXPECT_EQ(r.b_leaf, 1 - s.a_leaf) << s.combine->name;
        EXPECT_FALSE(r.commutative) << s.combine->name;
    }
    EXPECT_EQ(recognize(*test::affine()).description, "affine (a: a1, b: b1)");
}

TEST(Recognize, RejectsSpellingsThatAreNotTheForwardAffineRecurrence) {
    using F = std::function<Exprs(Expr, Expr, Expr, Expr)>;
    std::vector<std::pair<std::string, F>> near_misses = {
        // The later map applied first: associative, but y[t] is not a[t]*y[t-1] + b[t].
        {"reversed", [](E a1, E b1, E a2, E b2) { return Exprs{a1 * a2, a1 * b2 + b1}; }},
        // Scales the earlier offset by the earlier multiplier.
        {"own_scale", [](E a1, E b1, E a2, E b2) { return Exprs{a1 * a2, a1 * b1 + b2}; }},
        {"adds_multipliers", [](E a1, E b1, E a2, E b2) { return Exprs{a1 + a2, a2 * b1 + b2}; }},
        {"subtracts_offset", [](E a1, E b1, E a2, E b2) { return Exprs{a1 * a2, a2 * b1 - b2}; }},
        {"drops_b2", [](E a1, E b1, E a2, E b2) { return Exprs{a1 * a2, a2 * b1 + b1}; }},
        {"mixed_roles", [](E a1, E b1, E a2, E b2) { return Exprs{a1 * b2, a2 * b1 + b2}; }},
    };
    for (const auto& [name, fn] : near_misses)
        EXPECT_EQ(pattern_of(pair(name, fn)), Pattern::Unknown) << name;
}

// Combining with the identity on either side gives x back, for random x.
void expect_identity(const CombineRef& c, std::vector<DType> dtypes) {
    Recognized r = recognize(*c);
    ASSERT_NE(r.pattern, Pattern::Unknown) << c->name;
    auto id = identity(r, dtypes);
    ASSERT_TRUE(id.has_value());
    ASSERT_EQ(id->size(), dtypes.size());
    CombineTypes types = instantiate_combine(*c, dtypes, {}, {});
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> real(-1e3, 1e3);
    for (int trial = 0; trial < 200; ++trial) {
        std::vector<Scalar> x;
        for (DType t : dtypes)
            x.push_back(is_float(t) ? Scalar::of_double(t, real(rng))
                                    : Scalar::of_int(t, static_cast<std::int64_t>(rng())));
        EXPECT_EQ(eval_combine(*c, types, *id, x, {}), x) << c->name << " " << dtypes[0];
        EXPECT_EQ(eval_combine(*c, types, x, *id, {}), x) << c->name << " " << dtypes[0];
    }
}

TEST(Identity, IsANeutralElementOnBothSidesForEveryPatternAndDtype) {
    using enum DType;
    auto sum = binary("sum", [](Expr x, Expr y) { return x + y; });
    auto prod = binary("prod", [](Expr x, Expr y) { return y * x; });
    auto mx = binary("max", [](Expr x, Expr y) { return max(x, y); });
    auto select_max = binary("select_max", [](Expr x, Expr y) { return where(x > y, x, y); });
    auto mn = binary("min", [](Expr x, Expr y) { return min(x, y); });
    auto lse = binary("lse", [](Expr x, Expr y) { return logaddexp(x, y); });
    auto lor = binary("lor", [](Expr x, Expr y) { return x || y; });
    auto land = binary("land", [](Expr x, Expr y) { return x && y; });
    for (DType t : {F32, F64, F16, BF16, I8, I16, I32, I64, U8}) {
        expect_identity(sum, {t});
        expect_identity(prod, {t});
        expect_identity(mx, {t});
        expect_identity(select_max, {t});
        expect_identity(mn, {t});
        expect_identity(test::affine(), {t, t});
    }
    for (DType t : {F32, F64, F16, BF16}) expect_identity(lse, {t});
    for (auto c : {mx, mn, lor, land}) expect_identity(c, {Bool});
    auto flipped = pair("flipped", [](E b1, E a1, E b2, E a2) {
        return Exprs{a2 * b1 + b2, a1 * a2};
    });
    expect_identity(flipped, {F32, F32});
}

TEST(Identity, UsesTheExtremesOfEachDtype) {
    Recognized max_r = recognize(*binary("max", [](Expr x, Expr y) { return max(x, y); }));
    Recognized min_r = recognize(*binary("min", [](Expr x, Expr y) { return min(x, y); }));
    EXPECT_EQ((*identity(max_r, std::vector{DType::I8}))[0].i, -128);
    EXPECT_EQ((*identity(max_r, std::vector{DType::U8}))[0].i, 0);
    EXPECT_EQ((*identity(min_r, std::vector{DType::U8}))[0].i, 255);
    EXPECT_EQ((*identity(min_r, std::vector{DType::I64}))[0].i, INT64_MAX);
    EXPECT_EQ((*identity(max_r, std::vector{DType::F32}))[0].f, -INFINITY);
    EXPECT_EQ((*identity(min_r, std::vector{DType::Bool}))[0].i, 1);
}

}  // namespace
}  // namespace scanc
