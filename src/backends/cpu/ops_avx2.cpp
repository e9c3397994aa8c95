// The bytecode ops compiled for AVX2 + FMA (this file gets -mavx2 -mfma; see CMakeLists.txt).
// Chosen at run time by lookup_op only on CPUs that have AVX2, so the build never needs
// -march=native. FP contraction is off for the whole backend, so results equal the baseline's.
#define SCANC_ISA avx2
#include "ops_impl.inc"

namespace scanc::cpu {
OpFn lookup_op_avx2(const OpKey& key) { return avx2::lookup(key); }
TransposeFn transpose_avx2() { return avx2::transpose(); }
MemFns mem_fns_avx2() { return avx2::mem(); }
SerialFn lookup_serial_avx2(const OpKey& key) { return avx2::lookup_serial(key); }
SerialBlockFn lookup_serial_block_avx2(const OpKey& key) {
    return avx2::lookup_serial_block(key);
}
}  // namespace scanc::cpu
