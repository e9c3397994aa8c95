// The canonical printer. A value gets its own statement when it has a name hint, is used more
// than once, is a scan, or would nest too deeply; everything else is inlined with the fewest
// parentheses the precedence table allows. Since a printed name becomes the value's hint when
// parsed back, printing the parsed text makes the same choices: parse(print(p)) prints the same.
#include "scanc/text/printer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>
#include <unordered_set>

#include "parser_impl.h"

namespace scanc {

namespace {

using CombineNames = std::unordered_map<const Combine*, std::string>;

constexpr int kAtom = 100;           // names, calls, non-negative literals
constexpr int kMaxInlineHeight = 64;  // deeper expressions are split so printing never recurses far

int neg_precedence() { return op_info(Op::Neg).precedence; }

// Shortest text that reads back as the same double, always recognizably a float.
std::string format_float(double v) {
    if (std::isnan(v)) return std::signbit(v) ? "-nan" : "nan";
    if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
    char buf[64];
    for (int digits = 1; digits <= 17; ++digits) {
        std::snprintf(buf, sizeof buf, "%.*g", digits, v);
        if (std::strtod(buf, nullptr) == v) break;
    }
    std::string s = buf;
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return s;
}

std::string format_literal(const LiteralAttr& v) {
    return v.is_float ? format_float(v.f) : cat(v.i);
}

// A hint made into an identifier that parses as a name.
std::string sanitize(const std::string& hint) {
    if (hint.empty()) return hint;
    std::string s = hint;
    for (char& c : s)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
    if (std::isdigit(static_cast<unsigned char>(s[0]))) s.insert(0, 1, 'v');
    if (text::is_reserved(s)) s += "_";
    return s;
}

// Unique names within one scope: hints first, suffixed `_1`, `_2` on collision, invented
// `t0`, `t1` for the rest, never colliding with any hint.
class Namer {
public:
    void reserve(const std::string& hint) { hints_.insert(sanitize(hint)); }

    std::string take(const std::string& hint) {
        std::string base = sanitize(hint);
        if (!base.empty() && used_.insert(base).second) return base;
        // Counters continue where the last search stopped, so many equal hints stay linear.
        int& k = base.empty() ? invented_ : suffix_[base];
        for (;; ++k) {
            std::string candidate = base.empty() ? cat("t", k) : cat(base, "_", k + 1);
            if (!hints_.count(candidate) && used_.insert(candidate).second) return candidate;
        }
    }

private:
    std::unordered_set<std::string> hints_, used_;
    std::unordered_map<std::string, int> suffix_;
    int invented_ = 0;
};

std::string param_hint(const Node& p) {
    return p.name.empty() ? p.as<ParamAttr>().name : p.name;
}

// Prints the statements and the return of one body (a program's or a combine's).
class BodyPrinter {
public:
    BodyPrinter(const CombineNames& combines, std::span<const NodeRef> params,
                std::span<const NodeRef> results)
        : combines_(combines), results_(results), order_(topo_order(results)) {
        for (auto& r : results) ++uses_[r.get()];
        for (auto& r : results)
            if (r->op == Op::Scan) used_scans_.insert(r.get());
        for (const Node* n : order_)
            for (auto& in : n->inputs) {
                ++uses_[in.get()];
                if (in->op == Op::Scan && n->op != Op::Project) used_scans_.insert(in.get());
            }
        choose_statements();
        for (auto& p : params) namer_.reserve(param_hint(*p));
        for (const Node* n : order_) namer_.reserve(hint_of(n));
        for (auto& p : params) names_[p.get()] = namer_.take(param_hint(*p));
        name_statements();
    }

    std::string param_name(const NodeRef& p) const { return names_.at(p.get()); }

    std::string body() const {
        std::string out;
        for (const Node* n : order_) {
            if (n->op == Op::Scan) {
                out += "  " + scan_statement(*n) + "\n";
            } else if (statement_.count(n) && n->op != Op::Project && n->op != Op::Param) {
                out += cat("  ", names_.at(n), " = ", define(*n).first, "\n");
            }
        }
        out += "  return ";
        for (std::size_t i = 0; i < results_.size(); ++i)
            out += (i ? ", " : "") + ref(results_[i].get()).first;
        return out + "\n";
    }

private:
    using Text = std::pair<std::string, int>;  // text and the precedence it binds with

    std::string hint_of(const Node* n) const {
        if (n->op == Op::Scan) return "";  // its outputs' hints are reserved one by one
        if (n->op == Op::Param) return param_hint(*n);
        return statement_.count(n) ? n->name : "";
    }

