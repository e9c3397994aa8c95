// Splitting a program into stages (see codegen.h).
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "codegen.h"

namespace scanc::cuda {

namespace {

bool is_inline(const Node* n) { return n->op == Op::Literal || is_elementwise(n->op); }

// The scan dim of a scan stage in the shape of one of its accesses (< 0: broadcast past its rank).
int access_scan_dim(const Stage& s, const Access& a) {
    return s.dim - (s.rank - static_cast<int>(a.node->type().shape.size()));
}

class Planner {
public:
    explicit Planner(const ProgramRef& program) { plan_.program = program; }

    Plan run() {
        const Program& p = *plan_.program;
        auto order = topo_order(p.results);
        for (std::size_t i = 0; i < order.size(); ++i) position_[order[i]] = static_cast<int>(i);
        // Phase 1: results that a scan's epilogue can compute.
        std::map<const Node*, std::vector<int>> fused;  // scan -> result indices
        std::vector<bool> done(p.results.size(), false);
        for (std::size_t r = 0; r < p.results.size(); ++r) {
            const NodeRef& res = p.results[r];
            const InlineReads reads = inline_reads(res);
            const Node* latest = reads.latest;
            // A result that reads the scan through memory (a slice of it, ...) is a map stage after it.
            if (latest && reaches(reads.stored, latest)) latest = nullptr;
            if (latest && shapes_equal(res->type().shape, latest->types[0].shape)) {
                fused[latest].push_back(static_cast<int>(r));
                done[r] = true;
            }
        }
        // Phase 2: scans in dependency order, each after the stages it reads.
        for (const Node* n : order) {
            if (n->op != Op::Scan) continue;
            Stage s;
            s.is_scan = true;
            s.node = n;
            s.rank = static_cast<int>(n->types[0].shape.size());
            s.dim = n->as<ScanAttr>().dim;
            s.reverse = n->as<ScanAttr>().reverse;
            for (auto& in : n->inputs) collect(in.get(), s, nullptr);
            for (int r : fused[n]) {
                collect(p.results[r].get(), s, n);
                s.outputs.push_back({p.results[r].get(), Target{r}});
            }
            scan_stage_[n] = push(std::move(s));
        }
        // Phase 3: the remaining results.
        for (std::size_t r = 0; r < p.results.size(); ++r)
            if (!done[r]) map_stage(p.results[r].get(), Target{static_cast<int>(r)});
        return std::move(plan_);
    }

private:
    // What computing `root` inline reads: the latest scan (in dependency order) whose outputs
    // it reads through elementwise ops, and the stored values it reads otherwise (inputs,
    // slices, concats). (Walks here take no recursion: a chain may be kMaxNodeDepth ops long.)
    struct InlineReads {
        const Node* latest = nullptr;
        std::vector<NodeRef> stored;
    };
    InlineReads inline_reads(const NodeRef& root) {
        InlineReads reads;
        std::set<const Node*> seen;
        std::vector<NodeRef> stack{root};
        while (!stack.empty()) {
            const NodeRef n = stack.back();
            stack.pop_back();
            if (!seen.insert(n.get()).second || n->op == Op::Literal) continue;
            if (n->op == Op::Project) {
                const Node* scan = n->inputs[0].get();
                if (!reads.latest || position_[scan] > position_[reads.latest]) reads.latest = scan;
            } else if (is_elementwise(n->op)) {
                for (auto& in : n->inputs) stack.push_back(in);
            } else {
                reads.stored.push_back(n);
            }
        }
        return reads;
    }

    // Whether `target` is among `roots` or upstream of them.
    static bool reaches(const std::vector<NodeRef>& roots, const Node* target) {
        for (const Node* n : topo_order(roots))
            if (n == target) return true;
        return false;
    }

    int push(Stage s) {
        s.id = static_cast<int>(plan_.stages.size());
        plan_.stages.push_back(std::move(s));
        return plan_.stages.back().id;
    }

