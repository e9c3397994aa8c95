// Rows with a prologue or epilogue, block by block (see fused_rows.h).
#include "fused_rows.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <string_view>

#include "seg_jit.h"
#include "seg_local.h"

namespace scanc::cpu {

namespace {

// Whether every register `p` names fits the register kernels' tables.
bool fits_kernel_registers(const SegProgram& p) {
    auto fits = [](int r) { return r >= 0 && r < SegProgram::kMaxRegs; };
    for (const SegOp& o : p.ops)
        if (!fits(o.dst) || !fits(o.a) || !fits(o.b) || !fits(o.c)) return false;
    for (auto [r, v] : p.consts)
        if (!fits(r)) return false;
    for (int k = 0; k < p.leaves; ++k)
        if (!fits(p.carry[k]) || !fits(p.x[k]) || !fits(p.next[k])) return false;
    return true;
}

// The storage dtype `in` stores to an output, if it is a Store.
std::optional<DType> stored_dtype(const Instr& in) {
    static const std::vector<std::pair<OpFn, DType>> stores = [] {
        std::vector<std::pair<OpFn, DType>> fns;
        for (DType t : {DType::Bool, DType::U8, DType::I8, DType::I16, DType::I32, DType::I64, DType::F16,
                        DType::BF16, DType::F32, DType::F64})
            fns.emplace_back(lookup_op({OpKind::Store, Op::Add, t}), t);
        return fns;
    }();
    for (auto [fn, t] : stores)
        if (fn == in.fn) return t;
    return std::nullopt;
}

// dst[i] = src[n - 1 - i] for elements of `bytes` bytes (1, 2, 4 or 8).
void reverse_copy(std::byte* dst, const std::byte* src, int n, int bytes) {
    auto run = [&](auto v) {
        using T = decltype(v);
        const auto* s = reinterpret_cast<const T*>(src);
        auto* d = reinterpret_cast<T*>(dst);
        for (int i = 0; i < n; ++i) d[i] = s[n - 1 - i];
    };
    switch (bytes) {
        case 1: return run(std::uint8_t{});
        case 2: return run(std::uint16_t{});
        case 4: return run(std::uint32_t{});
        default: return run(std::uint64_t{});
    }
}

}  // namespace

FusedRows::FusedRows(const StageCode& code, const Layout& L) : code_(code), L_(L) {
    leaves_ = static_cast<int>(code.carry.size());
    static const bool allowed = [] {  // SCANC_CPU_FUSED_ROWS=0: Worker instead (for comparisons)
        const char* e = std::getenv("SCANC_CPU_FUSED_ROWS");
        return !e || std::string_view(e) != "0";
    }();
    // Also a plain one-op scan along rows grouped as lanes (run_stage.cpp gives rows of
    // kMinSplitSteps steps or more a lane each, L.width 1): a sum along 16384 x 1024, 2
    // threads, 23 GB/s through Worker's groups, 65 here.
    const bool fuses = !code.step.empty() || !code.epilogue.empty() || (code.serial && L.width > 1);
    if (!allowed || !fuses || leaves_ == 0 || leaves_ > kSegMaxLeaves || !L.reassociate || L.steps < kFusedMinSteps)
        return;
    // Every input walked one element a step, or broadcast along the scan; every output walked.
    int dir = 0;
    auto walks = [&](const Slot& s) {
        if (s.step != 1 && s.step != -1) return false;
        if (dir == 0) dir = static_cast<int>(s.step);
        return s.step == dir;
    };
    for (const Slot& s : L.in)
        if (s.tiled && s.step != 0 && !walks(s)) return;
    for (const Slot& s : L.out)
        if (!walks(s)) return;
    dir_ = dir;
    for (int k = 0; k < leaves_; ++k) {
        leaf_bytes_.push_back(static_cast<int>(dtype_size(code.leaf_compute[k])));
        if (int o = code.store_alias[k]; o >= 0 && L.out[o].esize != leaf_bytes_[k]) return;
    }
    // A one-op combine takes its block loop (f32: VecScan, ops_serial.inc), any other f32 one the
    // register row scan. The row scan's levels cost a one-op f32 scan more ops a step (forty-
    // ninth session, 2 threads, GB/s row scan -> block loop: `x * 2.0` summed along 4096 x 4096
    // 51.3 -> 58.8, along 3 x 2^24 27.7 -> 34.4; an f16 sum 25.7 -> 30.1).
    if (!code.one_op_block && mem_fns().row_scan &&
        std::all_of(code.leaf_compute.begin(), code.leaf_compute.end(), [](DType t) { return t == DType::F32; })) {
        std::set<int> ready;
        prog_.leaves = leaves_;
        for (int k = 0; k < leaves_; ++k) {
            prog_.carry[k] = code.carry[k], prog_.x[k] = code.x[k], prog_.next[k] = code.next[k];
            ready.insert(code.carry[k]);
            ready.insert(code.x[k]);
        }
        if (take_seg_ops(code, code.combine, ready, false, prog_) && fits_kernel_registers(prog_)) {
            totals_ = direct_prog_ = folded_ = prog_;
            folded_.row_fold = span_fold(prog_);
            if (cpu_jit_allowed()) {
                prog_.row_jit = row_scan_jit_fns(prog_, cpu_isa(), (1u << leaves_) - 1);
                totals_.row_jit = row_scan_jit_fns(totals_, cpu_isa(), 0);
                folded_.row_jit = row_scan_jit_fns(folded_, cpu_isa(), 0);
                direct_prog_.row_jit = row_scan_jit_fns(direct_prog_, cpu_isa(), stored_leaves(code));
            }
            engine_ = Engine::Registers;
        }
    }
    if (engine_ == Engine::None && code.one_op_block) engine_ = Engine::OneOp;
    if (engine_ == Engine::None) return;
    // Without an epilogue every output stores a leaf: a forward scan writes it itself.
    direct_ = code.epilogue.empty() && dir_ > 0;
    // An output stored as its register holds it is copied out from that register (streamed
    // where large) instead of by a Store into a staging row and a copy from there.
    for (const Instr& in : code.epilogue) {
        const std::optional<DType> t = stored_dtype(in);
        if (t && compute_dtype(*t) == *t) {
            copies_.emplace_back(in.dst, in.a);
            continue;
        }
        epilogue_.push_back(in);
        if (t) staged_.push_back(in.dst);  // a conversion (f16, bf16)
    }

    std::set<int> made;  // what the prologue computes (Keep::Reuse keeps only the leaves' copies)
    for (const Instr& in : code.step) made.insert(in.dst);
    // A Save's prologue may write each leaf straight into its kept row where the leaf's register
    // is its own (no other leaf's, no input read in place), written once by the prologue and read
    // by none of its instructions (a Load's slot counts as a read: conservative).
    save_direct_ = true;
    for (int k = 0; k < leaves_; ++k) {
        const int x = code.x[k];
        int writes = 0, reads = 0;
        for (const Instr& in : code.step) {
            writes += in.dst == x && !stored_dtype(in);
            reads += in.a == x || in.b == x || in.c == x;
        }
        const bool shared = std::count(code.x.begin(), code.x.end(), x) > 1 ||
                            std::any_of(code.in_alias.begin(), code.in_alias.end(), [&](auto& rs) { return rs.first == x; });
        save_direct_ = save_direct_ && writes == 1 && reads == 0 && !shared;
    }
    keeps_ = std::none_of(code.epilogue.begin(), code.epilogue.end(), [&](const Instr& in) {
        return made.count(in.a) || made.count(in.b) || made.count(in.c);
    });

    regs_.resize(std::max(code.num_regs, 1) * kRegBytes);
    if (Scratch::poison()) std::memset(regs_.data(), 0xFF, regs_.size());
    f_.regs = regs_.data();
    for (int r = 0; r < code.num_regs; ++r) f_.ptrs.push_back(own_row(r));
    for (auto& [r, s] : code.consts) fill_const(f_.ptrs[r], s.dtype, s.f, s.i, kFusedLanes);
    f_.in_rows.assign(L.in.size(), nullptr);
    f_.out_rows.assign(L.out.size(), nullptr);
    f_.tee_rows.assign(L.out.size(), nullptr);
    lane_off_.assign(L.in.size(), std::vector<std::int64_t>(kFusedLanes));
    for (std::size_t i = 0; i < L.in.size(); ++i) {
        f_.in_base.push_back(L.in[i].base);
        f_.lane_off.push_back(lane_off_[i].data());
    }
    // Per leaf: its elements reversed (a reverse scan walks down) and its scan, whole vectors
    // of up to 16 lanes past the block.
    const std::size_t leaf_row = (kFusedLanes + 16) * 8;
    leaves_buf_.resize(leaves_ * leaf_row);
    scans_buf_.resize(leaves_ * leaf_row);
    staging_.resize(L.out.size() * kFusedLanes * 8);
    out_mem_.resize(L.out.size());
    broadcast_.resize(L.in.size() * kFusedLanes * 8);
}

void FusedRows::scan_registers(const float* const* xs, float* const* out, const std::byte* const* ahead, bool stream,
                               int n, bool& has, std::uint64_t* carry) {
    const MemFns& m = mem_fns();
    const int W = m.row_lanes;
    const std::int64_t head = n / W;
    const int tail = n - static_cast<int>(head) * W;
    const SegProgram& prog = !out ? totals_ : direct_ ? direct_prog_ : prog_;
    RowScanArgs r{};
    r.carried = has;
    r.stream = stream;
    r.ahead_step[0] = AheadLines::kInOrder[0], r.ahead_step[1] = AheadLines::kInOrder[1];
    const int leaves = std::min(leaves_, kSegMaxLeaves);
    for (int k = 0; k < leaves; ++k) {
        r.in[k] = xs[k];
        r.ahead[k] = ahead[k] ? reinterpret_cast<const float*>(ahead[k]) : xs[k];
        r.out[k] = out ? out[k] : nullptr;
        // Streaming stores take whole aligned vectors.
        r.stream = r.stream && reinterpret_cast<std::uintptr_t>(r.out[k]) % (4 * W) == 0;
        std::memcpy(&r.carry[k], carry + k, 4);
    }
    // A total pairs its vectors up first where it can (SegProgram::row_fold: fewer ops a vector).
    const std::int64_t folded = out ? 0 : head >> folded_.row_fold << folded_.row_fold;
    if (folded > 0) {
        m.row_scan(folded_, &r, 1, folded);
        for (int k = 0; k < leaves; ++k) r.in[k] += folded * W, r.ahead[k] += folded * W;
        r.carried = true;
    }
    if (head > 0) {
        m.row_scan(prog, &r, 1, head - folded);  // nothing for no vectors
        r.carried = true;
    }
    if (tail > 0) {
        // The last part vector, zeros after it: a lane's scan reads only the lanes before it.
        alignas(64) float pad[kSegMaxLeaves][16] = {}, scanned[kSegMaxLeaves][16];
        r.stream = false;
        for (int k = 0; k < leaves; ++k) {
            std::memcpy(pad[k], xs[k] + head * W, tail * 4);
            r.in[k] = r.ahead[k] = pad[k];
            r.out[k] = scanned[k];
        }
        m.row_scan(prog_, &r, 1, 1);
        for (int k = 0; k < leaves; ++k) {
            r.carry[k] = scanned[k][tail - 1];
            if (out && out[k]) std::memcpy(out[k] + head * W, scanned[k], tail * 4);
        }
    }
    for (int k = 0; k < leaves; ++k) {
        carry[k] = 0;
        std::memcpy(carry + k, &r.carry[k], 4);
    }
    has = true;
}

void FusedRows::scan(std::int64_t line, std::int64_t start, std::int64_t steps, const std::uint64_t* carry,
                     bool store, std::uint64_t* last, Keep keep, const Span* next) {
    const MemFns& m = mem_fns();
    const int width = static_cast<int>(std::min<std::int64_t>(kFusedLanes, steps));
    for (std::size_t s = 0; s < L_.in.size(); ++s) f_.in_base[s] = L_.in[s].base;  // this run's
    // What stays the same along the line: captured values, inputs broadcast along the scan.
    for (std::size_t s = 0; s < L_.in.size(); ++s) {
        const Slot& slot = L_.in[s];
        if (slot.step != 0) continue;
        std::fill_n(lane_off_[s].begin(), width, L_.line_offset(slot, line));
        if (!slot.tiled) continue;
        std::uint64_t v = 0;
        std::memcpy(&v, at(slot, line, 0), slot.esize);
        std::byte* row = broadcast_.data() + s * kFusedLanes * 8;
        m.fill(row, slot.esize, v, width);
        f_.in_rows[s] = row;
    }
    run_code(code_.captured, f_, 0, width);

    std::uint64_t cur[kSegMaxLeaves] = {};
    bool has = carry != nullptr;
    if (has) std::copy(carry, carry + leaves_, cur);
    const std::size_t leaf_row = (kFusedLanes + 16) * 8;
    // Kept leaves a row each, 8 bytes a step and a vector's slack apart.
    const std::int64_t kept_row = (steps + 16) * 8;
    if (keep == Keep::Save) kept_.resize(static_cast<std::size_t>(kept_row * leaves_));
    const auto kept = [&](int k, std::int64_t t0) { return kept_.data() + k * kept_row + t0 * leaf_bytes_[k]; };
    // A forward Save has the prologue write each leaf into its kept row itself (no copy).
    const bool save_direct = keep == Keep::Save && save_direct_ && dir_ > 0;
    for (std::int64_t t0 = 0; t0 < steps; t0 += kFusedLanes) {
        const int n = static_cast<int>(std::min<std::int64_t>(kFusedLanes, steps - t0));
        // The block's lowest address in memory: its first walking step, or its last walking down.
        const std::int64_t low = start + t0 + (dir_ > 0 ? 0 : n - 1);
        for (std::size_t s = 0; s < L_.in.size(); ++s)
            if (L_.in[s].tiled && L_.in[s].step != 0) f_.in_rows[s] = at(L_.in[s], line, low);
        for (auto [r, s] : code_.in_alias) f_.ptrs[r] = const_cast<std::byte*>(f_.in_rows[s]);  // read only
        if (save_direct)
            for (int k = 0; k < leaves_; ++k) f_.ptrs[code_.x[k]] = kept(k, t0);
        if (keep != Keep::Reuse) run_code(code_.step, f_, 0, n);
        std::vector<std::byte*>& out_mem = out_mem_;  // each output's block
        for (std::size_t o = 0; o < L_.out.size(); ++o) out_mem[o] = at(L_.out[o], line, low);

        // The leaves in walking order, scanned from the carry (straight into the outputs where
        // direct_, streamed where large).
        const std::byte* xs[kSegMaxLeaves];
        std::byte* scans[kSegMaxLeaves];
        const bool stream = direct_ && L_.stream;
        for (int k = 0; k < leaves_; ++k) {
            xs[k] = f_.ptrs[code_.x[k]];
            const int o = code_.store_alias[k];
            scans[k] = !direct_ ? scans_buf_.data() + k * leaf_row : o < 0 ? nullptr : out_mem[o];
            if (keep == Keep::Reuse) {
                xs[k] = kept(k, t0);
                continue;
            }
            if (dir_ < 0) {
                std::byte* rev = leaves_buf_.data() + k * leaf_row;
                reverse_copy(rev, xs[k], n, leaf_bytes_[k]);
                xs[k] = rev;
            }
            if (keep == Keep::Save && !save_direct) {
                std::memcpy(kept(k, t0), xs[k], static_cast<std::size_t>(n) * leaf_bytes_[k]);
                xs[k] = kept(k, t0);
            }
        }
        // The next block's inputs, prefetched in step with the scan: its compute then overlaps
        // their loads (the blocks' phases in turn, with none, ran at half the plain scan's speed).
        // Given `next`, this span's inputs were read just before (its total): those of `next`.
        const std::byte* ahead[kSegMaxLeaves] = {};
        const Span ahead_span = next ? Span{next->line, next->start + t0, next->steps - t0}
                                     : Span{line, start + t0 + n, steps - t0 - n};
        const std::int64_t next_n = std::min<std::int64_t>(next ? n : kFusedLanes, ahead_span.steps);
        for (int s = 0, k = 0; next_n > 0 && s < static_cast<int>(L_.in.size()) && k < kSegMaxLeaves; ++s)
            if (L_.in[s].tiled && L_.in[s].step != 0)
                ahead[k++] = at(L_.in[s], ahead_span.line, ahead_span.start + (dir_ > 0 ? 0 : next_n - 1));
        if (engine_ == Engine::OneOp) {
            std::uint64_t end = 0;
            code_.one_op_block(has ? reinterpret_cast<const std::byte*>(cur) : nullptr, xs[0], store ? scans[0] : nullptr,
                               n, reinterpret_cast<std::byte*>(&end), code_.serial_x_left, stream, ahead[0]);
            cur[0] = end;
            has = true;
        } else {
            scan_registers(reinterpret_cast<const float* const*>(xs), store ? reinterpret_cast<float* const*>(scans) : nullptr,
                           ahead, stream, n, has, cur);
        }
        if (!store || direct_) continue;

        // The epilogue over the block's positions, in memory order.
        for (int k = 0; k < leaves_; ++k) {
            if (dir_ < 0) {
                std::byte* rev = leaves_buf_.data() + k * leaf_row;
                reverse_copy(rev, scans[k], n, leaf_bytes_[k]);
                std::swap(scans[k], rev);
            }
            f_.ptrs[code_.carry[k]] = scans[k];
        }
        auto put = [&](std::byte* dst, const std::byte* src, std::size_t bytes) {
            if (L_.stream) m.stream_copy(dst, src, bytes);
            else std::memcpy(dst, src, bytes);
        };
        for (std::size_t o = 0; o < L_.out.size(); ++o)
            f_.out_rows[o] = L_.stream ? staging_.data() + o * kFusedLanes * 8 : out_mem[o];
        for (int k = 0; k < leaves_; ++k)
            if (int o = code_.store_alias[k]; o >= 0) put(out_mem[o], scans[k], static_cast<std::size_t>(n) * leaf_bytes_[k]);
        run_code(epilogue_, f_, 0, n);
        for (auto [o, r] : copies_) put(out_mem[o], f_.ptrs[r], static_cast<std::size_t>(n) * L_.out[o].esize);
        if (L_.stream)  // the Stores' staging rows
            for (int o : staged_) m.stream_copy(out_mem[o], f_.out_rows[o], static_cast<std::size_t>(n) * L_.out[o].esize);
    }
    if (save_direct)  // the leaves' registers back on their own rows
        for (int k = 0; k < leaves_; ++k) f_.ptrs[code_.x[k]] = own_row(code_.x[k]);
    std::copy(cur, cur + leaves_, last);
}

}  // namespace scanc::cpu