    struct Output {
        std::vector<const Node*> projects;
        std::string hint;
    };

    void choose_statements() {
        std::unordered_map<const Node*, int> height;
        for (const Node* n : order_) {
            bool statement = false;
            switch (n->op) {
                case Op::Param: break;
                case Op::Scan:
                case Op::Project: statement = true; break;
                case Op::Literal: statement = !n->name.empty(); break;
                default: statement = !n->name.empty() || uses_[n] > 1;
            }
            int h = 0;
            if (!statement && n->op != Op::Param) {
                for (auto& in : n->inputs) h = std::max(h, height[in.get()]);
                statement = ++h > kMaxInlineHeight;
            }
            if (statement) {
                statement_.insert(n);
                h = 0;
            }
            height[n] = h;
            if (n->op == Op::Project) {
                Output& out = output(n->inputs[0].get(), n->as<ProjectAttr>().index);
                out.projects.push_back(n);
                if (out.hint.empty()) out.hint = n->name;
            }
        }
        // A single-output scan used directly stands for its first output.
        for (const Node* n : order_)
            if (used_scans_.count(n)) {
                Output& out = output(n, 0);
                out.projects.push_back(n);
                if (out.hint.empty()) out.hint = n->name;
            }
        for (auto& [scan, outs] : outputs_)
            for (auto& out : outs) namer_.reserve(out.hint);
    }

    Output& output(const Node* scan, int index) {
        auto& outs = outputs_[scan];
        if (outs.empty()) outs.resize(scan->as<ScanAttr>().num_leaves);
        return outs[index];
    }

    void name_statements() {
        for (const Node* n : order_) {
            if (n->op == Op::Scan) {
                for (auto& out : outputs_.at(n)) {
                    if (out.projects.empty()) continue;
                    std::string name = namer_.take(out.hint);
                    for (const Node* p : out.projects) names_[p] = name;
                }
            } else if (statement_.count(n) && n->op != Op::Project) {
                names_[n] = namer_.take(n->name);
            }
        }
    }

    std::string scan_statement(const Node& scan) const {
        const auto& a = scan.as<ScanAttr>();
        std::string targets;
        for (int i = 0; i < a.num_leaves; ++i) {
            const Output& out = outputs_.at(&scan)[i];
            targets += cat(i ? ", " : "", out.projects.empty() ? "_" : names_.at(out.projects[0]));
        }
        if (a.num_leaves > 1) targets = "(" + targets + ")";
        std::string leaves, captured;
        for (int i = 0; i < static_cast<int>(scan.inputs.size()); ++i) {
            std::string& list = i < a.num_leaves ? leaves : captured;
            list += (list.empty() ? "" : ", ") + ref(scan.inputs[i].get()).first;
        }
        auto name = combines_.find(a.combine.get());
        std::string s = cat(targets, " = scan ",
                            name != combines_.end() ? name->second : sanitize(a.combine->name),
                            "(", leaves, ") dim=", a.dim);
        if (a.reverse) s += " reverse";
        if (!captured.empty()) s += " with (" + captured + ")";
        return s;
    }

    // A use of `n`: its name, or its definition inlined.
    Text ref(const Node* n) const {
        if (auto it = names_.find(n); it != names_.end()) return {it->second, kAtom};
        return define(*n);
    }

    std::string args(const Node& n, std::size_t first = 0) const {
        std::string out;
        for (std::size_t i = first; i < n.inputs.size(); ++i)
            out += (i > first ? ", " : "") + ref(n.inputs[i].get()).first;
        return out;
    }

    static std::string wrap(const Text& t, bool parens) {
        return parens ? "(" + t.first + ")" : t.first;
    }

