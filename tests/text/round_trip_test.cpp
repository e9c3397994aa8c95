// print(parse(print(p))) == print(p), and the parsed program is the same DAG with the same
// types: on every example file, a corpus covering each construct, and random DSL programs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "scanc/dsl/expr.h"
#include "scanc/text/parser.h"
#include "scanc/text/printer.h"

namespace scanc {
namespace {

using namespace dsl;

// ---- structural equality, independent of names and of how the DAG was built ----

class SameStructure {
public:
    bool nodes(const Node* a, const Node* b) {
        auto key = std::make_pair(a, b);
        if (auto it = memo_.find(key); it != memo_.end()) return it->second;
        bool same = a->op == b->op && a->inputs.size() == b->inputs.size() &&
                    types(*a, *b) && attrs(*a, *b);
        for (std::size_t i = 0; same && i < a->inputs.size(); ++i)
            same = nodes(a->inputs[i].get(), b->inputs[i].get());
        if (!same && why_.empty()) why_ = cat(a->op, " at ", b->loc.str());
        return memo_[key] = same;
    }

    bool combines(const Combine& a, const Combine& b) {
        if (a.num_leaves() != b.num_leaves() || a.num_captured() != b.num_captured()) return false;
        for (std::size_t i = 0; i < a.results.size(); ++i)
            if (!nodes(a.results[i].get(), b.results[i].get())) return false;
        return true;
    }

    bool programs(const Program& a, const Program& b) {
        if (a.params.size() != b.params.size() || a.results.size() != b.results.size() ||
            a.symbols.size() != b.symbols.size())
            return false;
        for (std::size_t i = 0; i < a.symbols.size(); ++i)
            if (a.symbols[i]->name != b.symbols[i]->name || a.symbols[i]->bound != b.symbols[i]->bound)
                return false;
        for (std::size_t i = 0; i < a.results.size(); ++i)
            if (!nodes(a.results[i].get(), b.results[i].get())) return false;
        for (std::size_t i = 0; i < a.params.size(); ++i)
            if (!nodes(a.params[i].get(), b.params[i].get())) return false;
        return true;
    }

    const std::string& why() const { return why_; }

private:
    static bool types(const Node& a, const Node& b) {
        if (a.types.size() != b.types.size()) return false;
        for (std::size_t i = 0; i < a.types.size(); ++i)
            if (a.types[i].str() != b.types[i].str()) return false;
        return true;
    }

    static bool same_double(double x, double y) {
        if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
        return x == y && std::signbit(x) == std::signbit(y);
    }

    bool attrs(const Node& a, const Node& b) {
        switch (a.op) {
            case Op::Param: {
                auto &x = a.as<ParamAttr>(), &y = b.as<ParamAttr>();
                return x.role == y.role && x.index == y.index;
            }
            case Op::Literal: {
                auto &x = a.as<LiteralAttr>(), &y = b.as<LiteralAttr>();
                return x.is_float == y.is_float && (x.is_float ? same_double(x.f, y.f) : x.i == y.i);
            }
            case Op::Cast: return a.as<CastAttr>().to == b.as<CastAttr>().to;
            case Op::Scan: {
                auto &x = a.as<ScanAttr>(), &y = b.as<ScanAttr>();
                return x.dim == y.dim && x.reverse == y.reverse && x.num_leaves == y.num_leaves &&
                       combines(*x.combine, *y.combine);
            }
            case Op::Slice: {
                auto &x = a.as<SliceAttr>(), &y = b.as<SliceAttr>();
                return x.dim == y.dim && x.step == y.step && x.start.str() == y.start.str() &&
                       x.stop.str() == y.stop.str();
            }
            case Op::Concat: return a.as<ConcatAttr>().dim == b.as<ConcatAttr>().dim;
            case Op::Interleave: return a.as<InterleaveAttr>().dim == b.as<InterleaveAttr>().dim;
            case Op::Project: return a.as<ProjectAttr>().index == b.as<ProjectAttr>().index;
            default: return true;
        }
    }

