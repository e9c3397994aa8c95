// lower_scans: every scan becomes slices, concats, interleaves and the combine inlined as
// elementwise ops (DESIGN §6). See passes.h for the algorithms and their guarantees.
#include <algorithm>
#include <bit>
#include <limits>
#include <unordered_map>

#include "scanc/ir/builder.h"
#include "scanc/passes/passes.h"

namespace scanc {

std::string_view algorithm_name(ScanAlgorithm a) {
    switch (a) {
        case ScanAlgorithm::HillisSteele: return "hillis-steele";
        case ScanAlgorithm::WorkEfficient: return "work-efficient";
        case ScanAlgorithm::Auto: return "auto";
    }
    return "?";
}

ScanAlgorithm parse_algorithm(std::string_view name) {
    for (auto a : {ScanAlgorithm::HillisSteele, ScanAlgorithm::WorkEfficient, ScanAlgorithm::Auto})
        if (algorithm_name(a) == name) return a;
    user_error({}, cat("unknown scan algorithm `", name,
                       "`; expected hillis-steele, work-efficient or auto"));
}

bool is_pure_sum(const Combine& c) {
    if (c.num_leaves() != 1 || c.num_captured() != 0) return false;
    const Node& r = *c.results[0];
    if (r.op != Op::Add) return false;
    const Node* a = r.inputs[0].get();
    const Node* b = r.inputs[1].get();
    return (a == c.left[0].get() && b == c.right[0].get()) ||
           (a == c.right[0].get() && b == c.left[0].get());
}

namespace {

// Number of levels k = 1, 2, 4, ... below n: ceil(log2 n), 0 for n <= 1.
int ceil_log2(std::int64_t n) {
    return n <= 1 ? 0 : static_cast<int>(std::bit_width(static_cast<std::uint64_t>(n - 1)));
}

// A bound or size as the caller wrote it: `--bound L=4` or `bounds={'L': 4}`.
std::string spelled(const LowerOptions& options, std::string_view kind, const std::string& name,
                    std::int64_t value) {
    if (options.spelling == LowerOptions::Spelling::Python)
        return cat(kind, "s={'", name, "': ", value, "}");
    return cat("--", kind, " ", name, "=", value);
}

// What the program's size symbols become: a tighter bound (a new symbol) or a fixed size.
std::unordered_map<const Symbol*, Size> rewritten_symbols(const Program& p,
                                                          const LowerOptions& options) {
    std::unordered_map<const Symbol*, Size> out;
    auto find = [&](std::string_view kind, const std::string& name, std::int64_t v) {
        auto it = std::find_if(p.symbols.begin(), p.symbols.end(),
                               [&](const SymbolRef& s) { return s->name == name; });
        if (it == p.symbols.end()) {
            std::string names;
            for (auto& s : p.symbols) names += (names.empty() ? "" : ", ") + s->name;
            user_error(p.loc, cat(spelled(options, kind, name, v), ": program `", p.name,
                                  "` has no size named `", name, "` (its sizes: ",
                                  names.empty() ? "none" : names, ")"));
        }
        return *it;
    };
    for (auto& [name, bound] : options.bounds) {
        SymbolRef sym = find("bound", name, bound);
        if (bound < 1)
            user_error(p.loc, cat(spelled(options, "bound", name, bound), ": must be 1 or more"));
        out[sym.get()] = Size::symbol(Symbol::make(name, sym->bound ? std::min(*sym->bound, bound)
                                                                    : bound));
    }
    for (auto& [name, size] : options.sizes) {
        SymbolRef sym = find("size", name, size);
        auto bound = std::find_if(options.bounds.begin(), options.bounds.end(),
                                  [&](const auto& b) { return b.first == name; });
        if (bound != options.bounds.end())
            user_error(p.loc, cat(spelled(options, "size", name, size), " and ",
                                  spelled(options, "bound", name, bound->second),
                                  ": give a symbol a size or a bound, not both"));
        if (size < 0 || (sym->bound && size > *sym->bound))
            user_error(p.loc, cat(spelled(options, "size", name, size), ": must be ",
                                  sym->bound ? cat("in 0..", *sym->bound, " (", name, "<=", *sym->bound, ")")
                                             : "0 or more"));
        out[sym.get()] = Size(size);
    }
    return out;
}

// Lowers one scan. Tensors of the running state are kept in natural (stored) order; for a
// reverse scan the work-efficient recursion runs on a mirrored view (see View).
class ScanLowering {
public:
    ScanLowering(const Node& scan, std::vector<NodeRef> leaves, std::vector<NodeRef> captured)
        : scan_(scan), attr_(scan.as<ScanAttr>()), leaves_(std::move(leaves)),
          captured_(std::move(captured)) {}

