// Compiling one Fused stage (prologue DAGs, combine, epilogue) into register bytecode.
//
// Typing follows the reference (scalar_eval.h): an op's operands are converted to the op's
// dtype first (weak literals adopt it); f16/bf16 compute in f32. Program-level f16/bf16 values
// are rounded after every op, as if materialized (the reference stores every program value);
// inside a combine they keep f32 precision.
#include <algorithm>
#include <set>
#include <unordered_set>

#include "plan.h"
#include "scanc/ir/builder.h"
#include "scanc/ir/combine_types.h"

namespace scanc::cpu {

namespace {

bool is_narrow(DType t) { return t == DType::F16 || t == DType::BF16; }

// The dtype an op's operands are converted to before it applies.
DType operand_dtype(Op op, std::span<const ScalarType> args, ScalarType result) {
    if (is_comparison(op)) {
        ScalarType a = args[0], b = args[1];
        if (a.weak && b.weak)
            return (a.dtype == DType::F64 || b.dtype == DType::F64) ? DType::F64 : DType::I64;
        return a.weak ? b.dtype : a.dtype;
    }
    return result.dtype;
}

class Codegen {
public:
    Codegen(Stage& stage, const std::vector<const Node*>& values,
            const std::unordered_map<const Node*, int>& value_of)
        : stage_(stage), values_(values), value_of_(value_of) {
        for (int v : stage.outputs) produced_.insert(values[v]);
    }

    StageCode run() {
        if (stage_.has_scan) compile_scan();
        out_.store_alias.assign(out_.carry.size(), -1);
        for (std::size_t o = 0; o < stage_.outputs.size(); ++o) {
            const Node* n = values_[stage_.outputs[o]];
            if (is_own_project(n) && !is_narrow(n->type().dtype)) {
                int& alias = out_.store_alias[n->as<ProjectAttr>().index];
                if (alias < 0) {
                    alias = static_cast<int>(o);
                    continue;
                }
            }
            int r = is_own_project(n) ? out_.carry[n->as<ProjectAttr>().index]
                                       : value(n, Section::Epilogue);
            emit(out_.epilogue, {OpKind::Store, Op::Add, n->type().dtype}, static_cast<int>(o), r);
        }
        out_.slot_tiled.resize(stage_.inputs.size(), false);
        if (stage_.has_scan) find_serial();
        fuse_mul_add();
        if (stage_.has_scan) find_stream_combine(), find_tee_combine(), find_scan_combine();
        return std::move(out_);
    }

private:
    enum class Section { Captured, Step, Epilogue };

    bool is_own_project(const Node* n) const {
        return stage_.has_scan && n->op == Op::Project && n->inputs[0].get() == stage_.node;
    }

    int new_reg(DType compute) {
        reg_type_.push_back(compute);
        return out_.num_regs++;
    }

    void emit(Code& code, const OpKey& key, int dst, int a = -1, int b = -1, int c = -1) {
        OpFn fn = lookup_op(key);
        SCANC_INTERNAL_CHECK(fn, "cpu backend: no kernel for ", key.op, " on ", key.t);
        code.push_back(Instr{fn, dst, a, b, c});
        keys_[&code].push_back(key);
        if (&code == &out_.step && key.kind != OpKind::Store) mark_step_written(dst);
    }

    // Copies exactly the lanes' bytes: registers may point at rows of that dtype.
    static OpKey copy_key(DType t) { return {OpKind::Copy, Op::Add, compute_dtype(t)}; }

    void mark_step_written(int r) {
        if (static_cast<int>(step_written_.size()) <= r) step_written_.resize(r + 1, false);
        step_written_[r] = true;
    }

    int emit_new(Code& code, const OpKey& key, DType result, int a, int b = -1, int c = -1) {
        int d = new_reg(result);
        emit(code, key, d, a, b, c);
        return d;
    }

