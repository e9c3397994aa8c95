// What runs 16 f32 lanes a vector on AVX-512 (built for it, see CMakeLists.txt; picked at run
// time by ops_dispatch.cpp only on CPUs that have AVX-512F): the register kernel of fix-ups
// (ops_seg_local.inc), whole rows in registers (ops_row_scan.inc) and the broadcast op
// variants of the fix-ups' phase 3 (ops_variants.inc). The rest of the op table stays AVX2.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <immintrin.h>

#include "bytecode.h"
#include "minmax_regs.h"
#include "transpose_regs.h"

namespace scanc::cpu {
namespace avx512 {
namespace {
#include "ops_seg_local.inc"
#include "ops_row_scan.inc"
#include "ops_vec.inc"
#include "ops_variants.inc"
}  // namespace
}  // namespace avx512

SegLocalFn seg_local_avx512() { return &avx512::seg_local<avx512::Vec512>; }
RowScanFn row_scan_avx512() { return &avx512::row_scan<avx512::Vec512>; }
OpFn lookup_bcast_avx512(const OpKey& key) { return avx512::lookup_bcast_of(key); }

}  // namespace scanc::cpu
