// Generating the CUDA source of a plan: one struct K<id> per stage (state, combine, fused
// prologue `fetch` + `compute` and epilogue `store`, tuning constants) and its extern "C" kernels.
#include <algorithm>
#include <cstdlib>
#include <optional>
#include <sstream>

#include "codegen.h"
#include "../nvrtc.h"  // ours, not the toolkit's nvrtc.h on the include path
#include "scalar.h"
#include "scanc/ir/combine_types.h"

namespace scanc::cuda {

namespace {

ScalarType program_type(const Node* n) { return {n->type().dtype, n->type().weak}; }

// A scan leaf's or captured value's dtype, as make_scan decides it for weak values.
DType strong_dtype(const Type& t) {
    return t.weak ? (t.dtype == DType::F64 ? DType::F32 : DType::I64) : t.dtype;
}

// A stored value `raw` of dtype t in its compute type (f16/bf16 widen to float).
std::string loaded_value(const std::string& raw, DType t) {
    if (t == DType::F16) return "sc_f16_load(" + raw + ")";
    if (t == DType::BF16) return "sc_bf16_load(" + raw + ")";
    return raw;
}

std::string load_text(const std::string& ptr, const std::string& off, DType t) {
    return loaded_value(cat("ld<", storage_ctype(t), ">(", ptr, ", ", off, ")"), t);
}

// `pattern` with every '#' replaced by the access or output index k.
std::string with_index(std::string pattern, std::size_t k) {
    for (auto pos = pattern.find('#'); pos != std::string::npos; pos = pattern.find('#'))
        pattern.replace(pos, 1, std::to_string(k));
    return pattern;
}

std::string store_value(const std::string& v, DType t) {
    if (t == DType::F16) return "sc_f16_store(" + v + ")";
    if (t == DType::BF16) return "sc_bf16_store(" + v + ")";
    return v;
}

class StageEmitter {
public:
    StageEmitter(const Stage& s, const Tuning& tuning, const StageLayout* layout, std::ostringstream& out)
        : s_(s), tuning_(tuning), layout_(layout), out_(out), k_(cat("K", s.id)) {}

    void emit() {
        rank_ = std::max(s_.rank, 1);
        for (const Access& a : s_.inputs) invariant_.push_back(s_.is_scan && invariant_along_scan(s_, a));
        out_ << "\n// stage " << s_.id << ": " << (s_.is_scan ? "scan" : "map") << " over rank "
             << s_.rank << (s_.is_scan ? cat(", dim ", s_.dim, s_.reverse ? ", reverse" : "") : "")
             << "\nstruct " << k_ << " {\n";
        out_ << "    static constexpr int R = " << rank_ << ", NIN = " << std::max<std::size_t>(1, s_.inputs.size())
             << ", NOUT = " << std::max<std::size_t>(1, s_.outputs.size()) << ";\n";
        if (s_.is_scan)
            emit_scan();
        else
            emit_map();
        out_ << "};\n";
    }

    bool vectorizable() const { return has_vector_rows(s_, tuning_, layout_); }

private:
    int access_index(const Node* n) const {
        for (std::size_t k = 0; k < s_.inputs.size(); ++k)
            if (s_.inputs[k].node == n) return static_cast<int>(k);
        internal_error(cat("cuda codegen: stage ", s_.id, " has no access for a ", n->op));
    }

    // A load of access n at `ptr_of_k` + `off_of_k` (byte offsets; '#' = the access index).
    std::string access_load(const Node* n, const std::string& ptr_of_k, const std::string& off_of_k) {
        int k = access_index(n);
        return load_text(with_index(ptr_of_k, k), with_index(off_of_k, k), s_.inputs[k].dtype);
    }

    // Byte offsets of every access and output at coordinates `coords` (a scan's dim excluded:
    // the kernel's cursors step along it).
    void emit_offsets(const char* coords) {
        for (std::size_t k = 0; k < s_.inputs.size(); ++k) emit_offset("x.bin", "a.in", k, coords);
        for (std::size_t k = 0; k < s_.outputs.size(); ++k) emit_offset("x.bout", "a.out", k, coords);
    }