    std::map<std::pair<const Node*, const Node*>, bool> memo_;
    std::string why_;
};

// Prints, parses, prints again; the texts agree and the parsed module has the same structure.
void expect_round_trip(const Module& m, const std::string& what) {
    std::string first = print_module(m);
    Module parsed;
    try {
        parsed = parse_module(first, what);
    } catch (const CompileError& e) {
        FAIL() << what << ": printed text does not parse: " << e.what() << "\n" << first;
    }
    EXPECT_EQ(print_module(parsed), first) << what;
    ASSERT_EQ(parsed.programs.size(), m.programs.size()) << what;
    for (std::size_t i = 0; i < m.programs.size(); ++i) {
        SameStructure same;
        EXPECT_TRUE(same.programs(*m.programs[i], *parsed.programs[i]))
            << what << ": program " << m.programs[i]->name << " differs at " << same.why() << "\n"
            << first;
    }
    for (std::size_t i = 0; i < m.combines.size() && i < parsed.combines.size(); ++i) {
        SameStructure same;
        EXPECT_TRUE(same.combines(*m.combines[i], *parsed.combines[i])) << what << "\n" << first;
    }
}

void expect_text_round_trip(const std::string& text, const std::string& what) {
    Module m;
    try {
        m = parse_module(text, what);
    } catch (const CompileError& e) {
        FAIL() << e.what();
    }
    expect_round_trip(m, what);
}

TEST(RoundTrip, HoldsForEveryExampleFile) {
    std::filesystem::path dir = SCANC_SOURCE_DIR "/examples";
    if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no examples folder";
    int files = 0;
    for (auto& entry : std::filesystem::directory_iterator(dir)) {
        if (entry.path().extension() != ".scan") continue;
        ++files;
        Module m = load_module(entry.path().string());
        expect_round_trip(m, entry.path().filename().string());
    }
    if (files == 0) GTEST_SKIP() << "no .scan examples yet";
}

// One small program per construct of DESIGN §2.
const char* kCorpus[] = {
    "combine add(a | b) {\n  return a + b\n}\nprogram cumsum(x: f32[N]) {\n"
    "  y = scan add(x) dim=0\n  return y\n}\n",
    "combine affine(a1, b1 | a2, b2) {\n  return a1 * a2, a2 * b1 + b2\n}\n"
    "program mamba(x: f32[B, L<=1048576, D], dt: f32[B, L, D], A: f32[D]) {\n"
    "  a = exp(dt * A)\n  b = dt * x\n  (_, h) = scan affine(a, b) dim=1\n  return h\n}\n",
    "combine smooth_max(x1 | x2; tau) {\n  return tau * logaddexp(x1 / tau, x2 / tau)\n}\n"
    "program softmax_max(x: f32[N, T], tau: f32[N, 1]) {\n"
    "  y = scan smooth_max(x) dim=1 reverse with (tau)\n  return y\n}\n",
    "program scalars(s: f64[], b: bool[], i: u8[]) {\n  return s, not b or b and b, i << 2 >> 1\n}\n",
    "program literals(x: f32[3]) {\n  return x * -inf + nan - 1e-3 + 2.5e10 * -(0) + -7\n}\n",
    "program casts(x: f16[4], y: bf16[4], z: i16[4]) {\n"
    "  return f32(x) + f32(y), i64(z) % 5, bool(z) == (z > 0), f16(y)\n}\n",
    "program functions(x: f64[2, 3]) {\n"
    "  a = exp(log(log1p(expm1(sqrt(rsqrt(abs(tanh(sigmoid(softplus(x))))))))))\n"
    "  b = sin(cos(floor(ceil(x)))) + pow(x, 2) + min(x, 0) + max(x, 1) + logaddexp(x, a)\n"
    "  c = log2(exp2(x)) - log10(x) * log2(x + 1)\n"
    "  d = erf(x) + erfc(-x) * atan(x) - atan2(x, a)\n"
    "  return where(x > 0, a, b), c, d\n}\n",
    "program bits(x: i32[N], y: i32[N]) {\n  return x & y | x ^ y, (x | y) & 255, -(x % y)\n}\n",
    "program slices(x: f32[B<=16, L]) {\n  a = slice(x, 1, 0, L - 1)\n"
    "  b = slice(x, -1, -3, L, 2)\n  c = slice(x, 0, max(B - 2, 1), min(2*B, L) + 1)\n"
    "  return a, b, c, concat(-1, a, x, a), interleave(1, x, x)\n}\n",
    "program rebinding(x: i64[5]) {\n  y = x + 1\n  y = y * y\n  z = y\n  return z, y, x\n}\n",
    "combine welford(n1, mean1, m2_1 | n2, mean2, m2_2) {\n  n = n1 + n2\n"
    "  delta = mean2 - mean1\n"
    "  return n, mean1 + delta * n2 / n, m2_1 + m2_2 + delta * delta * n1 * n2 / n\n}\n"
    "program stats(x: f32[N, T]) {\n  c = 0 * x + 1\n"
    "  (n, mean, m2) = scan welford(c, x, 0 * x) dim=1\n"
    "  return mean, m2 / n\n}\n",
    "program late(x: i32[N, 2]) {\n  (s, m) = scan both(x, x) dim=-1 reverse\n  return m\n}\n"
    "combine both(s1, m1 | s2, m2) {\n  return s1 + s2, max(m1, m2)\n}\n",
    "combine one(a | b; k, j) {\n  return where(k, a, b) + j\n}\n"
    "program captured(x: f32[3, N], k: bool[], j: f32[3, 1]) {\n"
    "  y = scan one(x) dim=1 with (k, j)\n  return y\n}\n",
    "program empty_shape(x: f32[0, 1], y: f32[1, 7]) {\n  return x + y\n}\n",
};

TEST(RoundTrip, HoldsForACorpusThatCoversEveryConstruct) {
    for (std::size_t i = 0; i < std::size(kCorpus); ++i)
        expect_text_round_trip(kCorpus[i], cat("corpus[", i, "]"));
}

// ---- random DSL programs ----

constexpr DType kGenTypes[] = {DType::F32, DType::F64, DType::F16, DType::I32,
                               DType::I64, DType::U8,  DType::Bool};

class RandomPrograms {
public:
    explicit RandomPrograms(std::uint64_t seed) : rng_(seed) {}