    std::vector<NodeRef> hillis_steele(std::int64_t levels_bound, LoweredScan& info);
    std::vector<NodeRef> work_efficient(std::int64_t n, LoweredScan& info);

private:
    struct Seq {
        std::vector<NodeRef> leaves;
        std::int64_t len;
    };

    // f(left, right) inlined over whole tensors; counts instances and applications.
    std::vector<NodeRef> apply(const std::vector<NodeRef>& left, const std::vector<NodeRef>& right,
                               std::int64_t elements);
    std::vector<NodeRef> slice_all(const std::vector<NodeRef>& xs, Size start, Size stop,
                                   std::int64_t step = 1) const;
    // Logical (direction-aware) slice [a:b:step] of a static-length sequence, 0 <= a <= b <= len.
    Seq view_slice(const Seq& x, std::int64_t a, std::int64_t b, std::int64_t step) const;
    Seq view_concat(const Seq& a, const Seq& b) const;
    Seq view_interleave(const Seq& even, const Seq& odd) const;
    Seq recurse(const Seq& x, int& depth);

    const Node& scan_;
    const ScanAttr& attr_;
    std::vector<NodeRef> leaves_, captured_;
    int instances_ = 0;
    std::int64_t applications_ = 0;
};

std::vector<NodeRef> ScanLowering::apply(const std::vector<NodeRef>& left,
                                         const std::vector<NodeRef>& right,
                                         std::int64_t elements) {
    const Combine& c = *attr_.combine;
    ++instances_;
    // Saturating: a bound near 2^63 makes the count meaningless, not negative.
    if (__builtin_add_overflow(applications_, elements, &applications_))
        applications_ = std::numeric_limits<std::int64_t>::max();
    std::unordered_map<const Node*, NodeRef> value;
    for (const Node* n : topo_order(c.results)) {
        NodeRef out;
        if (n->op == Op::Param) {
            const auto& p = n->as<ParamAttr>();
            const auto& from = p.role == ParamRole::Left    ? left
                               : p.role == ParamRole::Right ? right
                                                            : captured_;
            out = from.at(p.index);
        } else {
            // The combine's own statements keep their place, so that check_lowered knows
            // them for the user's (a `b * 0` there is no pad).
            const SourceLoc& loc = n->loc.valid() ? n->loc : scan_.loc;
            if (n->op == Op::Literal) {
                out = make_literal(n->as<LiteralAttr>(), true, loc);
            } else {
                std::vector<NodeRef> args;
                for (auto& in : n->inputs) args.push_back(value.at(in.get()));
                std::optional<DType> to;
                if (n->op == Op::Cast) to = n->as<CastAttr>().to;
                out = make_elementwise(n->op, std::move(args), loc, to);
                // A cast to f16 or bf16 rounds there, and the combine goes on in f32, as the
                // reference computes it (the operations after it would otherwise round too).
                if (to && compute_dtype(*to) != *to)
                    out = make_elementwise(Op::Cast, {out}, loc, compute_dtype(*to));
            }
        }
        value[n] = out;
    }
    std::vector<NodeRef> results;
    for (int i = 0; i < c.num_leaves(); ++i) {
        NodeRef r = value.at(c.results[i].get());
        const DType want = compute_dtype(scan_.types[i].dtype);
        if (r->type().weak || r->type().dtype != want) r = make_elementwise(Op::Cast, {r}, scan_.loc, want);
        // A result that ignores the running values (a constant, a captured value) still has to
        // cover every element: broadcast it against the left operand.
        const Shape& shape = left[i]->type().shape;
        if (!shapes_equal(r->type().shape, shape)) {
            NodeRef any = make_elementwise(Op::Eq, {left[i], left[i]}, scan_.loc);
            r = make_elementwise(Op::Where, {any, r, r}, scan_.loc);
        }
        results.push_back(r);
    }
    return results;
}

std::vector<NodeRef> ScanLowering::slice_all(const std::vector<NodeRef>& xs, Size start,
                                             Size stop, std::int64_t step) const {
    std::vector<NodeRef> out;
    for (auto& x : xs) out.push_back(make_slice(x, attr_.dim, start, stop, step, scan_.loc));
    return out;
}

// Level k combines each element with the one k before it (after it, for reverse). The slices use
// negative constants for "all but the last k", so for a dynamic length S <= M the same graph
// is right for every S: when k >= S the combined part is empty and the level is a no-op.
std::vector<NodeRef> ScanLowering::hillis_steele(std::int64_t levels_bound, LoweredScan& info) {
    int d = attr_.dim;
    std::vector<NodeRef> y = leaves_;
    int levels = ceil_log2(levels_bound);
    for (int level = 0; level < levels; ++level) {
        std::int64_t k = std::int64_t{1} << level;
        Size s = y[0]->type().shape[d];
        auto drop_last = slice_all(y, 0, -k);  // y[:-k]
        auto drop_first = slice_all(y, k, s);  // y[k:]
        std::int64_t combined = std::max<std::int64_t>(levels_bound - k, 0);
        std::vector<NodeRef> next;
        if (!attr_.reverse) {
            auto head = slice_all(y, 0, k);  // y[:k]
            auto mixed = apply(drop_last, drop_first, combined);
            for (std::size_t i = 0; i < y.size(); ++i)
                next.push_back(make_concat(d, {head[i], mixed[i]}, scan_.loc));
        } else {
            auto tail = slice_all(y, -k, s);                      // y[-k:]
            auto mixed = apply(drop_first, drop_last, combined);  // the later element on the left
            for (std::size_t i = 0; i < y.size(); ++i)
                next.push_back(make_concat(d, {mixed[i], tail[i]}, scan_.loc));
        }
        y = std::move(next);
    }
    info.levels = levels;
    info.combine_instances = instances_;
    info.applications = applications_;
    return y;
}

// The work-efficient recursion is written for a forward scan over a logical sequence. For a
// reverse scan the logical sequence is the stored one mirrored: logical index u is stored at
// len-1-u, so slices map to mirrored slices, concat swaps its parts and interleave swaps its
// parts when the total length is even. Elementwise ops pair elements the same either way.
ScanLowering::Seq ScanLowering::view_slice(const Seq& x, std::int64_t a, std::int64_t b,
                                           std::int64_t step) const {
    std::int64_t count = b > a ? (b - a + step - 1) / step : 0;
    if (count == x.len) return x;  // the whole sequence (step 1)
    std::int64_t last = a + (count - 1) * step;
    if (count == 0) return {slice_all(x.leaves, 0, 0), 0};
    if (!attr_.reverse) return {slice_all(x.leaves, a, last + 1, step), count};
    return {slice_all(x.leaves, x.len - 1 - last, x.len - a, step), count};
}

ScanLowering::Seq ScanLowering::view_concat(const Seq& a, const Seq& b) const {
    if (a.len == 0) return b;
    if (b.len == 0) return a;
    const Seq& first = attr_.reverse ? b : a;
    const Seq& second = attr_.reverse ? a : b;
    Seq out{{}, a.len + b.len};
    for (std::size_t i = 0; i < a.leaves.size(); ++i)
        out.leaves.push_back(
            make_concat(attr_.dim, {first.leaves[i], second.leaves[i]}, scan_.loc));
    return out;
}

ScanLowering::Seq ScanLowering::view_interleave(const Seq& even, const Seq& odd) const {
    std::int64_t len = even.len + odd.len;
    bool swap = attr_.reverse && len % 2 == 0;
    const Seq& first = swap ? odd : even;
    const Seq& second = swap ? even : odd;
    Seq out{{}, len};
    for (std::size_t i = 0; i < even.leaves.size(); ++i)
        out.leaves.push_back(
            make_interleave(attr_.dim, first.leaves[i], second.leaves[i], scan_.loc));
    return out;
}

// JAX's odd/even scheme: pair neighbours, scan the pairs (giving the odd outputs), then each
// even output is the odd output before it combined with its own element.
ScanLowering::Seq ScanLowering::recurse(const Seq& x, int& depth) {
    std::int64_t n = x.len;
    depth = 0;
    if (n < 2) return x;
    Seq pairs{apply(view_slice(x, 0, n - 1, 2).leaves, view_slice(x, 1, n, 2).leaves, n / 2),
              n / 2};
    int inner = 0;
    Seq odd = recurse(pairs, inner);
    Seq rest = view_slice(x, 2, n, 2);  // x[2], x[4], ...: one fewer than the evens
    Seq evens = view_slice(x, 0, 1, 1);
    if (rest.len > 0) {
        Seq before = view_slice(odd, 0, rest.len, 1);
        evens = view_concat(evens, {apply(before.leaves, rest.leaves, rest.len), rest.len});
    }
    depth = 1 + inner + (rest.len > 0 ? 1 : 0);
    return view_interleave(evens, odd);
}

std::vector<NodeRef> ScanLowering::work_efficient(std::int64_t n, LoweredScan& info) {
    int depth = 0;
    Seq y = recurse({leaves_, n}, depth);
    info.levels = depth;
    info.combine_instances = instances_;
    info.applications = applications_;
    return y.leaves;
}

class Lowerer {
public:
    Lowerer(const LowerOptions& options, LoweringReport* report)
        : options_(options), report_(report) {}