    void emit_offset(const char* dst, const char* view, std::size_t k, const char* coords) {
        out_ << "        " << dst << "[" << k << "] = 0";
        for (int j = 0; j < rank_; ++j)
            if (!s_.is_scan || j != s_.dim) out_ << " + " << coords << "[" << j << "] * " << view << "[" << k << "].stride[" << j << "]";
        out_ << ";\n";
    }

    void emit_scan() {
        const Node* scan = s_.node;
        const auto& attr = scan->as<ScanAttr>();
        const Combine& combine = *attr.combine;
        std::vector<DType> leaves, captured;
        for (int i = 0; i < attr.num_leaves; ++i) leaves.push_back(scan->types[i].dtype);
        for (std::size_t i = attr.num_leaves; i < scan->inputs.size(); ++i)
            captured.push_back(strong_dtype(scan->inputs[i]->type()));
        int nw = stage_state_words(s_);
        out_ << "    static constexpr int D = " << s_.dim << ", NW = " << nw
             << ";\n    static constexpr bool REVERSE = " << (s_.reverse ? "true" : "false") << ";\n"
             << "    static constexpr int ROW_THREADS = " << tuning_.row_threads
             << ", ROW_ITEMS = " << tuning_.row_items << ", SCALAR_ITEMS = " << tuning_.scalar_row_items()
             << ", SHARED_ITEMS = " << tuning_.shared_row_items()
             << ", ROW_WINDOW = " << tuning_.row_window
             << ", ROW_PCOPIES = " << tuning_.row_pcopies << ", ROW_PREFETCH = " << tuning_.row_prefetch
             << ", ROW_BAND = " << tuning_.row_band
             << ";\n    static constexpr int COL_WARPS = " << tuning_.col_warps
             << ", COL_ROWS = " << tuning_.col_rows << ", COL_WINDOW = " << tuning_.col_window << ";\n"
             << "    static constexpr int RES_THREADS = " << tuning_.res_threads << ", RES_ITEMS = " << tuning_.res_items
             << ";\n    static constexpr bool TICKETS = " << (tuning_.tickets ? "true" : "false")
             << ", NONDET = " << (tuning_.nondeterministic ? "true" : "false")
             << ", ROW_SKIP = " << (tuning_.row_skip ? "true" : "false")
             << ", STAMPS = " << (tuning_.stamps ? "true" : "false") << ";\n";
        emit_steps();
        bool computes = false;  // whether some leaf is computed rather than read as it is stored
        for (int i = 0; i < attr.num_leaves; ++i) {
            const Node* leaf = scan->inputs[i].get();
            const auto access = std::find_if(s_.inputs.begin(), s_.inputs.end(), [&](const Access& a) { return a.node == leaf; });
            computes = computes || access == s_.inputs.end() || access->dtype != leaves[i];
        }
        out_ << "    static constexpr bool FETCH_FIRST = " << (computes ? "true" : "false") << ";\n";
        out_ << "    struct State {";
        for (std::size_t i = 0; i < leaves.size(); ++i) out_ << " " << compute_ctype(leaves[i]) << " v" << i << ";";
        out_ << " };\n    struct Cap {";
        for (std::size_t i = 0; i < captured.size(); ++i) out_ << " " << compute_ctype(captured[i]) << " c" << i << ";";
        out_ << " };\n"
             << "    struct Args { i64 size[R]; View<R> in[NIN]; View<R> out[NOUT]; ScanParams p; };\n"
             << "    struct Ctx { i64 bin[NIN]; i64 bout[NOUT]; Cap cap;";
        for (std::size_t k = 0; k < s_.inputs.size(); ++k)
            if (invariant_[k]) out_ << " " << compute_ctype(s_.inputs[k].dtype) << " i" << k << ";";
        out_ << " };\n";
        emit_words(leaves);
        emit_combine(combine, leaves, captured);
        // row_base: offsets of the row/lane at (o, i), and the captured values there.
        out_ << "    static __device__ __forceinline__ void row_base(const Args& a, i64 o, i64 i, Ctx& x) {\n"
             << "        i64 c[R], r = o;\n";
        for (int j = s_.dim - 1; j >= 0; --j) out_ << "        c[" << j << "] = r % a.size[" << j << "]; r /= a.size[" << j << "];\n";
        out_ << "        r = i;\n";
        for (int j = rank_ - 1; j > s_.dim; --j) out_ << "        c[" << j << "] = r % a.size[" << j << "]; r /= a.size[" << j << "];\n";
        out_ << "        c[D] = 0;\n";
        emit_offsets("c");
        {
            ExprEmitter e(out_, "        ", "q", program_type,
                          [&](const Node* n) { return access_load(n, "a.in[#].ptr", "x.bin[#]"); });
            for (std::size_t i = 0; i < captured.size(); ++i) {
                // The value first: a captured expression writes its temporaries to out_.
                const std::string value = e.value_as(scan->inputs[attr.num_leaves + i].get(), captured[i]);
                out_ << "        x.cap.c" << i << " = " << value << ";\n";
            }
        }
        for (std::size_t k = 0; k < s_.inputs.size(); ++k)
            if (invariant_[k]) out_ << "        x.i" << k << " = " << load_text(cat("a.in[", k, "].ptr"), cat("x.bin[", k, "]"), s_.inputs[k].dtype) << ";\n";
        out_ << "    }\n";
        // The fused prologue in two halves, so that the kernels issue every load of a thread's
        // items before the arithmetic of any (interleaved, each warp waits a DRAM latency with a
        // few loads in flight: docs/history/cuda-sessions-21-37.md, twenty-seventh session).
        // fetch: the stored values of the accesses that step along the scan dim; compute: the
        // leaves from them.
        out_ << "    typedef Cursor<NIN, NOUT> Cur;\n    struct Raw {";
        for (std::size_t k = 0; k < s_.inputs.size(); ++k)
            if (!invariant_[k]) out_ << " " << storage_ctype(s_.inputs[k].dtype) << " i" << k << ";";
        out_ << " };\n    static __device__ __forceinline__ Raw fetch(const Cur& c) {\n        Raw r;\n";
        for (std::size_t k = 0; k < s_.inputs.size(); ++k)
            if (!invariant_[k]) out_ << "        r.i" << k << " = ld<" << storage_ctype(s_.inputs[k].dtype) << ">(c.in[" << k << "], 0);\n";
        out_ << "        return r;\n    }\n"
             << "    static __device__ __forceinline__ State compute(const Raw& r, const Ctx& x) {\n";
        {
            ExprEmitter e(out_, "        ", "p", program_type, [&](const Node* n) {
                const int k = access_index(n);
                return invariant_[k] ? cat("x.i", k) : loaded_value(cat("r.i", k), s_.inputs[k].dtype);
            });
            std::vector<std::string> vals;
            for (int i = 0; i < attr.num_leaves; ++i) vals.push_back(e.value_as(scan->inputs[i].get(), leaves[i]));
            out_ << "        State s;\n";
            for (std::size_t i = 0; i < vals.size(); ++i) out_ << "        s.v" << i << " = " << vals[i] << ";\n";
            out_ << "        return s;\n    }\n";
        }
        // store: the fused epilogue, every output at the cursor's step.
        out_ << "    static __device__ __forceinline__ void store(const Cur& c, const State& s) {\n";
        {
            ExprEmitter e(out_, "        ", "e", program_type, [&](const Node* n) -> std::string {
                // The scan's result as the program sees it: a tensor of the leaf's dtype.
                if (n->op == Op::Project && n->inputs[0].get() == scan) {
                    const int leaf = n->as<ProjectAttr>().index;
                    return round_narrow(cat("s.v", leaf), leaves[leaf]);
                }
                return access_load(n, "c.in[#]", "0");
            });
            emit_stores(e, "c.out[#]", "0");
        }
        out_ << "    }\n";
        if (vectorizable()) emit_vector_io(scan, leaves);
    }

