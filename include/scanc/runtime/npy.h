// NumPy .npy files, the interchange format of the CLI (format versions 1.0-3.0, little endian,
// C or Fortran order). Errors are CompileErrors naming the file and what is wrong with it.
#pragma once

#include <string>

#include "scanc/runtime/tensor.h"

namespace scanc {

Tensor read_npy(const std::string& path);
void write_npy(const std::string& path, const TensorView& tensor);

}  // namespace scanc
