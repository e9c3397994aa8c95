// The CPU backend's register bytecode. A fused stage (prologue, combine, epilogue) compiles to
// lists of Instr; each instruction applies one scalar op to a block of lanes [l0, l1) of
// registers, a tight loop the C++ compiler vectorizes. Registers hold up to kMaxLanes values of one
// compute dtype (f16/bf16 compute in f32; bool is one byte 0/1), 8 bytes per lane reserved.
//
// Loads read the current step's row of an input tile (storage dtype, lanes contiguous) and
// convert to the compute dtype; stores do the reverse into an output tile. Gathers to and from
// memory happen outside the bytecode (run_stage.cpp), once per tile.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "scanc/ir/dtype.h"
#include "scanc/ir/op.h"

namespace scanc::cpu {

// Lanes per block, at most. A thread's registers are sized for its own block width (lanes
// read in place along a contiguous dim use wide blocks: long memory runs per step).
inline constexpr int kMaxLanes = 2048;
// Group widths the runner uses most (strided groups, fix-up chunks): ops have a straight-line
// path for exactly these many lanes from lane 0, without the general loop's remainder handling.
inline constexpr int kGroupLanes = 64;
inline constexpr int kChunkLanes = 512;
// Lanes of strided groups and chained fix-ups of generic stages with large outputs: half the
// per-step dispatch cost per element of kGroupLanes (issue 4, round 7).
inline constexpr int kWideLanes = 2 * kGroupLanes;
inline constexpr int kRegBytes = kMaxLanes * 8;

struct Frame;
struct Instr;
using OpFn = void (*)(const Instr&, Frame&, int l0, int l1);

struct Instr {
    OpFn fn = nullptr;
    int dst = -1, a = -1, b = -1, c = -1;  // registers (loads: a = input slot; stores: dst = slot)
    int tee = -1;  // OpKey::tee variants: the output slot whose Frame::tee_rows row also gets dst
};

// What a thread evaluates bytecode against. Instructions reach register r through ptrs[r]:
// normally its own storage in `regs`, but the runner may point a register at a tile or memory
// row (an input read in place, a carry written straight into its output row), which saves a
// copy pass per step. Such a row holds at least the current lanes, in the compute dtype.
struct Frame {
    std::byte* regs = nullptr;                 // num_regs * kRegBytes, 64-byte aligned
    std::vector<std::byte*> ptrs;              // per register: where its lanes are now
    std::vector<const std::byte*> in_rows;     // per input slot: this step's tile row
    std::vector<std::byte*> out_rows;          // per output slot: this step's tile row
    std::vector<std::byte*> tee_rows;          // per output slot: its row in memory (OpKey::tee)
    // Captured loads read memory directly: per input slot, base pointer and per-lane offsets.
    std::vector<const std::byte*> in_base;
    std::vector<const std::int64_t*> lane_off;
    // f32 products through f64 (mul_f64, ops_vec.inc: the same bits): set by Worker::run for a
    // tile when the one before it met subnormals, whose products take microcode assists, where
    // that route is the faster one on this CPU (f64_products_pay).
    bool f64_products = false;

