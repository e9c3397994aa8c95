// The register kernels' combine as machine code (issue 4, twenty-third round). ops_seg_local.inc
// interprets a SegProgram once per op and step: a switch, operand pointers read from a table,
// every intermediate through memory. Here the combine's ops become straight-line AVX2 or AVX-512
// code, emitted with Xbyak once per program: per step and group, each element and carry is
// loaded where an op reads it, the intermediates stay in registers, and each leaf's new carry is
// stored once. The instructions are those of the interpreter's ops (the same order of operands,
// no contraction, min and max with the same NaN rule), so the results are the interpreter's bit
// for bit. Without Xbyak at build time, or for a program that needs more registers than the ISA
// has, the kernels interpret.
#pragma once

#include "bytecode.h"

namespace scanc::cpu {

// Whether this build can compile combines (Xbyak on x86-64).
bool seg_jit_built();

// `p`'s combine compiled for every (W, G, S) variant the kernels of `isa` use, indexed by
// seg_step_slot(); null when it cannot be (no Xbyak, the baseline ISA, more registers than the
// ISA has). Compiled once per distinct program (ops, constants, registers) in this process and
// kept: a new shape or executable of the same combine compiles nothing.
const SegStepFn* seg_jit_fns(const SegProgram& p, Isa isa);

// `p`'s row scan (RowScanArgs) compiled for `isa`'s width, storing the leaves in mask
// `stored`, {plain stores, streaming stores}; null as above. Kept per program and mask.
const RowScanJitFn* row_scan_jit_fns(const SegProgram& p, Isa isa, unsigned stored);

// `p`'s column scan (ColScanArgs) for `isa`, storing the leaves in mask `stored`, with chunks
// as wide as its registers allow (up to 8 vectors); null as above. Kept per program and mask.
const ColScanFns* col_scan_jit(const SegProgram& p, Isa isa, unsigned stored);

}  // namespace scanc::cpu