    // The layout class: byte steps along the scan dim fixed for the rows kernels (-1: the
    // argument's stride).
    void emit_steps() {
        auto list = [](const std::vector<std::int64_t>* steps, std::size_t n) {
            std::string text;
            for (std::size_t k = 0; k < std::max<std::size_t>(n, 1); ++k)
                text += cat(k ? ", " : "", steps && k < steps->size() ? (*steps)[k] : kRuntimeStep);
            return text;
        };
        out_ << "    static constexpr i64 STEP_IN[NIN] = {" << list(layout_ ? &layout_->in : nullptr, s_.inputs.size())
             << "}, STEP_OUT[NOUT] = {" << list(layout_ ? &layout_->out : nullptr, s_.outputs.size()) << "};\n"
             << "    static constexpr bool VEC = " << (vectorizable() ? "true" : "false") << ";\n";
    }

    // An access's value at component q of a vector step (in the loops of compute4 and store4):
    // compute4's from its fetched Raw4 `r` (or the row's x.i<k>), store4's from its vin<k>; a
    // broadcast access (step 0) is one scalar.
    std::string vector_access(const Node* n, bool fetched) {
        const int k = access_index(n);
        const DType t = s_.inputs[k].dtype;
        if (fetched && invariant_[k]) return cat("x.i", k);
        if (layout_->in[k] == 0) return fetched ? loaded_value(cat("r.i", k), t) : load_text(cat("c.in[", k, "]"), "0", t);
        return loaded_value(cat(fetched ? "r.i" : "vin", k, ".v[q]"), t);
    }

