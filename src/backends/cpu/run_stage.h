// Running the stages of a Plan on tensors.
#pragma once

#include <vector>

#include "plan.h"
#include "stage_cache.h"
#include "scanc/ir/size.h"
#include "scanc/runtime/tensor.h"

namespace scanc::cpu {

struct RunConfig {
    int threads = 1;
    bool ordered = false;
};

// Runs a Fused stage: reads values[stage.inputs], writes values[stage.outputs] (allocated here
// unless defined already: a caller's output memory).
// `cache` is this stage's state from earlier runs (stage_cache.h), updated.
void run_fused(const Stage& stage, const Plan& plan, std::vector<Tensor>& values,
               const Bindings& bindings, const RunConfig& config, StageCache& cache);

// Slice (a view), Concat and Interleave (copies); structural.cpp.
void run_structural(const Stage& stage, std::vector<Tensor>& values, const Bindings& bindings);

}  // namespace scanc::cpu