    // `r` (holding a value of dtype `from`) converted implicitly to dtype `to`.
    int convert(Code& code, int r, DType from, DType to) {
        DType cf = compute_dtype(from), ct = compute_dtype(to);
        if (cf == ct && (to != DType::Bool || from == DType::Bool)) return r;
        // A literal (weak i64 or f64) becomes a float constant here, once, not at every step:
        // welford's `0 * x + 1` spent 14% of its time converting zeros and ones to f32, and an
        // f16 `x * 2.0` a fifth of its time converting 2.0 (to f32, the compute dtype, as the
        // Convert instruction did).
        if (ct == DType::F32 || ct == DType::F64) {
            auto c = std::find_if(out_.consts.begin(), out_.consts.end(), [&](auto& k) { return k.first == r; });
            if (c != out_.consts.end() && c->second.dtype == cf) {
                const Scalar v = convert_scalar(c->second, ct);
                int d = new_reg(ct);
                out_.consts.emplace_back(d, v);
                return d;
            }
        }
        return emit_new(code, {OpKind::Convert, Op::Cast, cf, ct}, ct, r);
    }

    int constant(const LiteralAttr& lit, DType t) {
        Scalar s = lit.is_float ? Scalar{DType::F64, lit.f, 0} : Scalar{DType::I64, 0, lit.i};
        Scalar v = convert_scalar(s, t);
        int r = new_reg(compute_dtype(t));
        out_.consts.emplace_back(r, v);
        return r;
    }

    int slot(const Node* n) {
        int v = value_of_.at(n);
        for (std::size_t i = 0; i < stage_.inputs.size(); ++i)
            if (stage_.inputs[i] == v) return static_cast<int>(i);
        stage_.inputs.push_back(v);
        return static_cast<int>(stage_.inputs.size()) - 1;
    }

    // An elementwise op over registers `args` of types `arg_types`; returns the result register.
    int apply(Code& code, const Node* n, std::vector<int> args, std::vector<ScalarType> arg_types,
              ScalarType result, bool program_level) {
        Op op = n->op;
        if (op == Op::Cast) {
            DType to = n->as<CastAttr>().to;
            DType from = arg_types[0].dtype;
            if (is_narrow(to))
                return emit_new(code, {OpKind::CastNarrow, op, compute_dtype(from), to}, DType::F32,
                                args[0]);
            return convert(code, args[0], from, to);
        }
        DType operand = operand_dtype(op, arg_types, result);
        DType ct = compute_dtype(operand);
        for (std::size_t i = 0; i < args.size(); ++i) {
            if (op == Op::Where && i == 0) continue;  // the condition stays bool
            args[i] = convert(code, args[i], arg_types[i].dtype, operand);
        }
        int r;
        if (op == Op::Where)
            r = emit_new(code, {OpKind::Where, op, ct}, ct, args[0], args[1], args[2]);
        else if (is_comparison(op))
            r = emit_new(code, {OpKind::Compare, op, ct}, DType::Bool, args[0], args[1]);
        else if (args.size() == 1)
            r = emit_new(code, {OpKind::Unary, op, ct}, ct, args[0]);
        else {
            r = emit_new(code, {OpKind::Binary, op, ct}, ct, args[0], args[1]);
            if (&code == &out_.combine) last_binary_ = {OpKind::Binary, op, ct};
        }
        if (program_level && is_narrow(result.dtype))
            r = emit_new(code, {OpKind::RoundNarrow, op, DType::F32, result.dtype}, DType::F32, r);
        return r;
    }

    int project_reg(const Node* p, Code& code) {
        int i = p->as<ProjectAttr>().index;
        DType t = p->type().dtype;
        if (!is_narrow(t)) return out_.carry[i];
        // What the reference would read back from the stored f16/bf16 output.
        return emit_new(code, {OpKind::RoundNarrow, Op::Cast, DType::F32, t}, DType::F32,
                        out_.carry[i]);
    }