    // Adds the accesses that evaluating `root` inline needs to stage `s`, in the order of a
    // depth-first walk of its operands, each op once (a value used twice is not walked twice:
    // chains of `y = x + x` would double the walk per op). Projects of `own` (the scan whose
    // epilogue this is) are the kernel's state and need none.
    void collect(const Node* root, Stage& s, const Node* own) {
        std::set<const Node*> walked;
        std::vector<const Node*> stack{root};
        while (!stack.empty()) {
            const Node* n = stack.back();
            stack.pop_back();
            if (n->op == Op::Literal) continue;
            if (is_elementwise(n->op)) {
                if (!walked.insert(n).second) continue;
                for (auto in = n->inputs.rbegin(); in != n->inputs.rend(); ++in) stack.push_back(in->get());
                continue;
            }
            if (n->op == Op::Project && n->inputs[0].get() == own) continue;
            if (std::none_of(s.inputs.begin(), s.inputs.end(), [&](const Access& a) { return a.node == n; }))
                s.inputs.push_back(access(n));
        }
    }

    // An access for a non-inline node: a slice chain over an input or a buffer.
    Access access(const Node* n) {
        Access a;
        a.node = n;
        a.dtype = n->type().dtype;
        const Node* src = n;
        while (src->op == Op::Slice) {
            a.slices.push_back(src);
            src = src->inputs[0].get();
        }
        std::reverse(a.slices.begin(), a.slices.end());
        if (src->op == Op::Param)
            a.input = src->as<ParamAttr>().index;
        else
            a.buffer = buffer(src);
        return a;
    }

    // The buffer holding `n`, scheduling what writes it.
    int buffer(const Node* n) {
        if (auto it = buffer_of_.find(n); it != buffer_of_.end()) return it->second;
        int b = static_cast<int>(plan_.buffers.size());
        plan_.buffers.push_back({n});
        buffer_of_[n] = b;
        switch (n->op) {
            case Op::Project: {
                const Node* scan = n->inputs[0].get();
                auto it = scan_stage_.find(scan);
                SCANC_INTERNAL_CHECK(it != scan_stage_.end(), "scan read before it is planned");
                plan_.stages[it->second].outputs.push_back({n, Target{-1, b}});
                break;
            }
            case Op::Concat:
            case Op::Interleave:
                for (std::size_t k = 0; k < n->inputs.size(); ++k)
                    map_stage(n->inputs[k].get(), Target{-1, b, n, static_cast<int>(k)});
                break;
            default: map_stage(n, Target{-1, b}); break;
        }
        return b;
    }

    void map_stage(const Node* value, Target target) {
        Stage s;
        s.node = value;
        s.rank = static_cast<int>(value->type().shape.size());
        if (is_inline(value))
            collect(value, s, nullptr);
        else
            s.inputs.push_back(access(value));
        s.outputs.push_back({value, target});
        push(std::move(s));
    }

    Plan plan_;
    std::map<const Node*, int> position_;
    std::map<const Node*, int> scan_stage_;
    std::map<const Node*, int> buffer_of_;
};

}  // namespace

Plan make_plan(const ProgramRef& program) { return Planner(program).run(); }

bool invariant_along_scan(const Stage& s, const Access& a) {
    const int d = access_scan_dim(s, a);
    return d < 0 || a.node->type().shape[static_cast<std::size_t>(d)].constant() == std::optional<std::int64_t>(1);
}

Layout contiguous_layout(const Plan& plan) {
    Layout layout(plan.stages.size());
    for (std::size_t i = 0; i < plan.stages.size(); ++i) {
        const Stage& s = plan.stages[i];
        if (!s.is_scan) continue;
        for (const Access& a : s.inputs) {
            const int d = access_scan_dim(s, a);
            std::int64_t step = invariant_along_scan(s, a) ? 0 : static_cast<std::int64_t>(dtype_size(a.dtype));
            for (const Node* slice : a.slices)
                if (slice->as<SliceAttr>().dim == d) step *= slice->as<SliceAttr>().step;
            layout[i].in.push_back(step);
        }
        // A scan's outputs are whole results or buffers of its shape, allocated contiguous.
        for (const StageOutput& o : s.outputs)
            layout[i].out.push_back(static_cast<std::int64_t>(dtype_size(o.value->type().dtype)));
    }
    return layout;
}

}  // namespace scanc::cuda
