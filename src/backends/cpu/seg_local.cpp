// The fix-up's phase 1 in SIMD registers (see seg_local.h): which stages qualify, and the call.
#include "seg_local.h"

#include <algorithm>
#include <set>

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

}  // namespace

SegLocal::SegLocal(const StageCode& code, const Layout& L, int dir) : L_(L) {
    int leaves = static_cast<int>(code.carry.size());
    if (!mem_fns().seg_local || dir != 1 || !code.step.empty() || !code.captured.empty() ||
        leaves == 0 || leaves > SegProgram::kMaxLeaves || code.num_regs > SegProgram::kMaxRegs)
        return;
    std::set<int> ready;  // registers holding a value when the combine reads them
    prog_.leaves = leaves;
    for (int k = 0; k < leaves; ++k) {
        if (code.leaf_compute[k] != DType::F32) return;
        auto alias = std::find_if(code.in_alias.begin(), code.in_alias.end(),
                                  [&](auto& a) { return a.first == code.x[k]; });
        if (alias == code.in_alias.end()) return;
        const Slot& s = L.in[alias->second];
        if (s.esize != 4 || s.step != 1 || !s.tiled) return;
        slot_[k] = alias->second;
        prog_.carry[k] = code.carry[k];
        prog_.x[k] = code.x[k];
        prog_.next[k] = code.next[k];
        ready.insert(code.carry[k]);
        ready.insert(code.x[k]);
    }
    // f32 constants; f64 ones (weak literals) only through a conversion to f32, folded here.
    std::vector<std::pair<int, double>> wide;
    for (auto& [r, s] : code.consts) {
        if (s.dtype == DType::F64) {
            wide.emplace_back(r, s.f);
            continue;
        }
        if (s.dtype != DType::F32) return;
        prog_.consts.emplace_back(r, static_cast<float>(s.f));
        ready.insert(r);
    }
    static const OpFn narrow = lookup_op({OpKind::Convert, Op::Cast, DType::F64, DType::F32});
    for (const Instr& in : code.combine) {
        auto w = std::find_if(wide.begin(), wide.end(), [&](auto& c) { return c.first == in.a; });
        if (narrow && in.fn == narrow && w != wide.end()) {
            prog_.consts.emplace_back(in.dst, static_cast<float>(w->second));
            ready.insert(in.dst);
            continue;
        }
        SegOp op{};
        // Writes go to registers of the combine's own (never a carry or an element).
        if (!seg_kind(in, op.kind) ||
            std::find(code.carry.begin(), code.carry.end(), in.dst) != code.carry.end() ||
            std::find(code.x.begin(), code.x.end(), in.dst) != code.x.end())
            return;
        int reads = op.kind == SegOp::Copy ? 1 : op.kind >= SegOp::MulAdd ? 3 : 2;
        int args[3] = {in.a, in.b, in.c};
        for (int j = 0; j < 3; ++j) {
            if (j >= reads) args[j] = in.a;  // unread: any valid register
            if (!ready.count(args[j])) return;
        }
        op.dst = static_cast<short>(in.dst);
        op.a = static_cast<short>(args[0]);
        op.b = static_cast<short>(args[1]);
        op.c = static_cast<short>(args[2]);
        prog_.ops.push_back(op);
        ready.insert(in.dst);
    }
    for (int k = 0; k < leaves; ++k)
        if (!ready.count(code.next[k])) return;
    fn_ = mem_fns().seg_local;
}

void SegLocal::run(std::int64_t line, const Piece& pc, const LocalScans& local, LaneValues& totals,
                   int i) const {
    SegArgs a{};
    for (int k = 0; k < prog_.leaves; ++k) {
        const Slot& s = L_.in[slot_[k]];
        a.in[k] = reinterpret_cast<const float*>(s.base) + L_.line_offset(s, line) + pc.start;
        a.local[k] = reinterpret_cast<float*>(local.bases()[k]) + local.origin() + pc.start;
    }
    a.lane_stride = pc.steps;
    a.steps = pc.steps;
    a.lanes = pc.lanes;
    a.totals = totals.at(i);
    fn_(prog_, a);
}

}  // namespace scanc::cpu
