// The interface every backend implements: compile a program once (never per shape), then run it
// on tensors of any sizes its symbolic shapes admit.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "scanc/ir/node.h"
#include "scanc/runtime/tensor.h"

namespace scanc {

struct RunOptions {
    int num_threads = 0;    // CPU: 0 = the backend's default (SCANC_NUM_THREADS or all cores)
    bool ordered = false;   // CPU: combine strictly left to right (bitwise = reference)
    void* stream = nullptr;  // CUDA: the CUstream to run on (null: the default stream)
};

class Executable {
public:
    virtual ~Executable() = default;
    // One output per program result, in return order. CompileError for inputs that do not fit
    // the program (count, dtype, rank, sizes, bounds).
    virtual std::vector<Tensor> run(std::span<const TensorView> inputs,
                                    const RunOptions& options = {}) = 0;
};

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string name() const = 0;
    virtual std::unique_ptr<Executable> compile(const ProgramRef& program) = 0;
};

// Checks `inputs` against the program's parameters and binds every size symbol: the count,
// dtypes, ranks, constant sizes, symbols that must agree, and bounds. CompileError naming the
// parameter and the dim otherwise.
Bindings bind_inputs(const Program& program, std::span<const TensorView> inputs);

}  // namespace scanc
