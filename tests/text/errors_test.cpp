// Every mistake in a .scan file is a CompileError at the offending token's file:line:col that
// says what was expected.
#include <gtest/gtest.h>

#include <cctype>

#include <random>

#include "design_example.h"
#include "scanc/text/parser.h"
#include "scanc/text/printer.h"

namespace scanc {
namespace {

struct BadInput {
    const char* what;
    const char* text;
    const char* place;    // file:line:col
    const char* message;  // the whole message, without the place
};

const char* kAffine = "combine affine(a1, b1 | a2, b2) {\n  return a1 * a2, a2 * b1 + b2\n}\n";

std::string with_affine(const std::string& program) { return kAffine + program; }

class ParseErrors : public testing::TestWithParam<BadInput> {};

TEST_P(ParseErrors, NameThePlaceAndWhatWasExpected) {
    const BadInput& bad = GetParam();
    try {
        parse_module(bad.text, "t.scan");
        FAIL() << bad.what << ": no error for\n" << bad.text;
    } catch (const CompileError& e) {
        EXPECT_EQ(e.loc().str(), bad.place) << bad.what << ": " << e.what();
        EXPECT_EQ(e.message(), bad.message) << bad.what;
        EXPECT_EQ(std::string(e.what()), std::string(bad.place) + ": error: " + bad.message);
    }
}

const std::string kAffineScanLeaves =
    with_affine("program p(x: f32[N]) {\n  (a, b) = scan affine(x) dim=0\n  return a\n}\n");
const std::string kAffineScanTargets =
    with_affine("program p(x: f32[N]) {\n  y = scan affine(x, x) dim=0\n  return y\n}\n");
const std::string kUnknownCombine =
    with_affine("program p(x: f32[N]) {\n  y = scan afine(x) dim=0\n  return y\n}\n");

const std::string kDeep = "program p(x: f32[]) {\n  return " + std::string(300, '(') + "x" +
                          std::string(300, ')') + "\n}\n";

const BadInput kBadInputs[] = {
    {"unexpected token", "program p(x: f32[N]) {\n  y = x * * 2\n  return y\n}\n", "t.scan:2:11",
     "expected an expression, found `*`"},
    {"unterminated paren before the next line",
     "program p(x: f32[N]) {\n  y = exp(x\n  return y\n}\n", "t.scan:3:3",
     "expected `)` or `,` in the arguments of `exp`, found `return`"},
    {"unterminated paren at the end", "program p(x: f32[N]) {\n  return (x\n", "t.scan:3:1",
     "expected `)` to close the `(`, found end of file"},
    {"unknown name", "program p(x: f32[N]) {\n  return x + q\n}\n", "t.scan:2:14",
     "unknown name `q`"},
    {"unknown name close to a known one",
     "program p(x: f32[N]) {\n  delta = x\n  return delt\n}\n", "t.scan:3:10",
     "unknown name `delt`; did you mean `delta`?"},
    {"unknown function", "program p(x: f32[N]) {\n  return exq(x)\n}\n", "t.scan:2:10",
     "unknown function `exq`; did you mean `exp`?"},
    {"unknown function with several completions", "program p(x: f32[N]) {\n  return lo(x)\n}\n",
     "t.scan:2:10", "unknown function `lo`; did you mean one of `log`, `log1p`, `log2`?"},
    {"wrong arity", "program p(x: f32[N]) {\n  return 1 + pow(x)\n}\n", "t.scan:2:14",
     "`pow` takes 2 arguments, got 1"},
    {"logarithm of an integer", "program p(i: i32[N]) {\n  return log2(i)\n}\n", "t.scan:2:10",
     "`log2` needs floating-point operands, got i32"},
    {"exponential of a bool", "program p(b: bool[N]) {\n  return exp2(b) + log10(b)\n}\n", "t.scan:2:10",
     "`exp2` needs floating-point operands, got bool"},
    {"error function of an integer", "program p(i: i32[N]) {\n  return erfc(i)\n}\n", "t.scan:2:10",
     "`erfc` needs floating-point operands, got i32"},
    {"arctangent of two integers", "program p(i: i64[N]) {\n  return atan2(i, i)\n}\n", "t.scan:2:10",
     "`atan2` needs floating-point operands, got i64"},
    {"two-argument arctangent with one", "program p(x: f32[N]) {\n  return atan2(x)\n}\n", "t.scan:2:10",
     "`atan2` takes 2 arguments, got 1"},
    {"unknown combine", kUnknownCombine.c_str(), "t.scan:5:12",
     "unknown combine `afine`; did you mean `affine`?"},
    {"duplicate combine", "combine add(a | b) {\n  return a + b\n}\n\ncombine add(a | b) {\n"
     "  return a\n}\n", "t.scan:5:9", "duplicate combine `add`: it is already defined at line 1"},
    {"duplicate program", "program p() {\n  return 1\n}\nprogram p() {\n  return 2\n}\n",
     "t.scan:4:9", "duplicate program `p`: it is already defined at line 1"},
    {"duplicate parameter", "program p(x: f32[N],\n  x: f32[N]) {\n  return x\n}\n", "t.scan:2:3",
     "duplicate parameter `x`: it is already a parameter at line 1:11"},
    {"bad dtype", "program p(x: f33[N]) {\n  return x\n}\n", "t.scan:1:14",
     "unknown dtype `f33`; did you mean `f32`? (dtypes: bool i8 i16 i32 i64 u8 f16 bf16 f32 f64)"},
    {"bad dim syntax", "program p(x: f32[N, 2.5]) {\n  return x\n}\n", "t.scan:1:21",
     "expected a dim (an integer, a size symbol `N`, or a bounded symbol `N<=1024`), found "
     "number `2.5`"},
    {"two different bounds", "program p(x: f32[L<=8], y: f32[L<=16]) {\n  return x\n}\n",
     "t.scan:1:35", "size `L` has two different bounds: 16 here and 8 at line 1:21"},
    {"scan leaf-count mismatch", kAffineScanLeaves.c_str(), "t.scan:5:12",
     "combine `affine` takes 2 leaves, got 1"},
    {"scan target-count mismatch", kAffineScanTargets.c_str(), "t.scan:5:3",
     "scan of combine `affine` gives 2 results but 1 name is assigned; write `(y1, y2) = scan "
     "...` (`_` skips one)"},
    {"comparison chain", "program p(a: f32[], b: f32[], c: f32[]) {\n  return a < b < c\n}\n",
     "t.scan:2:16", "comparisons do not chain: write `a < b and b < c` instead of `a < b < c`"},
    {"float literal with an integer tensor", "program p(x: i32[N]) {\n  return x * 2.5\n}\n",
     "t.scan:2:12",
     "dtype mismatch: `*` mixes a float literal with i32; write an integer literal or cast"},
    {"combine return count", "combine f(a1, b1 | a2, b2) {\n  s = a1 + a2\n  return s\n}\n",
     "t.scan:3:3", "combine `f` returns 1 value but has 2 leaves; it must return one value per leaf"},
    {"empty file", "", "t.scan:1:1", "expected `combine` or `program`, found end of file"},
    {"only comments", "# nothing\n\n   # here\n", "t.scan:4:1",
     "expected `combine` or `program`, found end of file"},
    {"stray top-level text", "x = 1\n", "t.scan:1:1",
     "expected `combine` or `program`, found `x`"},
    {"non-integer slice bound", "program p(x: f32[N]) {\n  return slice(x, 0, 0.5, N)\n}\n",
     "t.scan:2:22",
     "expected an integer size (a literal, a size symbol, or +, -, *, min, max of them), found "
     "number `0.5`"},
    {"tensor as a slice bound", "program p(x: f32[N], n: i64[]) {\n  return slice(x, 0, 0, n)\n}\n",
     "t.scan:2:25",
     "`n` is a tensor; a slice bound must be an integer, a size symbol, or an expression of them"},
    {"size times size", "program p(x: f32[N]) {\n  return slice(x, 0, 0, N * N)\n}\n",
     "t.scan:2:27", "a size can only be multiplied by an integer constant, not `N * N`"},
    {"captured varying along the scan dim",
     "combine scaled(a | b; c) {\n  return a + c * b\n}\n"
     "program p(x: f32[N, T], tau: f32[N, T]) {\n"
     "  y = scan scaled(x) dim=1 with (tau)\n  return y\n}\n",
     "t.scan:5:7",
     "captured `tau` (f32[N, T]) varies along the scan dim 1 (size T); a captured value must have "
     "size 1 there"},
    {"integer literal overflow", "program p(x: i64[]) {\n  return x + 9223372036854775808\n}\n",
     "t.scan:2:14",
     "integer literal `9223372036854775808` does not fit in 64 bits (the range of i64)"},
    {"scan inside a combine", "combine f(a | b) {\n  y = scan f(a) dim=0\n  return y\n}\n",
     "t.scan:2:7", "`scan` is not allowed inside a combine: a combine works on scalars"},
    {"slice inside a combine", "combine f(a | b) {\n  return slice(a, 0, 0, 1)\n}\n",
     "t.scan:2:10", "`slice` is not allowed inside a combine: a combine works on scalars"},
    {"combine reads a name it does not have",
     "combine f(a | b) {\n  return a + x\n}\nprogram p(x: f32[N]) {\n  return x\n}\n",
     "t.scan:2:14", "unknown name `x`"},
    {"scan inside an expression",
     "combine f(a | b) {\n  return a + b\n}\nprogram p(x: f32[N]) {\n"
     "  return 1 + scan f(x) dim=0\n}\n",
     "t.scan:5:14", "`scan` must be the whole right-hand side of a statement: `y = scan f(x) dim=0`"},
    {"missing dim of a scan",
     "combine f(a | b) {\n  return a + b\n}\nprogram p(x: f32[N]) {\n  y = scan f(x)\n"
     "  return y\n}\n",
     "t.scan:5:16", "expected `dim=K` after the leaves of the scan, found end of line"},
    {"dim out of range",
     "combine f(a | b) {\n  return a + b\n}\nprogram p(x: f32[N]) {\n  y = scan f(x) dim=1\n"
     "  return y\n}\n",
     "t.scan:5:7", "dim 1 is out of range for a tensor of 1 dim (valid: -1..0)"},
    {"left and right sides differ", "combine f(a1, b1 | a2) {\n  return a1, b1\n}\n",
     "t.scan:1:18", "combine `f` has 2 left and 1 right parameters; each side takes one per leaf"},
    {"tuple target without a scan", "program p(x: f32[N]) {\n  (a, b) = x\n  return a\n}\n",
     "t.scan:2:12",
     "expected `scan` (only a scan gives several results to assign), found `x`"},
    {"missing return", "program p(x: f32[N]) {\n  y = x\n}\n", "t.scan:3:1",
     "expected `return` before the end of program `p`, found `}`"},
    {"two statements on one line", "program p(x: f32[N]) {\n  y = x z = x\n  return y\n}\n",
     "t.scan:2:9", "expected end of line after the statement, found `z`"},
    {"a statement cut short by a semicolon", "program p(x: f32[N]) {\n  y = x + ; return y\n}\n",
     "t.scan:2:11", "expected an expression, found `;`"},
    {"a size used as a tensor", "program p(x: f32[N]) {\n  return x * N\n}\n", "t.scan:2:14",
     "`N` is a size, not a tensor; sizes appear only in parameter types and slice bounds"},
    {"unexpected character", "program p(x: f32[N]) {\n  return !x\n}\n", "t.scan:2:10",
     "unexpected character `!`; write `not` for logical negation"},
    {"a byte that is not ASCII", "program p(x: f32[N]) {\n  return x \xe2\x88\x97 2\n}\n",
     "t.scan:2:12", "unexpected character byte 0xe2"},
    {"malformed number", "program p(x: f32[N]) {\n  return x + 1e\n}\n", "t.scan:2:14",
     "malformed number `1e`; expected digits with an optional `.` and exponent (`1e-3`)"},
    {"reserved word as a name", "program p(x: f32[N]) {\n  scan = x\n  return x\n}\n",
     "t.scan:2:3", "expected a statement (`name = expr`) or `return` (`scan` is a reserved word), "
     "found `scan`"},
    {"interleave of one tensor", "program p(x: f32[N]) {\n  return interleave(0, x)\n}\n",
     "t.scan:2:10", "`interleave` takes a dim and 2 tensors, got 1 tensor"},
    {"shape mismatch", "program p(x: f32[N], y: f32[M]) {\n  return x + y\n}\n", "t.scan:2:12",
     "shape mismatch: cannot broadcast [N] with [M]: size N against M cannot be shown equal"},
    {"expression nested too deeply", kDeep.c_str(), "t.scan:2:210", "expression nested too deeply"},
    {"size sum past 64 bits",
     "program p(x: f32[N]) {\n  return slice(x, 0, 0, N + 9223372036854775807 + 1)\n}\n",
     "t.scan:2:49", "this size does not fit in 64 bits"},
    {"size product past 64 bits",
     "program p(x: f32[N]) {\n  return slice(x, 0, 0, N * 9223372036854775807 * 2)\n}\n",
     "t.scan:2:49", "this size does not fit in 64 bits"},
    {"concat longer than 64 bits",
     "program p(x: f32[9223372036854775807]) {\n  return concat(0, x, x)\n}\n", "t.scan:2:10",
     "this size does not fit in 64 bits"},
};

std::string test_name(const testing::TestParamInfo<BadInput>& info) {
    std::string name;
    for (const char* c = info.param.what; *c; ++c) name += std::isalnum(*c) ? *c : '_';
    return name;
}

INSTANTIATE_TEST_SUITE_P(Text, ParseErrors, testing::ValuesIn(kBadInputs), test_name);

std::string repeat(const std::string& s, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += s;
    return out;
}

TEST(ParseErrors, AnUnknownNameOfAHundredThousandLettersStillGetsItsSuggestionAtOnce) {
    // The suggestion's edit distance is computed only as far as it could still be a typo, in
    // time linear in the names' length: a few letters off a huge combine's name is suggested,
    // a few more letters are not.
    const std::string name(100000, 'a');
    const std::string combine = "combine " + name + "(a | b) {\n  return a + b\n}\n";
    auto error_for = [&](const std::string& used) {
        try {
            parse_module(combine + "program p(x: f32[N]) {\n  y = scan " + used + "(x) dim=0\n  return y\n}\n", "t.scan");
        } catch (const CompileError& e) {
            EXPECT_EQ(e.loc().str(), "t.scan:5:12");
            return e.message();
        }
        return std::string("no error");
    };
    EXPECT_EQ(error_for(name + "bcdefgh"), "unknown combine `" + name + "bcdefgh`; did you mean `" + name + "`?");
    EXPECT_EQ(error_for("b" + name.substr(1)), "unknown combine `b" + name.substr(1) + "`; did you mean `" + name + "`?");
    EXPECT_EQ(error_for(name + "bcdefghij"), "unknown combine `" + name + "bcdefghij`");
}

TEST(ParseErrors, DeeplyNestedInputIsAnErrorNotACrash) {
    std::string text = "program p(x: f32[]) {\n  return " + std::string(100000, '-') + "x\n}\n";
    EXPECT_THROW(parse_module(text), CompileError);
    std::string parens = "program p(x: f32[]) {\n  return " + std::string(100000, '(') + "x\n}\n";
    EXPECT_THROW(parse_module(parens), CompileError);
}

TEST(ParseErrors, DeeplyNestedCallsAndSizeFunctionsAreAnErrorNotACrash) {
    for (std::string call : {"exp(", "f32(", "max(x, ", "slice(", "concat(0, "}) {
        std::string text = "program p(x: f32[N]) {\n  return " + repeat(call, 100000) + "x\n}\n";
        try {
            parse_module(text, "t.scan");
            FAIL() << call;
        } catch (const CompileError& e) {
            EXPECT_EQ(e.message(), "expression nested too deeply") << call;
            EXPECT_EQ(e.loc().line, 2) << call;
        }
    }
    std::string bound = "program p(x: f32[N]) {\n  return slice(x, 0, 0, " +
                        repeat("min(N, ", 100000) + "N\n}\n";
    EXPECT_THROW(parse_module(bound, "t.scan"), CompileError);
}

TEST(ParseErrors, AChainOfOperationsPastTheDepthLimitIsAnErrorAtTheOperationThatPassesIt) {
    // Each `+` adds one operation to the chain under x; the last one allowed is kMaxNodeDepth.
    std::string ok = "x" + repeat(" + x", kMaxNodeDepth - 1);
    EXPECT_NO_THROW(parse_module("program p(x: f32[N]) {\n  return " + ok + "\n}\n", "t.scan"));
    std::string chain;
    for (int i = 1; i <= kMaxNodeDepth; ++i) chain += cat("  y", i, " = y", i - 1, " * 2\n");
    try {
        parse_module("program p(y0: f32[N]) {\n" + chain + "  return y" +
                         std::to_string(kMaxNodeDepth) + "\n}\n",
                     "t.scan");
        FAIL() << "no error";
    } catch (const CompileError& e) {
        std::string last = cat("  y", kMaxNodeDepth, " = y", kMaxNodeDepth - 1, " * 2");
        EXPECT_EQ(e.loc().str(), cat("t.scan:", kMaxNodeDepth + 1, ":", last.find('*') + 1));
        EXPECT_EQ(e.message(), cat("this value is computed by a chain of ", kMaxNodeDepth + 1,
                                   " operations, each on the result of the previous one; scanc "
                                   "handles chains of at most ", kMaxNodeDepth));
    }
}

TEST(ParseErrors, EveryPrefixOfAValidFileIsAnErrorOrAValidModuleNeverACrash) {
    std::string text = kAffine + std::string("program p(x: f32[B, L<=64], y: i32[L]) {\n"
                                             "  a = slice(x, -1, 1, min(L, 4) - 1) * 2.5\n"
                                             "  (_, h) = scan affine(x, x) dim=1 reverse\n"
                                             "  return h, concat(0, a, a), not (y < 3)\n}\n");
    int errors = 0;
    for (std::size_t n = 0; n < text.size(); ++n) {
        try {
            parse_module(text.substr(0, n), "t.scan");
        } catch (const CompileError& e) {
            ++errors;
            EXPECT_TRUE(e.loc().valid()) << e.what();
        }
    }
    EXPECT_GT(errors, static_cast<int>(text.size()) / 2);
}

TEST(ParseErrors, RandomlyCorruptedFilesGiveCompileErrorsOrValidModulesOnly) {
    const std::string source = std::string(kDesignExample) +
                               "program more(x: i32[B<=16, L], y: f32[L]) {\n"
                               "  z = slice(x, -1, 1, min(L, 4) - 1, 2) << 2\n"
                               "  return concat(0, z, z), interleave(1, z, z), not (y < 3.5e-1)\n}\n";
    const std::string alphabet = "()[]{},:;|=<>+-*/%&^# \n_aAL019.e";
    std::mt19937 rng(7);
    int parsed = 0;
    for (int trial = 0; trial < 3000; ++trial) {
        std::string text = source;
        for (int edits = 1 + static_cast<int>(rng() % 3); edits > 0; --edits) {
            std::size_t at = rng() % text.size();
            switch (rng() % 3) {
                case 0: text.erase(at, 1 + rng() % 4); break;
                case 1: text.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
                default: text[at] = alphabet[rng() % alphabet.size()];
            }
        }
        try {
            Module m = parse_module(text, "fuzz.scan");
            ++parsed;
            std::string printed = print_module(m);
            EXPECT_EQ(print_module(parse_module(printed)), printed) << text;
        } catch (const CompileError& e) {
            EXPECT_TRUE(e.loc().valid()) << e.what() << "\n" << text;
        }
    }
    EXPECT_GT(parsed, 0);  // some edits (in comments, spacing) keep the file valid
}

}  // namespace
}  // namespace scanc
