// Internal to the ONNX exporter: a small writer over onnx::GraphProto that names values,
// dedupes constants, and knows which ONNX value (and dtype) each IR node became.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "scanc/ir/node.h"

namespace scanc::onnx_export {

int onnx_elem_type(DType t);

class GraphWriter {
public:
    explicit GraphWriter(onnx::GraphProto* graph) : graph_(graph) {}

    // A name of the form hint_N that no reserved (user's) name takes.
    std::string fresh(const std::string& hint);
    void reserve(const std::string& name) { reserved_.insert(name); }
    onnx::NodeProto* add(const std::string& op_type, std::vector<std::string> inputs,
                         std::vector<std::string> outputs);
    // One output named fresh(hint); returns its name.
    std::string op(const std::string& op_type, std::vector<std::string> inputs,
                   const std::string& hint = "t");
    static void set_int(onnx::NodeProto* n, const std::string& name, std::int64_t v);

    std::string ints(const std::vector<std::int64_t>& values);  // 1-D int64 initializer
    std::string scalar(DType t, double f, std::int64_t i, bool is_float);  // 0-d initializer
    std::string cast(const std::string& value, DType to);

    // The ONNX value an IR node became, in the dtype it was emitted in.
    struct Value {
        std::string name;
        DType dtype;
    };
    void bind(const Node* n, Value v) { values_[n] = std::move(v); }
    // A literal becomes a constant here, at its own dtype, the first time it is asked for, so
    // that literals only ever taken in other dtypes (value_as) leave no unused initializer.
    const Value& value(const Node* n);
    // The node's value as dtype `t`: literals are re-emitted in `t`, other values cast.
    std::string value_as(const Node* n, DType t);

private:
    onnx::GraphProto* graph_;
    int counter_ = 0;
    std::unordered_map<const Node*, Value> values_;
    std::map<std::string, std::string> constants_;  // key -> initializer name
    std::set<std::string> reserved_;
};

// x < 0 or 1 / x < 0: set for negatives, -0 and -inf (ONNX has no CopySign).
std::string sign_bit(GraphWriter& g, const std::string& x, DType t);
// copysign(1, x) as a value of dtype t.
std::string sign_of(GraphWriter& g, const std::string& x, DType t);

// erf, atan, sin or cos of an f64 value, and erfc and tanh of a value of float dtype t, by the reference's
// formulas (onnx_float_math.cpp).
std::string erf_f64(GraphWriter& g, const std::string& x);
std::string atan_f64(GraphWriter& g, const std::string& x);
std::string sin_cos_f64(GraphWriter& g, const std::string& x, bool cosine);
std::string erfc_of(GraphWriter& g, const std::string& x, DType t);
std::string tanh_of(GraphWriter& g, const std::string& x, DType t);

// x of dtype `from` cast to `to`, rounded once where onnxruntime's cast rounds twice (into f16
// or bf16 from f64, i32 or i64).
std::string cast_rounded_once(GraphWriter& g, const std::string& x, DType from, DType to);

// Emits one elementwise IR node (its inputs already emitted).
void emit_elementwise(GraphWriter& g, const Node& n);

}  // namespace scanc::onnx_export