    Module module() {
        Module m;
        int programs = 1 + pick(2);
        for (int i = 0; i < programs; ++i) m.programs.push_back(program(cat("p", i)));
        return m;
    }

private:
    struct Value {
        Expr e;
        DType dtype;
    };
    using Pool = std::vector<Value>;

    int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
    bool coin(double p = 0.5) { return std::bernoulli_distribution(p)(rng_); }
    template <typename T>
    const T& one_of(const std::vector<T>& xs) { return xs[pick(static_cast<int>(xs.size()))]; }

    std::string hint() {
        static const std::vector<std::string> kHints = {"a", "b", "x", "h", "t0", "t1", "a_1",
                                                        "y", "scan", "1st", "x y", ""};
        return one_of(kHints);
    }

    Expr literal(DType t) {
        LiteralAttr v{false, 0.0, pick(200) - 50};
        if (is_float(t) && coin()) {
            static const std::vector<double> kFloats = {0.5, -0.0, 1e-300, 3.25e12, 0.1, -2.75,
                                                        INFINITY, -INFINITY, NAN, 1e100};
            v = {true, one_of(kFloats), 0};
        }
        return make_literal(v, typed_);
    }

    const Value* from_pool(DType t, const Pool& pool) {
        std::vector<const Value*> fits;
        for (auto& v : pool)
            if (v.dtype == t) fits.push_back(&v);
        return fits.empty() ? nullptr : one_of(fits);
    }

    // A value of dtype `t` that is certainly not weak (comparisons of two literals would be).
    Expr strong_bool(const Pool& pool, int depth) {
        if (const Value* v = from_pool(DType::Bool, pool); v && coin(0.6)) return v->e;
        std::vector<const Value*> numeric;
        for (auto& v : pool)
            if (v.dtype != DType::Bool) numeric.push_back(&v);
        if (numeric.empty()) return from_pool(DType::Bool, pool)->e;  // all leaves are bool
        const Value* v = one_of(numeric);
        static constexpr Op kCompare[] = {Op::Lt, Op::Le, Op::Gt, Op::Ge, Op::Eq, Op::Ne};
        Expr rhs = expr(v->dtype, depth - 1, pool);
        return coin() ? apply(kCompare[pick(6)], {v->e, rhs}) : apply(kCompare[pick(6)], {rhs, v->e});
    }

    // exp, log, ..., ceil: the one-argument functions, in ops.def order.
    Op unary_float() {
        constexpr int first = static_cast<int>(Op::Exp), count = static_cast<int>(Op::Ceil) - first + 1;
        return static_cast<Op>(first + pick(count));
    }

    Expr atom(DType t, const Pool& pool) {
        if (t == DType::Bool) return strong_bool(pool, 1);
        if (const Value* v = from_pool(t, pool); v && coin(0.75)) return v->e;
        return literal(t);
    }

