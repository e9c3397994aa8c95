// Differential tests: random programs (combines, leaves, captured values, prologues,
// epilogues, reverse), dtypes, shapes, dims and layouts, on the CPU backend against the
// reference executor.
#include <gtest/gtest.h>

#include "cpu_test_util.h"

namespace scanc::cpu_test {
namespace {

using namespace scanc::dsl;

enum class Kind { Sum, Max, LastNonzero, Affine, Matrix2x2, CapturedSelect, SmoothMax };

CombineRef make_combine(Kind k, DType t) {
    switch (k) {
        case Kind::Sum:
            if (t == DType::Bool)
                return trace_combine("any", 1, 0, [](auto& l, auto& r, auto&) { return Exprs{l[0] || r[0]}; });
            return trace_combine("sum", 1, 0, [](auto& l, auto& r, auto&) { return Exprs{l[0] + r[0]}; });
        case Kind::Max:
            return trace_combine("mx", 1, 0, [](auto& l, auto& r, auto&) { return Exprs{max(l[0], r[0])}; });
        case Kind::LastNonzero:  // not commutative
            return trace_combine("last", 1, 0, [](auto& l, auto& r, auto&) {
                return Exprs{where(r[0] != 0, r[0], l[0])};
            });
        case Kind::Affine:  // not commutative
            return trace_combine("affine", 2, 0, [](auto& l, auto& r, auto&) {
                return Exprs{l[0] * r[0], r[0] * l[1] + r[1]};
            });
        case Kind::Matrix2x2:  // row-vector matrix products, not commutative
            return trace_combine("mat", 4, 0, [](auto& l, auto& r, auto&) {
                return Exprs{l[0] * r[0] + l[1] * r[2], l[0] * r[1] + l[1] * r[3],
                             l[2] * r[0] + l[3] * r[2], l[2] * r[1] + l[3] * r[3]};
            });
        case Kind::CapturedSelect:
            return trace_combine("sel", 1, 1, [](auto& l, auto& r, auto& c) {
                return Exprs{where(c[0] > 0, max(l[0], r[0]), min(l[0], r[0]))};
            });
        case Kind::SmoothMax:
            return trace_combine("smax", 1, 1, [](auto& l, auto& r, auto& c) {
                return Exprs{c[0] * logaddexp(l[0] / c[0], r[0] / c[0])};
            });
    }
    return nullptr;
}

int num_leaves(Kind k) { return k == Kind::Affine ? 2 : k == Kind::Matrix2x2 ? 4 : 1; }

struct Case {
    DType dtype;
    Kind kind;
    std::vector<std::int64_t> sizes;
    int dim;
    bool reverse, prologue, epilogue;
    Layout layout;
    int threads;

