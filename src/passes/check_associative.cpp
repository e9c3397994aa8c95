// check_associative: a randomized test of (a∘b)∘c == a∘(b∘c) with the shared scalar semantics
// (eval_combine). It must never reject a combine a user would rightly call associative, so:
//   - floats compare with a tolerance relative to every magnitude involved (the inputs, both
//     inner results and both outer results), which absorbs cancellation;
//   - a float trial that still differs is re-run with every float widened to f64 (same input
//     values); only a difference that survives widening is a counterexample, since rounding
//     error shrinks by ~1e9 there and a real non-associativity does not;
//   - a trial that differs because one side overflowed to inf/NaN (from finite inputs) is skipped,
//     and so is one whose float results alone differ after integers of the full range (wrapped)
//     went in: as floats they stand for nothing a scan meets.
// Inputs are deterministic (seeded, own generator) so a report is reproducible everywhere.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <random>
#include <set>
#include <utility>

#include "scanc/passes/passes.h"

namespace scanc {

namespace {

double tolerance(DType t) {
    switch (t) {
        case DType::F16:
        case DType::BF16: return 1e-2;
        case DType::F32: return 1e-4;
        case DType::F64: return 1e-10;
        default: return 0;  // integers and bool compare exactly
    }
}

// Where values of one trial come from. Small integers come first so that the first
// counterexample found is one a person can check by hand.
enum class Range { SmallInt, Unit, Magnitude, Mixed };

class Sampler {
public:
    explicit Sampler(std::uint64_t seed) : rng_(seed) {}

    Range range_for_trial(int trial, int trials) {
        if (trial < trials / 4) return Range::SmallInt;
        return static_cast<Range>(below(4));
    }

    Scalar sample(DType t, Range range) {
        if (range == Range::Mixed) range = static_cast<Range>(below(3));
        if (t == DType::Bool) return Scalar::of_int(t, static_cast<std::int64_t>(below(2)));
        if (!is_float(t)) {
            if (range == Range::SmallInt) return Scalar::of_int(t, small_int());
            wide_ints_ = true;
            return Scalar::of_int(t, static_cast<std::int64_t>(rng_()));  // full range, wraps
        }
        if (below(16) == 0) return Scalar::of_double(t, below(2) ? 0.0 : -0.0);
        switch (range) {
            case Range::SmallInt: return Scalar::of_double(t, static_cast<double>(small_int()));
            case Range::Unit: return Scalar::of_double(t, 4 * unit() - 2);
            default: {  // sign * 10^[-3, 3]
                double v = std::pow(10.0, 6 * unit() - 3);
                return Scalar::of_double(t, below(2) ? v : -v);
            }
        }
    }

    // Whether integers of the full range (which wrap) were drawn since the last call.
    bool took_wide_ints() { return std::exchange(wide_ints_, false); }

private:
    std::uint64_t below(std::uint64_t n) { return rng_() % n; }
    double unit() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }  // [0, 1)
    std::int64_t small_int() { return static_cast<std::int64_t>(below(17)) - 8; }

    std::mt19937_64 rng_;
    bool wide_ints_ = false;
};

using Values = std::vector<Scalar>;

// A combine's results as a scan stores them: f16/bf16 carry f32 precision inside a combine
// and round when written, so a parallel scan's partial results are rounded (and may overflow).
Values stored(Values vs) {
    for (Scalar& v : vs)
        if (v.dtype == DType::F16 || v.dtype == DType::BF16) v = Scalar::of_double(v.dtype, v.f);
    return vs;
}

// One trial's inputs and the four combine results.
struct Trial {
    Values a, b, c, captured;
    // Integers of the full range: they wrap, which integer combines survive (modular
    // arithmetic is associative), but turned into floats (a count in a running mean) they
    // stand for no value a scan meets, so a float result that differs proves nothing.
    bool wide_ints = false;
    Values ab, bc, left_first, right_first;  // a∘b, b∘c, (a∘b)∘c, a∘(b∘c)

