// RunOptions::outputs: what a run checks before it writes into memory its caller owns, and the
// backends that allocate their outputs themselves refusing it. No GPU needed: the checks read
// the views' numbers, never their memory.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "scanc/backends/reference.h"
#include "scanc/error.h"
#include "scanc/runtime/backend.h"
#include "scanc/text/parser.h"

namespace scanc {
namespace {

ProgramRef two_results() {
    return parse_module(R"(
combine add(a | b) { return a + b }
program sums(x: f32[M, N]) {
  y = scan add(x) dim=1
  z = y * 2.0
  return y, z
}
)", "<test>").programs.back();
}

constexpr Device kGpu{DeviceKind::CUDA, 0};

// A view of `sizes` at a made-up device address: the checks never dereference it.
TensorView at(std::uintptr_t address, std::vector<std::int64_t> sizes, std::vector<std::int64_t> strides = {},
              DType dtype = DType::F32, Device device = kGpu) {
    TensorView v;
    v.data = reinterpret_cast<void*>(address);
    v.dtype = dtype;
    v.sizes = std::move(sizes);
    v.strides = strides.empty() ? contiguous_strides(v.sizes) : std::move(strides);
    v.device = device;
    return v;
}

// The message of the CompileError the check raises ("" when it accepts the outputs).
std::string refusal(std::vector<TensorView> outputs) {
    ProgramRef p = two_results();
    std::vector<TensorView> inputs = {at(0x100000, {3, 5})};
    try {
        check_given_outputs(*p, bind_inputs(*p, inputs), inputs, outputs, kGpu);
    } catch (const CompileError& e) {
        return e.what();
    }
    return "";
}

TEST(GivenOutputs, OutputsOfTheResultsShapeAndDtypeApartFromTheInputsAreAccepted) {
    EXPECT_EQ(refusal({at(0x200000, {3, 5}), at(0x300000, {3, 5})}), "");
    // transposed and with gaps between rows: any strides that keep elements apart
    EXPECT_EQ(refusal({at(0x200000, {3, 5}, {1, 3}), at(0x300000, {3, 5}, {8, 1})}), "");
    // right after the input's last byte (3 x 5 floats = 60 bytes)
    EXPECT_EQ(refusal({at(0x100000 + 60, {3, 5}), at(0x300000, {3, 5})}), "");
}

TEST(GivenOutputs, TheWrongCountDtypeShapeOrDeviceIsRefusedNamingTheOutput) {
    EXPECT_NE(refusal({at(0x200000, {3, 5})}).find("has 2 results, got 1 outputs"), std::string::npos);
    EXPECT_NE(refusal({at(0x200000, {3, 5}), at(0x300000, {3, 5}, {}, DType::F64)})
                  .find("dtype mismatch: output 1 of program `sums` must be f32, got f64"),
              std::string::npos);
    EXPECT_NE(refusal({at(0x200000, {5, 3}), at(0x300000, {3, 5})})
                  .find("shape mismatch: output 0 of program `sums` must be [3, 5], got [5, 3]"),
              std::string::npos);
    EXPECT_NE(refusal({at(0x200000, {3, 5}), at(0x300000, {3, 5}, {}, DType::F32, {DeviceKind::CPU, 0})})
                  .find("output 1 of program `sums` is not on the device the program runs on"),
              std::string::npos);
}

TEST(GivenOutputs, OutputsOverlappingAnInputAnotherOutputOrThemselvesAreRefused) {
    EXPECT_NE(refusal({at(0x100000 + 56, {3, 5}), at(0x300000, {3, 5})}).find("overlaps the memory of input `x`"),
              std::string::npos);
    EXPECT_NE(refusal({at(0x200000, {3, 5}), at(0x200000 + 32, {3, 5})}).find("output 1 of program `sums` overlaps the memory of output 0"),
              std::string::npos);
    // a broadcast row, and rows that interleave with one another
    EXPECT_NE(refusal({at(0x200000, {3, 5}, {0, 1}), at(0x300000, {3, 5})}).find("elements in one place"),
              std::string::npos);
    EXPECT_NE(refusal({at(0x200000, {3, 5}, {2, 1}), at(0x300000, {3, 5})}).find("elements in one place"),
              std::string::npos);
}

TEST(GivenOutputs, EmptyOutputsOverlapNothing) {
    ProgramRef p = two_results();
    std::vector<TensorView> inputs = {at(0x100000, {0, 5})};
    std::vector<TensorView> outputs = {at(0x100000, {0, 5}), at(0x100000, {0, 5})};
    EXPECT_NO_THROW(check_given_outputs(*p, bind_inputs(*p, inputs), inputs, outputs, kGpu));
}

TEST(GivenOutputs, TheReferenceBackendAllocatesItsOwnAndSaysSo) {
    ProgramRef p = two_results();
    float data[15] = {};
    TensorView x = at(reinterpret_cast<std::uintptr_t>(data), {3, 5}, {}, DType::F32, {DeviceKind::CPU, 0});
    std::vector<TensorView> outputs = {x, x};
    RunOptions options;
    options.outputs = outputs;
    try {
        ReferenceBackend().compile(p)->run(std::vector<TensorView>{x}, options);
        ADD_FAILURE() << "the run took the outputs";
    } catch (const CompileError& e) {
        EXPECT_NE(std::string(e.what()).find("backend `reference` allocates its outputs itself; RunOptions::outputs is for the cuda and cpu backends"), std::string::npos)
            << e.what();
    }
}

}  // namespace
}  // namespace scanc