    Expr expr(DType t, int depth, const Pool& pool) {
        if (depth <= 0 || coin(0.2)) return atom(t, pool);
        auto sub = [&] { return expr(t, depth - 1, pool); };
        auto boolean = [&] { return strong_bool(pool, depth); };
        Expr e = atom(t, pool);
        if (t == DType::Bool) {
            static constexpr Op kLogic[] = {Op::And, Op::Or, Op::BitAnd, Op::BitOr, Op::BitXor};
            switch (pick(5)) {
                case 0: e = apply(kLogic[pick(5)], {boolean(), boolean()}); break;
                case 1: e = apply(Op::Not, {boolean()}); break;
                case 2: e = where(boolean(), boolean(), boolean()); break;
                case 3: e = cast(t, expr(kGenTypes[pick(6)], depth - 1, pool)); break;
                default: e = strong_bool(pool, depth);
            }
        } else if (is_float(t)) {
            static constexpr Op kArith[] = {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Pow,
                                            Op::Min, Op::Max, Op::LogAddExp, Op::Atan2};
            switch (pick(5)) {
                case 0:
                case 1: e = apply(kArith[pick(9)], {sub(), sub()}); break;
                case 2: e = apply(unary_float(), {sub()}); break;
                case 3: e = coin() ? -sub() : where(strong_bool(pool, depth - 1), sub(), sub()); break;
                default: e = cast(t, expr(kGenTypes[pick(7)], depth - 1, pool));
            }
        } else {
            static constexpr Op kInt[] = {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Mod, Op::BitAnd,
                                          Op::BitOr, Op::BitXor, Op::Shl, Op::Shr, Op::Min, Op::Max};
            switch (pick(5)) {
                case 0:
                case 1: e = apply(kInt[pick(12)], {sub(), sub()}); break;
                case 2: e = coin() ? -sub() : abs(sub()); break;
                case 3: e = where(strong_bool(pool, depth - 1), sub(), sub()); break;
                default: e = cast(t, expr(kGenTypes[pick(7)], depth - 1, pool));
            }
        }
        if (coin(0.15)) e.node()->name = hint();
        return e;
    }

    CombineRef combine(const std::vector<DType>& leaves, const std::vector<DType>& captured) {
        int n = static_cast<int>(leaves.size()), k = static_cast<int>(captured.size());
        std::vector<std::string> names;
        for (int i = 0; i < 2 * n + k; ++i) names.push_back(coin(0.3) ? hint() : cat("p", i));
        typed_ = false;
        CombineRef c = trace_combine(
            cat("c", combines_++, coin(0.1) ? " odd" : ""), n, k,
            [&](const Exprs& l, const Exprs& r, const Exprs& cap) {
                Pool pool;
                for (int i = 0; i < n; ++i) {
                    pool.push_back({l[i], leaves[i]});
                    pool.push_back({r[i], leaves[i]});
                }
                for (int i = 0; i < k; ++i) pool.push_back({cap[i], captured[i]});
                Exprs out;
                for (int i = 0; i < n; ++i) out.push_back(expr(leaves[i], 1 + pick(4), pool));
                return out;
            },
            names);
        typed_ = true;
        return c;
    }

    ProgramRef program(const std::string& name) {
        ProgramBuilder b(name);
        Size B = b.symbol("B"), L = coin() ? b.symbol("L", 1 << (4 + pick(10))) : b.symbol("L");
        Size D = coin() ? Size(4) : b.symbol("D");
        Shape full = {B, L, D};
        Pool pool, full_values, scalars;
        for (DType t : kGenTypes) {
            full_values.push_back({b.param(coin(0.2) ? "x" : cat("x_", dtype_name(t)), t, full), t});
            pool.push_back(full_values.back());
        }
        const std::vector<Shape> broadcast = {{D}, {L, Size(1)}, {}, {Size(1), L, D}};
        for (int i = 0; i < 3; ++i) {
            DType t = kGenTypes[pick(7)];
            pool.push_back({b.param(cat("w", i), t, one_of(broadcast)), t});
        }
        for (DType t : {DType::F32, DType::I32}) {
            scalars.push_back({b.param(cat("s_", dtype_name(t)), t, {}), t});
            pool.push_back(scalars.back());
        }
        Expr wide = b.param("wide", DType::F32, {B, Size(1), D});
        Exprs results;
        int statements = 2 + pick(5);
        for (int i = 0; i < statements; ++i) {
            DType t = kGenTypes[pick(7)];
            if (coin(0.4)) {
                results.push_back(expr(t, 1 + pick(4), pool));
                // Literal-only values are weak: comparing two of them would be too.
                if (!results.back().type().weak) pool.push_back({results.back(), t});
            } else {
                scan_into(b, full_values, scalars, wide, pool);
            }
        }
        for (int i = 0; i < 3; ++i) structural(B, L, pool, results);
        int returned = 1 + pick(3);
        for (int i = 0; i < returned; ++i) results.push_back(one_of(pool).e);
        return b.build(results);
    }

