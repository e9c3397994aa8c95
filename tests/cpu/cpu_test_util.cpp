#include "cpu_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>

#include "scanc/ir/scalar_eval.h"

namespace scanc::cpu_test {

std::vector<Tensor> run_cpu(const ProgramRef& p, const Inputs& in, int threads, bool ordered) {
    RunOptions o;
    o.num_threads = threads;
    o.ordered = ordered;
    return CpuBackend().compile(p)->run(in.views, o);
}

Tensor tensor_of(DType t, std::vector<std::int64_t> sizes, const std::vector<double>& values) {
    Tensor out = Tensor::empty(t, std::move(sizes));
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (t == DType::F32) static_cast<float*>(out.data())[i] = static_cast<float>(values[i]);
        else static_cast<double*>(out.data())[i] = values[i];
    }
    return out;
}

double element(const Tensor& t, std::int64_t i) {
    return t.dtype() == DType::F32 ? static_cast<const float*>(t.data())[i] : static_cast<const double*>(t.data())[i];
}

double ulps_from(double a, long double b, DType t) {
    const double want = t == DType::F32 ? static_cast<float>(b) : static_cast<double>(b);
    if (std::isnan(a) || std::isnan(want)) return std::isnan(a) && std::isnan(want) ? 0 : INFINITY;
    if (a == want) return 0;
    const int digits = t == DType::F32 ? 24 : 53;
    int e;
    std::frexp(want == 0 ? a : want, &e);
    const int lowest = t == DType::F32 ? -125 : -1021;  // frexp's exponent of the smallest normal
    return std::fabs(a - want) / std::ldexp(1.0, std::max(e, lowest) - digits);
}

std::vector<Tensor> run_on(const ProgramRef& p, const std::vector<TensorView>& in, bool cpu, bool ordered, int threads) {
    if (!cpu) return ReferenceBackend().compile(p)->run(in);
    RunOptions o;
    o.ordered = ordered;
    if (threads > 0) o.num_threads = threads;
    return CpuBackend().compile(p)->run(in, o);
}

void expect_cpu_follows(const ProgramRef& p, const std::vector<TensorView>& in, const Tensor& ref) {
    std::vector<Tensor> ordered = run_on(p, in, true);
    EXPECT_EQ(compare(ref, ordered[0], true, 0), "") << dtype_name(ref.dtype()) << " ordered";
    for (int threads : {1, 2, 4}) {
        std::vector<Tensor> cpu = run_on(p, in, true, false, threads);
        EXPECT_EQ(compare(ref, cpu[0], false, tolerance(ref.dtype())), "") << dtype_name(ref.dtype()) << " threads=" << threads;
    }
}

std::vector<Tensor> expect_matches(const ProgramRef& p, const Inputs& in,
                                   std::initializer_list<int> thread_counts, bool bitwise,
                                   const std::string& what) {
    auto expected = run_reference(p, in);
    for (int threads : thread_counts) {
        auto actual = run_cpu(p, in, threads);
        EXPECT_EQ(expected.size(), actual.size()) << what << " threads=" << threads;
        for (std::size_t r = 0; r < std::min(expected.size(), actual.size()); ++r)
            EXPECT_EQ(compare(expected[r], actual[r], bitwise, tolerance(expected[r].dtype())), "")
                << what << " threads=" << threads << " result " << r;
    }
    return expected;
}

void expect_bitwise(const ProgramRef& p, const Inputs& in, const std::string& what,
                    std::initializer_list<int> thread_counts) {
    expect_matches(p, in, thread_counts, true, what);
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

CombineRef affine_max_combine() {
    using dsl::Exprs;
    return dsl::trace_combine("affine_max", 2, 0, [](auto& l, auto& r, auto&) {
        return Exprs{l[0] * r[0], max(l[1] * r[0], r[1])};
    });
}

CombineRef max_min_combine() {
    using dsl::Exprs;
    return dsl::trace_combine("max_min", 2, 0, [](auto& l, auto& r, auto&) {
        return Exprs{max(l[0], r[0]), min(l[1], r[1])};
    });
}

CombineRef integer_literals_combine() {
    using dsl::Exprs;
    return dsl::trace_combine("integer_literals", 2, 0, [](auto& l, auto& r, auto&) {
        return Exprs{l[0] * r[0], l[1] * r[0] * 1 + (r[1] - 0)};
    });
}

CombineRef every_op_combine() {
    using dsl::Exprs;
    return dsl::trace_combine("every_op", 4, 0, [](auto& l, auto& r, auto&) {
        return Exprs{l[0] * r[0], l[1] * r[0] + r[1], max(r[2] + l[2] * r[0], l[2]) / 2.0 - min(l[2], r[2]), r[3]};
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
                              std::numeric_limits<float>::signaling_NaN(),
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
                        bool epilogue, int only_leaf) {
    dsl::ProgramBuilder pb("p");
    Shape shape;
    for (int k = 0; k < rank; ++k) shape.push_back(pb.symbol(cat("S", k)));
    dsl::Exprs leaves;
    for (int i = 0; i < combine->num_leaves(); ++i)
        leaves.push_back(pb.param(cat("x", i), dtype, shape));
    dsl::Exprs outs = pb.scan(combine, leaves, dim, reverse);
    if (epilogue) outs = {outs[0] * outs[0] - outs[0]};
    if (only_leaf >= 0) outs = {outs[only_leaf]};
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

Inputs captured_affine_or_sum_inputs(std::int64_t n, std::mt19937_64& rng, std::int64_t lines) {
    Inputs in;
    for (int i = 0; i < 2; ++i) in.add(DType::I32, {lines, n}, Values::SmallInts, Layout::Contiguous, rng);
    in.add(DType::I32, {lines, 1}, Values::SmallInts, Layout::Contiguous, rng);
    auto* cap = static_cast<std::int32_t*>(in.views.back().data);
    for (std::int64_t k = 0; k < lines; ++k) cap[k] = k % 3 == 1 ? -1 : 1;  // both kinds of line
    return in;
}

}  // namespace scanc::cpu_test
