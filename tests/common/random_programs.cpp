#include "random_programs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>

#include "scanc/ir/scalar_eval.h"

namespace scanc::test {

void Inputs::add(DType t, const std::vector<std::int64_t>& sizes, Values values, Layout layout,
                 std::mt19937_64& rng) {
    int rank = static_cast<int>(sizes.size());
    if (rank < 2 && layout == Layout::Transposed) layout = Layout::Strided;
    if (rank == 0) layout = Layout::Contiguous;
    // Storage shape: transposed swaps the last two dims; strided doubles the last dim.
    std::vector<std::int64_t> store = sizes;
    if (layout == Layout::Transposed) std::swap(store[rank - 1], store[rank - 2]);
    if (layout == Layout::Strided) store[rank - 1] *= 2;
    Tensor buf = Tensor::empty(t, store);
    std::uniform_int_distribution<int> small(-5, 5);
    std::uniform_real_distribution<double> unit(-1.0, 1.0), decay(0.5, 1.0);
    auto* p = static_cast<char*>(buf.data());
    std::size_t e = dtype_size(t);
    for (std::int64_t i = 0; i < buf.numel(); ++i) {
        double v = values == Values::SmallInts ? small(rng)
                   : values == Values::Unit    ? unit(rng)
                                               : decay(rng);
        Scalar s = is_float(t) ? Scalar::of_double(t, v)
                               : Scalar::of_int(t, static_cast<std::int64_t>(std::lround(v * 20)));
        store_scalar(s, p + i * e);
    }
    TensorView v = buf.view();
    v.sizes = sizes;
    if (layout == Layout::Transposed) std::swap(v.strides[rank - 1], v.strides[rank - 2]);
    if (layout == Layout::Flipped && rank > 0 && sizes[0] > 0) {
        v.data = p + (sizes[0] - 1) * v.strides[0] * static_cast<std::int64_t>(e);
        v.strides[0] = -v.strides[0];
    }
    if (layout == Layout::Strided) v.strides[rank - 1] *= 2;
    storage.push_back(buf);
    views.push_back(v);
}

std::vector<Tensor> run_reference(const ProgramRef& p, const Inputs& in) {
    return ReferenceBackend().compile(p)->run(in.views);
}

double tolerance(DType t) {
    switch (t) {
        case DType::F64: return 1e-10;
        case DType::F32: return 2e-4;
        case DType::F16: return 2e-2;
        case DType::BF16: return 1e-1;
        default: return 0;
    }
}

namespace {
double largest_finite(DType t) {
    switch (t) {
        case DType::F16: return 65504;
        case DType::BF16: return 3.3895313892515355e38;
        case DType::F32: return std::numeric_limits<float>::max();
        default: return std::numeric_limits<double>::max();
    }
}
}  // namespace

std::string compare(const Tensor& expected, const Tensor& actual, bool bitwise, double rtol) {
    if (expected.dtype() != actual.dtype()) return "dtypes differ";
    if (expected.sizes() != actual.sizes()) return "sizes differ";
    DType t = expected.dtype();
    std::size_t e = dtype_size(t);
    auto* a = static_cast<const char*>(expected.data());
    auto* b = static_cast<const char*>(actual.data());
    std::int64_t n = expected.numel();
    // The same bytes pass in every mode (most comparisons, and the quickest check).
    if (std::memcmp(a, b, static_cast<std::size_t>(n) * e) == 0) return "";
    double scale = 1;
    if (is_float(t) && n > 0) {
        double sum = 0;
        for (std::int64_t i = 0; i < n; ++i) {
            double v = std::fabs(load_scalar(t, a + i * e).f);
            if (std::isfinite(v)) sum += v;
        }
        scale = std::max(1.0, sum / static_cast<double>(n));
    }
    for (std::int64_t i = 0; i < n; ++i) {
        Scalar x = load_scalar(t, a + i * e), y = load_scalar(t, b + i * e);
        bool ok;
        if (!is_float(t) || bitwise) {
            ok = std::memcmp(a + i * e, b + i * e, e) == 0 ||
                 (is_float(t) && std::isnan(x.f) && std::isnan(y.f));
        } else if (std::isnan(x.f) || std::isnan(y.f)) {
            ok = std::isnan(x.f) && std::isnan(y.f);
        } else if (std::isinf(x.f) || std::isinf(y.f)) {
            // A sum reassociated near the largest finite value may round to it or overflow.
            const double edge = largest_finite(t) * (1 - rtol);
            ok = x.f == y.f || (std::signbit(x.f) == std::signbit(y.f) && std::fabs(x.f) >= edge && std::fabs(y.f) >= edge);
        } else {
            ok = std::fabs(x.f - y.f) <= rtol * (std::fabs(x.f) + scale);
        }
        if (!ok) {
            // Every digit of a float, so that an ulp apart shows.
            auto text = [&](const Scalar& v) {
                char buf[32];
                std::snprintf(buf, sizeof buf, "%.17g", v.f);
                return is_float(t) ? std::string(buf) : cat(v.i);
            };
            return cat("element ", i, " of ", n, ": expected ", text(x), ", got ", text(y));
        }
    }
    return "";
}

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

// The prologues: the last leaf `a` and an operand `y` broadcast along the leading dims, through
// one of seven expressions of the leaf's dtype class. Integer ones wrap, divide by zero (y
// takes 0) and shift; float ones round each op (f16/bf16 included), and say whether they keep
// integer values (so sums stay exact in any association) and whether every op is correctly
// rounded (so every backend gets the same bits).
constexpr int kPrologues = 7;
Expr prologue(int op, const Expr& a, const Expr& y, bool integer) {
    if (integer) {
        switch (op) {
            case 0: return a - y * 2;
            case 1: return a * a - y;
            case 2: return a / y + a % y;
            case 3: return (a >> 2) ^ y;
            case 4: return max(a, y) - min(a, y);
            case 5: return where(a > y, a, y * 3);
            default: return abs(a) + (a << 1);
        }
    }
    switch (op) {
        case 0: return a - y * 2;
        case 1: return a * 0.1 + y;
        case 2: return sqrt(abs(a));
        case 3: return exp(a * 0.25);
        case 4: return floor(a * 0.5) + y;
        case 5: return a / (abs(y) + 0.5);
        default: return tanh(a) - floor(a);
    }
}
bool prologue_keeps_integers(int op) { return op == 0 || op == 4; }
bool prologue_rounds_correctly(int op) { return op != 3 && op != 6; }

struct Case {
    DType dtype;
    Kind kind;
    std::vector<std::int64_t> sizes;
    int dim;
    bool reverse, epilogue, map;  // map: a result of the inputs alone, with no scan
    int prologue;                 // -1: none
    Layout layout;

