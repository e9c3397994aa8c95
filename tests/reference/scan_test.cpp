// Scans through the reference executor, checked against plain loops written here: the combine
// in ordinary C++ double/integer arithmetic, reverse done literally as flip, scan, flip.
#include <gtest/gtest.h>

#include <array>
#include <functional>

#include "scanc/backends/reference.h"
#include "scanc/dsl/expr.h"
#include "test_tensors.h"

namespace scanc {
namespace {

using namespace dsl;
using testing::close;
using testing::tensor_of;
using testing::values_of;

using Element = std::vector<double>;  // one value per leaf
// The combine in plain C++; `at` is the element's multi-index (for captured values).
using PlainCombine = std::function<Element(const Element& l, const Element& r,
                                           const std::vector<std::int64_t>& at)>;

std::int64_t product(const std::vector<std::int64_t>& s) {
    std::int64_t n = 1;
    for (auto x : s) n *= x;
    return n;
}

// Forward inclusive scan of leaves[k][flat index] along dim; reverse = flip, scan, flip.
std::vector<Element> expected_scan(const std::vector<Element>& x, const std::vector<std::int64_t>& sizes,
                                   int dim, bool reverse, const PlainCombine& f) {
    std::vector<std::int64_t> strides(sizes.size(), 1);
    for (int d = static_cast<int>(sizes.size()) - 2; d >= 0; --d) strides[d] = strides[d + 1] * sizes[d + 1];
    std::int64_t n = product(sizes), length = sizes[dim];
    std::vector<Element> y(x.size(), Element(n));
    for (std::int64_t flat = 0; flat < n; ++flat) {
        std::vector<std::int64_t> at(sizes.size());
        for (std::size_t d = 0; d < sizes.size(); ++d) at[d] = flat / strides[d] % sizes[d];
        if (at[dim] != 0) continue;  // one line per start
        std::vector<Element> line(length, Element(x.size()));
        for (std::int64_t t = 0; t < length; ++t)
            for (std::size_t k = 0; k < x.size(); ++k) line[t][k] = x[k][flat + t * strides[dim]];
        if (reverse) std::reverse(line.begin(), line.end());
        for (std::int64_t t = 1; t < length; ++t) line[t] = f(line[t - 1], line[t], at);
        if (reverse) std::reverse(line.begin(), line.end());
        for (std::int64_t t = 0; t < length; ++t)
            for (std::size_t k = 0; k < x.size(); ++k) y[k][flat + t * strides[dim]] = line[t][k];
    }
    return y;
}

// A program scanning `num_leaves` f64 (or `dtypes`) params of rank `rank`, every dim a symbol.
struct ScanCase {
    CombineRef combine;
    std::vector<DType> dtypes;
    PlainCombine plain;
    double lo = -1, hi = 1;  // input range
};

void check_scan(const ScanCase& c, int rank, int dim, bool reverse,
                const std::vector<std::int64_t>& sizes, std::uint64_t seed) {
    ProgramBuilder p("scan_test");
    Shape shape;
    for (int d = 0; d < rank; ++d) shape.push_back(p.symbol(cat("S", d)));
    Exprs leaves;
    for (std::size_t k = 0; k < c.dtypes.size(); ++k)
        leaves.push_back(p.param(cat("x", k), c.dtypes[k], shape));
    ProgramRef prog = p.build(p.scan(c.combine, leaves, dim, reverse));

    std::mt19937_64 rng(seed);
    std::int64_t n = product(sizes);
    std::vector<Element> x;
    std::vector<Tensor> inputs;
    for (DType t : c.dtypes) {
        Element v = testing::uniform(n, c.lo, c.hi, rng);
        if (t == DType::I64) {
            for (auto& e : v) e = std::round(e);
            std::vector<std::int64_t> ints(v.begin(), v.end());
            inputs.push_back(tensor_of(t, sizes, ints));
        } else {
            inputs.push_back(tensor_of(t, sizes, v));
        }
        x.push_back(v);
    }
    std::vector<TensorView> views(inputs.begin(), inputs.end());
    std::vector<Tensor> out = ReferenceBackend().compile(prog)->run(views);
    std::vector<Element> want = expected_scan(x, sizes, dim, reverse, c.plain);
    ASSERT_EQ(out.size(), c.dtypes.size());
    for (std::size_t k = 0; k < out.size(); ++k) {
        ASSERT_EQ(out[k].sizes(), sizes);
        ASSERT_TRUE(out[k].view().is_contiguous());
        Element got;
        if (c.dtypes[k] == DType::I64) {
            for (auto v : values_of<std::int64_t>(out[k])) got.push_back(static_cast<double>(v));
        } else {
            got = values_of<double>(out[k]);
        }
        for (std::int64_t e = 0; e < n; ++e)
            ASSERT_TRUE(close(got[e], want[k][e]))
                << "leaf " << k << " element " << e << ": got " << got[e] << ", want " << want[k][e]
                << " (rank " << rank << ", dim " << dim << (reverse ? ", reverse" : "") << ")";
    }
}

// Every rank 1-4, every dim, both directions; the scanned dim takes awkward lengths, the others
// small ones (2, 3, 1) so every other coordinate is an independent scan.
void check_everywhere(const ScanCase& c) {
    const std::int64_t lengths[] = {0, 1, 2, 3, 7, 31, 32, 33, 257};
    const std::int64_t others[] = {2, 3, 1};
    std::uint64_t seed = 1;
    for (int rank = 1; rank <= 4; ++rank)
        for (int dim = 0; dim < rank; ++dim)
            for (bool reverse : {false, true})
                for (std::int64_t length : lengths) {
                    if (rank == 4 && length > 33) continue;  // keep the run short
                    std::vector<std::int64_t> sizes;
                    for (int d = 0, o = 0; d < rank; ++d) sizes.push_back(d == dim ? length : others[o++ % 3]);
                    check_scan(c, rank, dim, reverse, sizes, seed++);
                    if (::testing::Test::HasFatalFailure()) return;
                }
}

TEST(ReferenceScan, CumsumMatchesPlainLoopsAlongEveryDim) {
    auto sum = trace_combine("sum", 1, 0, [](const Exprs& l, const Exprs& r, const Exprs&) {
        return Exprs{l[0] + r[0]};
    });
    check_everywhere({sum, {DType::F64}, [](const Element& l, const Element& r, auto&) {
                          return Element{l[0] + r[0]};
                      }});
}

TEST(ReferenceScan, CummaxMatchesPlainLoopsAlongEveryDim) {
    auto cmax = trace_combine("max", 1, 0, [](const Exprs& l, const Exprs& r, const Exprs&) {
        return Exprs{max(l[0], r[0])};
    });
    check_everywhere({cmax, {DType::F64}, [](const Element& l, const Element& r, auto&) {
                          return Element{std::max(l[0], r[0])};
                      }});
}

TEST(ReferenceScan, AffineRecurrenceMatchesPlainLoopsAlongEveryDim) {
    auto affine = trace_combine("affine", 2, 0, [](const Exprs& l, const Exprs& r, const Exprs&) {
        return Exprs{l[0] * r[0], r[0] * l[1] + r[1]};
    });
    check_everywhere({affine, {DType::F64, DType::F64},
                      [](const Element& l, const Element& r, auto&) {
                          return Element{l[0] * r[0], r[0] * l[1] + r[1]};
                      }});
}

// 2x2 integer matrix products: non-commutative, so operand order and reverse are visible; the
// entries overflow int64, so wrap-around is checked with unsigned arithmetic in the test.
TEST(ReferenceScan, NonCommutativeMatrixProductWithWrapAroundMatchesPlainLoops) {
    auto matmul = trace_combine("matmul", 4, 0, [](const Exprs& l, const Exprs& r, const Exprs&) {
        return Exprs{l[0] * r[0] + l[1] * r[2], l[0] * r[1] + l[1] * r[3],
                     l[2] * r[0] + l[3] * r[2], l[2] * r[1] + l[3] * r[3]};
    });
    using Matrix = std::array<std::uint64_t, 4>;
    auto mul = [](const Matrix& a, const Matrix& b) {
        return Matrix{a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
                      a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3]};
    };
    const std::int64_t rows = 3;
    for (bool reverse : {false, true})
        for (std::int64_t length : {0, 1, 2, 3, 7, 31, 32, 33, 257}) {
            ProgramBuilder p("matrices");
            Shape shape = {p.symbol("R"), p.symbol("T")};
            Exprs leaves;
            for (int k = 0; k < 4; ++k) leaves.push_back(p.param(cat("m", k), DType::I64, shape));
            ProgramRef prog = p.build(p.scan(matmul, leaves, 1, reverse));
            std::mt19937_64 rng(length * 2 + reverse);
            std::uniform_int_distribution<std::int64_t> dist(-3, 3);
            std::vector<std::vector<std::int64_t>> m(4, std::vector<std::int64_t>(rows * length));
            for (auto& leaf : m)
                for (auto& v : leaf) v = dist(rng);
            std::vector<Tensor> in;
            for (auto& leaf : m) in.push_back(tensor_of(DType::I64, {rows, length}, leaf));
            auto ys = ReferenceBackend().compile(prog)->run(std::vector<TensorView>(in.begin(), in.end()));
            std::vector<std::vector<std::int64_t>> got;
            for (auto& y : ys) got.push_back(values_of<std::int64_t>(y));
            for (std::int64_t r = 0; r < rows; ++r) {
                Matrix acc{};
                for (std::int64_t s = 0; s < length; ++s) {
                    std::int64_t t = reverse ? length - 1 - s : s, e = r * length + t;
                    Matrix x{static_cast<std::uint64_t>(m[0][e]), static_cast<std::uint64_t>(m[1][e]),
                             static_cast<std::uint64_t>(m[2][e]), static_cast<std::uint64_t>(m[3][e])};
                    acc = s == 0 ? x : mul(acc, x);  // the carry is always the left operand
                    for (int k = 0; k < 4; ++k)
                        ASSERT_EQ(got[k][e], static_cast<std::int64_t>(acc[k]))
                            << "row " << r << " t " << t << " entry " << k;
                }
            }
        }
}

TEST(ReferenceScan, WelfordMeanAndVarianceMatchTwoPassStatistics) {
    auto welford = trace_combine("welford", 3, 0, [](const Exprs& l, const Exprs& r, const Exprs&) {
        Expr n = l[0] + r[0];
        Expr delta = r[1] - l[1];
        return Exprs{n, l[1] + delta * r[0] / n, l[2] + r[2] + delta * delta * l[0] * r[0] / n};
    });
    for (std::int64_t length : {1, 2, 3, 7, 31, 32, 33, 257}) {
        ProgramBuilder p("welford");
        Size t = p.symbol("T");
        Expr x = p.param("x", DType::F64, {t});
        // Each element is the statistic of one sample: (count 1, mean x, M2 0).
        Exprs out = p.scan(welford, {x * 0 + 1, x, x * 0}, 0);
        ProgramRef prog = p.build(out);
        std::mt19937_64 rng(length);
        std::vector<double> v = testing::uniform(length, -5, 5, rng);
        Tensor in = tensor_of(DType::F64, {length}, v);
        auto ys = ReferenceBackend().compile(prog)->run(std::vector<TensorView>{in});
        auto count = values_of<double>(ys[0]), mean = values_of<double>(ys[1]), m2 = values_of<double>(ys[2]);
        for (std::int64_t i = 0; i < length; ++i) {
            double s = 0;
            for (std::int64_t j = 0; j <= i; ++j) s += v[j];
            double mu = s / (i + 1), ss = 0;
            for (std::int64_t j = 0; j <= i; ++j) ss += (v[j] - mu) * (v[j] - mu);
            EXPECT_EQ(count[i], i + 1);
            EXPECT_TRUE(close(mean[i], mu)) << i << ": " << mean[i] << " vs " << mu;
            EXPECT_TRUE(close(m2[i], ss)) << i << ": " << m2[i] << " vs " << ss;
        }
    }
}

TEST(ReferenceScan, SegmentedSumRestartsAtEveryFlag) {
    auto segsum = trace_combine("segsum", 2, 0, [](const Exprs& l, const Exprs& r, const Exprs&) {
        return Exprs{l[0] | r[0], where(r[0] != 0, r[1], l[1] + r[1])};
    });
    ScanCase c{segsum, {DType::I64, DType::F64},
               [](const Element& l, const Element& r, auto&) {
                   bool rf = r[0] != 0;
                   double flag = static_cast<double>(static_cast<std::int64_t>(l[0]) |
                                                     static_cast<std::int64_t>(r[0]));
                   return Element{flag, rf ? r[1] : l[1] + r[1]};
               },
               0, 1};
    check_everywhere(c);  // flags are round(uniform(0, 1)): about half the elements restart
}

TEST(ReferenceScan, CapturedValuesAreReadAtEachLinesCoordinates) {
    // min(tau * logaddexp(l / tau, r / tau), cap): associative for any tau > 0 and cap.
    auto smax = trace_combine("clipped_smooth_max", 1, 2,
                              [](const Exprs& l, const Exprs& r, const Exprs& c) {
                                  return Exprs{min(c[0] * logaddexp(l[0] / c[0], r[0] / c[0]), c[1])};
                              });
    for (bool reverse : {false, true})
        for (std::int64_t length : {0, 1, 5, 33}) {
            const std::int64_t n = 3, d = 4;
            ProgramBuilder p("captured");
            Size sn = p.symbol("N"), st = p.symbol("T"), sd = p.symbol("D");
            Expr x = p.param("x", DType::F64, {sn, st, sd});
            Expr tau = p.param("tau", DType::F64, {sn, 1, sd});
            Expr cap = p.param("cap", DType::F64, {sd});
            ProgramRef prog = p.build(p.scan(smax, {x}, 1, reverse, {tau, cap}));
            std::mt19937_64 rng(length + reverse);
            auto xv = testing::uniform(n * length * d, -2, 2, rng);
            auto tv = testing::uniform(n * d, 0.2, 2, rng);
            auto cv = testing::uniform(d, 0.5, 3, rng);
            Tensor xt = tensor_of(DType::F64, {n, length, d}, xv);
            Tensor tt = tensor_of(DType::F64, {n, 1, d}, tv);
            Tensor ct = tensor_of(DType::F64, {d}, cv);
            auto ys = ReferenceBackend().compile(prog)->run(std::vector<TensorView>{xt, tt, ct});
            auto want = expected_scan({xv}, {n, length, d}, 1, reverse,
                                      [&](const Element& l, const Element& r, const auto& at) {
                                          double t = tv[at[0] * d + at[2]], c = cv[at[2]];
                                          double s = t * std::log(std::exp(l[0] / t) + std::exp(r[0] / t));
                                          return Element{std::min(s, c)};
                                      });
            auto got = values_of<double>(ys[0]);
            ASSERT_EQ(got.size(), want[0].size());
            for (std::size_t e = 0; e < got.size(); ++e)
                EXPECT_TRUE(close(got[e], want[0][e])) << e << ": " << got[e] << " vs " << want[0][e];
        }
}

TEST(ReferenceScan, F64CarriesKeepCountingWhereTheF32CarryStallsAndRoundOnlyTheStores) {
    // Ones summed onto 2^24 - 50 in f32 stall at 2^24, where 2^24 + 1 rounds back to 2^24. With
    // f64 carries element i is 2^24 - 50 + i rounded to f32 once. A combine that casts to f32
    // cannot be typed at f64 and keeps its f32 carry.
    auto add = trace_combine("add", 1, 0, [](const Exprs& l, const Exprs& r, const Exprs&) { return Exprs{l[0] + r[0]}; });
    auto add_f32 = trace_combine("add_f32", 1, 0, [](const Exprs& l, const Exprs& r, const Exprs&) {
        return Exprs{cast(DType::F32, l[0] + r[0])};
    });
    const std::int64_t n = 200, start = (std::int64_t{1} << 24) - 50;
    std::vector<float> values(static_cast<std::size_t>(n), 1.0f);
    values[0] = static_cast<float>(start);
    Tensor counted = tensor_of(DType::F32, {n}, values);
    for (bool f64_carries : {false, true})
        for (const CombineRef& f : {add, add_f32}) {
            ProgramBuilder p("ones");
            Expr x = p.param("x", DType::F32, {p.symbol("N")});
            auto y = values_of<float>(
                ReferenceBackend(f64_carries).compile(p.build(p.scan(f, {x}, 0)))->run(std::vector<TensorView>{counted})[0]);
            const bool exact = f64_carries && f == add;
            for (std::int64_t i : {std::int64_t{0}, std::int64_t{49}, std::int64_t{50}, std::int64_t{52}, n - 2, n - 1}) {
                const std::int64_t sum = start + i;
                const float want = exact ? static_cast<float>(static_cast<double>(sum))
                                         : static_cast<float>(std::min<std::int64_t>(sum, std::int64_t{1} << 24));
                EXPECT_EQ(y[static_cast<std::size_t>(i)], want) << f->name << (f64_carries ? ", f64 carries" : "") << ", element " << i;
            }
        }
}

}  // namespace
}  // namespace scanc
