// RunOptions::outputs: the checks a run makes before it writes into memory its caller owns.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <numeric>

#include "scanc/runtime/backend.h"

namespace scanc {
namespace {

using i64 = std::int64_t;

struct ByteExtent {
    std::uintptr_t lo = 0, hi = 0;  // [lo, hi); empty when lo == hi
    bool overlaps(const ByteExtent& o) const { return lo < o.hi && o.lo < hi; }
};

// The bytes a view can touch, from its lowest element to the end of its highest.
ByteExtent byte_extent(const TensorView& v) {
    if (v.numel() == 0) return {};
    const i64 size = static_cast<i64>(dtype_size(v.dtype));
    i64 lo = 0, hi = 0;
    for (int d = 0; d < v.rank(); ++d) {
        const i64 reach = (v.sizes[d] - 1) * v.strides[d];
        (reach < 0 ? lo : hi) += reach;
    }
    const auto base = reinterpret_cast<std::uintptr_t>(v.data);
    return {base + static_cast<std::uintptr_t>(lo * size), base + static_cast<std::uintptr_t>((hi + 1) * size)};
}

// Whether no two elements of `v` share a place: each dim (in order of |stride|) steps past
// everything the dims below it reach. Conservative: it refuses interleavings it cannot prove.
bool elements_apart(const TensorView& v) {
    if (v.numel() <= 1) return true;
    std::vector<int> dims;
    for (int d = 0; d < v.rank(); ++d)
        if (v.sizes[d] > 1) dims.push_back(d);
    std::sort(dims.begin(), dims.end(), [&](int a, int b) { return std::llabs(v.strides[a]) < std::llabs(v.strides[b]); });
    i64 reach = 0;  // elements the dims so far span beyond their first, plus one
    for (int d : dims) {
        const i64 step = std::llabs(v.strides[d]);
        if (step <= reach) return false;
        reach += (v.sizes[d] - 1) * step;
    }
    return true;
}

// "[3, 5]"
std::string bracketed(const std::vector<i64>& sizes) {
    std::string s;
    for (i64 x : sizes) s += cat(s.empty() ? "" : ", ", x);
    return "[" + s + "]";
}

}  // namespace

void refuse_given_outputs(const RunOptions& options, const Program& program, std::string_view backend) {
    if (!options.outputs.empty())
        user_error(program.loc, cat("backend `", backend, "` allocates its outputs itself; RunOptions::outputs ",
                                    "is for the cuda and cpu backends"));
}

void check_output_count(const Program& program, std::size_t given) {
    if (given != program.results.size())
        user_error(program.loc, cat("program `", program.name, "` has ", program.results.size(), " result",
                                    program.results.size() == 1 ? "" : "s", ", got ", given, " outputs"));
}

void check_given_outputs(const Program& program, const Bindings& bindings, std::span<const TensorView> inputs,
                         std::span<const TensorView> outputs, Device device) {
    check_output_count(program, outputs.size());
    for (std::size_t r = 0; r < outputs.size(); ++r) {
        const TensorView& out = outputs[r];
        const Type& type = program.results[r]->type();
        const std::string what = cat("output ", r, " of program `", program.name, "`");
        check_view(out, what, program.loc);
        if (out.device != device)
            user_error(program.loc, cat(what, " is not on the device the program runs on"));
        if (out.dtype != type.dtype)
            user_error(program.loc, cat("dtype mismatch: ", what, " must be ", dtype_name(type.dtype), ", got ",
                                        dtype_name(out.dtype)));
        const std::vector<i64> want = evaluate_shape(type.shape, bindings);
        if (out.sizes != want)
            user_error(program.loc, cat("shape mismatch: ", what, " must be ", bracketed(want), ", got ",
                                        bracketed(out.sizes)));
        if (!elements_apart(out))
            user_error(program.loc, cat(what, " has elements in one place (a zero or overlapping stride)"));
        const ByteExtent extent = byte_extent(out);
        for (std::size_t i = 0; i < inputs.size(); ++i)
            if (inputs[i].device.kind == out.device.kind && extent.overlaps(byte_extent(inputs[i])))
                user_error(program.loc, cat(what, " overlaps the memory of input `", program.params[i]->name,
                                            "` (from its first element to its last); a scan cannot write over ",
                                            "what it reads"));
        for (std::size_t o = 0; o < r; ++o)
            if (extent.overlaps(byte_extent(outputs[o])))
                user_error(program.loc, cat(what, " overlaps the memory of output ", o,
                                            " (from its first element to its last)"));
    }
}

}  // namespace scanc
