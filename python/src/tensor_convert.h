// Tensors across the Python boundary. Inputs: any object nanobind imports as an ndarray (NumPy's
// buffer, or any DLPack tensor: torch, JAX, CuPy), any strides, CPU or CUDA memory, every scanc
// dtype; the view borrows the caller's memory. Outputs: a scanc Tensor handed to Python without a
// copy, owned by a capsule, exported to the framework the caller passed its inputs in.
#pragma once

#include <string_view>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include "scanc/runtime/tensor.h"

namespace scanc::python {

// Where outputs go: the framework of the inputs ("numpy", "torch", "jax", "cupy"), or "dlpack"
// for anything else (a bare DLPack-capable ndarray object).
enum class Framework { NumPy, Torch, Jax, CuPy, DLPack };
Framework parse_framework(std::string_view name);

// What inputs are imported as: any dtype, shape, strides and device; read-only is fine.
using InputArray = nanobind::ndarray<nanobind::ro>;

// A view of `array`'s memory. ValueError-type CompileError for a dtype or device scanc lacks;
// `what` names the argument in that message.
TensorView to_view(const InputArray& array, std::string_view what);
// CompileError: `what` has `dtype`, which scanc cannot read.
[[noreturn]] void unsupported_dtype(std::string_view what, std::string_view dtype);

// Hands `tensor` to Python without copying. NumPy has no bf16: a bf16 result bound for NumPy is
// widened (exactly) to a float32 array.
nanobind::object to_python(Tensor tensor, Framework framework);

}  // namespace scanc::python