    // The register holding program value `n` at the current lanes/step.
    int value(const Node* n, Section section) {
        // Captured values hold for the whole block, prologue values for the whole step.
        if (auto it = captured_memo_.find(n); it != captured_memo_.end()) return it->second;
        if (section != Section::Captured)
            if (auto it = step_memo_.find(n); it != step_memo_.end()) return it->second;
        auto& memo = section == Section::Captured ? captured_memo_
                     : section == Section::Step   ? step_memo_
                                                  : epilogue_memo_;
        if (auto it = memo.find(n); it != memo.end()) return it->second;
        Code& code = section == Section::Captured ? out_.captured
                     : section == Section::Step   ? out_.step
                                                  : out_.epilogue;
        int r;
        if (value_of_.count(n) && !produced_.count(n)) {
            int s = slot(n);
            DType t = n->type().dtype;
            if (section == Section::Captured) {
                r = emit_new(code, {OpKind::LoadDirect, Op::Param, t}, compute_dtype(t), s);
            } else {
                out_.slot_tiled.resize(stage_.inputs.size(), false);
                out_.slot_tiled[s] = true;
                if (is_narrow(t)) {
                    r = emit_new(code, {OpKind::Load, Op::Param, t}, compute_dtype(t), s);
                } else {  // read in place (storage = compute representation)
                    r = new_reg(compute_dtype(t));
                    out_.in_alias.emplace_back(r, s);
                    if (section == Section::Step) mark_step_written(r);
                }
            }
        } else if (n->op == Op::Literal) {
            r = constant(n->as<LiteralAttr>(), n->type().dtype);
        } else if (is_own_project(n)) {
            r = project_reg(n, code);
        } else {
            SCANC_INTERNAL_CHECK(is_elementwise(n->op), "cpu backend: cannot inline ", n->op);
            std::vector<int> args;
            std::vector<ScalarType> types;
            for (auto& in : n->inputs) {
                args.push_back(value(in.get(), section));
                types.push_back({in->type().dtype, in->type().weak});
            }
            r = apply(code, n, std::move(args), std::move(types),
                      {n->type().dtype, n->type().weak}, true);
        }
        memo.emplace(n, r);
        return r;
    }

    void compile_scan() {
        const Node& scan = *stage_.node;
        const auto& attr = scan.as<ScanAttr>();
        const Combine& combine = *attr.combine;
        std::vector<DType> leaf_dtypes, captured_dtypes;
        for (auto& t : scan.types) leaf_dtypes.push_back(t.dtype);
        for (std::size_t j = attr.num_leaves; j < scan.inputs.size(); ++j) {
            const Type& t = scan.inputs[j]->type();
            captured_dtypes.push_back(t.weak ? (t.dtype == DType::F64 ? DType::F32 : DType::I64)
                                             : t.dtype);
        }
        CombineTypes types = instantiate_combine(combine, leaf_dtypes, captured_dtypes, scan.loc);

        std::unordered_map<const Node*, int> regs;  // combine node -> register
        for (int j = 0; j < combine.num_captured(); ++j) {
            const Node* in = scan.inputs[attr.num_leaves + j].get();
            regs[combine.captured[j].get()] =
                convert(out_.captured, value(in, Section::Captured), in->type().dtype,
                        captured_dtypes[j]);
        }
        for (int i = 0; i < attr.num_leaves; ++i) {
            const Node* in = scan.inputs[i].get();
            DType lt = leaf_dtypes[i];
            out_.leaf_compute.push_back(compute_dtype(lt));
            out_.carry.push_back(new_reg(compute_dtype(lt)));
            int x = convert(out_.step, value(in, Section::Step), in->type().dtype, lt);
            // Each leaf gets a register of its own that only the step code writes: the
            // cross-thread carry chain (run_stage.cpp) overwrites lanes of it.
            bool shared = x < static_cast<int>(step_written_.size()) ? !step_written_[x] : true;
            shared |= std::find(out_.x.begin(), out_.x.end(), x) != out_.x.end();
            if (shared) x = emit_new(out_.step, copy_key(lt), compute_dtype(lt), x);
            out_.x.push_back(x);
            regs[combine.left[i].get()] = out_.carry[i];
            regs[combine.right[i].get()] = out_.x[i];
        }
        for (const Node* n : topo_order(combine.results)) {
            if (regs.count(n)) continue;
            ScalarType t = types[n];
            if (n->op == Op::Literal) {
                regs[n] = constant(n->as<LiteralAttr>(), t.dtype);
                continue;
            }
            std::vector<int> args;
            std::vector<ScalarType> arg_types;
            for (auto& in : n->inputs) {
                args.push_back(regs.at(in.get()));
                arg_types.push_back(types[in.get()]);
            }
            regs[n] = apply(out_.combine, n, std::move(args), std::move(arg_types), t, false);
        }
        // Each leaf's result must be a register only the combine writes, distinct per leaf: the
        // runner points it at this step's destination (an output row or scratch) and the carry
        // at it afterwards. Results that are inputs (carry, x, captured, constants) get a copy.
        std::set<int> defined;
        for (const Instr& in : out_.combine) defined.insert(in.dst);
        for (int i = 0; i < attr.num_leaves; ++i) {
            DType lt = leaf_dtypes[i];
            const Node* r = combine.results[i].get();
            int reg = convert(out_.combine, regs.at(r), types[r].dtype, leaf_dtypes[i]);
            bool own = defined.count(reg) &&
                       std::find(out_.next.begin(), out_.next.end(), reg) == out_.next.end();
            if (!own) reg = emit_new(out_.combine, copy_key(lt), out_.leaf_compute[i], reg);
            defined.insert(reg);
            out_.next.push_back(reg);
            emit(out_.init, copy_key(lt), reg, out_.x[i]);
        }
    }

