// The interface every backend implements: compile a program once (never per shape), then run it
// on tensors of any sizes its symbolic shapes admit.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "scanc/ir/node.h"
#include "scanc/runtime/tensor.h"

namespace scanc {

struct RunOptions {
    int num_threads = 0;    // CPU: 0 = the backend's default (SCANC_NUM_THREADS or all cores)
    bool ordered = false;   // CPU: combine strictly left to right (bitwise = reference)
    void* stream = nullptr;  // CUDA: the CUstream to run on (null: the default stream)
    // CUDA and CPU: where the results go, one view per result in return order: the result's
    // dtype and shape, memory of the run's device, any strides (no two elements in one place),
    // overlapping no input and no other output. run() writes there and returns tensors that view
    // it (the caller's memory, not owned). Empty: run() allocates the outputs. What a CUDA graph
    // capture wants (cuda.h). The CPU backend writes in place too, except into an output not
    // aligned to its element size, or for a result that is an input, a view or returned twice,
    // which it copies there. The reference backend refuses it (CompileError).
    std::span<const TensorView> outputs;
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
// CompileError (at `loc`, naming `what`) unless `view` is well formed: one stride per dim, no
// negative size, and data where it has elements.
void check_view(const TensorView& view, const std::string& what, const SourceLoc& loc);

// CompileError unless `options` leaves the outputs to `backend` (it cannot write into given ones).
void refuse_given_outputs(const RunOptions& options, const Program& program, std::string_view backend);
// CompileError unless `outputs` fit RunOptions::outputs' rules for a run of `program` on `device`
// with these inputs and bindings (count, device, dtype, shape, no element in two places, no
// overlap with an input of the same kind of memory or with another output).
void check_given_outputs(const Program& program, const Bindings& bindings, std::span<const TensorView> inputs,
                         std::span<const TensorView> outputs, Device device);
// CompileError unless `given` outputs are one per result of `program` (check_given_outputs'
// count; a caller whose empty list is not "none given" checks it first).
void check_output_count(const Program& program, std::size_t given);

}  // namespace scanc