    void run(CombineEvaluator& f) {
        auto apply = [&](const Values& l, const Values& r) {
            Values out(l.size());
            f.eval(l, r, captured, out);
            return stored(std::move(out));
        };
        ab = apply(a, b);
        bc = apply(b, c);
        left_first = apply(ab, c);
        right_first = apply(a, bc);
    }
};

enum class Verdict { Agree, Differ, Overflow };

double magnitude(const Values& vs) {
    double sum = 0;
    for (const Scalar& v : vs)
        if (is_float(v.dtype) && std::isfinite(v.f)) sum += std::fabs(v.f);
    return sum;
}

bool any_non_finite(const Values& vs) {
    for (const Scalar& v : vs)
        if (is_float(v.dtype) && !std::isfinite(v.f)) return true;
    return false;
}

// Float results compare at the tolerance of their own dtype or of the least precise float the
// combine computes in (`floor`), whichever is looser: a combine of f64 leaves that divides in f32
// (torch's true division of integer counts, in its default dtype) rounds at f32.
Verdict compare(const Trial& t, double floor) {
    double scale = magnitude(t.a) + magnitude(t.b) + magnitude(t.c) + magnitude(t.ab) +
                   magnitude(t.bc);
    bool differ_int = false, differ_float = false;
    for (std::size_t i = 0; i < t.left_first.size(); ++i) {
        const Scalar& x = t.left_first[i];
        const Scalar& y = t.right_first[i];
        if (!is_float(x.dtype)) {
            differ_int = differ_int || x.i != y.i;
        } else if (std::isnan(x.f) && std::isnan(y.f)) {
            continue;
        } else if (x.f != y.f) {
            double bound = std::max(tolerance(x.dtype), floor) * (std::fabs(x.f) + std::fabs(y.f) + scale);
            differ_float = differ_float || !(std::fabs(x.f - y.f) <= bound);
        }
    }
    if (!differ_int && !differ_float) return Verdict::Agree;
    bool overflow = any_non_finite(t.ab) || any_non_finite(t.bc) ||
                    any_non_finite(t.left_first) || any_non_finite(t.right_first) ||
                    (t.wide_ints && !differ_int);
    return overflow ? Verdict::Overflow : Verdict::Differ;
}

// The tolerance of the least precise float any node of the combine computes in (0: none).
double coarsest_tolerance(const CombineTypes& types) {
    double most = 0;
    for (const auto& [node, type] : types.of)
        if (is_float(type.dtype) && !type.weak) most = std::max(most, tolerance(type.dtype));
    return most;
}

DType widened(DType t) { return is_float(t) ? DType::F64 : t; }

Values widen(const Values& vs) {
    Values out;
    for (const Scalar& v : vs)
        out.push_back(is_float(v.dtype) ? Scalar::of_double(DType::F64, v.f) : v);
    return out;
}

// The same inputs as `t`, floats as f64; not yet run.
Trial widen(const Trial& t) {
    Trial w;
    w.wide_ints = t.wide_ints;
    w.a = widen(t.a);
    w.b = widen(t.b);
    w.c = widen(t.c);
    w.captured = widen(t.captured);
    return w;
}

// The combine typed with every float dtype widened to f64, or nullopt when that is impossible
// (a cast inside pins a narrow dtype) or pointless (everything is f64 or exact already).
std::optional<CombineEvaluator> widened_evaluator(const Combine& combine, std::span<const DType> leaves,
                                          std::span<const DType> captured) {
    std::vector<DType> wide_leaves, wide_captured;
    bool changed = false;
    for (DType t : leaves) {
        wide_leaves.push_back(widened(t));
        changed = changed || widened(t) != t;
    }
    for (DType t : captured) {
        wide_captured.push_back(widened(t));
        changed = changed || widened(t) != t;
    }
    if (!changed) return std::nullopt;
    try {
        return CombineEvaluator(combine,
                                instantiate_combine(combine, wide_leaves, wide_captured, {}));
    } catch (const CompileError&) {
        return std::nullopt;
    }
}

std::string show(const Scalar& v) {
    if (v.dtype == DType::Bool) return v.i ? "true" : "false";
    if (!is_float(v.dtype)) return std::to_string(v.i);
    char buf[64];
    char* end = buf + sizeof buf;
    // Shortest text that reads back as the same value of its dtype.
    auto res = v.dtype == DType::F64 ? std::to_chars(buf, end, v.f)
                                     : std::to_chars(buf, end, static_cast<float>(v.f));
    return std::string(buf, res.ptr);
}

std::string show(const Values& vs) {
    if (vs.size() == 1) return show(vs[0]);
    std::string out = "(";
    for (std::size_t i = 0; i < vs.size(); ++i) out += (i ? ", " : "") + show(vs[i]);
    return out + ")";
}

std::string counterexample(const Combine& combine, const Trial& t) {
    std::string captured;
    if (!t.captured.empty()) {
        std::string names;
        for (std::size_t i = 0; i < combine.captured.size(); ++i)
            names += (i ? ", " : "") + combine.captured[i]->name;
        captured = t.captured.size() == 1 ? cat(", with ", names, " = ", show(t.captured))
                                          : cat(", with (", names, ") = ", show(t.captured));
    }
    return cat("a = ", show(t.a), ", b = ", show(t.b), ", c = ", show(t.c), captured,
               ": (a∘b)∘c = ", show(t.left_first), " (a∘b = ", show(t.ab), ") but a∘(b∘c) = ",
               show(t.right_first), " (b∘c = ", show(t.bc), ")");
}

DType strong_dtype(const Type& t) {  // as make_scan types a literal-derived operand
    if (!t.weak) return t.dtype;
    return t.dtype == DType::F64 ? DType::F32 : DType::I64;
}

}  // namespace

