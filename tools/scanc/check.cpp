// `scanc check`: for every program of a file, its types and shapes, and for every scan the
// leaves' types, whether the combine is associative (randomized, with a counterexample when it
// is not) and the recognized pattern with its identity. Exit code 2 if anything is wrong.
#include <iostream>

#include "cli.h"

namespace scanc::cli {
namespace {

struct CheckArgs {
    std::string file;
};

std::string types_of(std::span<const NodeRef> nodes) {
    std::string out;
    for (auto& n : nodes) out += (out.empty() ? "" : ", ") + n->type().str();
    return out;
}

std::string signature(const Program& program) {
    std::string params;
    for (auto& p : program.params) params += (params.empty() ? "" : ", ") + p->name + ": " +
                                              p->type().str();
    std::string sizes;
    for (auto& s : size_symbols(program))
        sizes += (sizes.empty() ? "" : ", ") + s->name +
                 (s->bound ? cat(" <= ", *s->bound) : std::string());
    return cat("program ", program.name, "(", params, ") -> ", types_of(program.results),
               sizes.empty() ? "" : "\n  sizes: " + sizes);
}

std::string values_str(const std::vector<Scalar>& values) {
    std::string out;
    for (auto& v : values) {
        std::string s = v.dtype == DType::Bool  ? (v.i ? "true" : "false")
                         : is_float(v.dtype)    ? cat(v.f)
                                                : cat(v.i);
        out += (out.empty() ? "" : ", ") + s;
    }
    return values.size() == 1 ? out : "(" + out + ")";
}

// Reports one scan; returns false if its combine is not associative.
bool check_scan(const Node& scan) {
    const auto& attr = scan.as<ScanAttr>();
    const Combine& combine = *attr.combine;
    std::span<const NodeRef> inputs = scan.inputs;
    auto leaves = inputs.first(attr.num_leaves), captured = inputs.subspan(attr.num_leaves);
    std::vector<DType> leaf_dtypes, captured_dtypes;
    for (auto& l : leaves) leaf_dtypes.push_back(l->type().dtype);
    for (auto& c : captured) captured_dtypes.push_back(c->type().dtype);

    std::cout << "  scan " << combine.name << " at " << scan.loc.str() << ": leaves ("
              << types_of(leaves) << ") dim=" << attr.dim << (attr.reverse ? " reverse" : "");
    if (!captured.empty()) std::cout << " with (" << types_of(captured) << ")";
    std::cout << "\n";

    AssociativityReport report = check_associative(combine, leaf_dtypes, captured_dtypes);
    if (!report.associative) {
        std::cerr << scan.loc.str() << ": error: combine `" << combine.name
                  << "` is not associative: " << report.counterexample << "\n";
        return false;
    }
    std::cout << "    associative (" << report.trials << " random trials)\n";
    Recognized r = recognize(combine);
    if (r.pattern == Pattern::Unknown) {
        std::cout << "    pattern: none recognized (generic combine)\n";
    } else {
        std::cout << "    pattern: " << r.description
                  << (r.commutative ? ", commutative" : ", not commutative");
        if (auto id = identity(r, leaf_dtypes)) std::cout << ", identity " << values_str(*id);
        std::cout << "\n";
    }
    return true;
}

// Reports one program; returns the number of problems found.
int check_program(const Program& program) {
    std::cout << signature(program) << "\n";
    try {
        verify(program);
    } catch (const CompileError& e) {
        std::cerr << e.what() << "\n";
        return 1;
    }
    int problems = 0;
    for (const Node* node : topo_order(program.results))
        if (node->op == Op::Scan && !check_scan(*node)) ++problems;
    return problems;
}

int check(const CheckArgs& args) {
    Module module = load_module(args.file);
    int problems = 0;
    for (auto& program : module.programs) problems += check_program(*program);
    if (module.programs.empty())
        std::cout << args.file << ": " << module.combines.size() << " combine(s), no program\n";
    if (problems > 0) {
        std::cerr << args.file << ": " << problems << " problem" << (problems == 1 ? "" : "s")
                  << " found\n";
        return 2;
    }
    return 0;
}

}  // namespace

Command add_check_command(CLI::App& parent) {
    auto args = std::make_shared<CheckArgs>();
    CLI::App* app = parent.add_subcommand(
        "check", "Check types, shapes, associativity and patterns of every program.");
    app->footer(
        "For every scan: the leaves' types, associativity (randomized; a counterexample when it\n"
        "fails) and the recognized pattern with its identity. Exit code 2 if any problem.");
    app->add_option("file", args->file, "the .scan file")->required();
    return {app, [args] { return check(*args); }};
}

}  // namespace scanc::cli
