// The register kernels' combine as machine code (see seg_jit.h).
#include "seg_jit.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#if defined(SCANC_HAVE_XBYAK) && defined(__x86_64__)
#include <xbyak/xbyak.h>
#endif

namespace scanc::cpu {

#if defined(SCANC_HAVE_XBYAK) && defined(__x86_64__)

namespace {

// _CMP_UNORD_Q, _CMP_ORD_Q and _CMP_LT_OQ, as the interpreter's min and max use them.
constexpr std::uint8_t kUnord = 3, kOrd = 7, kLess = 17;

// Width V's constants (Ymm: W = 8, Zmm: W = 16).
template <class V>
struct Width {
    static constexpr bool kWide = std::is_same_v<V, Xbyak::Zmm>;
    static constexpr int kBytes = kWide ? 64 : 32, kRegs = kWide ? 32 : 16;
};

// min / max as min8_regs / max8_regs (minmax_regs.h): b where b wins the strict compare (b < a
// for min, a < b for max) or b alone is NaN, else a.
template <class V>
void emit_pick(Xbyak::CodeGenerator& c, const V& d, const V& a, const V& b, bool min, const V& t0,
               const V& t1) {
    if constexpr (Width<V>::kWide) {
        c.vcmpps(c.k1, b, b, kUnord);
        c.vcmpps(c.k2, a, a, kOrd);
        c.kandw(c.k1, c.k1, c.k2);
        if (min) c.vcmpps(c.k2, b, a, kLess);
        else c.vcmpps(c.k2, a, b, kLess);
        c.korw(c.k1, c.k1, c.k2);
        c.vblendmps(d | c.k1, a, b);
    } else {
        c.vcmpps(t0, a, a, kUnord);
        c.vcmpps(t1, b, b, kUnord);
        c.vandnps(t1, t0, t1);
        if (min) c.vcmpps(t0, b, a, kLess);
        else c.vcmpps(t0, a, b, kLess);
        c.vorps(t0, t0, t1);
        c.vblendvps(d, a, b, t0);
    }
}

// Op `o` of the combine into `d`, as the interpreter computes it; src(r, i): program register
// r's value as operand i (0..2), in a register (the caller may load it there first). t0, t1:
// scratch (t1 only for AVX2's min / max).
template <class V, class Src>
void emit_op(Xbyak::CodeGenerator& c, const SegOp& o, const V& d, Src&& src, const V& t0, const V& t1) {
    switch (o.kind) {
        case SegOp::Add: c.vaddps(d, src(o.a, 0), src(o.b, 1)); break;
        case SegOp::Sub: c.vsubps(d, src(o.a, 0), src(o.b, 1)); break;
        case SegOp::Mul: c.vmulps(d, src(o.a, 0), src(o.b, 1)); break;
        case SegOp::Div: c.vdivps(d, src(o.a, 0), src(o.b, 1)); break;
        case SegOp::MulAdd:  // (a * b) + c
            c.vmulps(t0, src(o.a, 0), src(o.b, 1));
            c.vaddps(d, t0, src(o.c, 2));
            break;
        case SegOp::AddMul:  // c + (a * b)
            c.vmulps(t0, src(o.a, 0), src(o.b, 1));
            c.vaddps(d, src(o.c, 2), t0);
            break;
        case SegOp::Min:
        case SegOp::Max: emit_pick(c, d, src(o.a, 0), src(o.b, 1), o.kind == SegOp::Min, t0, t1); break;
        case SegOp::Copy: c.vmovups(d, src(o.a, 0)); break;
    }
}

// What every generator shares: the registers of the program's values, and its end.
class Generator : public Xbyak::CodeGenerator {
public:
    bool ok = false;  // false when the registers do not fit

protected:
    Generator() : Xbyak::CodeGenerator(1 << 16, Xbyak::DontSetProtectRWE) {}