    // StageCode::one_op_block: one leaf, one combine instruction op(carry, x) or op(x, carry)
    // writing next. StageCode::serial on top: step code empty (x read in place) and no
    // epilogue (the carry stored in place).
    void find_serial() {
        if (out_.carry.size() != 1 || out_.combine.size() != 1) return;
        const Instr& in = out_.combine[0];
        int c = out_.carry[0], x = out_.x[0];
        if (in.dst != out_.next[0] || in.fn != lookup_op(last_binary_) || c == x) return;
        if (!((in.a == c && in.b == x) || (in.a == x && in.b == c))) return;
        out_.one_op_block = lookup_serial_block(last_binary_);
        out_.serial_x_left = in.a == x;
        if (!out_.step.empty() || !out_.epilogue.empty() || out_.store_alias[0] < 0) return;
        for (auto [r, s] : out_.in_alias)
            if (r == x) out_.serial_x_slot = s;
        if (out_.serial_x_slot < 0) return;
        out_.serial = lookup_serial(last_binary_);
        out_.serial_block = out_.one_op_block;
    }

    // A Mul whose product only the Add right after it reads becomes one MulAdd (or AddMul)
    // instruction: one pass over the lanes instead of two, and the product is never stored
    // (affine's a2 * b1 + b2: 3 dispatches per step -> 2). Registers the runner reaches
    // (carries, leaves, consts, registers reading inputs in place) are never fused away.
    void fuse_mul_add() {
        std::vector<Code*> lists{&out_.captured, &out_.step, &out_.init, &out_.combine,
                                 &out_.epilogue};
        auto uses = [&](int r) {
            int n = 0;
            for (Code* code : lists)
                for (const Instr& in : *code)
                    n += (in.dst == r) + (in.a == r) + (in.b == r) + (in.c == r);
            return n;  // counts slot numbers of loads and stores too: errs on not fusing
        };
        std::unordered_set<int> pinned;
        for (const auto* regs : {&out_.carry, &out_.x, &out_.next}) pinned.insert(regs->begin(), regs->end());
        for (auto [r, slot] : out_.in_alias) pinned.insert(r);
        for (auto& [r, value] : out_.consts) pinned.insert(r);
        for (Code* code : lists) {
            std::vector<OpKey>& keys = keys_[code];
            for (std::size_t i = 0; i + 1 < code->size(); ++i) {
                const OpKey &m = keys[i], &a = keys[i + 1];
                Instr mul = (*code)[i], add = (*code)[i + 1];
                int r = mul.dst;
                if (m.kind != OpKind::Binary || m.op != Op::Mul || a.kind != OpKind::Binary ||
                    a.op != Op::Add || a.t != m.t || m.t == DType::Bool || pinned.count(r) ||
                    (add.a == r) == (add.b == r) || mul.a == r || mul.b == r ||
                    uses(r) != 2 + (add.dst == r))
                    continue;
                bool left = add.a == r;
                OpKey k{left ? OpKind::MulAdd : OpKind::AddMul, Op::Add, m.t};
                OpFn fn = lookup_op(k);
                if (!fn) continue;
                (*code)[i] = Instr{fn, add.dst, mul.a, mul.b, left ? add.b : add.a};
                keys[i] = k;
                code->erase(code->begin() + static_cast<std::ptrdiff_t>(i) + 1);
                keys.erase(keys.begin() + static_cast<std::ptrdiff_t>(i) + 1);
            }
        }
    }

