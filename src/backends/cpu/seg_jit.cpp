// The register kernels' combine as machine code (see seg_jit.h).
#include "seg_jit.h"

#include <algorithm>
#include <array>
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

// One variant: `steps` steps (a loop), each G groups of vector registers of type V (Ymm: W = 8,
// Zmm: W = 16) through the program's ops in order.
template <class V>
class StepCode : public Xbyak::CodeGenerator {
    static constexpr bool kWide = std::is_same_v<V, Xbyak::Zmm>;
    static constexpr int kBytes = kWide ? 64 : 32, kRegs = kWide ? 32 : 16, kScratch = 5;

public:
    // Throws Xbyak::Error when the code does not fit; `ok` false when the registers do not.
    StepCode(const SegProgram& p, int G, int S) : Xbyak::CodeGenerator(1 << 16, Xbyak::DontSetProtectRWE) {
        // Physical registers: one per constant (filled once), one per register an op writes,
        // kScratch for operands loaded from memory and min / max masks, and, where they fit,
        // one per leaf and group for the carries, which then pass from step to step in
        // registers instead of through their stores and loads (affine along the last dim of
        // 4096x4096, 2 threads, medians of three runs: 8.58-9.75 -> 7.75-8.41 ms).
        std::map<int, int> phys;
        for (auto [r, v] : p.consts) phys.emplace(r, static_cast<int>(phys.size()));
        for (const SegOp& o : p.ops) phys.emplace(o.dst, static_cast<int>(phys.size()));
        const int scratch = static_cast<int>(phys.size()), carries = scratch + kScratch;
        if (carries > kRegs) return;
        const bool carry_regs = carries + p.leaves * G <= kRegs;
        auto carry_reg = [&](int k, int g) { return V(carries + k * G + g); };
        const Xbyak::Reg64 in = rdi, out = rsi, n = rdx;
        const int in_leaf = S * G * kBytes, out_leaf = (S + 1) * G * kBytes;
        Xbyak::Label consts, loop;
        for (std::size_t i = 0; i < p.consts.size(); ++i)
            vbroadcastss(V(phys[p.consts[i].first]), ptr[rip + consts + static_cast<int>(4 * i)]);
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
                const V d(phys.at(o.dst)), t(scratch + 3);
                switch (o.kind) {
                    case SegOp::Add: vaddps(d, src(o.a, 0), src(o.b, 1)); break;
                    case SegOp::Sub: vsubps(d, src(o.a, 0), src(o.b, 1)); break;
                    case SegOp::Mul: vmulps(d, src(o.a, 0), src(o.b, 1)); break;
                    case SegOp::Div: vdivps(d, src(o.a, 0), src(o.b, 1)); break;
                    case SegOp::MulAdd:  // (a * b) + c
                        vmulps(t, src(o.a, 0), src(o.b, 1));
                        vaddps(d, t, src(o.c, 2));
                        break;
                    case SegOp::AddMul:  // c + (a * b)
                        vmulps(t, src(o.a, 0), src(o.b, 1));
                        vaddps(d, src(o.c, 2), t);
                        break;
                    case SegOp::Min:
                    case SegOp::Max: pick(d, src(o.a, 0), src(o.b, 1), o.kind == SegOp::Min, scratch); break;
                    case SegOp::Copy: vmovups(d, src(o.a, 0)); break;
                }
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
        vzeroupper();
        ret();
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
    bool ok = false;

private:
    // min / max as min8_regs / max8_regs (minmax_regs.h): b where b wins the strict compare
    // (b < a for min, a < b for max) or b alone is NaN, else a.
    void pick(const V& d, const V& a, const V& b, bool min, int scratch) {
        if constexpr (kWide) {
            vcmpps(k1, b, b, kUnord);
            vcmpps(k2, a, a, kOrd);
            kandw(k1, k1, k2);
            if (min) vcmpps(k2, b, a, kLess);
            else vcmpps(k2, a, b, kLess);
            korw(k1, k1, k2);
            vblendmps(d | k1, a, b);
        } else {
            const V t0(scratch + 3), t1(scratch + 4);
            vcmpps(t0, a, a, kUnord);
            vcmpps(t1, b, b, kUnord);
            vandnps(t1, t0, t1);
            if (min) vcmpps(t0, b, a, kLess);
            else vcmpps(t0, a, b, kLess);
            vorps(t0, t0, t1);
            vblendvps(d, a, b, t0);
        }
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

// Every variant of one program, or none.
struct Compiled {
    std::vector<std::unique_ptr<Xbyak::CodeGenerator>> code;
    SegStepFns fns{};
};

// One variant's code, or null when its registers do not fit.
template <class V>
std::unique_ptr<Xbyak::CodeGenerator> step_code(const SegProgram& p, const Variant& v) {
    auto code = std::make_unique<StepCode<V>>(p, v.G, v.S);
    if (!code->ok) return nullptr;
    return code;
}

std::unique_ptr<Compiled> compile(const SegProgram& p, Isa isa) {
    auto c = std::make_unique<Compiled>();
    for (const Variant& v : kVariants) {
        if (v.W == 16 && isa != Isa::Avx512) continue;
        try {
            auto gen = v.W == 16 ? step_code<Xbyak::Zmm>(p, v) : step_code<Xbyak::Ymm>(p, v);
            if (!gen) return nullptr;
            c->fns[seg_step_slot(v.W, v.G, v.S)] = gen->getCode<SegStepFn>();
            c->code.push_back(std::move(gen));
        } catch (const Xbyak::Error&) {
            return nullptr;
        }
    }
    return c;
}

// What the compiled code depends on, as bytes.
std::string program_key(const SegProgram& p, Isa isa) {
    std::string key;
    auto put = [&](auto v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); };
    put(static_cast<int>(isa));
    put(p.leaves);
    for (int k = 0; k < p.leaves; ++k) put(p.carry[k]), put(p.x[k]), put(p.next[k]);
    for (const SegOp& o : p.ops) put(o.kind), put(o.dst), put(o.a), put(o.b), put(o.c);
    for (auto [r, v] : p.consts) put(r), put(v);
    return key;
}

}  // namespace

bool seg_jit_built() { return true; }

const SegStepFn* seg_jit_fns(const SegProgram& p, Isa isa) {
    if (isa == Isa::Baseline) return nullptr;
    static std::mutex mutex;
    static std::map<std::string, std::unique_ptr<Compiled>> compiled;  // kept for the process
    std::lock_guard<std::mutex> lock(mutex);
    auto [it, fresh] = compiled.try_emplace(program_key(p, isa));
    if (fresh) it->second = compile(p, isa);
    return it->second ? it->second->fns : nullptr;
}

#else

bool seg_jit_built() { return false; }
const SegStepFn* seg_jit_fns(const SegProgram&, Isa) { return nullptr; }

#endif

}  // namespace scanc::cpu