    // Physical registers 0.. for the program's constants, then one per register an op writes.
    static std::map<int, int> op_registers(const SegProgram& p) {
        std::map<int, int> phys;
        for (auto [r, v] : p.consts) phys.emplace(r, static_cast<int>(phys.size()));
        for (const SegOp& o : p.ops) phys.emplace(o.dst, static_cast<int>(phys.size()));
        return phys;
    }
    // Loads each constant's register from the data at `consts` (finish() writes it there).
    template <class V>
    void load_consts(const SegProgram& p, std::map<int, int>& phys, Xbyak::Label& consts) {
        for (std::size_t i = 0; i < p.consts.size(); ++i)
            vbroadcastss(V(phys[p.consts[i].first]), ptr[rip + consts + static_cast<int>(4 * i)]);
    }
    void leave() {
        vzeroupper();
        ret();
    }
    // After the code and any data of its own: the constants as 4-byte words at `consts`; the
    // code made read-only and executable.
    void finish(const SegProgram& p, Xbyak::Label& consts) {
        align(4);
        L(consts);
        for (auto [r, v] : p.consts) {
            std::uint32_t bits;
            std::memcpy(&bits, &v, 4);
            dd(bits);
        }
        setProtectModeRE();
        ok = true;
    }
};

// One variant: `steps` steps (a loop), each G groups of vector registers of type V (Ymm: W = 8,
// Zmm: W = 16) through the program's ops in order.
template <class V>
class StepCode : public Generator {
    static constexpr int kBytes = Width<V>::kBytes, kRegs = Width<V>::kRegs, kScratch = 5;

public:
    // Throws Xbyak::Error when the code does not fit; `ok` false when the registers do not.
    StepCode(const SegProgram& p, int G, int S) {
        // Physical registers: one per constant (filled once), one per register an op writes,
        // kScratch for operands loaded from memory and min / max masks, and, where they fit,
        // one per leaf and group for the carries, which then pass from step to step in
        // registers instead of through their stores and loads (affine along the last dim of
        // 4096x4096, 2 threads, medians of three runs: 8.58-9.75 -> 7.75-8.41 ms).
        std::map<int, int> phys = op_registers(p);
        const int scratch = static_cast<int>(phys.size()), carries = scratch + kScratch;
        if (carries > kRegs) return;
        const bool carry_regs = carries + p.leaves * G <= kRegs;
        auto carry_reg = [&](int k, int g) { return V(carries + k * G + g); };
        const Xbyak::Reg64 in = rdi, out = rsi, n = rdx;
        const int in_leaf = S * G * kBytes, out_leaf = (S + 1) * G * kBytes;
        Xbyak::Label consts, loop;
        load_consts<V>(p, phys, consts);
        if (carry_regs)
            for (int k = 0; k < p.leaves; ++k)
                for (int g = 0; g < G; ++g) vmovups(carry_reg(k, g), ptr[out + k * out_leaf + g * kBytes]);
        L(loop);
        for (int g = 0; g < G; ++g) {
            // A program register's value this step, in a register: its physical one once an op
            // has written it (or for a constant), else its element or carry loaded into
            // scratch register `s`.
            std::map<int, bool> in_phys;
            for (auto [r, v] : p.consts) in_phys[r] = true;
            auto src = [&](int r, int s) -> V {
                if (in_phys[r]) return V(phys.at(r));
                for (int k = 0; k < p.leaves; ++k) {
                    if (r == p.x[k]) return vmovups(V(scratch + s), ptr[in + k * in_leaf + g * kBytes]), V(scratch + s);
                    if (r == p.carry[k] && carry_regs) return carry_reg(k, g);
                    if (r == p.carry[k])
                        return vmovups(V(scratch + s), ptr[out + k * out_leaf + g * kBytes]), V(scratch + s);
                }
                throw Xbyak::Error(Xbyak::ERR_BAD_PARAMETER);  // not ready: SegLocal never builds that
            };
            for (const SegOp& o : p.ops) {
                emit_op(*this, o, V(phys.at(o.dst)), src, V(scratch + 3), V(scratch + 4));
                in_phys[o.dst] = true;
            }
            for (int k = 0; k < p.leaves; ++k) vmovups(ptr[out + k * out_leaf + (G + g) * kBytes], src(p.next[k], 0));
            if (carry_regs)  // after every op of this group has read the old carries
                for (int k = 0; k < p.leaves; ++k) vmovups(carry_reg(k, g), src(p.next[k], 0));
        }
        add(in, G * kBytes);
        add(out, G * kBytes);
        dec(n);
        jnz(loop, T_NEAR);
        leave();
        finish(p, consts);
    }
};

// Rows of RowScanArgs (ops_row_scan.inc's steps, the same bits): per vector, log2 W levels,
// each a shift of every leaf's vector (each lane's source lane in place), the combine, and a
// blend of its result into the lanes the level updates; then, but for the row's first vector,
// the combine with the broadcast carry.
// Every value lives in a register: the vectors, their shifted copies, the carries, the
// program's constants and the ops' results.
template <class V>
class RowScanCode : public Generator {
    static constexpr bool kWide = Width<V>::kWide;
    static constexpr int kBytes = Width<V>::kBytes, kRegs = Width<V>::kRegs, kLanes = kBytes / 4;

public:
    RowScanCode(const SegProgram& p, unsigned stored, bool stream) {
        std::map<int, int> phys = op_registers(p);
        const int leaves = p.leaves, base = static_cast<int>(phys.size());
        auto x = [&](int k) { return V(base + k); };
        auto left = [&](int k) { return V(base + leaves + k); };
        auto carry = [&](int k) { return V(base + 2 * leaves + k); };
        // Scratch t0, t1; AVX-512 also holds the last lane's index and a zero for its shifts.
        // A fold (SegProgram::row_fold, totals only): the pairs' lane indices, and per level
        // and leaf the first half's vector.
        const int fold = p.row_fold, scratch = row_scan_registers(p, kWide);  // = base + 3 leaves + scratch
        if (fold > 0 && (!kWide || stored != 0)) return;
        if (scratch + (fold > 0 ? 2 + fold * leaves : 0) > kRegs) return;
        const V t0(base + 3 * leaves), t1(base + 3 * leaves + 1);
        const V last(kWide ? base + 3 * leaves + 2 : 0), zero(kWide ? base + 3 * leaves + 3 : 0);
        const V evens(scratch), odds(scratch + 1);
        auto held = [&](int level, int k) { return V(scratch + 2 + (level - 1) * leaves + k); };
        // rdi: the row, rsi: rows left, rdx: vectors per row; rcx: vectors left in the row,
        // rax: the vector's byte offset, r8..r11: the row's inputs, r12..r15: its outputs, rbx
        // and rbp: where a prefetch goes.
        const Xbyak::Reg64 args = rdi, rows = rsi, vectors = rdx, n = rcx, at = rax;
        const Xbyak::Reg64 in[4] = {r8, r9, r10, r11}, out[4] = {r12, r13, r14, r15};
        Xbyak::Label consts, last_lane, even_lanes, row, first, loop, done;
        for (const auto& r : out) push(r);
        push(rbx);
        push(rbp);
        load_consts<V>(p, phys, consts);
        if constexpr (kWide) {
            vpbroadcastd(last, ptr[rip + last_lane]);
            vpxord(zero, zero, zero);
            for (int i = 0; i < 4; ++i) {  // k3..k6: the lanes >= 1, 2, 4, 8
                mov(eax, (0xFFFF << (1 << i)) & 0xFFFF);
                kmovw(Xbyak::Opmask(3 + i), eax);
            }
            if (fold > 0) {
                vmovups(evens, ptr[rip + even_lanes]);
                vpternlogd(odds, odds, odds, 0xFF);  // all ones: -1
                vpsubd(odds, evens, odds);
            }
        }
        // The combine with program register carry[k] read from `from(k)`.
        auto combine = [&](auto from) {
            auto src = [&](int r, int) -> V {
                for (int k = 0; k < leaves; ++k) {
                    if (r == p.x[k]) return x(k);
                    if (r == p.carry[k]) return from(k);
                }
                return V(phys.at(r));
            };
            for (const SegOp& o : p.ops) emit_op(*this, o, V(phys.at(o.dst)), src, t0, t1);
        };
        auto next = [&](int k) { return V(phys.at(p.next[k])); };
        // x = the combine of the pairs of adjacent lanes of a(k) then b(k) (Vec512::pair_lanes).
        auto pair = [&](auto a, auto b) {
            for (int k = 0; k < leaves; ++k) {
                vmovaps(left(k), evens);
                vpermi2ps(left(k), a(k), b(k));
                vmovaps(t0, odds);
                vpermi2ps(t0, a(k), b(k));
                vmovaps(x(k), t0);
            }
            combine(left);
            for (int k = 0; k < leaves; ++k) vmovaps(x(k), next(k));
        };
        // x = the vectors from `at` + vector * kBytes on, paired up `level` levels.
        auto paired = [&](auto& self, int level, int vector) -> void {
            if (level == 0) {
                for (int k = 0; k < leaves; ++k) vmovups(x(k), ptr[in[k] + at + vector * kBytes]);
                return;
            }
            self(self, level - 1, vector);
            for (int k = 0; k < leaves; ++k) vmovaps(held(level, k), x(k));
            self(self, level - 1, vector + (1 << (level - 1)));
            pair([&](int k) { return held(level, k); }, x);
        };
        // rbp = the bytes from ahead[k] to the prefetch of the line at `at` (ahead_at).
        auto ahead_offset = [&] {
            static_assert((kAheadWays & (kAheadWays - 1)) == 0);
            mov(rbp, at);
            shr(rbp, 6);
            mov(rbx, rbp);
            and_(rbx, kAheadWays - 1);
            imul(rbx, ptr[args + offsetof(RowScanArgs, ahead_step)]);
            shr(rbp, std::countr_zero(static_cast<unsigned>(kAheadWays)));
            imul(rbp, ptr[args + offsetof(RowScanArgs, ahead_step) + 8]);
            add(rbp, rbx);
        };
        auto vector = [&](bool carried) {
            // Stores: another block's lines in AheadLines' order; totals: their own, in order.
            if (stored) ahead_offset();
            for (int k = 0; k < leaves; ++k) {
                mov(rbx, ptr[args + offsetof(RowScanArgs, ahead) + 8 * k]);
                for (int v = 0; v < 1 << fold; ++v) prefetcht1(stored ? ptr[rbx + rbp] : ptr[rbx + at + v * kBytes]);
            }
            paired(paired, fold, 0);
            for (int level = 0; (1 << level) < kLanes; ++level) {
                const int d = 1 << level;
                // AVX2: each 128-bit half scanned by in-half shifts, then lanes 4-7 from lane 3
                // (Vec256::shift and blend).
                for (int k = 0; k < leaves; ++k) {
                    if constexpr (kWide) {
                        valignd(left(k), x(k), zero, kLanes - d);
                    } else if (level < 2) {
                        vpslldq(left(k), x(k), 4 * d);
                    } else {
                        vshufps(t1, x(k), x(k), 0xFF);
                        vperm2f128(left(k), t1, x(k), 0x08);
                    }
                }
                combine(left);
                for (int k = 0; k < leaves; ++k) {
                    if constexpr (kWide) vmovaps(x(k) | Xbyak::Opmask(3 + level), next(k));
                    else vblendps(x(k), x(k), next(k), kRowLevelLanes8[level]);
                }
            }
            if (carried) {
                combine(carry);
                for (int k = 0; k < leaves; ++k) vmovaps(x(k), next(k));
            }
            for (int k = 0; k < leaves; ++k) {
                if (stored >> k & 1) {
                    if (stream) vmovntps(ptr[out[k] + at], x(k));
                    else vmovups(ptr[out[k] + at], x(k));
                }
                if constexpr (kWide) {
                    vpermps(carry(k), last, x(k));
                } else {  // lane 7, broadcast (Vec256::last)
                    vshufps(carry(k), x(k), x(k), 0xFF);
                    vperm2f128(carry(k), carry(k), carry(k), 0x11);
                }
            }
            add(at, kBytes << fold);
            dec(n);
        };
        L(row);
        for (int k = 0; k < leaves; ++k) {
            mov(in[k], ptr[args + offsetof(RowScanArgs, in) + 8 * k]);
            if (stored >> k & 1) mov(out[k], ptr[args + offsetof(RowScanArgs, out) + 8 * k]);
        }
        xor_(at, at);
        mov(n, vectors);
        if (fold > 0) shr(n, fold);
        cmp(byte[args + offsetof(RowScanArgs, carried)], 0);
        je(first, T_NEAR);
        for (int k = 0; k < leaves; ++k)
            vbroadcastss(carry(k), ptr[args + offsetof(RowScanArgs, carry) + 4 * k]);
        jmp(loop, T_NEAR);
        L(first);
        vector(false);
        jz(done, T_NEAR);
        L(loop);
        vector(true);
        jnz(loop, T_NEAR);
        L(done);
        for (int k = 0; k < leaves; ++k)
            vmovss(ptr[args + offsetof(RowScanArgs, carry) + 4 * k], Xbyak::Xmm(carry(k).getIdx()));
        add(args, sizeof(RowScanArgs));
        dec(rows);
        jnz(row, T_NEAR);
        pop(rbp);
        pop(rbx);
        for (const auto& r : {r15, r14, r13, r12}) pop(r);
        leave();
        L(last_lane);
        dd(kLanes - 1);
        if (fold > 0) {
            align(64);
            L(even_lanes);
            for (int i = 0; i < kLanes; ++i) dd(2 * i);
        }
        finish(p, consts);
    }
};

// Chunks of ColScanArgs: per chunk, the carries of G vectors of lanes per leaf into registers,
// then per step and vector the program's ops (each element loaded where an op reads it), the
// stored leaves' results written and the carries replaced; the carries back to memory.
template <class V>
class ColScanCode : public Generator {
    static constexpr int kBytes = Width<V>::kBytes, kRegs = Width<V>::kRegs, kScratch = 5;

public:
    ColScanCode(const SegProgram& p, int G, unsigned stored, bool stream) {
        std::map<int, int> phys = op_registers(p);
        const int leaves = p.leaves, scratch = static_cast<int>(phys.size()), carries = scratch + kScratch;
        if (carries + leaves * G > kRegs) return;
        auto carry = [&](int k, int g) { return V(carries + k * G + g); };
        auto at = [&](int k, int g) { return (k * G + g) * kBytes; };  // in a chunk's carries
        // rdi: the arguments; r8..r11: the chunk's inputs, r12..r15: its outputs, rbx: its
        // carries, rbp: chunks left; rax, rdx: the step's offsets in and out; rcx: steps left.
        const Xbyak::Reg64 args = rdi, in[4] = {r8, r9, r10, r11}, out[4] = {r12, r13, r14, r15};
        const Xbyak::Reg64 cbuf = rbx, chunks = rbp, in_at = rax, out_at = rdx, n = rcx;
        Xbyak::Label consts, chunk, row;
        for (const auto& r : {rbx, rbp, r12, r13, r14, r15}) push(r);
        for (int k = 0; k < leaves; ++k) {
            mov(in[k], ptr[args + offsetof(ColScanArgs, in) + 8 * k]);
            if (stored >> k & 1) mov(out[k], ptr[args + offsetof(ColScanArgs, out) + 8 * k]);
        }
        mov(cbuf, ptr[args + offsetof(ColScanArgs, carries)]);
        mov(chunks, ptr[args + offsetof(ColScanArgs, chunks)]);
        load_consts<V>(p, phys, consts);
        L(chunk);
        for (int k = 0; k < leaves; ++k)
            for (int g = 0; g < G; ++g) vmovups(carry(k, g), ptr[cbuf + at(k, g)]);
        xor_(in_at, in_at);
        xor_(out_at, out_at);
        mov(n, ptr[args + offsetof(ColScanArgs, rows)]);
        L(row);
        for (int g = 0; g < G; ++g) {
            auto src = [&](int r, int s) -> V {
                for (int k = 0; k < leaves; ++k) {
                    if (r == p.x[k]) return vmovups(V(scratch + s), ptr[in[k] + in_at + g * kBytes]), V(scratch + s);
                    if (r == p.carry[k]) return carry(k, g);
                }
                return V(phys.at(r));
            };
            for (const SegOp& o : p.ops) emit_op(*this, o, V(phys.at(o.dst)), src, V(scratch + 3), V(scratch + 4));
            for (int k = 0; k < leaves; ++k) {
                const V next(phys.at(p.next[k]));
                if (stored >> k & 1) {
                    if (stream) vmovntps(ptr[out[k] + out_at + g * kBytes], next);
                    else vmovups(ptr[out[k] + out_at + g * kBytes], next);
                }
            }
            for (int k = 0; k < leaves; ++k) vmovaps(carry(k, g), V(phys.at(p.next[k])));
        }
        add(in_at, ptr[args + offsetof(ColScanArgs, in_step)]);
        add(out_at, ptr[args + offsetof(ColScanArgs, out_step)]);
        dec(n);
        jnz(row, T_NEAR);
        for (int k = 0; k < leaves; ++k) {
            for (int g = 0; g < G; ++g) vmovups(ptr[cbuf + at(k, g)], carry(k, g));
            add(in[k], G * kBytes);
            if (stored >> k & 1) add(out[k], G * kBytes);
        }
        add(cbuf, leaves * G * kBytes);
        dec(chunks);
        jnz(chunk, T_NEAR);
        for (const auto& r : {r15, r14, r13, r12, rbp, rbx}) pop(r);
        leave();
        finish(p, consts);
    }
};

struct Variant {
    int W, G, S;
};
constexpr std::array<Variant, kSegStepVariants> kVariants = [] {
    std::array<Variant, kSegStepVariants> v{};
    for (int W : {8, 16})
        for (int G : {1, 2, 4, 8})
            for (int S : {8, 16})
                if (int i = seg_step_slot(W, G, S); i >= 0) v[i] = {W, G, S};
    return v;
}();

// Code kept for the process, and the functions it holds.
template <class Fns>
struct Kept {
    std::vector<std::unique_ptr<Xbyak::CodeGenerator>> code;
    Fns fns{};
    // `gen`'s code as `fn`; false, nothing added, for null (registers that do not fit).
    template <class Fn>
    bool add(std::unique_ptr<Xbyak::CodeGenerator> gen, Fn& fn) {
        if (!gen) return false;
        fn = gen->getCode<Fn>();
        code.push_back(std::move(gen));
        return true;
    }
};

// Code<Zmm> (`wide`) or Code<Ymm> for `args`, or null when its registers do not fit.
template <template <class> class Code, class... Args>
std::unique_ptr<Xbyak::CodeGenerator> fitted(bool wide, const Args&... args) {
    std::unique_ptr<Xbyak::CodeGenerator> code;
    bool ok;
    if (wide) {
        auto c = std::make_unique<Code<Xbyak::Zmm>>(args...);
        ok = c->ok, code = std::move(c);
    } else {
        auto c = std::make_unique<Code<Xbyak::Ymm>>(args...);
        ok = c->ok, code = std::move(c);
    }
    return ok ? std::move(code) : nullptr;
}

// make()'s code, built once per key in this process and kept (null: it cannot be, also when
// Xbyak finds it too large): a new shape or executable of the same combine compiles nothing.
template <class Fns, class Make>
const Kept<Fns>* kept(const std::string& key, Make make) {
    static std::mutex mutex;
    static std::map<std::string, std::unique_ptr<Kept<Fns>>> all;
    std::lock_guard<std::mutex> lock(mutex);
    auto [it, fresh] = all.try_emplace(key);
    if (fresh) {
        try {
            it->second = make();
        } catch (const Xbyak::Error&) {
            it->second = nullptr;
        }
    }
    return it->second.get();
}

// What the compiled code depends on, as bytes.
std::string program_key(const SegProgram& p, Isa isa, unsigned stored = 0) {
    std::string key;
    auto put = [&](auto v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); };
    put(static_cast<int>(isa));
    put(stored);
    put(p.leaves);
    for (int k = 0; k < p.leaves; ++k) put(p.carry[k]), put(p.x[k]), put(p.next[k]);
    for (const SegOp& o : p.ops) put(o.kind), put(o.dst), put(o.a), put(o.b), put(o.c);
    for (auto [r, v] : p.consts) put(r), put(v);
    put(p.row_fold);
    return key;
}

// Code<V>(args..., stream) with plain stores into fns[0] and streaming ones into fns[1].
template <template <class> class Code, class Fns, class Fn, class... Args>
bool both_stores(Kept<Fns>& k, Fn* fns, bool wide, const Args&... args) {
    return k.add(fitted<Code>(wide, args..., false), fns[0]) && k.add(fitted<Code>(wide, args..., true), fns[1]);
}

}  // namespace