    std::string str() const {
        std::string s = cat(dtype_name(dtype), " kind=", static_cast<int>(kind), " sizes=[");
        for (auto v : sizes) s += cat(v, ",");
        return s + cat("] dim=", dim, reverse ? " reverse" : "", prologue ? " prologue" : "",
                       epilogue ? " epilogue" : "", " layout=", static_cast<int>(layout),
                       " threads=", threads);
    }
};

const std::int64_t kAwkward[] = {0, 1, 2, 3, 5, 7, 13, 16, 17, 31, 32, 33, 63, 64, 65, 127, 129, 257, 1021};

Case random_case(std::mt19937_64& rng) {
    static const DType dtypes[] = {DType::Bool, DType::I8, DType::I16, DType::I32, DType::I64,
                                   DType::U8, DType::F16, DType::BF16, DType::F32, DType::F64};
    Case c;
    c.dtype = dtypes[rng() % std::size(dtypes)];
    std::vector<Kind> kinds = {Kind::Sum, Kind::Max, Kind::LastNonzero, Kind::CapturedSelect};
    if (c.dtype != DType::Bool) kinds.push_back(Kind::Affine);
    if (is_integer(c.dtype)) kinds.push_back(Kind::Matrix2x2);
    if (c.dtype == DType::F32 || c.dtype == DType::F64) kinds.push_back(Kind::SmoothMax);
    c.kind = kinds[rng() % kinds.size()];
    int rank = 1 + static_cast<int>(rng() % 3);
    c.dim = static_cast<int>(rng() % rank);
    std::int64_t total = 1;
    for (int k = 0; k < rank; ++k) {
        std::int64_t s = kAwkward[rng() % std::size(kAwkward)];
        if (total * std::max<std::int64_t>(s, 1) > 60000) s = 1 + static_cast<std::int64_t>(rng() % 7);
        c.sizes.push_back(s);
        total *= std::max<std::int64_t>(s, 1);
    }
    // Sometimes one long line, to split it across lanes, threads and superblocks.
    if (rng() % 4 == 0 && total < 64) c.sizes[c.dim] = std::int64_t{1} << 16 | (rng() % 3 == 0 ? 1 : 0);
    if (c.sizes[c.dim] > 60000 && total > 8) c.sizes[c.dim] = 5003;
    c.reverse = rng() % 2;
    c.prologue = c.dtype != DType::Bool && rng() % 2;
    c.epilogue = c.dtype != DType::Bool && rng() % 2;
    c.layout = static_cast<Layout>(rng() % 4);
    c.threads = 1 + static_cast<int>(rng() % 3);
    return c;
}

// Builds and runs one case; returns the mismatch, if any.
std::string run_case(const Case& c, std::mt19937_64& rng) {
    ProgramBuilder pb("p");
    Shape shape;
    for (std::size_t k = 0; k < c.sizes.size(); ++k) shape.push_back(pb.symbol(cat("S", k)));
    Shape cap_shape = shape;
    cap_shape[c.dim] = 1;
    Inputs in;
    int n = num_leaves(c.kind);
    Values values = c.kind == Kind::Affine || c.kind == Kind::Matrix2x2 ? Values::Decay
                    : c.kind == Kind::SmoothMax                         ? Values::Unit
                                                                        : Values::SmallInts;
    Exprs leaves;
    for (int i = 0; i < n; ++i) {
        leaves.push_back(pb.param(cat("x", i), c.dtype, shape));
        Values v = (c.kind == Kind::Affine && i == 1) ? Values::Unit : values;
        in.add(c.dtype, c.sizes, v, c.layout, rng);
    }
    Exprs captured;
    if (c.kind == Kind::CapturedSelect || c.kind == Kind::SmoothMax) {
        captured.push_back(pb.param("c", c.dtype, cap_shape));
        auto cap_sizes = c.sizes;
        cap_sizes[c.dim] = 1;
        in.add(c.dtype, cap_sizes, c.kind == Kind::SmoothMax ? Values::Decay : Values::Unit,
               Layout::Contiguous, rng);
    }
    Exprs scanned = leaves;
    if (c.prologue) {
        // A broadcast operand of lower rank (the last dim only), and a literal.
        Expr y = pb.param("y", c.dtype, {shape.back()});
        in.add(c.dtype, {c.sizes.back()}, Values::SmallInts, Layout::Strided, rng);
        Expr last = scanned.back();
        scanned.back() = c.kind == Kind::Affine && is_float(c.dtype) ? last + y * 0.25 : last - y * 2;
    }
    Exprs ys = pb.scan(make_combine(c.kind, c.dtype), scanned, c.dim, c.reverse, captured);
    Exprs results = ys;
    if (c.epilogue) results.push_back(ys.back() * 3 - leaves[0]);
    ProgramRef p = pb.build(results);
    auto expected = run_reference(p, in);
    auto actual = run_cpu(p, in, c.threads);
    bool exact = !(c.kind == Kind::Affine || c.kind == Kind::SmoothMax || c.kind == Kind::Matrix2x2);
    for (std::size_t r = 0; r < expected.size(); ++r) {
        std::string m = compare(expected[r], actual[r], exact, tolerance(c.dtype));
        if (!m.empty()) return cat("result ", r, ": ", m);
    }
    // Deterministic: the same thread count gives the same bits.
    auto again = run_cpu(p, in, c.threads);
    for (std::size_t r = 0; r < actual.size(); ++r) {
        std::string m = compare(actual[r], again[r], true, 0);
        if (!m.empty()) return cat("rerun differs, result ", r, ": ", m);
    }
    return "";
}

TEST(CpuDifferential, RandomProgramsMatchTheReference) {
    std::mt19937_64 rng(20261129);
    for (int i = 0; i < 300; ++i) {
        Case c = random_case(rng);
        std::string m = run_case(c, rng);
        ASSERT_EQ(m, "") << "case " << i << ": " << c.str();
    }
}

}  // namespace
}  // namespace scanc::cpu_test