    // Declares vin<k>, the four elements at c.in[k], for every input that steps along the row.
    void emit_vector_loads() {
        for (std::size_t k = 0; k < s_.inputs.size(); ++k)
            if (layout_->in[k] != 0)
                out_ << "        const Vec4<" << storage_ctype(s_.inputs[k].dtype) << "> vin" << k << " = ld4<"
                     << storage_ctype(s_.inputs[k].dtype) << ">(c.in[" << k << "]);\n";
    }

    // fetch4 / compute4 / store4 (VEC): the fused prologue and epilogue over four consecutive
    // elements, in memory order, with one vector access per input and output.
    void emit_vector_io(const Node* scan, const std::vector<DType>& leaves) {
        out_ << "    struct Raw4 {";
        for (std::size_t k = 0; k < s_.inputs.size(); ++k) {
            const std::string_view t = storage_ctype(s_.inputs[k].dtype);
            if (!invariant_[k]) out_ << " " << (layout_->in[k] ? cat("Vec4<", t, ">") : std::string(t)) << " i" << k << ";";
        }
        out_ << " };\n    static __device__ __forceinline__ Raw4 fetch4(const Cur& c) {\n        Raw4 r;\n";
        for (std::size_t k = 0; k < s_.inputs.size(); ++k) {
            const std::string_view t = storage_ctype(s_.inputs[k].dtype);
            if (!invariant_[k])
                out_ << "        r.i" << k << " = " << (layout_->in[k] ? cat("ld4<", t, ">(c.in[", k, "])") : cat("ld<", t, ">(c.in[", k, "], 0)"))
                     << ";\n";
        }
        out_ << "        return r;\n    }\n"
             << "    static __device__ __forceinline__ void compute4(const Raw4& r, const Ctx& x, State (&s)[4]) {\n"
             << "        #pragma unroll\n        for (int q = 0; q < 4; ++q) {\n";
        {
            ExprEmitter e(out_, "            ", "p", program_type, [&](const Node* n) { return vector_access(n, true); });
            std::vector<std::string> vals;
            for (std::size_t i = 0; i < leaves.size(); ++i) vals.push_back(e.value_as(scan->inputs[i].get(), leaves[i]));
            for (std::size_t i = 0; i < vals.size(); ++i) out_ << "            s[q].v" << i << " = " << vals[i] << ";\n";
        }
        out_ << "        }\n    }\n";
        out_ << "    static __device__ __forceinline__ void store4(const Cur& c, const State (&s)[4]) {\n";
        emit_vector_loads();
        for (std::size_t k = 0; k < s_.outputs.size(); ++k)
            out_ << "        Vec4<" << storage_ctype(s_.outputs[k].value->type().dtype) << "> vout" << k << ";\n";
        out_ << "        #pragma unroll\n        for (int q = 0; q < 4; ++q) {\n";
        {
            ExprEmitter e(out_, "            ", "e", program_type, [&](const Node* n) -> std::string {
                if (n->op == Op::Project && n->inputs[0].get() == scan) {
                    const int leaf = n->as<ProjectAttr>().index;
                    return round_narrow(cat("s[q].v", leaf), leaves[leaf]);
                }
                return vector_access(n, false);
            });
            std::vector<std::string> vals;
            for (const StageOutput& o : s_.outputs) vals.push_back(store_value(e.value_as(o.value, o.value->type().dtype), o.value->type().dtype));
            for (std::size_t k = 0; k < vals.size(); ++k) out_ << "            vout" << k << ".v[q] = " << vals[k] << ";\n";
        }
        out_ << "        }\n";
        for (std::size_t k = 0; k < s_.outputs.size(); ++k)
            out_ << "        st4<" << storage_ctype(s_.outputs[k].value->type().dtype) << ">(c.out[" << k << "], vout" << k
                 << ");\n";
        out_ << "    }\n";
    }

