// export_onnx's contract beyond the models' values: a program that is not lowered is a user error
// naming what is wrong, every integer dtype's shifts export, the same program gives the same
// bytes. (Models themselves are checked by onnx.checker and run by onnxruntime in test_onnx.py
// and test_onnx_semantics.py.)
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

// ONNX's BitShift takes unsigned integers only; signed ones shift as their unsigned twins (their
// results against the reference: test_onnx_semantics.py).
TEST(OnnxExport, ShiftsOfEveryIntegerDtypeExport) {
    for (DType t : {DType::U8, DType::I8, DType::I16, DType::I32, DType::I64})
        EXPECT_FALSE(lower_to_onnx(*shifted_scan(t)).empty()) << dtype_name(t);
}

TEST(OnnxExport, TheSameProgramExportsToTheSameBytes) {
    dsl::ProgramBuilder b("cumsum");
    Expr x = b.param("x", DType::F32, {3, 100});
    ProgramRef p = b.build(b.scan(sum(), {x}, 1));
    EXPECT_EQ(lower_to_onnx(*p), lower_to_onnx(*p));
}

}  // namespace
}  // namespace scanc::lower_test
