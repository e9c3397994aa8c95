// Malformed views handed to a run (a C++ caller builds TensorViews by hand): each is refused
// with a CompileError naming the input or output, before any backend reads or writes through it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scanc/runtime/backend.h"
#include "scanc/scanc.h"

namespace scanc {
namespace {

ProgramRef running_sum() {
    return parse_module("combine add(a | b) { return a + b }\n"
                        "program sums(x: f32[M, N]) {\n  y = scan add(x) dim=1\n  return y\n}\n")
        .programs.back();
}

// The message of the CompileError a run on `backend` raises for `input` ("" when it runs).
std::string refusal(const std::string& backend, const TensorView& input) {
    try {
        compile(running_sum(), backend)->run(std::vector<TensorView>{input});
    } catch (const CompileError& e) {
        return e.what();
    }
    return "";
}

TensorView view(void* data, std::vector<std::int64_t> sizes, std::vector<std::int64_t> strides) {
    TensorView v;
    v.data = data;
    v.sizes = std::move(sizes);
    v.strides = std::move(strides);
    return v;
}

TEST(InputViews, ANullPointerWithElementsANegativeSizeOrAStrideCountOffTheRankAreRefused) {
    float data[6] = {1, 2, 3, 4, 5, 6};
    for (const char* backend : {"reference", "cpu"}) {
        SCOPED_TRACE(backend);
        const std::vector<Tensor> sums = compile(running_sum(), backend)->run(std::vector<TensorView>{view(data, {2, 3}, {3, 1})});
        EXPECT_EQ(std::vector<float>(sums[0].view().ptr<float>(), sums[0].view().ptr<float>() + 6),
                  (std::vector<float>{1, 3, 6, 4, 9, 15}));
        EXPECT_NE(refusal(backend, view(nullptr, {2, 3}, {3, 1})).find("input `x` has elements but no data"),
                  std::string::npos);
        EXPECT_NE(refusal(backend, view(data, {2, -3}, {3, 1})).find("input `x` has size -3 along dim 1"),
                  std::string::npos);
        EXPECT_NE(refusal(backend, view(data, {2, 3}, {1})).find("input `x` has 2 sizes but 1 strides"),
                  std::string::npos);
        // No elements: no data needed.
        EXPECT_EQ(refusal(backend, view(nullptr, {2, 0}, {0, 1})), "");
    }
}

TEST(InputViews, MoreThanTwoToTheFiftyElementsAreRefusedOnEveryBackendEvenThroughZeroStrides) {
    float data[1] = {1};
    for (const char* backend : {"reference", "cpu"}) {
        SCOPED_TRACE(backend);
        // One float seen 2^51 times by a zero stride: too many elements, whatever the memory.
        EXPECT_NE(refusal(backend, view(data, {std::int64_t{1} << 26, std::int64_t{1} << 25}, {0, 0}))
                      .find("input `x` has more than 2^50 elements"),
                  std::string::npos);
        // No elements, but a size past 2^50 all the same: the program's sizes are refused.
        EXPECT_NE(refusal(backend, view(nullptr, {std::int64_t{1} << 60, 0}, {0, 0})).find("sizes too large"),
                  std::string::npos);
        EXPECT_NE(refusal(backend, view(nullptr, {0, std::int64_t{1} << 60}, {0, 0})).find("sizes too large"),
                  std::string::npos);
    }
}

TEST(InputViews, AnEmptyTensorMayHaveHugeSizesBesideItsZero) {
    const std::int64_t huge = std::int64_t{1} << 60;
    for (const std::vector<std::int64_t>& sizes :
         {std::vector<std::int64_t>{huge, 0}, {0, huge, huge}, {huge, huge, 0}}) {
        Tensor t = Tensor::empty(DType::F32, sizes);
        EXPECT_EQ(t.view().numel(), 0);
        EXPECT_TRUE(t.view().is_contiguous());
        EXPECT_EQ(t.view().sizes, sizes);
    }
}

TEST(InputViews, AGivenOutputWithoutDataIsRefusedLikeAnInput) {
    float data[6] = {};
    const std::vector<TensorView> inputs = {view(data, {2, 3}, {3, 1})};
    const TensorView out = view(nullptr, {2, 3}, {3, 1});
    ProgramRef p = running_sum();
    try {
        check_given_outputs(*p, bind_inputs(*p, inputs), inputs, std::vector<TensorView>{out}, Device{});
        ADD_FAILURE() << "a null output was taken";
    } catch (const CompileError& e) {
        EXPECT_NE(std::string(e.what()).find("output 0 of program `sums` has elements but no data"), std::string::npos)
            << e.what();
    }
}

}  // namespace
}  // namespace scanc