    void emit_stores(ExprEmitter& e, const std::string& ptr_of_k, const std::string& off_of_k) {
        for (std::size_t k = 0; k < s_.outputs.size(); ++k) {
            const Node* v = s_.outputs[k].value;
            DType t = v->type().dtype;
            std::string val = e.value_as(v, t);
            out_ << "        st<" << storage_ctype(t) << ">(" << with_index(ptr_of_k, k) << ", " << with_index(off_of_k, k) << ", "
                 << store_value(val, t) << ");\n";
        }
    }

    void emit_words(const std::vector<DType>& leaves) {
        std::ostringstream to, from;
        int w = 0;
        for (std::size_t i = 0; i < leaves.size(); ++i) {
            DType c = compute_dtype(leaves[i]);
            std::string v = cat("s.v", i);
            if (c == DType::F32) {
                to << "        w[" << w << "] = __float_as_uint(" << v << ");\n";
                from << "        " << v << " = __uint_as_float(w[" << w << "]);\n";
            } else if (c == DType::F64 || c == DType::I64) {
                to << "        { u64 b = (u64)" << (c == DType::F64 ? "__double_as_longlong(" + v + ")" : v)
                   << "; w[" << w << "] = (u32)b; w[" << w + 1 << "] = (u32)(b >> 32); }\n";
                std::string bits = cat("(i64)((u64)w[", w, "] | ((u64)w[", w + 1, "] << 32))");
                from << "        " << v << " = " << (c == DType::F64 ? "__longlong_as_double(" + bits + ")" : bits) << ";\n";
            } else if (c == DType::Bool) {
                to << "        w[" << w << "] = (u32)" << v << ";\n";
                from << "        " << v << " = w[" << w << "] != 0;\n";
            } else {
                to << "        w[" << w << "] = (u32)(int)" << v << ";\n";
                from << "        " << v << " = (" << compute_ctype(c) << ")(int)w[" << w << "];\n";
            }
            w += state_words(leaves[i]);
        }
        out_ << "    static __device__ __forceinline__ void to_words(const State& s, u32* w) {\n" << to.str()
             << "    }\n    static __device__ __forceinline__ State from_words(const u32* w) {\n        State s;\n"
             << from.str() << "        return s;\n    }\n";
    }

    void emit_combine(const Combine& combine, const std::vector<DType>& leaves,
                      const std::vector<DType>& captured) {
        CombineTypes types = instantiate_combine(combine, leaves, captured, s_.node->loc);
        out_ << "    // combine " << combine.name << "\n"
             << "    static __device__ __forceinline__ State combine(const State& l, const State& r, const Cap& c) {\n";
        ExprEmitter e(out_, "        ", "k", [&](const Node* n) { return types[n]; },
                      [&](const Node* n) -> std::string {
                          const auto& p = n->as<ParamAttr>();
                          const char* side = p.role == ParamRole::Left ? "l.v" : p.role == ParamRole::Right ? "r.v" : "c.c";
                          return cat(side, p.index);
                      },
                      false);
        std::vector<std::string> vals;
        for (std::size_t i = 0; i < leaves.size(); ++i) vals.push_back(e.value_as(combine.results[i].get(), leaves[i]));
        out_ << "        State o;\n";
        for (std::size_t i = 0; i < vals.size(); ++i) out_ << "        o.v" << i << " = " << vals[i] << ";\n";
        out_ << "        return o;\n    }\n";
    }