    std::string str() const {
        std::string s = cat(dtype_name(dtype), " kind=", static_cast<int>(kind), " sizes=[");
        for (auto v : sizes) s += cat(v, ",");
        return s + cat("] dim=", dim, reverse ? " reverse" : "", prologue >= 0 ? cat(" prologue=", prologue) : "",
                       epilogue ? " epilogue" : "", map ? " map" : "", " layout=", static_cast<int>(layout));
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
    c.prologue = c.dtype != DType::Bool && rng() % 2 ? static_cast<int>(rng() % kPrologues) : -1;
    c.epilogue = c.dtype != DType::Bool && rng() % 2;
    c.map = c.dtype != DType::Bool && rng() % 4 == 0;
    c.layout = static_cast<Layout>(rng() % 4);
    return c;
}

}  // namespace

RandomProgram random_program(std::mt19937_64& rng) {
    const Case c = random_case(rng);
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
    if (c.prologue >= 0) {  // a broadcast operand of lower rank (the last dim only)
        Expr y = pb.param("y", c.dtype, {shape.back()});
        in.add(c.dtype, {c.sizes.back()}, Values::SmallInts, Layout::Strided, rng);
        scanned.back() = prologue(c.prologue, scanned.back(), y, !is_float(c.dtype));
    }
    Exprs ys = pb.scan(make_combine(c.kind, c.dtype), scanned, c.dim, c.reverse, captured);
    Exprs results = ys;
    // A float epilogue multiplies by 0.1, which f16/bf16 cannot hold: an op's literal operand
    // converts at f32 precision, and each op's result rounds to its dtype.
    if (c.epilogue) results.push_back(is_float(c.dtype) ? ys.back() * 0.1 - leaves[0] : ys.back() * 3 - leaves[0]);
    if (c.map) results.push_back(leaves[0] * 2 - 1);
    RandomProgram out;
    out.program = pb.build(results);
    out.inputs = std::move(in);
    // Exact: selections of leaves every backend computes alike, and sums of integers.
    const bool selects = c.kind == Kind::Max || c.kind == Kind::LastNonzero || c.kind == Kind::CapturedSelect;
    out.exact = c.prologue < 0 || (selects ? prologue_rounds_correctly(c.prologue) : prologue_keeps_integers(c.prologue));
    out.exact = out.exact && (selects || c.kind == Kind::Sum);
    out.dtype = c.dtype;
    for (std::size_t k = 0; k < c.sizes.size(); ++k) out.sizes.emplace_back(cat("S", k), c.sizes[k]);
    out.what = c.str();
    return out;
}

void for_each_random_program(std::uint64_t seed, int count,
                             const std::function<void(const RandomProgram&, std::mt19937_64& rng)>& check) {
    std::mt19937_64 rng(seed);
    for (int i = 0; i < count && !::testing::Test::HasFatalFailure(); ++i) {
        const RandomProgram p = random_program(rng);
        SCOPED_TRACE(cat("case ", i, ": ", p.what));
        check(p, rng);
    }
}

std::string compare_results(const RandomProgram& p, const std::vector<Tensor>& expected,
                            const std::vector<Tensor>& actual, bool bitwise) {
    if (expected.size() != actual.size()) return cat(actual.size(), " results, expected ", expected.size());
    for (std::size_t r = 0; r < expected.size(); ++r) {
        std::string m = compare(expected[r], actual[r], bitwise || p.exact, tolerance(p.dtype));
        if (!m.empty()) return cat("result ", r, ": ", m);
    }
    return "";
}

}  // namespace scanc::test