    void scan_into(ProgramBuilder& b, const Pool& full_values, const Pool& scalars,
                   const Expr& wide, Pool& pool) {
        int n = 1 + pick(3), k = pick(3);
        std::int64_t dim = pick(6) - 3;
        std::vector<DType> leaf_types, captured_types;
        Exprs leaves, captured;
        for (int i = 0; i < n; ++i) {
            const Value& v = one_of(full_values);
            leaf_types.push_back(v.dtype);
            Op join = v.dtype == DType::Bool ? Op::Or : Op::Add;
            leaves.push_back(coin() ? v.e : apply(join, {v.e, expr(v.dtype, 2, pool)}));
        }
        for (int i = 0; i < k; ++i) {
            int choice = pick(3);
            if (choice == 0 && (dim == 1 || dim == -2)) {
                captured.push_back(wide), captured_types.push_back(DType::F32);
            } else if (choice == 1) {
                const Value& s = one_of(scalars);
                // Never weak: the combine was typed for exactly this dtype.
                captured.push_back(apply(Op::Add, {s.e, expr(s.dtype, 2, scalars)}));
                captured_types.push_back(s.dtype);
            } else {
                captured.push_back(make_literal(LiteralAttr{false, 0.0, pick(9)}, true));
                captured_types.push_back(DType::I64);
            }
        }
        Exprs outs = b.scan(combine(leaf_types, captured_types), leaves, dim, coin(), captured);
        for (int i = 0; i < n; ++i) {
            if (coin(0.3)) outs[i].node()->name = hint();
            if (coin(0.8)) pool.push_back({outs[i], leaf_types[i]});
        }
    }

    Size size_expr(const Size& B, const Size& L) {
        switch (pick(8)) {
            case 0: return pick(7) - 3;
            case 1: return L;
            case 2: return L - 1;
            case 3: return Size::min(L, 4);
            case 4: return L * 2;
            case 5: return Size::max(L - 3, 1) + B;
            case 6: return Size::floordiv(L + 1, 2);
            default: return Size(5) - L;
        }
    }

    void structural(const Size& B, const Size& L, const Pool& pool, Exprs& results) {
        const Value& v = one_of(pool);
        int rank = static_cast<int>(v.e.type().shape.size());
        if (rank == 0) return;
        std::int64_t dim = pick(2 * rank) - rank;
        std::int64_t step = coin() ? 1 : 1 + pick(3);
        Expr s = slice(v.e, dim, size_expr(B, L), size_expr(B, L), step);
        if (coin(0.3)) s.node()->name = hint();
        switch (pick(3)) {
            case 0: results.push_back(concat(dim, {s, v.e, s})); break;
            case 1: results.push_back(interleave(dim, s, s)); break;
            default: results.push_back(v.dtype == DType::Bool ? apply(Op::Not, {s}) : s * 3);
        }
    }

    std::mt19937_64 rng_;
    bool typed_ = true;
    int combines_ = 0;
};

TEST(RoundTrip, HoldsForRandomProgramsBuiltWithTheDsl) {
    for (std::uint64_t seed = 1; seed <= 250; ++seed) {
        Module m;
        try {
            m = RandomPrograms(seed).module();
        } catch (const CompileError& e) {
            FAIL() << "seed " << seed << ": the generator built a bad program: " << e.what();
        }
        expect_round_trip(m, cat("seed ", seed));
        if (HasFailure()) break;
    }
}

TEST(RoundTrip, HoldsForRandomCombinesPrintedAlone) {
    for (std::uint64_t seed = 1000; seed < 1100; ++seed) {
        Module m = RandomPrograms(seed).module();
        for (const Node* n : topo_order(m.programs[0]->results)) {
            if (n->op != Op::Scan) continue;
            const Combine& c = *n->as<ScanAttr>().combine;
            std::string text = print_combine(c);
            Module parsed = parse_module(text, cat("seed ", seed));
            ASSERT_EQ(parsed.combines.size(), 1u);
            EXPECT_EQ(print_combine(*parsed.combines[0]), text);
            SameStructure same;
            EXPECT_TRUE(same.combines(c, *parsed.combines[0])) << text;
        }
    }
}

}  // namespace
}  // namespace scanc