    Text define(const Node& n) const {
        const OpInfo& info = op_info(n.op);
        switch (n.op) {
            case Op::Literal: {
                std::string s = format_literal(n.as<LiteralAttr>());
                return {s, s[0] == '-' ? neg_precedence() : kAtom};
            }
            case Op::Slice: {
                const auto& a = n.as<SliceAttr>();
                std::string step = a.step == 1 ? "" : cat(", ", a.step);
                return {cat("slice(", args(n), ", ", a.dim, ", ", a.start.str(), ", ",
                            a.stop.str(), step, ")"),
                        kAtom};
            }
            case Op::Concat:
                return {cat("concat(", n.as<ConcatAttr>().dim, ", ", args(n), ")"), kAtom};
            case Op::Interleave:
                return {cat("interleave(", n.as<InterleaveAttr>().dim, ", ", args(n), ")"), kAtom};
            case Op::Cast: return {cat(dtype_name(n.as<CastAttr>().to), "(", args(n), ")"), kAtom};
            default: break;
        }
        SCANC_INTERNAL_CHECK(is_elementwise(n.op), "cannot print ", n.op, " inline");
        if (info.form == OpForm::Function) return {cat(info.spelling, "(", args(n), ")"), kAtom};
        if (info.form == OpForm::Prefix) {
            const Node* x = n.inputs[0].get();
            Text t = ref(x);
            // `-(2)` keeps a negation of a literal from folding into the literal when read back.
            bool parens = n.op == Op::Neg ? t.second <= info.precedence ||
                                                (x->op == Op::Literal && !names_.count(x))
                                          : t.second < info.precedence;
            std::string space = n.op == Op::Not ? " " : "";
            return {cat(info.spelling, space, wrap(t, parens)), info.precedence};
        }
        // Infix: left-associative; comparisons do not chain, so they bracket both sides.
        Text l = ref(n.inputs[0].get()), r = ref(n.inputs[1].get());
        int p = info.precedence;
        bool left_parens = is_comparison(n.op) ? l.second <= p : l.second < p;
        return {cat(wrap(l, left_parens), " ", info.spelling, " ", wrap(r, r.second <= p)), p};
    }

    const CombineNames& combines_;
    std::span<const NodeRef> results_;
    std::vector<const Node*> order_;
    std::unordered_map<const Node*, int> uses_;
    std::unordered_set<const Node*> used_scans_;  // used other than through a Project
    std::unordered_set<const Node*> statement_;
    std::unordered_map<const Node*, std::vector<Output>> outputs_;
    std::unordered_map<const Node*, std::string> names_;
    Namer namer_;
};

std::string combine_text(const Combine& c, const std::string& name) {
    std::vector<NodeRef> params = c.left;
    params.insert(params.end(), c.right.begin(), c.right.end());
    params.insert(params.end(), c.captured.begin(), c.captured.end());
    static const CombineNames kNone;  // a combine holds no scans
    BodyPrinter body(kNone, params, c.results);
    auto list = [&](const std::vector<NodeRef>& ps) {
        std::string out;
        for (auto& p : ps) out += (out.empty() ? "" : ", ") + body.param_name(p);
        return out;
    };
    std::string captured = c.captured.empty() ? "" : "; " + list(c.captured);
    return cat("combine ", name, "(", list(c.left), " | ", list(c.right), captured, ") {\n",
               body.body(), "}\n");
}

std::string program_text(const Program& p, const std::string& name, const CombineNames& combines) {
    BodyPrinter body(combines, p.params, p.results);
    std::unordered_set<const Symbol*> bound_shown;
    std::string params;
    for (auto& param : p.params) {
        const Type& t = param->type();
        std::string dims;
        for (auto& d : t.shape) {
            std::string dim = d.str();
            if (SymbolRef s = d.as_symbol(); s && s->bound && bound_shown.insert(s.get()).second)
                dim += cat("<=", *s->bound);
            dims += (dims.empty() ? "" : ", ") + dim;
        }
        params += cat(params.empty() ? "" : ", ", body.param_name(param), ": ",
                      dtype_name(t.dtype), "[", dims, "]");
    }
    return cat("program ", name, "(", params, ") {\n", body.body(), "}\n");
}

}  // namespace

std::string print_combine(const Combine& combine) {
    return combine_text(combine, sanitize(combine.name));
}

std::string print_program(const Program& program) {
    return program_text(program, sanitize(program.name), {});
}

std::string print_module(const Module& module) {
    // Combines in module order, then any a program uses that the module does not list.
    std::vector<const Combine*> combines;
    for (auto& c : module.combines) combines.push_back(c.get());
    for (auto& p : module.programs)
        for (const Node* n : topo_order(p->results))
            if (n->op == Op::Scan) {
                const Combine* c = n->as<ScanAttr>().combine.get();
                if (std::find(combines.begin(), combines.end(), c) == combines.end())
                    combines.push_back(c);
            }
    CombineNames names;
    Namer namer;
    for (const Combine* c : combines) namer.reserve(c->name);
    for (const Combine* c : combines) names[c] = namer.take(c->name);
    std::vector<std::string> definitions;
    for (const Combine* c : combines) definitions.push_back(combine_text(*c, names[c]));
    Namer program_names;  // duplicate program names are renamed so the text parses back
    for (auto& p : module.programs)
        definitions.push_back(program_text(*p, program_names.take(p->name), names));
    std::string out;
    for (auto& d : definitions) {
        if (!out.empty()) out += '\n';
        out += d;
    }
    return out;
}

}  // namespace scanc