    template <typename T>
    T* reg(int r) const {
        return reinterpret_cast<T*>(ptrs[r]);
    }
};

// Whether f32 products that come out subnormal are faster through f64 than as they are, on
// this CPU: Intel cores take a microcode assist for a subnormal f32 product (round 14: about
// 80x a normal one) but none through f64; an AMD Zen 4 multiplies subnormals at speed, and its
// conversions of subnormal values to and from f64 take the assists instead (the thirty-third
// session: a decaying product scan 2.3x slower through f64). Timed once, at first use;
// SCANC_CPU_F64_PRODUCTS=0 or 1 decides instead. Either route gives the same bits.
bool f64_products_pay();

using Code = std::vector<Instr>;

inline void run_code(std::span<const Instr> code, Frame& f, int l0, int l1) {
    for (const Instr& in : code) in.fn(in, f, l0, l1);
}

// Which function implements an instruction; resolved once at compile time for the CPU's ISA.
enum class OpKind : unsigned char {
    Unary,        // op(a) in dtype t (Neg, Not, Abs, Exp, ...)
    Binary,       // op(a, b) in dtype t (arithmetic, bitwise, logical, min/max, pow, logaddexp)
    Compare,      // op(a, b) in dtype t -> bool
    Where,        // where(bool a, b, c) in dtype t
    Convert,      // a from dtype t to dtype t2 (implicit conversion rules)
    CastNarrow,   // a from dtype t to f16/bf16 (t2), rounded, held as f32
    RoundNarrow,  // f32 a rounded to f16/bf16 (t2), held as f32 (a program-level value)
    Load,         // tile row of storage dtype t -> compute dtype
    LoadDirect,   // memory at in_base[a] + lane_off[a][l] (captured values)
    Store,        // compute -> tile row of storage dtype t
    Copy,         // dst = a in dtype t
    // A Mul whose product only the next instruction, an Add, reads: one dispatch, each op
    // rounded as on its own (plan_codegen.cpp, fuse_mul_add).
    MulAdd,       // dst = a * b + c in dtype t
    AddMul,       // dst = c + a * b in dtype t
};

struct OpKey {
    OpKind kind;
    Op op = Op::Add;
    DType t = DType::F32;
    DType t2 = DType::F32;
    // The variant that writes dst with streaming stores (dst is then a large output in memory,
    // written once): f32/f64 Binary + - * / and MulAdd and AddMul, with AVX2 (64 bytes a
    // vector on AVX-512); lookup_op gives null for the others.
    bool stream = false;
    // Operands read as one value (bit 0: a, 1: b, 2: c), the one at the register's pointer, for
    // every lane: the fix-up's carry, read in place instead of filled across a register first.
    // f32/f64 Binary + - * / and MulAdd and AddMul, with AVX2 only; lookup_op gives null for
    // the others.
    unsigned char bcast = 0;
    // The variant that writes dst as usual and the same values, with streaming stores, to the
    // row tee_rows[Instr::tee] (a scan's carry row and its large output in memory, in one
    // pass instead of a staging row and a copy). The same ops as `stream`.
    bool tee = false;
};

// nullptr when there is no implementation (a typing bug: the caller raises InternalError).
OpFn lookup_op(const OpKey& key);

// Per-ISA tables, compiled from ops_impl.inc with different target flags.
OpFn lookup_op_baseline(const OpKey& key);
OpFn lookup_op_avx2(const OpKey& key);
OpFn lookup_bcast_avx512(const OpKey& key);  // OpKey::bcast variants only (ops_avx512.cpp)
// f32/f64 + - * /, MulAdd, AddMul (plain, tee or stream; not bcast) and f32/f64 exp, exp2, log,
// log2, log10, log1p, expm1, tanh, sigmoid, softplus, logaddexp, sin, cos, and through
// lookup_erf_atan_avx512 erf, erfc, atan, atan2; null for the others (ops_avx512.cpp).
OpFn lookup_lanes_avx512(const OpKey& key);
// f32/f64 erf, erfc, atan and atan2 (plain: not tee, stream or bcast); null for the others
// (ops_avx512_erf_atan.cpp).
OpFn lookup_erf_atan_avx512(const OpKey& key);

// dst[c * ds + r] = src[r * ss + c] for r < rows, c < cols; strides in elements of `esize`
// bytes, any sign. Moves tiles between memory and lane-contiguous scratch.
using TransposeFn = void (*)(int esize, const void* src, std::int64_t ss, void* dst,
                             std::int64_t ds, int rows, int cols);
TransposeFn transpose_fn();
TransposeFn transpose_baseline();
TransposeFn transpose_avx2();

// A one-op combine run step after step: for each of `lanes` lanes, acc = carry[l], then for
// each step j, acc = op(acc, x_j[l]) (op(x_j[l], acc) when `x_left`) and out_j[l] = acc. Rows
// x_j and out_j are `xs` / `os` bytes apart. For groups of few lanes (an ordered 1-D scan is
// one), where a dispatch per step would cost far more than the op, and for rows of lanes
// contiguous in memory (a scan along a strided dim), read several rows per pass (from
// kRowsLanes lanes). `stream`: such rows go out with streaming stores (unfenced, as
// SerialBlockFn's).
using SerialFn = void (*)(const std::byte* carry, const std::byte* x, std::ptrdiff_t xs,
                          std::byte* out, std::ptrdiff_t os, int steps, int lanes, bool x_left,
                          bool stream);
// Lanes from which SerialFn reads rows kRowsAtOnce at a time (fewer: lane by lane), in runs of
// kRowsChunkBytes of each row; kWideRowsLanes: the runner's minimum for rows apart (worker.h).
inline constexpr int kRowsLanes = 2, kRowsChunkBytes = 512, kWideRowsLanes = 64, kRowsAtOnce = 4;
// nullptr when `key` (a Binary op) has no serial form.
SerialFn lookup_serial(const OpKey& key);
SerialFn lookup_serial_baseline(const OpKey& key);
SerialFn lookup_serial_avx2(const OpKey& key);

// One contiguous lane of a one-op combine, reassociated (independent chains per segment of a
// block, then a carry fix-up per segment) so it runs at the op's throughput, not its latency:
// for unordered runs. Starts from *carry (from x[0] when `carry` is null); writes the inclusive
// scan to `out` (streaming stores when `stream`) unless `out` is null (a reduce); the last
// value goes to `last`. Streaming stores are not fenced (the caller runs stream_fence before
// another thread reads `out`). Rows are contiguous elements of the compute dtype. Block by
// block, the lines at `ahead` + (the block's offset from x) are prefetched (none when null):
// x + kAheadBytes for a pass over memory (a scan's loads otherwise stop running ahead of its
// compute: 11-14 -> 13-22 GB/s for such a loop on the 2-core box, bench/cpu_memprobe.cpp), or
// the part of the input that the next pass will read, in AheadLines' order.
using SerialBlockFn = void (*)(const std::byte* carry, const std::byte* x, std::byte* out,
                               std::int64_t steps, std::byte* last, bool x_left, bool stream,
                               const std::byte* ahead);
inline constexpr std::int64_t kAheadBytes = 4096;

// The line a block's prefetch takes as the block passes its line i. A pass over memory (ahead
// = x + kAheadBytes) takes its lines in order. Another block (the next pass's, as long) is
// taken in kAheadWays interleaved parts, line j of each part in turn, so that DRAM serves
// several streams at once (sum 1-D 2^26 from DRAM, 2 threads: 17 -> 14 ms); of a block whose
// lines kAheadWays does not divide, fewer than kAheadWays lines are left to the hardware.
inline constexpr int kAheadWays = 8;
struct AheadLines {
    const std::byte* ahead;
    std::int64_t part = 0;  // lines per part; 0: in order

