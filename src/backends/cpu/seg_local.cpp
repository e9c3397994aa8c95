// The fix-up's phase 1 in SIMD registers (see seg_local.h): which stages qualify, and the call.
#include "seg_local.h"

#include <algorithm>
#include <cstring>
#include <cstdlib>
#include <set>
#include <string_view>

namespace scanc::cpu {

namespace {

// The SegOp kind of a combine instruction, found by its function (Instr keeps no key); false
// for any other instruction.
bool seg_kind(const Instr& in, SegOp::Kind& kind) {
    struct Known {
        OpKey key;
        SegOp::Kind kind;
    };
    static const std::vector<std::pair<OpFn, SegOp::Kind>> known = [] {
        const Known keys[] = {
            {{OpKind::Binary, Op::Add, DType::F32}, SegOp::Add},
            {{OpKind::Binary, Op::Sub, DType::F32}, SegOp::Sub},
            {{OpKind::Binary, Op::Mul, DType::F32}, SegOp::Mul},
            {{OpKind::Binary, Op::Div, DType::F32}, SegOp::Div},
            {{OpKind::Binary, Op::Min, DType::F32}, SegOp::Min},
            {{OpKind::Binary, Op::Max, DType::F32}, SegOp::Max},
            {{OpKind::MulAdd, Op::Add, DType::F32}, SegOp::MulAdd},
            {{OpKind::AddMul, Op::Add, DType::F32}, SegOp::AddMul},
            {{OpKind::Copy, Op::Add, DType::F32}, SegOp::Copy},
        };
        std::vector<std::pair<OpFn, SegOp::Kind>> v;
        for (const Known& k : keys)
            if (OpFn fn = lookup_op(k.key)) v.emplace_back(fn, k.kind);
        return v;
    }();
    for (auto [fn, k] : known)
        if (fn == in.fn) return kind = k, true;
    return false;
}

// The registers an op of `kind` reads: a, then b, then c.
int operand_count(SegOp::Kind kind) {
    return kind == SegOp::Copy ? 1 : kind == SegOp::MulAdd || kind == SegOp::AddMul ? 3 : 2;
}

}  // namespace

int span_fold(const SegProgram& p) {
    if (mem_fns().row_lanes != 16) return 0;
    constexpr int kZmmRegisters = 32;
    const int spare = kZmmRegisters - row_scan_registers(p, true) - 2;
    return std::clamp(spare / std::max(p.leaves, 1), 0, kSpanFold);
}

SegLocal::SegLocal(const StageCode& code, const Layout& L, int dir, bool compile) : L_(L), dir_(dir) {
    int leaves = static_cast<int>(code.carry.size());
    if (!mem_fns().seg_local || dir != 1 || !code.step.empty() || !code.captured.empty() ||
        leaves == 0 || leaves > kSegMaxLeaves || code.num_regs > SegProgram::kMaxRegs)
        return;
    std::set<int> ready;  // registers holding a value when the combine reads them
    bool steps_contiguous = true;  // every leaf's steps follow each other (else: run_cols only)
    prog_.leaves = leaves;
    for (int k = 0; k < leaves; ++k) {
        if (code.leaf_compute[k] != DType::F32) return;
        auto alias = std::find_if(code.in_alias.begin(), code.in_alias.end(),
                                  [&](auto& a) { return a.first == code.x[k]; });
        if (alias == code.in_alias.end()) return;
        const Slot& s = L.in[alias->second];
        if (s.esize != 4 || s.step <= 0 || !s.tiled) return;
        steps_contiguous = steps_contiguous && s.step == 1;
        slot_[k] = alias->second;
        out_of_[k] = code.store_alias[k];
        prog_.carry[k] = code.carry[k];
        prog_.x[k] = code.x[k];
        prog_.next[k] = code.next[k];
        ready.insert(code.carry[k]);
        ready.insert(code.x[k]);
    }
    if (!take_seg_ops(code, code.combine, ready, false, prog_)) return;
    compile = compile && cpu_jit_allowed();
    // Whole lines (run_rows, run_cols): every output an f32 leaf stored unchanged, walked forward.
    bool stores = code.epilogue.empty() && !L.out.empty();
    for (std::size_t o = 0; o < L.out.size(); ++o) {
        const Slot& s = L.out[o];
        bool stored = std::find(code.store_alias.begin(), code.store_alias.end(),
                                static_cast<int>(o)) != code.store_alias.end();
        stores = stores && stored && s.esize == 4 && s.step > 0;
        steps_contiguous = steps_contiguous && s.step == 1;
    }
    const unsigned stored = stored_leaves(code);
    // Lanes side by side, steps apart: machine code only (else Worker, with the same bits).
    // The column scan walks each lane on from its carry alone, so it makes only the leaves its
    // outputs need (StageCode::scan_combine); the others keep their carries.
    SegProgram cols = prog_;
    if (code.scan_prunes) {
        cols.ops.clear(), cols.consts.clear();
        std::copy(code.next.begin(), code.next.end(), cols.next);
        if (!take_seg_ops(code, code.scan_combine, ready, true, cols)) cols = prog_;
    }
    if (stores && compile) cols_ = col_scan_jit(cols, cpu_isa(), stored);
    if (!steps_contiguous) return;
    fn_ = mem_fns().seg_local;
    if (compile) prog_.jit = seg_jit_fns(prog_, cpu_isa());
    rows_ = stores;
    // Reassociated rows (run_rows) take the row scan.
    totals_ = folded_ = prog_;
    folded_.row_fold = span_fold(prog_);
    if (rows_ && mem_fns().row_scan && compile) {
        prog_.row_jit = row_scan_jit_fns(prog_, cpu_isa(), stored);
        totals_.row_jit = row_scan_jit_fns(totals_, cpu_isa(), 0);
        folded_.row_jit = row_scan_jit_fns(folded_, cpu_isa(), 0);
    }
}

namespace {

// Elements from line `first`'s start to line `first + 1`'s when lines first.. first + n - 1
// of `s` are that far apart one after the other, else 0.
std::int64_t line_stride(const Layout& L, const Slot& s, std::int64_t first, int n) {
    std::int64_t o0 = L.line_offset(s, first), d = L.line_offset(s, first + 1) - o0;
    for (int l = 2; l < n; ++l)
        if (L.line_offset(s, first + l) != o0 + l * d) return 0;
    return d;
}

}  // namespace

unsigned stored_leaves(const StageCode& code) {
    unsigned mask = 0;
    for (std::size_t k = 0; k < code.store_alias.size(); ++k) mask |= (code.store_alias[k] >= 0 ? 1u : 0u) << k;
    return mask;
}

bool cpu_jit_allowed() {
    static const bool allowed = [] {
        const char* e = std::getenv("SCANC_CPU_JIT");
        return !e || std::string_view(e) != "0";
    }();
    return allowed;
}

bool take_seg_ops(const StageCode& code, const Code& combine, std::set<int> ready, bool keep_unmade,
                  SegProgram& prog) {
    // A constant joins the program when an op first reads it, and must be f32 then. Constants
    // no op reads stay out: a weak literal of another dtype (i64, f64) converted to f32 leaves
    // its original unread, since plan_codegen made the conversion a constant of its own.
    auto take_const = [&](int r) {
        auto c = std::find_if(code.consts.begin(), code.consts.end(), [&](auto& rc) { return rc.first == r; });
        if (c == code.consts.end() || c->second.dtype != DType::F32) return false;
        prog.consts.emplace_back(r, static_cast<float>(c->second.f));
        ready.insert(r);
        return true;
    };
    for (const Instr& in : combine) {
        SegOp op{};
        // Writes go to registers of the combine's own (never a carry or an element).
        if (!seg_kind(in, op.kind) ||
            std::find(code.carry.begin(), code.carry.end(), in.dst) != code.carry.end() ||
            std::find(code.x.begin(), code.x.end(), in.dst) != code.x.end())
            return false;
        const int reads = operand_count(op.kind);
        int args[3] = {in.a, in.b, in.c};
        for (int j = 0; j < 3; ++j) {
            if (j >= reads) args[j] = in.a;  // unread: any valid register
            if (!ready.count(args[j]) && !take_const(args[j])) return false;
        }
        op.dst = static_cast<short>(in.dst);
        op.a = static_cast<short>(args[0]);
        op.b = static_cast<short>(args[1]);
        op.c = static_cast<short>(args[2]);
        prog.ops.push_back(op);
        ready.insert(in.dst);
    }
    // A leaf whose result is an operand passed through gets a copy of it, so that every result
    // is an op's own register (the row scan blends the results into its operands).
    for (int k = 0, spare = code.num_regs; k < prog.leaves; ++k) {
        const bool made = ready.count(code.next[k]) > 0;
        if (!made && !keep_unmade) return false;
        if (made && std::any_of(prog.ops.begin(), prog.ops.end(), [&](const SegOp& o) { return o.dst == code.next[k]; }))
            continue;
        if (spare >= SegProgram::kMaxRegs) return false;
        const auto from = static_cast<short>(made ? code.next[k] : code.carry[k]);
        prog.ops.push_back({SegOp::Copy, static_cast<short>(spare), from, from, from});
        prog.next[k] = spare++;
    }
    return true;
}

bool SegLocal::scan_rows(std::int64_t first, int n, Worker& w, LaneValues& totals) const {
    const MemFns& m = mem_fns();
    const std::int64_t vectors = L_.steps / m.row_lanes, head = vectors * m.row_lanes;
    if (vectors == 0) return false;
    std::vector<RowScanArgs> rows(n);
    const std::uintptr_t vector_bytes = 4 * m.row_lanes;
    for (int l = 0; l < n; ++l) {
        RowScanArgs& r = rows[l];
        r.stream = L_.stream;
        r.carried = false;
        r.ahead_step[0] = AheadLines::kInOrder[0], r.ahead_step[1] = AheadLines::kInOrder[1];
        for (int k = 0; k < prog_.leaves; ++k) {
            const Slot& s = L_.in[slot_[k]];
            r.in[k] = reinterpret_cast<const float*>(s.base) + L_.line_offset(s, first + l);
            // kAheadBytes on, as the serial blocks: one stream a core is too few for the
            // hardware prefetchers (round 31: sum_generic along the last dim of 4096x4096 from
            // DRAM, 2 threads, 4.9 -> 3.8 ms).
            r.ahead[k] = r.in[k] + kAheadBytes / 4;
            r.out[k] = nullptr;
            if (int o = out_of_[k]; o >= 0) {
                const Slot& d = L_.out[o];
                r.out[k] = reinterpret_cast<float*>(d.base) + L_.line_offset(d, first + l);
                r.stream = r.stream && reinterpret_cast<std::uintptr_t>(r.out[k]) % vector_bytes == 0;
            }
        }
    }
    m.row_scan(prog_, rows.data(), n, vectors);
    totals.leaves = prog_.leaves;
    totals.resize(n);
    for (int l = 0; l < n; ++l)
        for (int k = 0; k < prog_.leaves; ++k) std::memcpy(totals.at(l) + k, &rows[l].carry[k], 4);
    finish_rows(first, n, head, w, totals);
    return true;
}

void SegLocal::scan_span(std::int64_t line, std::int64_t start, std::int64_t vectors,
                         const std::uint64_t* carry, bool store, std::int64_t ahead_line,
                         std::int64_t ahead, std::uint64_t* last) const {
    RowScanArgs r{};
    r.carried = carry != nullptr;
    r.stream = store && L_.stream;
    const std::uintptr_t vector_bytes = 4 * span_lanes();
    for (int k = 0; k < prog_.leaves; ++k) {
        const Slot& s = L_.in[slot_[k]];
        auto at = [&](std::int64_t l, std::int64_t step) {
            return reinterpret_cast<const float*>(s.base) + L_.line_offset(s, l) + step * s.step;
        };
        r.in[k] = at(line, start);
        r.ahead[k] = at(ahead_line, ahead);
        if (carry) std::memcpy(&r.carry[k], carry + k, 4);
        if (int o = out_of_[k]; o >= 0 && store) {
            const Slot& d = L_.out[o];
            r.out[k] = reinterpret_cast<float*>(d.base) + L_.line_offset(d, line) + start;
            r.stream = r.stream && reinterpret_cast<std::uintptr_t>(r.out[k]) % vector_bytes == 0;
        }
    }
    const auto bytes = [](const float* p) { return reinterpret_cast<const std::byte*>(p); };
    const auto steps = AheadLines(bytes(r.in[0]), bytes(r.ahead[0]), vectors * span_lanes() * 4).steps();
    r.ahead_step[0] = steps[0], r.ahead_step[1] = steps[1];
    if (store) {
        mem_fns().row_scan(prog_, &r, 1, vectors);
    } else {  // the whole groups of 2^fold vectors paired up, the rest scanned as they are
        const std::int64_t folded = vectors >> folded_.row_fold << folded_.row_fold;
        mem_fns().row_scan(folded_, &r, 1, folded);
        r.carried = r.carried || folded > 0;
        for (int k = 0; k < prog_.leaves; ++k) {
            r.in[k] += folded * span_lanes();
            r.ahead[k] += folded * span_lanes();
        }
        mem_fns().row_scan(totals_, &r, 1, vectors - folded);
    }
    for (int k = 0; k < prog_.leaves; ++k) {
        last[k] = 0;
        std::memcpy(last + k, &r.carry[k], 4);
    }
}

void SegLocal::finish_rows(std::int64_t first, int n, std::int64_t head, Worker& w,
                           LaneValues& totals) const {
    if (head == L_.steps) return;
    std::fill(totals.has.begin(), totals.has.end(), 1);
    w.set_lanes(n, [&](int l) { return first + l; }, [&](int) { return head; });
    w.run(L_.steps - head, Mode::Scan, &totals);
}

bool SegLocal::run_rows(std::int64_t first, int n, Worker& w, LaneValues& totals) const {
    if (rows_ && L_.reassociate && mem_fns().row_scan) return scan_rows(first, n, w, totals);
    if (!rows_ || n % 8 != 0 || n < 8 || L_.steps < 16) return false;
    SegArgs a{};
    a.rows = true;
    a.stream = L_.stream;
    for (int k = 0; k < prog_.leaves; ++k) {
        const Slot& s = L_.in[slot_[k]];
        std::int64_t d = line_stride(L_, s, first, n);
        if (d == 0 || (k > 0 && d != a.in_stride)) return false;
        a.in_stride = d;
        a.in[k] = reinterpret_cast<const float*>(s.base) + L_.line_offset(s, first);
    }
    for (int k = 0; k < prog_.leaves; ++k) {
        int o = out_of_[k];
        if (o < 0) continue;
        const Slot& s = L_.out[o];
        std::int64_t d = line_stride(L_, s, first, n);
        if (d == 0 || (a.out_stride != 0 && d != a.out_stride)) return false;
        a.out_stride = d;
        a.out[k] = reinterpret_cast<float*>(s.base) + L_.line_offset(s, first);
        // Streaming stores need each row's pieces 32-byte aligned.
        a.stream = a.stream && reinterpret_cast<std::uintptr_t>(a.out[k]) % 32 == 0 && d % 8 == 0;
    }
    std::int64_t head = L_.steps / 16 * 16;  // the rest: Worker, from these carries
    a.steps = head;
    a.lanes = n;
    totals.leaves = prog_.leaves;
    totals.resize(n);
    a.totals = totals.at(0);
    fn_(prog_, a);
    if (a.stream) stream_fence();
    finish_rows(first, n, head, w, totals);
    return true;
}

bool SegLocal::run_cols(std::int64_t first, int n, Worker& w) const {
    if (!cols_ || L_.steps < 2) return false;
    const int chunk = cols_->lanes, leaves = prog_.leaves;
    const std::int64_t chunks = n / chunk;
    if (chunks == 0) return false;
    // Lanes side by side in every slot, each slot's steps as far apart as the others'.
    ColScanArgs a{};
    const float* in0[kSegMaxLeaves] = {};
    float* out0[kSegMaxLeaves] = {};
    for (int k = 0; k < leaves; ++k) {
        const Slot& s = L_.in[slot_[k]];
        if (line_stride(L_, s, first, n) != 1 || (k > 0 && s.step * 4 != a.in_step)) return false;
        a.in_step = s.step * 4;
        in0[k] = reinterpret_cast<const float*>(s.base) + L_.line_offset(s, first);
        if (out_of_[k] < 0) continue;
        const Slot& d = L_.out[out_of_[k]];
        if (line_stride(L_, d, first, n) != 1 || (a.out_step != 0 && d.step * 4 != a.out_step)) return false;
        a.out_step = d.step * 4;
        out0[k] = reinterpret_cast<float*>(d.base) + L_.line_offset(d, first);
    }
    // Large outputs stream, on rows of whole 64-byte lines; other rows keep Worker's staged rows
    // (`scanc bench`, 4096x4100 along dim 0: plain stores here read 21.3 GB/s against Worker's
    // 23.7). Chunks of under kRowsChunkBytes of a row (AVX2's 128 bytes) go through a staging
    // block and leave by streaming copies of kRowsChunkBytes per row, as serial_rows' do:
    // streamed straight from registers, four rows' pieces of 128 bytes in flight ran at half
    // the speed on Zen 3, and plain stores pay a read of each line (2 threads, ms, before ->
    // staged: affine along dim 0 of 4096x4096 with plain stores 12.9-13.8 -> 9.7-9.9, affine_h
    // streamed two rows at a time 8.3-9.3 -> 7.1-7.3, affine along dim 1 of (2, 4096, 1024)
    // 7.1-7.2 -> 4.6-4.8). AVX-512's chunks of 512 bytes stream straight (an Intel Xeon, 2
    // threads: affine along dim 0 of 4096x4096 14.5-15.3 ms with plain stores -> 7.5-7.9).
    const bool large = L_.stream;
    for (int k = 0; k < leaves; ++k)
        if (large && out0[k] && (a.out_step % 64 != 0 || reinterpret_cast<std::uintptr_t>(out0[k]) % 64 != 0))
            return false;
    const bool staged = large && chunk * 4 < kRowsChunkBytes;
    const std::int64_t group = staged ? kRowsChunkBytes / (chunk * 4) : chunks;  // chunks per call
    const std::int64_t width = group * chunk;  // lanes per call
    Scratch stage_block(staged ? static_cast<std::size_t>(leaves * kRowsAtOnce * width) * 4 : 0);
    float* stage = reinterpret_cast<float*>(stage_block.data());  // 64-byte aligned
    const std::int64_t out_step = a.out_step;  // the outputs' own; the code writes the stage's
    a.out_step = staged ? width * 4 : out_step;
    const MemFns& m = mem_fns();
    // Step 0: each lane's first element is its carry and its result.
    std::vector<float> carries(static_cast<std::size_t>(chunks) * leaves * chunk);
    for (int k = 0; k < leaves; ++k) {
        for (std::int64_t c = 0; c < chunks; ++c)
            std::memcpy(&carries[(c * leaves + k) * chunk], in0[k] + c * chunk, chunk * 4);
        if (out0[k]) std::memcpy(out0[k], in0[k], chunks * chunk * 4);
    }
    // kRowsAtOnce steps per pass: that many rows of memory read at once (what serial_rows
    // found for one-op stages).
    auto row_at = [](auto* p, std::int64_t step_bytes, std::int64_t t, std::int64_t lane) {
        return p + t * (step_bytes / 4) + lane;
    };
    for (std::int64_t t = 1; t < L_.steps; t += kRowsAtOnce) {
        a.rows = std::min<std::int64_t>(kRowsAtOnce, L_.steps - t);
        for (std::int64_t c0 = 0; c0 < chunks; c0 += group) {
            a.chunks = std::min(group, chunks - c0);
            a.carries = carries.data() + c0 * leaves * chunk;
            for (int k = 0; k < leaves; ++k) {
                a.in[k] = row_at(in0[k], a.in_step, t, c0 * chunk);
                a.out[k] = !out0[k] ? nullptr
                           : staged ? stage + k * kRowsAtOnce * width
                                    : row_at(out0[k], out_step, t, c0 * chunk);
            }
            cols_->fns[large && !staged](&a);
            for (int k = 0; staged && k < leaves; ++k)
                for (int r = 0; out0[k] && r < a.rows; ++r)
                    m.stream_copy(row_at(out0[k], out_step, t + r, c0 * chunk),
                                  stage + (k * kRowsAtOnce + r) * width, a.chunks * chunk * 4);
        }
    }
    if (large) stream_fence();
    if (const int rest = n - static_cast<int>(chunks) * chunk) {
        w.set_lanes(rest, [&](int l) { return first + chunks * chunk + l; }, [](int) { return 0; });
        w.run(L_.steps, Mode::Scan);
    }
    return true;
}

void SegLocal::run(std::int64_t line, const Piece& pc, const LocalScans& local, LaneValues& totals,
                   int i) const {
    SegArgs a{};
    for (int k = 0; k < prog_.leaves; ++k) {
        const Slot& s = L_.in[slot_[k]];
        a.in[k] = reinterpret_cast<const float*>(s.base) + L_.line_offset(s, line) + pc.start;
        a.out[k] = reinterpret_cast<float*>(local.bases()[k]) + local.origin() + pc.start;
    }
    a.in_stride = a.out_stride = pc.steps;
    a.steps = pc.steps;
    a.lanes = pc.lanes;
    a.totals = totals.at(i);
    fn_(prog_, a);
}

}  // namespace scanc::cpu
