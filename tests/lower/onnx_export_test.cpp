// export_onnx's refusals: programs that are not lowered and ops with no ONNX form are user
// errors naming what is wrong. (Models themselves are checked by onnx.checker and run by
// onnxruntime in test_onnx.py.)
#include "lower_helpers.h"
#include "scanc/backends/onnx.h"

namespace scanc::lower_test {
namespace {

ProgramRef shifted_scan(DType dtype) {
    // max(x, y >> 0): associative, and it has a shift in it.
    auto shl = dsl::trace_combine("shifted_max", 1, 0, [](auto& l, auto& r, auto&) {
        return Exprs{dsl::max(l[0], r[0] >> 0)};
    });
    dsl::ProgramBuilder b("bits");
    Expr x = b.param("x", dtype, {8});
    return b.build(b.scan(shl, {x}, 0));
}

TEST(OnnxExport, RefusesAProgramThatStillHasAScan) {
    try {
        export_onnx(*shifted_scan(DType::U8));
        FAIL() << "expected a CompileError";
    } catch (const CompileError& e) {
        EXPECT_NE(std::string(e.what()).find("still has a scan"), std::string::npos) << e.what();
    }
}

TEST(OnnxExport, ShiftsOfSignedIntegersHaveNoOnnxFormButUnsignedOnesDo) {
    EXPECT_THROW(lower_to_onnx(*shifted_scan(DType::I32)), CompileError);
    EXPECT_FALSE(lower_to_onnx(*shifted_scan(DType::U8)).empty());
}

TEST(OnnxExport, TheSameProgramExportsToTheSameBytes) {
    dsl::ProgramBuilder b("cumsum");
    Expr x = b.param("x", DType::F32, {3, 100});
    ProgramRef p = b.build(b.scan(sum(), {x}, 1));
    EXPECT_EQ(lower_to_onnx(*p), lower_to_onnx(*p));
}

}  // namespace
}  // namespace scanc::lower_test