    AheadLines(const std::byte* x, const std::byte* next, std::int64_t bytes) : ahead(next) {
        if (next != x + kAheadBytes) part = (bytes / 64 + kAheadWays - 1) / kAheadWays;
    }
    const std::byte* line(std::int64_t i) const {
        return ahead + 64 * (part ? i % kAheadWays * part + i / kAheadWays : i);
    }
    // Bytes from line i's to line i + 1's within a part, and from part to part (RowScanArgs).
    static constexpr std::array<std::int64_t, 2> kInOrder{64, 64 * kAheadWays};
    std::array<std::int64_t, 2> steps() const {
        return part ? std::array<std::int64_t, 2>{64 * part, 64} : kInOrder;
    }
};
SerialBlockFn lookup_serial_block(const OpKey& key);
SerialBlockFn lookup_serial_block_baseline(const OpKey& key);
SerialBlockFn lookup_serial_block_avx2(const OpKey& key);

// Moves 8 lanes of a [step][lane] f32 tile (`ts` floats per step) to rows dst[0..7] of memory,
// `len` steps each, with streaming stores where a row is 32-byte aligned.
using Scatter8Fn = void (*)(const float* tile, std::int64_t ts, float* const* dst, int len);

// Phase 1 of a fix-up (Mode::Local) with the lanes in SIMD registers (seg_local.h): a combine
// of f32 leaves made only of the ops below, interpreted on 8 lanes per vector, 8 steps at a
// time moved by 8x8 transposes in registers (no tiles in memory, no per-step dispatch). Lanes
// are scanned in the same order with the same ops as by Worker, so results are the same (which
// NaN an op returns when both operands are NaN aside).
struct SegOp {
    enum Kind : unsigned char { Add, Sub, Mul, Div, Min, Max, MulAdd, AddMul, Copy };  // 3 reads from MulAdd on
    Kind kind;
    short dst, a, b, c;  // registers; MulAdd: a * b + c, AddMul: c + a * b
};
// `steps` steps of a SegProgram's combine for G vectors of W lanes, as machine code (seg_jit.h):
// in[k][j][g] is step j's element (leaf k, group g), out[k][j][g] the carry it combines with
// and out[k][j + 1][g] the carry it writes; `in` and `out` point at step 0 of leaf 0, leaves
// S * G and (S + 1) * G vectors apart (S: the kernel's steps per pass).
using SegStepFn = void (*)(const float* in, float* out, std::int64_t steps);
// The (W, G, S) the kernels use (ops_seg_local.inc): rows of 32, 16 and 8 lanes by 16 steps
// and fix-ups of 64, 32 and 8 lanes by 8 (W = 8) or 16 (W = 16) steps.
inline constexpr int kSegStepVariants = 8;
constexpr int seg_step_slot(int W, int G, int S) {
    constexpr int kWGS[kSegStepVariants][3] = {{8, 4, 16}, {8, 2, 16}, {8, 1, 16}, {8, 8, 8},
                                               {8, 4, 8},  {8, 1, 8},  {16, 2, 16}, {16, 4, 16}};
    for (int i = 0; i < kSegStepVariants; ++i)
        if (kWGS[i][0] == W && kWGS[i][1] == G && kWGS[i][2] == S) return i;
    return -1;  // a kernel variant seg_jit.cpp does not compile (seg_groups asserts none)
}
using SegStepFns = SegStepFn[kSegStepVariants];

// Whole rows scanned in registers, reassociated (ops_row_scan.inc): each row's vectors of W
// lanes (8 for AVX2, 16 for AVX-512) go through log2 W levels, at level d lane i taking the
// combine of lane i - d's value with its own, then through the combine with the carry of the
// vectors before (lane W - 1 of the last, broadcast), or with the row's given carry for its first
// vector. No transposes; `ordered` runs never take it.
// The lanes each of AVX2's three row-scan levels updates (Vec256::blend, RowScanCode): lanes
// 1-3 and 5-7, then 2, 3, 6, 7 (a scan of each 128-bit half), then 4-7 (from lane 3).
inline constexpr int kRowLevelLanes8[3] = {0xEE, 0xCC, 0xF0};

// The most leaves the register kernels take (RowScanArgs, SegProgram, ColScanArgs, SegArgs).
inline constexpr int kSegMaxLeaves = 4;

struct RowScanArgs {
    const float* in[kSegMaxLeaves];     // per leaf: the row's first element
    float* out[kSegMaxLeaves];          // per leaf: where its scan goes; null: not stored (as the
                                        // machine code's mask of stored leaves says)
    const float* ahead[kSegMaxLeaves];  // per leaf: prefetched into L2 in step with `in`:
    std::int64_t ahead_step[2];         // as the row passes its line i, line ahead + (i %
                                        // kAheadWays) step[0] + (i / kAheadWays) step[1] bytes
                                        // (AheadLines' orders; stores: in order with none)
    float carry[kSegMaxLeaves];         // in: the carry before the row when `carried`;
                                        // written: the row's last scanned value per leaf
    bool carried;                       // the row's first vector combined with `carry`
    bool stream;                        // streaming stores (each kept out[k] aligned to whole vectors)
};
// Where leaf k's prefetch goes as a row passes byte `at` (its line at / 64).
inline const char* ahead_at(const RowScanArgs& r, int k, std::int64_t at) {
    const std::int64_t i = at / 64;
    return reinterpret_cast<const char*>(r.ahead[k]) + i % kAheadWays * r.ahead_step[0] + i / kAheadWays * r.ahead_step[1];
}
// Rows rows[0..n) (n >= 1) of `vectors` W-lane vectors each, as machine code (seg_jit.h).
using RowScanJitFn = void (*)(RowScanArgs* rows, std::int64_t n, std::int64_t vectors);

struct SegProgram {
    static constexpr int kMaxRegs = 32;
    int leaves = 0;
    std::vector<SegOp> ops;                      // the combine
    std::vector<std::pair<int, float>> consts;  // registers filled once
    int carry[kSegMaxLeaves] = {}, x[kSegMaxLeaves] = {}, next[kSegMaxLeaves] = {};  // per leaf
    const SegStepFn* jit = nullptr;  // compiled variants (seg_step_slot), or null: interpret
    const RowScanJitFn* row_jit = nullptr;  // compiled row scans {stores, streaming}, or null
    // Totals only (no leaf stored): the row's vectors paired up `row_fold` levels before the
    // scan, 2^row_fold vectors into one whose lane i is the combine of lanes 2^row_fold i ..
    // 2^row_fold (i + 1) - 1 in order (`vectors` a multiple of 2^row_fold); 16-lane rows only
    // (8-lane ones ignore it).
    int row_fold = 0;
};
// The levels a span's total pairs its vectors up (SegLocal::scan_span): 16 vectors into one, a
// fifth of the row scan's ops a vector.
inline constexpr int kSpanFold = 4;
// The vector registers the row scan's machine code (RowScanCode, seg_jit.cpp) takes before a
// fold: one per constant and per register an op writes (the program's values), three a leaf
// (input, its left neighbour, carry), and scratch: two, and with AVX-512 (`wide`) the last
// lane's index and a zero. A fold adds the pairs' two lane indices and one a level and leaf.
// The interpreter folds by the same levels, so the same bits with or without machine code.
inline int row_scan_registers(const SegProgram& p, bool wide) {
    std::vector<int> values;
    for (auto [r, v] : p.consts) values.push_back(r);
    for (const SegOp& o : p.ops) values.push_back(o.dst);
    std::sort(values.begin(), values.end());
    const auto distinct = std::unique(values.begin(), values.end()) - values.begin();
    return static_cast<int>(distinct) + 3 * p.leaves + (wide ? 4 : 2);
}
// Rows rows[0..n) of `vectors` vectors each (ops_row_scan.inc), by row_jit where compiled.
using RowScanFn = void (*)(const SegProgram& p, RowScanArgs* rows, int n, std::int64_t vectors);

// Lanes side by side in memory whose steps are apart (a scan along dim 0 or a middle dim), as
// machine code (seg_jit.h, SegLocal::run_cols): `chunks` chunks of `lanes` lanes, each through
// `rows` steps from its carries, each lane combined in order (Worker's bits).
struct ColScanArgs {
    const float* in[kSegMaxLeaves];  // per leaf: chunk 0's first lane at the first step
    float* out[kSegMaxLeaves];       // likewise per stored leaf
    std::int64_t in_step, out_step;  // bytes from one step to the next
    float* carries;                  // per chunk and leaf, its lanes' carries (updated)
    std::int64_t rows, chunks;
};
using ColScanJitFn = void (*)(const ColScanArgs* a);
struct ColScanFns {
    ColScanJitFn fns[2];  // {plain stores, streaming stores}
    int lanes;            // per chunk
};
struct SegArgs {
    const float* in[kSegMaxLeaves];  // per leaf: lane 0's walking step 0 (forward, step 1)
    float* out[kSegMaxLeaves];       // per leaf: lane 0's scan at step 0; null: not kept
    std::int64_t in_stride, out_stride;  // elements from one lane's start to the next's
    std::int64_t steps;                  // per lane, a multiple of 8 (of 16 for `rows`)
    int lanes;                           // a multiple of 8
    std::uint64_t* totals;               // per lane and leaf: its last carry (low 4 bytes)
    // Lanes are rows of memory scanned whole (run_stage.cpp): up to 32 lanes and 16 steps at a
    // time, each row's 64 bytes stored at once (streaming when `stream`).
    bool rows = false, stream = false;
};
using SegLocalFn = void (*)(const SegProgram& p, const SegArgs& a);

// Memory helpers for the runner (worker.h, compiled without AVX2), picked for this CPU once like
// the op table: stream_copy as in stream_store.h; fill writes `n` copies of a value of `bytes`
// (1, 2, 4 or 8) bytes, the low bytes of `v`; scatter8_f32, seg_local and row_scan are null
// without AVX2 (seg_local and row_scan: 16 lanes a vector with AVX-512).
struct MemFns {
    void (*stream_copy)(void* dst, const void* src, std::size_t bytes);
    void (*fill)(std::byte* dst, int bytes, std::uint64_t v, int n);
    Scatter8Fn scatter8_f32;
    SegLocalFn seg_local = nullptr;
    RowScanFn row_scan = nullptr;
    int row_lanes = 0;  // row_scan's W
};
const MemFns& mem_fns();
MemFns mem_fns_baseline();
MemFns mem_fns_avx2();
SegLocalFn seg_local_avx512();
RowScanFn row_scan_avx512();

// The level the op table and kernels use: the CPU's best, capped by the environment variable
// SCANC_CPU_ISA=baseline|avx2 (read once; the tests run the lower levels on AVX-512 machines).
// Avx512: the AVX2 table with AVX-512 register kernels.
enum class Isa { Baseline, Avx2, Avx512 };
Isa cpu_isa();

// Fills `lanes` lanes of a register with a constant (already converted to the compute dtype).
void fill_const(std::byte* reg, DType t, double f, std::int64_t i, int lanes = kMaxLanes);

}  // namespace scanc::cpu