    // StageCode::combine_stream: each stored leaf's last write in the combine by its streaming
    // variant, provided nothing in the combine reads that leaf's `next` afterwards (or in it).
    void find_stream_combine() {
        Code code = out_.combine;
        std::vector<OpKey> keys = keys_[&out_.combine];
        out_.combine_bcast = fixup_only(code, keys);
        for (std::size_t k = 0; k < out_.next.size(); ++k) {
            if (out_.store_alias[k] < 0) continue;
            int r = out_.next[k], last = -1;
            for (std::size_t i = 0; i < code.size(); ++i)
                if (code[i].dst == r) last = static_cast<int>(i);
            if (last < 0) return;
            for (std::size_t i = last; i < code.size(); ++i)
                if (code[i].a == r || code[i].b == r || code[i].c == r) return;
            keys[last].stream = true;
            code[last].fn = lookup_op(keys[last]);
            if (!code[last].fn) return;
        }
        out_.combine_stream_bcast = fixup_only(code, keys);
        out_.combine_stream = std::move(code);
    }

    // The broadcast variant (bcast_carries) of a combine for Worker::fixup only, which keeps
    // just what the stored leaves need: result = carry ∘ local is the last use of a leaf that no
    // output stores (affine's running product when only h is returned: a third of the fix-up's
    // instructions, and 1-D h-only scans ran 25% slower than returning both leaves).
    Code fixup_only(Code code, std::vector<OpKey> keys) const {
        std::unordered_set<int> live;
        for (std::size_t k = 0; k < out_.next.size(); ++k)
            if (out_.store_alias[k] >= 0) live.insert(out_.next[k]);
        const std::vector<bool> keep = needed(code, live);
        for (std::size_t i = code.size(); i-- > 0;)
            if (!keep[i]) {
                code.erase(code.begin() + static_cast<std::ptrdiff_t>(i));
                keys.erase(keys.begin() + static_cast<std::ptrdiff_t>(i));
            }
        return bcast_carries(std::move(code), std::move(keys));
    }

    // The instructions of a combine that make the registers in `live`, walking back from its
    // end (an instruction is needed when `live`, or a needed one after it, reads what it
    // writes); `live` ends as the registers they read before writing. A combine has no loads or
    // stores.
    static std::vector<bool> needed(const Code& code, std::unordered_set<int>& live) {
        std::vector<bool> keep(code.size(), false);
        for (std::size_t i = code.size(); i-- > 0;) {
            const Instr& in = code[i];
            if (!(keep[i] = live.count(in.dst) > 0)) continue;
            live.erase(in.dst);
            live.insert({in.a, in.b, in.c});  // unread operands only keep more
        }
        return keep;
    }

    // StageCode::combine_tee. Later reads of a leaf's `next` are fine: the tee still writes it.
    void find_tee_combine() {
        Code code = out_.combine;
        std::vector<OpKey> keys = keys_[&out_.combine];
        for (std::size_t k = 0; k < out_.next.size(); ++k) {
            if (out_.store_alias[k] < 0) continue;
            int last = -1;
            for (std::size_t i = 0; i < code.size(); ++i)
                if (code[i].dst == out_.next[k]) last = static_cast<int>(i);
            if (last < 0) return;
            keys[last].tee = true;
            code[last].fn = lookup_op(keys[last]);
            code[last].tee = out_.store_alias[k];
            if (!code[last].fn) return;
        }
        out_.combine_tee = std::move(code);
    }

