#include "cpu_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>

#include "scanc/ir/scalar_eval.h"

namespace scanc::cpu_test {

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

std::vector<Tensor> run_cpu(const ProgramRef& p, const Inputs& in, int threads, bool ordered) {
    RunOptions o;
    o.num_threads = threads;
    o.ordered = ordered;
    return CpuBackend().compile(p)->run(in.views, o);
}

void expect_bitwise(const ProgramRef& p, const Inputs& in, const std::string& what,
                    std::initializer_list<int> thread_counts) {
    auto expected = run_reference(p, in);
    for (int threads : thread_counts) {
        auto actual = run_cpu(p, in, threads);
        ASSERT_EQ(expected.size(), actual.size());
        for (std::size_t r = 0; r < expected.size(); ++r)
            EXPECT_EQ(compare(expected[r], actual[r], true, 0), "")
                << what << " threads=" << threads << " result " << r;
    }
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

CombineRef sum_combine() {
    using dsl::Exprs;
    return dsl::trace_combine("sum", 1, 0,
                              [](auto& l, auto& r, auto&) { return Exprs{l[0] + r[0]}; });
}

CombineRef affine_combine() {
    using dsl::Exprs;
    return dsl::trace_combine("affine", 2, 0, [](auto& l, auto& r, auto&) {
        return Exprs{l[0] * r[0], r[0] * l[1] + r[1]};
    });
}

CombineRef three_leaves_combine() {
    using dsl::Exprs;
    return dsl::trace_combine("three", 3, 0, [](auto& l, auto& r, auto&) {
        return Exprs{l[0] * r[0], r[1] - l[1] * (0.0 - r[0]), (l[2] + r[2]) / 1.0};
    });
}

float any_value(std::mt19937_64& rng) {
    std::uniform_int_distribution<int> kind(0, 9);
    std::uniform_real_distribution<float> unit(0.5f, 1.0f);
    float sign = rng() & 1 ? -1.0f : 1.0f;
    switch (kind(rng)) {
        case 0: return sign * std::ldexp(unit(rng), -130 - static_cast<int>(rng() % 20));
        case 1: return sign * std::ldexp(unit(rng), -100 - static_cast<int>(rng() % 26));
        case 2: return sign * 0.0f;
        case 3: return sign * std::numeric_limits<float>::infinity();
        case 4: return std::numeric_limits<float>::quiet_NaN();
        default: return sign * std::ldexp(unit(rng), static_cast<int>(rng() % 40) - 20);
    }
}

void fill_special(Tensor& t, std::mt19937_64& rng) {
    const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                              std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(), 0.0f, -0.0f,
                              std::numeric_limits<float>::denorm_min(), -1e-40f, 1.0f, -1.0f};
    std::uniform_real_distribution<float> unit(-1.5f, 1.5f);
    auto* p = static_cast<float*>(t.data());
    for (std::int64_t i = 0; i < t.numel(); ++i)
        p[i] = rng() % 16 == 0 ? specials[rng() % std::size(specials)] : unit(rng);
}

bool same_value(std::uint32_t x, std::uint32_t y) {
    auto nan = [](std::uint32_t v) { return (v & 0x7F800000u) == 0x7F800000u && (v & 0x7FFFFFu); };
    return x == y || (nan(x) && nan(y));
}

ProgramRef scan_program(const CombineRef& combine, DType dtype, int rank, int dim, bool reverse,
                        bool epilogue) {
    dsl::ProgramBuilder pb("p");
    Shape shape;
    for (int k = 0; k < rank; ++k) shape.push_back(pb.symbol(cat("S", k)));
    dsl::Exprs leaves;
    for (int i = 0; i < combine->num_leaves(); ++i)
        leaves.push_back(pb.param(cat("x", i), dtype, shape));
    dsl::Exprs outs = pb.scan(combine, leaves, dim, reverse);
    if (epilogue) outs = {outs[0] * outs[0] - outs[0]};
    return pb.build(outs);
}

ProgramRef captured_affine_or_sum(bool reverse) {
    using namespace dsl;
    auto f = trace_combine("affine_or_sum", 2, 1, [](auto& l, auto& r, auto& c) {
        return Exprs{l[0] * r[0], where(c[0] > 0, r[0] * l[1] + r[1], l[1] + r[1])};
    });
    ProgramBuilder pb("p");
    Shape shape{pb.symbol("L"), pb.symbol("N")};
    Expr a = pb.param("a", DType::I32, shape), b = pb.param("b", DType::I32, shape);
    Expr c = pb.param("c", DType::I32, {shape[0], Size(1)});
    return pb.build({pb.scan(f, {a, b}, 1, reverse, {c})[1]});
}

Inputs captured_affine_or_sum_inputs(std::int64_t n, std::mt19937_64& rng) {
    Inputs in;
    for (int i = 0; i < 2; ++i) in.add(DType::I32, {2, n}, Values::SmallInts, Layout::Contiguous, rng);
    in.add(DType::I32, {2, 1}, Values::SmallInts, Layout::Contiguous, rng);
    auto* cap = static_cast<std::int32_t*>(in.views.back().data);
    cap[0] = 1;  // one line of each kind
    cap[1] = -1;
    return in;
}

}  // namespace scanc::cpu_test
