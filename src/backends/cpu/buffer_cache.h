// Output memory for the CPU backend. Large outputs (>= 1 MiB) come from a small process-wide
// cache of freed buffers, so a program run repeatedly on the same sizes does not page-fault its
// outputs in again on every run (the kernel zeroes each new page: for a scan at memory speed
// that costs as much as the scan). Fresh large buffers ask for transparent huge pages. At most
// kMaxCachedBytes stay cached while unused; everything else is returned to the system.
#pragma once

#include <cstdint>
#include <vector>

#include "scanc/runtime/tensor.h"

namespace scanc::cpu {

inline constexpr std::size_t kMaxCachedBytes = std::size_t{1} << 30;

// A new contiguous CPU tensor, 64-byte aligned, uninitialized (like Tensor::empty).
Tensor alloc_output(DType dtype, std::vector<std::int64_t> sizes);

}  // namespace scanc::cpu