    // StageCode::scan_combine: the leaves a scan from a carry needs are those its outputs store
    // or its epilogue reads, and those whose carries the combine reads to make them (a fixed
    // point); the combine keeps the instructions that make their `next` (a decaying running
    // product no output reads would otherwise go on multiplying into the subnormals, where
    // each multiply takes a microcode assist).
    void find_scan_combine() {
        const std::size_t leaves = out_.carry.size();
        std::vector<bool> live(leaves, false);
        auto leaf_of = [&](int r) {
            for (std::size_t k = 0; k < leaves; ++k)
                if (r >= 0 && (out_.carry[k] == r || out_.next[k] == r)) return static_cast<int>(k);
            return -1;
        };
        for (std::size_t k = 0; k < leaves; ++k) live[k] = out_.store_alias[k] >= 0;
        const std::vector<OpKey>& epilogue_keys = keys_[&out_.epilogue];
        for (std::size_t i = 0; i < out_.epilogue.size(); ++i) {
            const Instr& in = out_.epilogue[i];
            const OpKind kind = epilogue_keys[i].kind;
            if (kind == OpKind::Load || kind == OpKind::LoadDirect) continue;  // a is an input slot
            for (int r : {in.a, in.b, in.c})
                if (int k = leaf_of(r); k >= 0) live[k] = true;
        }
        std::vector<bool> keep;
        for (bool grew = true; grew;) {
            grew = false;
            std::unordered_set<int> regs;
            for (std::size_t k = 0; k < leaves; ++k)
                if (live[k]) regs.insert(out_.next[k]);
            keep = needed(out_.combine, regs);
            for (std::size_t k = 0; k < leaves; ++k)
                if (!live[k] && regs.count(out_.carry[k])) live[k] = grew = true;
        }
        if (std::find(keep.begin(), keep.end(), false) == keep.end()) return;
        auto kept = [&](const Code& all) {
            Code out;
            for (std::size_t i = 0; i < all.size(); ++i)
                if (keep[i]) out.push_back(all[i]);
            return out;
        };
        out_.scan_prunes = true;
        out_.scan_combine = kept(out_.combine);
        if (!out_.combine_tee.empty()) out_.scan_combine_tee = kept(out_.combine_tee);  // the same instructions
    }

    // `code` (with its keys) where every instruction that reads a carry register reads it as a
    // broadcast value; empty when one has no such variant or some instruction writes a carry.
    Code bcast_carries(Code code, std::vector<OpKey> keys) const {
        auto is_carry = [&](int r) {
            return r >= 0 && std::find(out_.carry.begin(), out_.carry.end(), r) != out_.carry.end();
        };
        for (std::size_t i = 0; i < code.size(); ++i) {
            if (is_carry(code[i].dst)) return {};
            keys[i].bcast = static_cast<unsigned char>((is_carry(code[i].a) ? 1 : 0) |
                                                       (is_carry(code[i].b) ? 2 : 0) |
                                                       (is_carry(code[i].c) ? 4 : 0));
            if (!keys[i].bcast) continue;
            code[i].fn = lookup_op(keys[i]);
            if (!code[i].fn) return {};
        }
        return code;
    }

    Stage& stage_;
    const std::vector<const Node*>& values_;
    const std::unordered_map<const Node*, int>& value_of_;
    std::unordered_set<const Node*> produced_;
    std::unordered_map<const Node*, int> captured_memo_, step_memo_, epilogue_memo_;
    std::vector<DType> reg_type_;
    std::vector<bool> step_written_;  // registers the step code writes
    StageCode out_;
    OpKey last_binary_{OpKind::Unary};  // the last Binary op emitted into the combine
    std::unordered_map<const Code*, std::vector<OpKey>> keys_;  // per code list, per instruction
};

}  // namespace

StageCode compile_stage(Stage& stage, const std::vector<const Node*>& values,
                        const std::unordered_map<const Node*, int>& value_of) {
    return Codegen(stage, values, value_of).run();
}

}  // namespace scanc::cpu