    void emit_map() {
        out_ << "    struct Args { i64 size[R]; View<R> in[NIN]; View<R> out[NOUT]; };\n"
             << "    struct Ctx { i64 bin[NIN]; i64 bout[NOUT]; };\n"
             << "    static __device__ __forceinline__ void eval(const Args& a, const i64* c) {\n"
             << "        Ctx x;\n";
        emit_offsets("c");
        ExprEmitter e(out_, "        ", "m", program_type,
                      [&](const Node* n) { return access_load(n, "a.in[#].ptr", "x.bin[#]"); });
        emit_stores(e, "a.out[#].ptr", "x.bout[#]");
        out_ << "    }\n";
    }

    const Stage& s_;
    const Tuning& tuning_;
    const StageLayout* layout_;  // nullptr: every step read from the arguments
    std::ostringstream& out_;
    std::string k_;
    int rank_ = 1;
    std::vector<bool> invariant_;  // per access: broadcast along the scan dim (read once per row)
};

}  // namespace

int stage_state_words(const Stage& stage) {
    if (!stage.is_scan) return 0;
    int nw = 0;
    for (int i = 0; i < stage.node->as<ScanAttr>().num_leaves; ++i) nw += state_words(stage.node->types[i].dtype);
    return nw;
}

int combine_weight(const Combine& combine) {
    int weight = 0;
    for (const Node* n : topo_order(combine.results)) {
        switch (n->op) {
            case Op::Exp: case Op::Exp2: case Op::Log: case Op::Log2: case Op::Log10: case Op::Log1p: case Op::Expm1:
            case Op::Erf: case Op::Erfc: case Op::Tanh: case Op::Sigmoid: case Op::Softplus: case Op::Sin: case Op::Cos:
            case Op::Atan: case Op::Atan2: case Op::Pow: case Op::LogAddExp:
                weight += kTranscendentalWeight;
                break;
            case Op::Div: case Op::Mod: case Op::Sqrt: case Op::Rsqrt: weight += 8; break;
            default: weight += is_elementwise(n->op) ? 1 : 0;
        }
    }
    return weight;
}

Tuning stage_tuning(const Stage& stage, int cc) {
    const int weight = stage.is_scan ? combine_weight(*stage.node->as<ScanAttr>().combine) : 1;
    return choose_tuning(stage_state_words(stage), cc, weight);
}

const StageLayout* fixed_layout(const Stage& stage, const Tuning& tuning, const Layout& layout) {
    const auto id = static_cast<std::size_t>(stage.id);
    if (!stage.is_scan || !tuning.fixed_steps || id >= layout.size()) return nullptr;
    const StageLayout& l = layout[id];
    return l.in.size() == stage.inputs.size() && l.out.size() == stage.outputs.size() ? &l : nullptr;
}

bool has_vector_rows(const Stage& stage, const Tuning& tuning, const StageLayout* layout) {
    if (!layout || !tuning.vector_rows || stage.inputs.empty() || tuning.row_items % 4 || tuning.shared_row_items() % 4)
        return false;
    for (std::size_t k = 0; k < stage.inputs.size(); ++k) {
        const std::int64_t step = layout->in[k];
        if (step != 0 && step != static_cast<std::int64_t>(dtype_size(stage.inputs[k].dtype))) return false;
    }
    for (std::size_t k = 0; k < stage.outputs.size(); ++k)
        if (layout->out[k] != static_cast<std::int64_t>(dtype_size(stage.outputs[k].value->type().dtype))) return false;
    return true;
}

std::string rows_kernel_name(int stage, bool shared, bool vec) {
    return cat("scanc_rows_", shared ? "shared_" : "", vec ? "vec_" : "", stage);
}

ReachableKernels reachable_kernels(const Stage& stage, const Tuning& tuning) {
    ReachableKernels r;
    const Shape& shape = stage_shape(stage);
    for (const Size& s : shape)
        if (s.constant() == 0) return r;  // never launched: nothing to settle
    bool single = true, many = false;  // whether the inner extent can be 1, and more than 1
    for (std::size_t j = static_cast<std::size_t>(stage.dim) + 1; j < shape.size(); ++j) {
        std::optional<std::int64_t> c = shape[j].constant();
        many = many || !c || *c > 1;
        single = single && (!c || *c == 1);
    }
    const std::optional<std::int64_t> len = shape[static_cast<std::size_t>(stage.dim)].constant();
    r.cols = many;
    r.rows = single && (!len || *len > tuning.resident_len());
    const bool resident = single && (!len || *len <= tuning.resident_len());
    r.resident = resident && (!len || tuning.resident_lane_bits(*len) == 5);
    r.resident_groups = resident && tuning.res_groups && (!len || tuning.resident_lane_bits(*len) < 5);
    return r;
}

std::string cols_kernel_name(int stage, bool few_lines) {
    return cat("scanc_cols_", few_lines ? "few_lines_" : "", stage);
}

std::string resident_kernel_name(int stage, bool groups) {
    return cat("scanc_resident_", groups ? "groups_" : "", stage);
}

std::string generate_source(const Plan& plan, int cc, const Layout& layout) {
    std::ostringstream out;
    out << "// Generated by scanc for program `" << plan.program->name << "`, compute capability " << cc
        << ".\n// Sizes and strides are kernel arguments; nothing here depends on them.\n";
    // SCANC_NVRTC_OPTIONS (measurements, e.g. "--Ofast-compile=mid"; none by default) go on the
    // source's options line (nvrtc.h): part of the source, so of the cache key and `scanc emit`.
    if (const char* options = std::getenv("SCANC_NVRTC_OPTIONS"); options && *options)
        out << kNvrtcOptionsLine << options << "\n";
    out << cuda_prelude() << cuda_kernels();
    int entries = 0;
    // One kernel entry, numbered for SCANC_ONLY_ENTRY (kernel_entry_names).
    auto entry = [&](int threads, int min_blocks, const std::string& name, const std::string& k,
                     const std::string& body) {
        out << "#if SCANC_ENTRY(" << entries++ << ")\nextern \"C\" __global__ void __launch_bounds__(" << threads
            << ", " << min_blocks << ") " << name << "(const " << k << "::Args a) { " << body << "(a); }\n#endif\n";
    };
    for (const Stage& s : plan.stages) {
        Tuning tuning = stage_tuning(s, cc);
        out << "\n// tuning: " << tuning.str();
        StageEmitter emitter(s, tuning, fixed_layout(s, tuning, layout), out);
        emitter.emit();
        std::string k = cat("K", s.id);
        if (s.is_scan) {
            const ReachableKernels reach = reachable_kernels(s, tuning);
            for (bool vec : {false, true})
                for (bool shared : {false, true})
                    if (reach.rows && (!vec || emitter.vectorizable()))
                        entry(tuning.row_threads, shared ? tuning.shared_rows_min_blocks() : tuning.min_blocks,
                              rows_kernel_name(s.id, shared, vec), k,
                              cat("scan_rows<", k, ", ", shared ? "true" : "false", ", ", vec ? "true" : "false", ">"));
            if (reach.resident)
                entry(tuning.res_threads, tuning.res_min_blocks, resident_kernel_name(s.id, false), k,
                      cat("scan_rows_resident_groups<", k, ", 5>"));
            if (reach.resident_groups)
                entry(tuning.res_threads, tuning.res_min_blocks, resident_kernel_name(s.id, true), k,
                      cat("scan_rows_resident_groups<", k, ", -1>"));
            if (reach.cols)
                for (bool few : {false, true})
                    if (!few || tuning.few_lines_lanes)
                        entry(tuning.col_warps * 32, tuning.cols_min_blocks(), cols_kernel_name(s.id, few), k,
                              cat("scan_cols<", k, ", ", few ? tuning.few_lines_lanes : tuning.col_lanes, ">"));
        } else {
            entry(tuning.map_threads, 1, cat("scanc_map_", s.id), k, cat("map_kernel<", k, ">"));
        }
    }
    return out.str();
}

std::vector<std::string> kernel_entry_names(const std::string& source) {
    const std::string entry = "\n#if SCANC_ENTRY(", bounds = "__launch_bounds__(";
    std::vector<std::string> names;
    for (std::size_t at = source.find(entry); at != std::string::npos; at = source.find(entry, at + 1)) {
        std::size_t name = source.find(") ", source.find(bounds, at)) + 2;
        names.push_back(source.substr(name, source.find('(', name) - name));
    }
    return names;
}

}  // namespace scanc::cuda
