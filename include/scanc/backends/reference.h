// The reference executor: the executable specification. Sequential and obviously correct; any
// dtype, dim, strides, reverse, several leaves, captured values, symbolic sizes. Every other
// backend is tested against it.
//
// Nodes are evaluated in topological order, each into a contiguous CPU tensor, with the scalar
// semantics of scalar_eval.h; a scan is sequential and inclusive, its carry kept in the compute
// dtype (f32 for f16/bf16, rounded on each store). Inputs may have any strides (zero, negative,
// gaps) but must be CPU tensors. Outputs are contiguous, in return order, and never share
// memory. Every computed size is checked against the node's symbolic shape (InternalError).
// An Executable's run() may be called from several threads at once.
#pragma once

#include "scanc/runtime/backend.h"

namespace scanc {

class ReferenceBackend : public Backend {
public:
    // `f64_carries`: scans of f32 leaves carry, and read f32 captured values, in f64, rounding
    // each stored element to f32 (as f16/bf16 carry in f32); a combine that cannot be typed at
    // f64 keeps f32. Not the specification: an oracle for long float scans, whose sequential
    // f32 carry can drift far from the exact result (`scanc bench` checks against both).
    explicit ReferenceBackend(bool f64_carries = false) : f64_carries_(f64_carries) {}
    std::string name() const override { return "reference"; }
    std::unique_ptr<Executable> compile(const ProgramRef& program) override;

private:
    bool f64_carries_;
};

}  // namespace scanc
