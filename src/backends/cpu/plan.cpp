// Cutting a program into stages (see plan.h for the rules).
#include "plan.h"

#include <algorithm>
#include <set>
#include <unordered_set>

namespace scanc::cpu {

namespace {

bool is_structural_data_op(Op op) {
    return op == Op::Slice || op == Op::Concat || op == Op::Interleave;
}

using NodeSet = std::unordered_set<const Node*>;

// The projections of scans that `n`'s inputs reach through inlined (non-materialized)
// elementwise nodes.
void reached_projects(const Node* n, const NodeSet& materialized, std::set<const Node*>& out,
                      NodeSet& seen) {
    for (auto& in : n->inputs) {
        const Node* x = in.get();
        if (materialized.count(x) || !seen.insert(x).second) continue;
        if (x->op == Op::Project) {
            out.insert(x);
        } else if (is_elementwise(x->op)) {
            reached_projects(x, materialized, out, seen);
        }
    }
}

// The materialized values a Fused stage reads: where its inlined DAGs stop.
void reached_values(const Node* n, const NodeSet& materialized, const NodeSet& produced,
                    std::set<const Node*>& out, NodeSet& seen) {
    for (auto& in : n->inputs) {
        const Node* x = in.get();
        if (!seen.insert(x).second) continue;
        if (materialized.count(x) && !produced.count(x)) {
            out.insert(x);
        } else if (is_elementwise(x->op)) {
            reached_values(x, materialized, produced, out, seen);
        }
    }
}

struct Cut {
    NodeSet materialized;
    std::unordered_map<const Node*, std::vector<const Node*>> epilogue;  // scan -> results
};

// Grows the materialized set until every elementwise value is either inlined into one stage's
// DAG or materialized, and assigns epilogues. `no_epilogue`: scans whose epilogue created a
// cycle between stages on an earlier attempt.
Cut cut(const Program& program, const std::vector<const Node*>& topo, const NodeSet& no_epilogue) {
    Cut c;
    for (auto& p : program.params) c.materialized.insert(p.get());
    for (auto& r : program.results) c.materialized.insert(r.get());
    for (const Node* n : topo) {
        if (!is_structural_data_op(n->op)) continue;
        c.materialized.insert(n);
        for (auto& in : n->inputs) c.materialized.insert(in.get());
    }
    for (bool changed = true; changed;) {
        changed = false;
        c.epilogue.clear();
        auto materialize = [&](const std::set<const Node*>& xs) {
            for (const Node* x : xs) changed |= c.materialized.insert(x).second;
        };
        for (const Node* n : topo) {
            std::set<const Node*> projects;
            NodeSet seen;
            if (n->op == Op::Scan) {
                // A prologue never reads another scan's output unmaterialized.
                reached_projects(n, c.materialized, projects, seen);
                materialize(projects);
            } else if (is_elementwise(n->op) && c.materialized.count(n)) {
                reached_projects(n, c.materialized, projects, seen);
                if (projects.empty()) continue;
                const Node* scan = (*projects.begin())->inputs[0].get();
                bool one_scan = std::all_of(projects.begin(), projects.end(), [&](const Node* p) {
                    return p->inputs[0].get() == scan;
                });
                if (one_scan && !no_epilogue.count(scan) &&
                    shapes_equal(n->type().shape, scan->types[0].shape)) {
                    c.epilogue[scan].push_back(n);
                } else {
                    materialize(projects);
                }
            }
        }
    }
    return c;
}

}  // namespace

Plan make_plan(const Program& program) {
    std::vector<const Node*> topo = topo_order(program.results);
    NodeSet no_epilogue;
    for (;;) {
        Cut c = cut(program, topo, no_epilogue);
        Plan plan;
        std::unordered_map<const Node*, int> value_of;
        auto add_value = [&](const Node* n) {
            auto [it, fresh] = value_of.emplace(n, static_cast<int>(plan.values.size()));
            if (fresh) plan.values.push_back(n);
            return it->second;
        };
        for (auto& p : program.params) add_value(p.get());
        plan.num_params = static_cast<int>(program.params.size());
        for (const Node* n : topo)
            if (c.materialized.count(n)) add_value(n);

        // One stage per scan, elementwise result and data-movement op.
        NodeSet in_epilogue;
        for (auto& [scan, results] : c.epilogue) in_epilogue.insert(results.begin(), results.end());
        std::vector<Stage> stages;
        std::vector<std::vector<const Node*>> stage_epilogue;
        for (const Node* n : topo) {
            Stage s;
            s.node = n;
            if (n->op == Op::Scan) {
                const auto& attr = n->as<ScanAttr>();
                s.has_scan = true;
                s.dim = attr.dim;
                s.reverse = attr.reverse;
                s.shape = n->types[0].shape;
                for (const Node* m : topo)
                    if (m->op == Op::Project && m->inputs[0].get() == n && c.materialized.count(m))
                        s.outputs.push_back(value_of.at(m));
                auto it = c.epilogue.find(n);
                std::vector<const Node*> epi = it == c.epilogue.end() ? std::vector<const Node*>{}
                                                                      : it->second;
                for (const Node* e : epi) s.outputs.push_back(value_of.at(e));
                stages.push_back(std::move(s));
                stage_epilogue.push_back(std::move(epi));
            } else if ((is_elementwise(n->op) || n->op == Op::Literal) && c.materialized.count(n) &&
                       !in_epilogue.count(n)) {
                s.shape = n->type().shape;
                s.dim = s.shape.empty() ? 0 : static_cast<int>(s.shape.size()) - 1;
                s.outputs.push_back(value_of.at(n));
                stages.push_back(std::move(s));
                stage_epilogue.push_back({});
            } else if (is_structural_data_op(n->op)) {
                s.kind = n->op == Op::Slice    ? Stage::Kind::Slice
                         : n->op == Op::Concat ? Stage::Kind::Concat
                                               : Stage::Kind::Interleave;
                for (auto& in : n->inputs) s.inputs.push_back(value_of.at(in.get()));
                s.outputs.push_back(value_of.at(n));
                stages.push_back(std::move(s));
                stage_epilogue.push_back({});
            }
        }
        for (auto& s : stages)
            if (s.kind == Stage::Kind::Fused) s.code = compile_stage(s, plan.values, value_of);

        // Order stages so every value is produced before it is read.
        std::vector<bool> ready(plan.values.size(), false), done(stages.size(), false);
        for (int i = 0; i < plan.num_params; ++i) ready[i] = true;
        for (std::size_t placed = 0; placed < stages.size();) {
            bool progress = false;
            for (std::size_t i = 0; i < stages.size(); ++i) {
                if (done[i]) continue;
                if (!std::all_of(stages[i].inputs.begin(), stages[i].inputs.end(),
                                 [&](int v) { return ready[v]; }))
                    continue;
                for (int v : stages[i].outputs) ready[v] = true;
                done[i] = true;
                plan.stages.push_back(std::move(stages[i]));
                ++placed;
                progress = true;
            }
            if (!progress) break;
        }
        if (plan.stages.size() == stages.size()) {
            for (auto& r : program.results) plan.results.push_back(value_of.at(r.get()));
            return plan;
        }
        // An epilogue read a value that needs this scan's own outputs first: unfuse and retry.
        bool grew = false;
        for (std::size_t i = 0; i < stages.size(); ++i)
            if (!done[i] && stages[i].has_scan && !stage_epilogue[i].empty())
                grew |= no_epilogue.insert(stages[i].node).second;
        SCANC_INTERNAL_CHECK(grew, "cpu plan: stages form a cycle");
    }
}

}  // namespace scanc::cpu