bool seg_jit_built() { return true; }

const SegStepFn* seg_jit_fns(const SegProgram& p, Isa isa) {
    if (isa == Isa::Baseline) return nullptr;
    auto* k = kept<SegStepFns>(program_key(p, isa), [&] {
        auto c = std::make_unique<Kept<SegStepFns>>();
        for (const Variant& v : kVariants) {
            if (v.W == 16 && isa != Isa::Avx512) continue;
            if (!c->add(fitted<StepCode>(v.W == 16, p, v.G, v.S), c->fns[seg_step_slot(v.W, v.G, v.S)]))
                return std::unique_ptr<Kept<SegStepFns>>();
        }
        return c;
    });
    return k ? k->fns : nullptr;
}

const RowScanJitFn* row_scan_jit_fns(const SegProgram& p, Isa isa, unsigned stored) {
    if (isa == Isa::Baseline) return nullptr;
    using Fns = std::array<RowScanJitFn, 2>;
    auto* k = kept<Fns>(program_key(p, isa, stored), [&] {
        auto c = std::make_unique<Kept<Fns>>();
        if (!both_stores<RowScanCode>(*c, c->fns.data(), isa == Isa::Avx512, p, stored)) c.reset();
        return c;
    });
    return k ? k->fns.data() : nullptr;
}

const ColScanFns* col_scan_jit(const SegProgram& p, Isa isa, unsigned stored) {
    if (isa == Isa::Baseline) return nullptr;
    const bool wide = isa == Isa::Avx512;
    auto* k = kept<ColScanFns>(program_key(p, isa, stored), [&] {
        // The widest chunk whose carries fit in registers: 8 vectors (512 bytes with AVX-512).
        for (int G = wide ? 8 : 4; G >= 1; G /= 2) {
            auto c = std::make_unique<Kept<ColScanFns>>();
            if (!both_stores<ColScanCode>(*c, c->fns.fns, wide, p, G, stored)) continue;
            c->fns.lanes = G * (wide ? 16 : 8);
            return c;
        }
        return std::unique_ptr<Kept<ColScanFns>>();
    });
    return k ? &k->fns : nullptr;
}

#else

bool seg_jit_built() { return false; }
const SegStepFn* seg_jit_fns(const SegProgram&, Isa) { return nullptr; }
const RowScanJitFn* row_scan_jit_fns(const SegProgram&, Isa, unsigned) { return nullptr; }
const ColScanFns* col_scan_jit(const SegProgram&, Isa, unsigned) { return nullptr; }

#endif

}  // namespace scanc::cpu
