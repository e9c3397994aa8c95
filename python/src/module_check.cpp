#include "module_check.h"

#include "scanc/passes/passes.h"

namespace scanc::python {

std::vector<ScanReport> check_module(const Module& module) {
    std::vector<ScanReport> reports;
    for (const ProgramRef& program : module.programs) {
        verify(*program);
        check_program_associative(*program);
        for (const Node* node : topo_order(program->results)) {
            if (node->op != Op::Scan) continue;
            const auto& attr = node->as<ScanAttr>();
            std::vector<DType> leaves, captured;
            for (int i = 0; i < static_cast<int>(node->inputs.size()); ++i)
                (i < attr.num_leaves ? leaves : captured).push_back(node->inputs[i]->type().dtype);
            AssociativityReport assoc = check_associative(*attr.combine, leaves, captured);
            Recognized rec = recognize(*attr.combine);
            reports.push_back({program->name, attr.combine->name, attr.dim, attr.reverse,
                               assoc.trials,
                               rec.pattern == Pattern::Unknown ? "unknown" : rec.description,
                               node->loc.str()});
        }
    }
    return reports;
}

}  // namespace scanc::python
