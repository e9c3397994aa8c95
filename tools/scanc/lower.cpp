// `scanc lower`: lowers every scan of a program into slice/concat/elementwise ops (DESIGN §6)
// and writes the result as .scan text, an ONNX model, or a Graphviz drawing; --stats prints what
// each scan became, the op census and the level count.
#include <fstream>
#include <iostream>
#include <set>

#include "cli.h"
#ifdef SCANC_HAVE_ONNX
#include "scanc/backends/onnx.h"
#endif

namespace scanc::cli {
namespace {

struct LowerArgs {
    std::string file, program, algorithm = "auto", emit = "scan", output;
    std::vector<std::string> bounds, sizes;
    bool stats = false, native_cumsum = false;
};

std::string dot_label(const Node& n) {
    std::string op(op_info(n.op).name);
    if (n.op == Op::Param) op = n.as<ParamAttr>().name;
    if (n.op == Op::Literal) {
        const auto& l = n.as<LiteralAttr>();
        op = l.is_float ? cat(l.f) : cat(l.i);
    }
    if (n.op == Op::Slice) {
        const auto& a = n.as<SliceAttr>();
        op = cat("slice d", a.dim, " [", a.start.brief(), ":", a.stop.brief(),
                 a.step != 1 ? cat(":", a.step) : "", "]");
    }
    if (n.op == Op::Cast) op = cat(dtype_name(n.as<CastAttr>().to));
    return n.types.size() == 1 ? cat(op, "\\n", n.type().str()) : op;
}

// Graphviz of the program DAG: params as ellipses, structural ops as boxes, results bold.
std::string program_dot(const Program& p) {
    std::ostringstream out;
    out << "digraph \"" << p.name << "\" {\n  rankdir=TB;\n  node [fontname=\"Helvetica\"];\n";
    std::map<const Node*, int> id;
    std::set<const Node*> results;
    for (auto& r : p.results) results.insert(r.get());
    for (const Node* n : topo_order(p.results)) {
        int i = static_cast<int>(id.size());
        id[n] = i;
        std::string shape = n->op == Op::Param     ? "ellipse"
                            : is_elementwise(n->op) ? "oval"
                                                    : "box";
        out << "  n" << i << " [label=\"" << dot_label(*n) << "\", shape=" << shape
            << (results.count(n) ? ", penwidth=3" : "")
            << (is_elementwise(n->op) ? "" : ", style=filled, fillcolor=\"#e8eef7\"") << "];\n";
        for (auto& in : n->inputs) out << "  n" << id.at(in.get()) << " -> n" << i << ";\n";
    }
    out << "}\n";
    return out.str();
}

void print_stats(std::ostream& out, const Program& lowered, const LoweringReport& report) {
    out << "program " << lowered.name << ": " << report.scans.size() << " scan"
        << (report.scans.size() == 1 ? "" : "s") << " lowered\n";
    int levels = 0;
    for (auto& s : report.scans) {
        out << "  scan at " << s.where << ": ";
        if (s.native_cumsum) {
            out << "kept for native CumSum (pure sum)\n";
            continue;
        }
        out << algorithm_name(s.algorithm);
        if (!s.reason.empty()) out << " (auto: " << s.reason << ")";
        out << ", S = " << s.length;
        if (s.length != cat(s.max_length)) out << " <= " << s.max_length;
        out << ", levels " << s.levels << ", combine instances " << s.combine_instances
            << ", combine applications " << s.applications << "\n";
        levels += s.levels;
    }
    int total = 0;
    std::string census;
    for (auto& [op, count] : op_census(lowered)) {
        census += cat(census.empty() ? "" : ", ", op, " ", count);
        total += count;
    }
    out << "ops: " << census << " (" << total << " nodes)\n";
    out << "levels: " << levels << "\n";
}

int run_lower(const LowerArgs& args) {
    Module module = load_module(args.file);
    ProgramRef program = module.program(args.program);
    LowerOptions options;
    options.algorithm = parse_algorithm(args.algorithm);
    options.native_cumsum = args.native_cumsum;
    const auto bounds = parse_sizes(args.bounds, "--bound");
    const auto sizes = parse_sizes(args.sizes, "--size");
    options.bounds.assign(bounds.begin(), bounds.end());
    options.sizes.assign(sizes.begin(), sizes.end());
    LoweringReport report;
    ProgramRef lowered = lower_scans(*program, options, &report);
    check_lowered(*lowered, args.native_cumsum, program.get());

    std::string text;
    if (args.emit == "scan") {
        Module out;
        std::set<const Combine*> kept;  // combines of pure sums kept for CumSum
        for (const Node* n : topo_order(lowered->results))
            if (n->op == Op::Scan && kept.insert(n->as<ScanAttr>().combine.get()).second)
                out.combines.push_back(n->as<ScanAttr>().combine);
        out.programs.push_back(lowered);
        text = print_module(out);
    } else if (args.emit == "dot") {
        text = program_dot(*lowered);
    } else {
#ifdef SCANC_HAVE_ONNX
        if (args.output.empty() || args.output == "-")
            user_error({}, "--emit onnx writes a binary model: give the file with -o OUT.onnx");
        text = export_onnx(*lowered);
#else
        user_error({}, "this scanc was built without ONNX export (SCANC_ENABLE_ONNX=OFF or the "
                       "ONNX protos were not found); --emit scan or dot work");
#endif
    }
    bool to_stdout = args.output.empty() || args.output == "-";
    if (to_stdout) {
        std::cout << text;
    } else {
        write_file(args.output, text);
    }
    if (args.stats) print_stats(to_stdout ? std::cerr : std::cout, *lowered, report);
    return 0;
}

}  // namespace

Command add_lower_command(CLI::App& parent) {
    auto args = std::make_shared<LowerArgs>();
    CLI::App* app = parent.add_subcommand(
        "lower", "Lower scans into slice/concat/elementwise ops; emit .scan text, ONNX or dot.");
    app->add_option("file", args->file, "the .scan file")->required();
    app->add_option("--program", args->program, "which program (needed if the file has several)");
    app->add_option("--algorithm", args->algorithm, "hillis-steele | work-efficient | auto")
        ->check(CLI::IsMember({"hillis-steele", "work-efficient", "auto"}))
        ->capture_default_str();
    app->add_option("--bound", args->bounds,
                    "SYM=N[,SYM=N...]: lower for every size of SYM up to N, or up to the file's own bound "
                    "where that is smaller (repeatable)");
    app->add_option("--size", args->sizes,
                    "SYM=N[,SYM=N...]: lower for exactly this size of SYM (static; repeatable)");
    app->add_option("--emit", args->emit, "scan | onnx | dot")
        ->check(CLI::IsMember({"scan", "onnx", "dot"}))
        ->capture_default_str();
    app->add_option("-o,--output", args->output, "output file (default: stdout for scan/dot)");
    app->add_flag("--stats", args->stats, "print the op census and levels");
    app->add_flag("--native-cumsum", args->native_cumsum,
                  "keep pure sums as scans, exported as ONNX CumSum");
    return {app, [args] { return run_lower(*args); }};
}

}  // namespace scanc::cli
