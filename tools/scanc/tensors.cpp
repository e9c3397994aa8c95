// Looking at result tensors: a short summary for `run`, and the comparison `bench` uses to
// check a backend against the reference executor.
#include <cmath>
#include <cstdio>

#include "cli.h"

namespace scanc::cli {
namespace {

// Reads element `i` (row-major order) of a contiguous CPU tensor.
Scalar element(const TensorView& t, std::int64_t i) {
    auto* bytes = static_cast<const unsigned char*>(t.data);
    return load_scalar(t.dtype, bytes + i * dtype_size(t.dtype));
}

std::string format(const Scalar& v) {
    if (v.dtype == DType::Bool) return v.i ? "true" : "false";
    if (!is_float(v.dtype)) return std::to_string(v.i);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v.f);
    return buf;
}

std::string index_str(std::int64_t flat, const std::vector<std::int64_t>& sizes) {
    std::vector<std::int64_t> index(sizes.size());
    for (std::size_t d = sizes.size(); d-- > 0;) {
        index[d] = flat % sizes[d];
        flat /= sizes[d];
    }
    std::string out;
    for (auto i : index) out += (out.empty() ? "" : ", ") + std::to_string(i);
    return "[" + out + "]";
}

// Tolerances for a result computed in a different order than the reference's.
std::pair<double, double> tolerance(DType t) {  // {rtol, atol}
    switch (t) {
        case DType::F64: return {1e-9, 1e-12};
        case DType::F32: return {1e-3, 1e-5};
        case DType::F16: return {1e-2, 1e-3};
        case DType::BF16: return {5e-2, 1e-2};
        default: return {0, 0};
    }
}

// A CPU tensor with contiguous data (a copy when the view is strided).
Tensor contiguous(const TensorView& v) {
    if (v.device.kind != DeviceKind::CPU)
        throw RuntimeError("result tensor is not in CPU memory; the CLI reads CPU tensors only");
    return v.is_contiguous() ? Tensor::wrap(v, nullptr) : contiguous_copy(v);
}

}  // namespace

std::string summarize(const TensorView& view) {
    Tensor t = contiguous(view);
    std::string sizes;
    for (auto s : view.sizes) sizes += (sizes.empty() ? "" : ", ") + std::to_string(s);
    std::string out = cat(dtype_name(view.dtype), "[", sizes, "]");
    std::int64_t n = t.numel();
    if (n == 0) return out + " (empty)";
    constexpr std::int64_t kHead = 4, kTail = 2;
    std::string values;
    for (std::int64_t i = 0; i < n; ++i) {
        if (i == kHead && n > kHead + kTail) {
            values += ", ...";
            i = n - kTail;
        }
        values += (values.empty() ? "" : ", ") + format(element(t, i));
    }
    return out + " = [" + values + "]";
}

Comparison compare(const TensorView& got_view, const TensorView& want_view) {
    return compare(got_view, want_view, got_view.dtype);
}

Comparison compare(const TensorView& got_view, const TensorView& want_view, DType precision) {
    SCANC_INTERNAL_CHECK(got_view.dtype == want_view.dtype && got_view.sizes == want_view.sizes,
                         "compare() of tensors of different dtypes or sizes");
    Tensor got = contiguous(got_view), want = contiguous(want_view);
    Comparison c;
    std::tie(c.rtol, c.atol) = tolerance(is_float(got.dtype()) ? precision : got.dtype());
    // A scan computed in another order errs in proportion to the partial results it combines,
    // not to the element: a near-zero sum of large terms keeps the terms' error. So the scale
    // of an element is its own magnitude plus the mean magnitude of the finite results.
    double sum = 0;
    std::int64_t finite = 0;
    for (std::int64_t i = 0; i < want.numel(); ++i)
        if (double w = element(want, i).as_double(); std::isfinite(w)) {
            sum += std::fabs(w);
            ++finite;
        }
    c.mean_magnitude = finite ? sum / static_cast<double>(finite) : 0;
    for (std::int64_t i = 0; i < got.numel(); ++i) {
        double g = element(got, i).as_double(), w = element(want, i).as_double();
        bool ok;
        if (!std::isfinite(w) || !std::isfinite(g)) {
            ok = (std::isnan(w) && std::isnan(g)) || g == w;
            c.nonfinite_mismatches += !ok;
        } else {
            double abs = std::fabs(g - w);
            c.max_abs = std::max(c.max_abs, abs);
            if (w != 0) c.max_rel = std::max(c.max_rel, abs / std::fabs(w));
            ok = abs <= c.atol + c.rtol * (std::fabs(w) + c.mean_magnitude);
        }
        if (!ok && c.mismatches++ == 0)
            c.first_mismatch = cat("at ", index_str(i, got.sizes()), ": got ",
                                   format(element(got, i)), ", want ", format(element(want, i)));
    }
    return c;
}

}  // namespace scanc::cli
