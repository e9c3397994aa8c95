#include "random_programs.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>

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

std::string compare(const Tensor& expected, const Tensor& actual, bool bitwise, double rtol) {
    if (expected.dtype() != actual.dtype()) return "dtypes differ";
    if (expected.sizes() != actual.sizes()) return "sizes differ";
    DType t = expected.dtype();
    std::size_t e = dtype_size(t);
    auto* a = static_cast<const char*>(expected.data());
    auto* b = static_cast<const char*>(actual.data());
    std::int64_t n = expected.numel();
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
            ok = x.f == y.f;
        } else {
            ok = std::fabs(x.f - y.f) <= rtol * (std::fabs(x.f) + scale);
        }
        if (!ok)
            return cat("element ", i, " of ", n, ": expected ", is_float(t) ? x.f : x.i, ", got ",
                       is_float(t) ? y.f : y.i);
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

struct Case {
    DType dtype;
    Kind kind;
    std::vector<std::int64_t> sizes;
    int dim;
    bool reverse, prologue, epilogue;
    Layout layout;

    std::string str() const {
        std::string s = cat(dtype_name(dtype), " kind=", static_cast<int>(kind), " sizes=[");
        for (auto v : sizes) s += cat(v, ",");
        return s + cat("] dim=", dim, reverse ? " reverse" : "", prologue ? " prologue" : "",
                       epilogue ? " epilogue" : "", " layout=", static_cast<int>(layout));
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
    if (c.prologue) {
        // A broadcast operand of lower rank (the last dim only), and a literal.
        Expr y = pb.param("y", c.dtype, {shape.back()});
        in.add(c.dtype, {c.sizes.back()}, Values::SmallInts, Layout::Strided, rng);
        Expr last = scanned.back();
        scanned.back() = c.kind == Kind::Affine && is_float(c.dtype) ? last + y * 0.25 : last - y * 2;
    }
    Exprs ys = pb.scan(make_combine(c.kind, c.dtype), scanned, c.dim, c.reverse, captured);
    Exprs results = ys;
    // A float epilogue multiplies by 0.1, which f16/bf16 cannot hold: an op's literal operand
    // converts at f32 precision, and each op's result rounds to its dtype.
    if (c.epilogue) results.push_back(is_float(c.dtype) ? ys.back() * 0.1 - leaves[0] : ys.back() * 3 - leaves[0]);
    RandomProgram out;
    out.program = pb.build(results);
    out.inputs = std::move(in);
    out.exact = !(c.kind == Kind::Affine || c.kind == Kind::SmoothMax || c.kind == Kind::Matrix2x2);
    out.dtype = c.dtype;
    for (std::size_t k = 0; k < c.sizes.size(); ++k) out.sizes.emplace_back(cat("S", k), c.sizes[k]);
    out.what = c.str();
    return out;
}

std::string compare_results(const RandomProgram& p, const std::vector<Tensor>& expected,
                            const std::vector<Tensor>& actual) {
    if (expected.size() != actual.size()) return cat(actual.size(), " results, expected ", expected.size());
    for (std::size_t r = 0; r < expected.size(); ++r) {
        std::string m = compare(expected[r], actual[r], p.exact, tolerance(p.dtype));
        if (!m.empty()) return cat("result ", r, ": ", m);
    }
    return "";
}

}  // namespace scanc::test
