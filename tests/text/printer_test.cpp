// The canonical printer: the layout DESIGN §2 shows, minimal parentheses, names, literals.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "design_example.h"
#include "scanc/dsl/expr.h"
#include "scanc/text/parser.h"
#include "scanc/text/printer.h"

namespace scanc {
namespace {

using namespace dsl;

// The canonical form of a text is the text without its comments, when it is laid out as the
// printer lays it out (as DESIGN §2's example is).
std::string without_comments(const std::string& text) {
    std::string out, line;
    std::istringstream in(text);
    while (std::getline(in, line)) {
        if (std::size_t hash = line.find('#'); hash != std::string::npos) {
            std::size_t last = line.find_last_not_of(' ', hash == 0 ? 0 : hash - 1);
            if (hash == 0 || last == std::string::npos) continue;  // a comment-only line
            line.resize(last + 1);
        }
        out += line + "\n";
    }
    return out;
}

std::string reprint(std::string_view text) { return print_module(parse_module(text)); }

TEST(Printer, TheDesignExampleWithoutItsCommentsIsItsCanonicalForm) {
    std::string canonical = without_comments(kDesignExample);
    EXPECT_EQ(canonical.find('#'), std::string::npos);
    EXPECT_EQ(reprint(kDesignExample), canonical);
    EXPECT_EQ(reprint(canonical), canonical);
}

TEST(Printer, CommentsSpacingAndNegativeDimsAreNormalized) {
    EXPECT_EQ(reprint("# c\n\n\ncombine   add(a|b){return a+b}\n"
                      "program p(x:i32[N<=8,4],y:i32[N,4]){  # x\n"
                      "s=scan add(x+y)dim=-2\n\n\nreturn s}"),
              "combine add(a | b) {\n  return a + b\n}\n\n"
              "program p(x: i32[N<=8, 4], y: i32[N, 4]) {\n"
              "  s = scan add(x + y) dim=0\n  return s\n}\n");
}

TEST(Printer, ParenthesesAppearOnlyWhereThePrecedenceNeedsThem) {
    const char* text =
        "program p(a: i32[], b: i32[], c: i32[], f: bool[]) {\n"
        "  return a - (b - c), (a - b) - c, (a + b) * c, a + b * c, -(a * b), -a * b, "
        "-(-a), (a < b) == f, not (f and f), not f and f, (not f) == f, a & b | c ^ a, "
        "(a | b) & c, -(2), -2 * a, a - -2, a << b + c, (a << b) + c\n}\n";
    EXPECT_EQ(reprint(text),
              "program p(a: i32[], b: i32[], c: i32[], f: bool[]) {\n"
              "  return a - (b - c), a - b - c, (a + b) * c, a + b * c, -(a * b), -a * b, "
              "-(-a), (a < b) == f, not (f and f), not f and f, (not f) == f, a & b | c ^ a, "
              "(a | b) & c, -(2), -2 * a, a - -2, a << b + c, (a << b) + c\n}\n");
}

TEST(Printer, FloatLiteralsAreShortestRoundTripAndAlwaysLookLikeFloats) {
    EXPECT_EQ(reprint("program p(x: f64[]) {\n  return x * 2.0, x + 0.1, 1e-300, 1e+20, "
                      "-0.0, 1.5, inf, -inf, nan, 3, 123456789012.0, 0.30000000000000004\n}\n"),
              "program p(x: f64[]) {\n  return x * 2.0, x + 0.1, 1e-300, 1e+20, -0.0, 1.5, inf, "
              "-inf, nan, 3, 123456789012.0, 0.30000000000000004\n}\n");
}

TEST(Printer, SharedValuesGetStatementsAndInventedNamesAvoidExistingOnes) {
    ProgramBuilder b("shared");
    Size n = b.symbol("N");
    Expr t0 = b.param("t0", DType::F32, {n});
    Expr e = exp(t0);  // unnamed, used twice
    Expr named = e * 2.0;
    named.node()->name = "t1";
    ProgramRef p = b.build({e + named, named});
    EXPECT_EQ(print_program(*p), "program shared(t0: f32[N]) {\n"
                                 "  t2 = exp(t0)\n"
                                 "  t1 = t2 * 2.0\n"
                                 "  return t2 + t1, t1\n}\n");
}

TEST(Printer, RepeatedHintsGetSuffixesAndBadHintsBecomeIdentifiers) {
    ProgramBuilder b("names");
    Expr x = b.param("x", DType::I32, {4});
    Expr a = x + 1;
    a.node()->name = "x";
    Expr c = a * 3;
    c.node()->name = "x";
    Expr d = c - 1;
    d.node()->name = "not";
    Expr e = d + 5;
    e.node()->name = "2nd value";
    ProgramRef p = b.build({e});
    EXPECT_EQ(print_program(*p), "program names(x: i32[4]) {\n"
                                 "  x_1 = x + 1\n"
                                 "  x_2 = x_1 * 3\n"
                                 "  not_ = x_2 - 1\n"
                                 "  v2nd_value = not_ + 5\n"
                                 "  return v2nd_value\n}\n");
}

TEST(Printer, SlicesConcatsAndInterleavesPrintAsCallsWithRereadableSizes) {
    ProgramBuilder b("structure");
    Size l = b.symbol("L", 4096);
    Expr x = b.param("x", DType::F32, {2, l});
    Expr s = slice(x, -1, Size::min(l, 4), l * 2 - 1, 3);
    Expr t = slice(x, 1, -1, Size::max(l - 3, 1));
    ProgramRef p = b.build({concat(-1, {s, t}), interleave(0, x, x)});
    std::string text = print_program(*p);
    EXPECT_EQ(text, "program structure(x: f32[2, L<=4096]) {\n"
                    "  return concat(1, slice(x, 1, min(L, 4), 2*L - 1, 3), "
                    "slice(x, 1, -1, max(L - 3, 1))), interleave(0, x, x)\n}\n");
    EXPECT_EQ(reprint(text), text);
}

TEST(Printer, ScansNameTheirUsedOutputsAndSkipTheRest) {
    auto pair = trace_combine("pair", 3, 1, [](const Exprs& l, const Exprs& r, const Exprs& c) {
        return Exprs{l[0] + r[0], l[1] * r[1] + c[0], max(l[2], r[2])};
    }, {"p", "q", "u", "r", "s", "v", "k"});
    ProgramBuilder b("scans");
    Expr x = b.param("x", DType::F32, {3, 5});
    Expr scale = make_literal(LiteralAttr{true, 1.5, 0}, true);
    Exprs out = b.scan(pair, {x, x, x}, 0, true, {scale});
    Module m;
    m.programs.push_back(b.build({out[2] * out[0]}));
    EXPECT_EQ(print_module(m), "combine pair(p, q, u | r, s, v; k) {\n"
                               "  return p + r, q * s + k, max(u, v)\n}\n\n"
                               "program scans(x: f32[3, 5]) {\n"
                               "  (t0, _, t1) = scan pair(x, x, x) dim=0 reverse with (1.5)\n"
                               "  return t1 * t0\n}\n");
}

TEST(Printer, AModulePrintsTheCombinesItsProgramsUseAndTellsApartCombinesOfOneName) {
    auto sum = trace_combine("acc", 1, 0, [](const Exprs& l, const Exprs& r, const Exprs&) {
        return Exprs{l[0] + r[0]};
    }, {"a", "b"});
    auto biggest = trace_combine("acc", 1, 0, [](const Exprs& l, const Exprs& r, const Exprs&) {
        return Exprs{max(l[0], r[0])};
    }, {"a", "b"});
    ProgramBuilder b("two");
    Expr x = b.param("x", DType::I32, {b.symbol("N")});
    Expr s = b.scan(sum, {x}, 0)[0];
    Expr m = b.scan(biggest, {x}, -1, true)[0];
    s.node()->name = "s";
    m.node()->name = "m";
    Module module;
    module.programs.push_back(b.build({s, m}));
    std::string text = print_module(module);
    EXPECT_EQ(text, "combine acc(a | b) {\n  return a + b\n}\n\n"
                    "combine acc_1(a | b) {\n  return max(a, b)\n}\n\n"
                    "program two(x: i32[N]) {\n"
                    "  s = scan acc(x) dim=0\n  m = scan acc_1(x) dim=0 reverse\n  return s, m\n}\n");
    EXPECT_EQ(reprint(text), text);
}

TEST(Printer, ManyRebindingsOfOneNameGetDistinctSuffixes) {
    std::string text = "program chain(x: i64[]) {\n  y = x\n";
    for (int i = 0; i < 5000; ++i) text += "  y = y + 1\n";
    text += "  return y\n}\n";
    std::string printed = reprint(text);
    EXPECT_NE(printed.find("  y = x + 1\n  y_1 = y + 1\n"), std::string::npos);
    EXPECT_NE(printed.find("  y_4999 = y_4998 + 1\n  return y_4999\n"), std::string::npos);
    EXPECT_EQ(reprint(printed), printed);
}

TEST(Printer, DeepExpressionsAreSplitIntoStatements) {
    ProgramBuilder b("deep");
    Expr x = b.param("x", DType::F32, {});
    Expr e = x;
    for (int i = 0; i < 1000; ++i) e = exp(e);
    std::string text = print_program(*b.build({e}));
    EXPECT_NE(text.find("t0 = "), std::string::npos);
    EXPECT_EQ(reprint(text), text);
}

}  // namespace
}  // namespace scanc
