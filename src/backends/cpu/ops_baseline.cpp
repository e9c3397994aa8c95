// The bytecode ops for any x86-64 (or other) CPU: the compiler's default target.
#define SCANC_ISA baseline
#include "ops_impl.inc"

namespace scanc::cpu {
OpFn lookup_op_baseline(const OpKey& key) { return baseline::lookup(key); }
TransposeFn transpose_baseline() { return baseline::transpose(); }
MemFns mem_fns_baseline() { return baseline::mem(); }
SerialFn lookup_serial_baseline(const OpKey& key) { return baseline::lookup_serial(key); }
SerialBlockFn lookup_serial_block_baseline(const OpKey& key) {
    return baseline::lookup_serial_block(key);
}
}  // namespace scanc::cpu