    std::vector<NodeRef> lower(const Node& scan, std::vector<NodeRef> inputs);

private:
    ScanAlgorithm choose(const Size& s, LoweredScan& info) const;

    const LowerOptions& options_;
    LoweringReport* report_;
};

ScanAlgorithm Lowerer::choose(const Size& s, LoweredScan& info) const {
    ScanAlgorithm a = options_.algorithm;
    if (a != ScanAlgorithm::Auto) return a;
    if (!s.is_constant()) {
        info.reason = "the length is dynamic; work-efficient needs a static one";
        return ScanAlgorithm::HillisSteele;
    }
    if (*s.constant() <= 64) {
        info.reason = "S <= 64: fewer nodes and half the depth of work-efficient";
        return ScanAlgorithm::HillisSteele;
    }
    info.reason = "S > 64: about 2*S combines instead of S*log2(S)";
    return ScanAlgorithm::WorkEfficient;
}

std::vector<NodeRef> Lowerer::lower(const Node& scan, std::vector<NodeRef> inputs) {
    const auto& attr = scan.as<ScanAttr>();
    int d = attr.dim;
    LoweredScan info;
    info.where = scan.loc.valid() ? scan.loc.str()
                                  : cat("scan #", report_ ? report_->scans.size() : 0);
    const Size s = inputs[0]->type().shape[d];
    info.length = s.brief();
    auto finish = [&](std::vector<NodeRef> out) {
        if (report_) report_->scans.push_back(info);
        return out;
    };

    // ONNX CumSum (and onnxruntime's kernel) takes these dtypes; others are lowered.
    DType t = scan.types[0].dtype;
    bool cumsum_dtype = t == DType::I32 || t == DType::I64 || t == DType::F32 || t == DType::F64;
    if (options_.native_cumsum && is_pure_sum(*attr.combine) && cumsum_dtype) {
        NodeRef kept = rebuild(scan, inputs);
        info.native_cumsum = true;
        info.algorithm = ScanAlgorithm::HillisSteele;
        info.reason = "pure sum kept for a native CumSum";
        info.max_length = s.upper_bound().value_or(0);
        return finish(scan_outputs(kept));
    }

    std::vector<NodeRef> leaves(inputs.begin(), inputs.begin() + attr.num_leaves);
    std::vector<NodeRef> captured(inputs.begin() + attr.num_leaves, inputs.end());
    // Weak (literal) leaves take the scan's output dtype first, as the scan itself does.
    for (int i = 0; i < attr.num_leaves; ++i)
        if (leaves[i]->type().weak)
            leaves[i] = make_elementwise(Op::Cast, {leaves[i]}, scan.loc, scan.types[i].dtype);
    // A scan computes f16/bf16 leaves (and captured values) in f32 and rounds only its
    // outputs: the lowered ops run on f32 copies, whose results round once at the end.
    auto widened = [&](NodeRef v) {
        const DType t = v->type().dtype;
        return compute_dtype(t) == t ? v : make_elementwise(Op::Cast, {v}, scan.loc, compute_dtype(t));
    };
    for (auto& v : leaves) v = widened(v);
    for (auto& v : captured) v = widened(v);
    // The first leaf's spelling of the length, by x[:s]. Leaves of one length spelled
    // differently (interleave(0, x[::2], x[1::2]) beside x) take it, since the levels slice
    // and combine them together and two spellings would each nest a level deeper at every
    // level, past what Size::same_value decides; so do the results, which the levels' slices
    // and concats spell another way that later scans would nest further.
    auto respelled = [&](NodeRef v) {
        return v->type().shape[d].equals(s) ? v : make_slice(v, d, 0, s, 1, scan.loc);
    };
    for (auto& v : leaves) v = respelled(v);
    // The levels' outputs as the scan's results: its dtypes (a narrow float computed in f32)
    // and the first leaf's spelling of the length.
    auto as_results = [&](std::vector<NodeRef> out) {
        for (int i = 0; i < attr.num_leaves; ++i) {
            if (out[i]->type().dtype != scan.types[i].dtype)
                out[i] = make_elementwise(Op::Cast, {out[i]}, scan.loc, scan.types[i].dtype);
            out[i] = respelled(out[i]);
        }
        return out;
    };

    std::optional<std::int64_t> bound = s.upper_bound();
    const auto symbols = s.symbols();
    const bool all_bounded =
        std::all_of(symbols.begin(), symbols.end(), [](const SymbolRef& sym) { return sym->bound.has_value(); });
    if (!bound && all_bounded)
        user_error(scan.loc, cat("cannot lower this scan: its length along dim ", d, " is `", s.brief(),
                                 "`, whose largest value at these bounds passes 2^63; give smaller bounds"));
    if (!bound) {
        std::string names;
        for (auto& sym : s.symbols()) names += (names.empty() ? "" : ", ") + sym->name;
        std::string sym = s.symbols().empty() ? "L" : s.symbols()[0]->name;
        user_error(scan.loc, cat("cannot lower this scan: its length along dim ", d, " is `",
                                 s.brief(), "`, which has no upper bound; declare one in the ",
                                 "program (", sym, "<=65536) or pass ",
                                 spelled(options_, "bound", sym, 65536), " (",
                                 "unbounded: ", names, ")"));
    }
    info.max_length = *bound;
    info.algorithm = choose(s, info);
    ScanLowering lowering(scan, leaves, captured);
    if (info.algorithm == ScanAlgorithm::WorkEfficient) {
        if (!s.is_constant())
            user_error(scan.loc, cat("work-efficient lowering needs a static length, but the scan ",
                                     "along dim ", d, " has length `", s.brief(),
                                     "`; use --algorithm hillis-steele (or auto), which is ",
                                     "correct for every length up to the bound ", *bound));
        return finish(as_results(lowering.work_efficient(*bound, info)));
    }
    return finish(as_results(lowering.hillis_steele(*bound, info)));
}

}  // namespace

ProgramRef lower_scans(const Program& program, const LowerOptions& options,
                       LoweringReport* report) {
    // The levels reassociate every combine: a combine that is not associative would lower to
    // something else than its scan, as it would run as something else (compile refuses it too).
    check_program_associative(program);
    auto renamed = rewritten_symbols(program, options);
    auto out = std::make_shared<Program>();
    out->name = program.name;
    out->loc = program.loc;
    for (auto& sym : program.symbols) {
        auto it = renamed.find(sym.get());
        if (it == renamed.end())
            out->symbols.push_back(sym);
        else if (auto s = it->second.as_symbol())
            out->symbols.push_back(s);
    }

    std::unordered_map<const Node*, std::vector<NodeRef>> value;
    for (auto& p : program.params) {
        NodeRef param = p;
        if (!renamed.empty()) {
            Type t = p->type();
            for (auto& size : t.shape)
                if (auto sym = size.as_symbol(); sym && renamed.count(sym.get()))
                    size = renamed.at(sym.get());
            const auto& a = p->as<ParamAttr>();
            param = make_param(a.role, a.index, a.name, t, p->loc);
        }
        out->params.push_back(param);
        value[p.get()] = {param};
    }

    // The owning references of every node, to reuse the parts no scan feeds.
    auto order = topo_order(program.results);
    std::unordered_map<const Node*, NodeRef> owned;
    for (auto& r : program.results) owned[r.get()] = r;
    for (const Node* n : order)
        for (auto& in : n->inputs) owned[in.get()] = in;

    Lowerer lowerer(options, report);
    for (const Node* n : order) {
        if (value.count(n)) continue;
        std::vector<NodeRef> inputs;
        bool changed = false;
        for (auto& in : n->inputs) {
            const auto& v = value.at(in.get());
            if (n->op == Op::Project) {
                inputs.push_back(v.at(n->as<ProjectAttr>().index));
            } else {
                inputs.push_back(v.at(0));
                changed = changed || v[0].get() != in.get();
            }
        }
        // A slice's bounds may name a size that --bound or --size rewrote.
        changed = changed || (n->op == Op::Slice && !renamed.empty());
        if (n->op == Op::Scan) {
            value[n] = lowerer.lower(*n, std::move(inputs));
        } else if (n->op == Op::Project) {
            value[n] = {inputs[0]};
        } else if (!changed) {
            // Shared and immutable: reuse the node itself (keeps literals and names as they are).
            value[n] = {owned.at(n)};
        } else {
            value[n] = {rebuild(*n, std::move(inputs), renamed)};
        }
    }
    for (auto& r : program.results) {
        NodeRef v = value.at(r.get()).at(0);
        if (v != r && !r->name.empty()) {
            // Results keep their names: a lowered scan output gets the scan result's name. A
            // scan of at most one step lowers to its leaf, a node of the program (never renamed:
            // the program is the caller's) or one named otherwise: it gets a copy of its own.
            if (owned.count(v.get()) || !(v->name.empty() || v->name == r->name))
                v = make_elementwise(Op::Cast, {v}, r->loc, v->type().dtype);
            v->name = r->name;
        }
        out->results.push_back(v);
    }
    return out;
}

}  // namespace scanc
