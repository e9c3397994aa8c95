#include "scanc/ir/node.h"

#include <unordered_set>

#include "free_in_turn.h"

namespace scanc {

std::string Type::str() const { return cat(weak ? "weak " : "", dtype_name(dtype), shape_str(shape)); }

Node::~Node() {
    free_in_turn(*this, [](Node& n, auto take) {
        for (NodeRef& input : n.inputs) take(input);
    });
}

const Type& Node::type() const {
    SCANC_INTERNAL_CHECK(types.size() == 1, "node ", op, " has ", types.size(), " types");
    return types[0];
}

CombineRef Module::find_combine(std::string_view name) const {
    for (auto& c : combines)
        if (c->name == name) return c;
    return nullptr;
}

ProgramRef Module::find_program(std::string_view name) const {
    for (auto& p : programs)
        if (p->name == name) return p;
    return nullptr;
}

ProgramRef Module::program(std::string_view name) const {
    if (name.empty() && programs.size() == 1) return programs[0];
    if (auto p = name.empty() ? nullptr : find_program(name)) return p;
    std::string names;
    for (auto& p : programs) names += (names.empty() ? "" : ", ") + p->name;
    // The file, where its text said (a module built by hand has none).
    const std::string file_name =
        !programs.empty() ? programs[0]->loc.file : !combines.empty() ? combines[0]->loc.file : "";
    const SourceLoc file{file_name};
    if (!name.empty())
        user_error(file, cat("no program named `", name, "`; the file defines: ", names.empty() ? "none" : names));
    if (programs.empty()) user_error(file, "the file defines no program (only combines)");
    user_error(file, cat("the file defines several programs (", names,
                         "); name the one to use (--program NAME on the command line)"));
}

std::vector<const Node*> topo_order(std::span<const NodeRef> roots) {
    std::vector<const Node*> order;
    std::unordered_set<const Node*> seen;
    // Iterative post-order: deep combine chains must not overflow the stack.
    std::vector<std::pair<const Node*, std::size_t>> stack;
    for (auto& root : roots) {
        if (!root || seen.count(root.get())) continue;
        stack.push_back({root.get(), 0});
        seen.insert(root.get());
        while (!stack.empty()) {
            auto& [node, next] = stack.back();
            if (next < node->inputs.size()) {
                const Node* in = node->inputs[next++].get();
                if (seen.insert(in).second) stack.push_back({in, 0});
            } else {
                order.push_back(node);
                stack.pop_back();
            }
        }
    }
    return order;
}

}  // namespace scanc
