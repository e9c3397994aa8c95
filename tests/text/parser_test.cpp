// The parser builds the IR DESIGN §2 describes: types, shapes, symbols, scans, structure.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "design_example.h"
#include "scanc/text/parser.h"
#include "scanc/text/printer.h"

namespace scanc {
namespace {


const Node& only_result(const Program& p) {
    EXPECT_EQ(p.results.size(), 1u);
    return *p.results[0];
}

const Node& body_of(std::string_view text) {
    static Module keep;  // the nodes must outlive the call
    keep = parse_module(text, "t.scan");
    return only_result(*keep.programs.at(0));
}

TEST(Parser, ReadsTheDesignExampleIntoTypedCombinesAndPrograms) {
    Module m = parse_module(kDesignExample, "design.scan");
    ASSERT_EQ(m.combines.size(), 2u);
    ASSERT_EQ(m.programs.size(), 2u);
    EXPECT_EQ(m.combines[0]->num_leaves(), 2);
    EXPECT_EQ(m.combines[1]->num_captured(), 1);
    const Program& mamba = *m.program("mamba");
    ASSERT_EQ(mamba.symbols.size(), 3u);
    EXPECT_EQ(mamba.symbols[0]->name, "B");
    EXPECT_EQ(mamba.symbols[1]->name, "L");
    EXPECT_EQ(mamba.symbols[1]->bound, 1048576);
    EXPECT_FALSE(mamba.symbols[2]->bound.has_value());
    const Node& h = only_result(mamba);
    EXPECT_EQ(h.op, Op::Project);
    EXPECT_EQ(h.as<ProjectAttr>().index, 1);
    EXPECT_EQ(h.type().str(), "f32[B, L, D]");
    EXPECT_EQ(h.name, "h");
    const Node& scan = *h.inputs[0];
    EXPECT_EQ(scan.as<ScanAttr>().dim, 1);
    EXPECT_EQ(scan.as<ScanAttr>().combine, m.combines[0]);
    EXPECT_EQ(scan.loc.str(), "design.scan:13:12");
    EXPECT_EQ(scan.inputs[0]->name, "a");
    EXPECT_EQ(scan.inputs[0]->op, Op::Exp);

    const Node& y = only_result(*m.program("softmax_max"));
    const auto& attr = y.inputs[0]->as<ScanAttr>();
    EXPECT_TRUE(attr.reverse);
    EXPECT_EQ(attr.num_leaves, 1);
    EXPECT_EQ(y.inputs[0]->inputs[1]->name, "tau");
}

TEST(Parser, SymbolsAreSharedObjectsAndABoundMayAppearOnAnyOccurrence) {
    Module m = parse_module("program p(x: f32[N, 3], y: f32[N<=64, 3], s: i32[]) {\n"
                            "  return x + y, s\n}\n");
    const Program& p = *m.programs[0];
    ASSERT_EQ(p.symbols.size(), 1u);
    EXPECT_EQ(p.symbols[0]->bound, 64);
    EXPECT_EQ(p.params[0]->type().shape[0].as_symbol(), p.params[1]->type().shape[0].as_symbol());
    EXPECT_EQ(p.results[0]->type().str(), "f32[N, 3]");
    EXPECT_EQ(p.results[1]->type().str(), "i32[]");
}

TEST(Parser, CombinesMayBeUsedBeforeTheyAreDefined) {
    Module m = parse_module("program p(x: i64[T]) {\n  y = scan add(x) dim=0\n  return y\n}\n"
                            "combine add(a | b) {\n  return a + b\n}\n");
    ASSERT_EQ(m.combines.size(), 1u);
    EXPECT_EQ(only_result(*m.programs[0]).inputs[0]->as<ScanAttr>().combine, m.combines[0]);
}

TEST(Parser, BinaryOperatorsAreLeftAssociativeAndFollowThePrecedenceTable) {
    const Node& r = body_of("program p(a: i32[], b: i32[], c: i32[]) {\n"
                            "  return a - b - c * a << b\n}\n");
    // ((a - b) - (c * a)) << b
    ASSERT_EQ(r.op, Op::Shl);
    const Node& sub = *r.inputs[0];
    ASSERT_EQ(sub.op, Op::Sub);
    EXPECT_EQ(sub.inputs[0]->op, Op::Sub);
    EXPECT_EQ(sub.inputs[1]->op, Op::Mul);
    EXPECT_EQ(r.inputs[1]->name, "b");
}

TEST(Parser, NotBindsLooserThanComparisonsAndTighterThanAnd) {
    const Node& r = body_of("program p(a: f32[], b: f32[], c: bool[]) {\n"
                            "  return not a < b and c or c\n}\n");
    ASSERT_EQ(r.op, Op::Or);
    const Node& conj = *r.inputs[0];
    ASSERT_EQ(conj.op, Op::And);
    ASSERT_EQ(conj.inputs[0]->op, Op::Not);
    EXPECT_EQ(conj.inputs[0]->inputs[0]->op, Op::Lt);
}

TEST(Parser, UnaryMinusFoldsIntoALiteralButNotIntoAParenthesizedOne) {
    const Node& r = body_of("program p(a: f32[]) {\n  return -inf * -(2) + -1e-3 - -a\n}\n");
    // ((-inf * -(2)) + -0.001) - (-a)
    ASSERT_EQ(r.op, Op::Sub);
    const Node& add = *r.inputs[0];
    const Node& mul = *add.inputs[0];
    ASSERT_EQ(mul.inputs[0]->op, Op::Literal);
    EXPECT_EQ(mul.inputs[0]->as<LiteralAttr>().f, -INFINITY);
    ASSERT_EQ(mul.inputs[1]->op, Op::Neg);
    EXPECT_EQ(mul.inputs[1]->inputs[0]->as<LiteralAttr>().i, 2);
    EXPECT_EQ(add.inputs[1]->as<LiteralAttr>().f, -1e-3);
    EXPECT_EQ(r.inputs[1]->op, Op::Neg);
    EXPECT_EQ(r.type().str(), "f32[]");
}

TEST(Parser, IntegerLiteralsCoverTheWholeI64Range) {
    const Node& r = body_of("program p(a: i64[]) {\n"
                            "  return a + -9223372036854775808 + 9223372036854775807\n}\n");
    EXPECT_EQ(r.inputs[1]->as<LiteralAttr>().i, INT64_MAX);
    EXPECT_EQ(r.inputs[0]->inputs[1]->as<LiteralAttr>().i, INT64_MIN);
}

TEST(Parser, LiteralsAreWeakAndTakeTheOtherOperandsDtype) {
    const Node& r = body_of("program p(a: i8[4], b: f16[4]) {\n  return f16(a * 3) * 2.5 + b\n}\n");
    EXPECT_EQ(r.type().str(), "f16[4]");
    EXPECT_EQ(r.inputs[0]->inputs[0]->op, Op::Cast);
    EXPECT_EQ(r.inputs[0]->inputs[0]->inputs[0]->type().str(), "i8[4]");
    Module alone = parse_module("program q() {\n  return 2.5, 7\n}\n");
    EXPECT_EQ(alone.programs[0]->results[0]->type().str(), "weak f64[]");
    EXPECT_EQ(alone.programs[0]->results[1]->type().str(), "weak i64[]");
}

TEST(Parser, NamesResolveToTheLatestAssignment) {
    const Node& r = body_of("program p(x: f32[3]) {\n  y = x + 1\n  y = y * 2\n  return y\n}\n");
    ASSERT_EQ(r.op, Op::Mul);
    EXPECT_EQ(r.inputs[0]->op, Op::Add);
    EXPECT_EQ(r.inputs[0]->inputs[0]->name, "x");
}

TEST(Parser, AStatementContinuesAfterACommaOrAnOperatorAndInsideParentheses) {
    const Node& r = body_of("program p(x: f32[3],\n          y: f32[3]) {\n"
                            "  z = x +\n      y\n  w = max(z,\n   x) * (y\n  + 1)\n  return w\n}\n");
    ASSERT_EQ(r.op, Op::Mul);
    EXPECT_EQ(r.inputs[0]->op, Op::Max);
    EXPECT_EQ(r.inputs[0]->inputs[0]->op, Op::Add);
}

TEST(Parser, ASemicolonOutsideParenthesesEndsAStatementAsANewlineDoes) {
    // The one-line form scanc.torch traces a combine into, and its error messages show.
    const std::string one_line =
        "combine f(a1, b1 | a2, b2; k) { t = a1 * a2; u = a2 * b1 + b2 * k;; return t, u }\n"
        "program p(a: f32[N], b: f32[N], k: f32[]) { (_, h) = scan f(a, b) dim=0 with (k); return h }\n";
    const std::string lines =
        "combine f(a1, b1 | a2, b2; k) {\n  t = a1 * a2\n  u = a2 * b1 + b2 * k\n  return t, u\n}\n"
        "program p(a: f32[N], b: f32[N], k: f32[]) {\n  (_, h) = scan f(a, b) dim=0 with (k)\n  return h\n}\n";
    EXPECT_EQ(print_module(parse_module(one_line, "t.scan")), print_module(parse_module(lines, "t.scan")));
}

TEST(Parser, SliceBoundsAreSizeExpressions) {
    Module m = parse_module(
        "program p(x: f32[B, L]) {\n"
        "  a = slice(x, -1, 1, L - 1)\n"
        "  b = slice(x, 1, -3, 2*L, 2)\n"
        "  c = slice(x, 1, max(L - 4, 0) + 1, min(L, 4) * 3)\n"
        "  return a, b, c, concat(0, x, x), interleave(1, x, x)\n}\n");
    const Program& p = *m.programs[0];
    const Size L = p.params[0]->type().shape[1];
    const auto& a = p.results[0]->as<SliceAttr>();
    EXPECT_EQ(a.dim, 1);
    EXPECT_TRUE(a.start.equals(1));
    EXPECT_TRUE(a.stop.equals(L - 1));
    const auto& b = p.results[1]->as<SliceAttr>();
    EXPECT_TRUE(b.start.equals(-3));
    EXPECT_TRUE(b.stop.equals(L * 2));
    EXPECT_EQ(b.step, 2);
    const auto& c = p.results[2]->as<SliceAttr>();
    EXPECT_TRUE(c.start.equals(Size::max(L - 4, 0) + 1));
    EXPECT_TRUE(c.stop.equals(Size::min(L, 4) * 3));
    Bindings at10{{p.symbols[0].get(), 2}, {p.symbols[1].get(), 10}};
    // Python: len(range(10)[1:9]) == 8, len(range(10)[-3:20:2]) == 2
    EXPECT_EQ(p.results[0]->type().shape[1].evaluate(at10), 8);
    EXPECT_EQ(p.results[1]->type().shape[1].evaluate(at10), 2);
    EXPECT_EQ(p.results[3]->type().shape[0].evaluate(at10), 4);
    EXPECT_EQ(p.results[4]->type().shape[1].evaluate(at10), 20);
}

TEST(Parser, MultiResultScansTakeOneNameOrUnderscorePerLeaf) {
    Module m = parse_module(
        "combine two(a1, b1 | a2, b2) {\n  s = a1 + a2\n  return s, max(b1, b2)\n}\n"
        "program p(x: i32[N, 5], y: i32[N, 5]) {\n"
        "  (s, _) = scan two(x, y) dim=-2\n  (_, m) = scan two(x, s) dim=-1 reverse\n"
        "  return s, m\n}\n");
    const Program& p = *m.programs[0];
    EXPECT_EQ(p.results[0]->inputs[0]->as<ScanAttr>().dim, 0);
    EXPECT_EQ(p.results[1]->inputs[0]->as<ScanAttr>().dim, 1);
    EXPECT_EQ(p.results[1]->as<ProjectAttr>().index, 1);
    EXPECT_EQ(p.results[1]->inputs[0]->inputs[1], p.results[0]);
}

TEST(Parser, ScanLeavesAndCapturedValuesMayStartWithAParenthesis) {
    const Node& y = body_of(
        "combine c(a1, b1 | a2, b2; t) {\n  return a1 + a2 + t, b1 * b2\n}\n"
        "program p(x: f32[N], t: f32[]) {\n"
        "  (y, _) = scan c((x + 1) * 2, (x)) dim=0 with ((t) * 3)\n  return y\n}\n");
    const Node& scan = *y.inputs[0];
    ASSERT_EQ(scan.inputs.size(), 3u);
    EXPECT_EQ(scan.inputs[0]->op, Op::Mul);      // (x + 1) * 2, not x + 1
    EXPECT_EQ(scan.inputs[1]->op, Op::Param);    // (x)
    EXPECT_EQ(scan.inputs[2]->op, Op::Mul);      // (t) * 3
}

TEST(Parser, EveryScalarFunctionAndCastIsCallable) {
    const Node& r = body_of(
        "program p(x: f64[2], i: i32[2]) {\n"
        "  f = exp(x) + log(x) + log1p(x) + expm1(x) + sqrt(x) + rsqrt(x) + abs(x) + tanh(x)\n"
        "  g = sigmoid(x) + softplus(x) + sin(x) + cos(x) + floor(x) + ceil(x) + pow(x, 2)\n"
        "  h = min(x, 1) + max(x, 0) + logaddexp(x, x) + where(i > 0, x, f64(i))\n"
        "  e = exp2(x) + log2(x) + log10(x) + erf(x) + erfc(x) + atan(x) + atan2(x, f64(i))\n"
        "  return f + g + h + e + f64(bool(i) and not bool(i)) + f64(i8(i) % 3 & 1 | 2 ^ 3 >> 1)\n}\n");
    EXPECT_EQ(r.type().str(), "f64[2]");
}

TEST(Parser, AnEmptyCombineListAndParamListAreAllowed) {
    Module m = parse_module("program constant() {\n  return 1\n}\n");
    EXPECT_TRUE(m.combines.empty());
    EXPECT_TRUE(m.programs[0]->params.empty());
}

TEST(Parser, LoadModuleNamesTheFileInItsErrors) {
    try {
        load_module("/nonexistent/dir/missing.scan");
        FAIL() << "no error";
    } catch (const CompileError& e) {
        EXPECT_EQ(e.loc().file, "/nonexistent/dir/missing.scan");
        EXPECT_NE(std::string(e.what()).find("missing.scan"), std::string::npos);
        EXPECT_NE(e.message().find("cannot read"), std::string::npos);
    }
}

TEST(Parser, LoadModuleReadsExamplesFromDisk) {
    std::string path = SCANC_SOURCE_DIR "/examples/mamba.scan";
    if (!std::ifstream(path)) GTEST_SKIP() << "no " << path;
    Module m = load_module(path);
    EXPECT_EQ(m.programs.at(0)->params.at(0)->loc.file, path);
}

}  // namespace
}  // namespace scanc