AssociativityReport check_associative(const Combine& combine, std::span<const DType> leaves,
                                      std::span<const DType> captured, int trials,
                                      std::uint64_t seed) {
    const CombineTypes types = instantiate_combine(combine, leaves, captured, combine.loc);
    CombineEvaluator f(combine, types);
    const double floor = coarsest_tolerance(types);
    // Built on the first float difference, if ever.
    std::optional<std::optional<CombineEvaluator>> wide;
    Sampler sampler(seed);
    AssociativityReport report;
    for (int k = 0; k < trials; ++k) {
        Range range = sampler.range_for_trial(k, trials);
        Trial t;
        for (DType d : leaves) t.a.push_back(sampler.sample(d, range));
        for (DType d : leaves) t.b.push_back(sampler.sample(d, range));
        for (DType d : leaves) t.c.push_back(sampler.sample(d, range));
        for (DType d : captured) t.captured.push_back(sampler.sample(d, range));
        t.wide_ints = sampler.took_wide_ints();
        t.run(f);
        ++report.trials;
        Verdict v = compare(t, floor);
        if (v == Verdict::Differ) {
            if (!wide) wide = widened_evaluator(combine, leaves, captured);
            if (*wide) {
                Trial w = widen(t);
                w.run(**wide);
                v = compare(w, 0);
                if (v == Verdict::Agree) ++report.rounding_only;
            }
        }
        if (v == Verdict::Overflow) ++report.skipped;
        if (v == Verdict::Differ) {
            report.associative = false;
            report.counterexample = counterexample(combine, t);
            break;
        }
    }
    return report;
}

void check_program_associative(const Program& program) {
    std::set<std::pair<const Combine*, std::vector<DType>>> done;  // each instantiation once
    for (const Node* n : topo_order(program.results)) {
        if (n->op != Op::Scan) continue;
        const auto& attr = n->as<ScanAttr>();
        // A recognized pattern is associative by construction.
        if (recognize(*attr.combine).pattern != Pattern::Unknown) continue;
        std::vector<DType> leaves, captured, key;
        for (const Type& t : n->types) leaves.push_back(t.dtype);
        for (std::size_t i = attr.num_leaves; i < n->inputs.size(); ++i)
            captured.push_back(strong_dtype(n->inputs[i]->type()));
        key = leaves;
        key.insert(key.end(), captured.begin(), captured.end());
        if (!done.emplace(attr.combine.get(), key).second) continue;
        AssociativityReport r = check_associative(*attr.combine, leaves, captured);
        if (!r.associative)
            user_error(n->loc, cat("combine `", attr.combine->name, "` is not associative: ",
                                   r.counterexample));
    }
}

}  // namespace scanc
