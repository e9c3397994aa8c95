// ONNX export (DESIGN §5, §6). A program is lowered first (lower_scans: no scan op left), then
// written as an ONNX model: opset 18, graph inputs named after the program's parameters with
// symbolic dims as dim_params, graph outputs in return order. Only slice/concat/interleave and
// elementwise ops are exported, plus CumSum for pure-sum scans kept by native_cumsum.
// Available when scanc was built with SCANC_ENABLE_ONNX and the ONNX protos were found
// (scanc::onnx_export_available()).
#pragma once

#include <string>

#include "scanc/ir/node.h"
#include "scanc/passes/passes.h"

namespace scanc {

struct OnnxOptions {
    int opset = 18;  // 17 lacks the bitwise ops
    std::string producer = "scanc";
};

// Serialized ModelProto of an already lowered program. CompileError if check_lowered fails
// (a scan is left, unless a pure sum kept for CumSum) or an op has no ONNX form (e.g. `<<` on
// signed integers), naming the op and its place.
std::string export_onnx(const Program& lowered, const OnnxOptions& options = {});

// lower_scans, then export_onnx.
std::string lower_to_onnx(const Program& program, const LowerOptions& lower = {},
                          const OnnxOptions& options = {}, LoweringReport* report = nullptr);

}  // namespace scanc
