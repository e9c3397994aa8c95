#include "scanc/ir/size.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "scanc/error.h"

namespace scanc {

enum class TermKind { Symbol, Min, Max, FloorDiv };

namespace {
// Interval [lo, hi] of a size with every symbol in [0, bound]. nullopt = unbounded.
struct Range {
    std::optional<std::int64_t> lo, hi;
};
}  // namespace

struct Size::Term {
    TermKind kind;
    SymbolRef symbol;         // Symbol
    std::vector<Size> args;   // Min, Max: two (sorted); FloorDiv: one
    std::int64_t divisor = 1;  // FloorDiv
    // The term's range, set where it is made (a term never changes): a size that nests its
    // length in min/max terms (a chain of slices, each of the one before) needs the ranges of
    // every term below at each new one, and walking them anew took time quadratic in the chain.
    Range range;
};

namespace {

int compare_sizes(const Size& a, const Size& b);

// A walk's memo on its thread, shared by the walk's nested calls: each call holds it open
// (OutermostMemo) and the outermost one's end clears it, so the memo lives as long as that call
// (its buckets stay allocated for the next walk).
template <class Memo> struct WalkMemo {
    Memo memo;
    int open = 0;
};
template <class Memo> class OutermostMemo {
public:
    explicit OutermostMemo(WalkMemo<Memo>& walk) : walk_(walk) { ++walk_.open; }
    ~OutermostMemo() {
        if (--walk_.open == 0) walk_.memo.clear();
    }
    OutermostMemo(const OutermostMemo&) = delete;
    OutermostMemo& operator=(const OutermostMemo&) = delete;

private:
    WalkMemo<Memo>& walk_;
};

struct PairHash {
    std::size_t operator()(const std::pair<const void*, const void*>& p) const {
        return std::hash<const void*>()(p.first) * 31 + std::hash<const void*>()(p.second);
    }
};
// Orders of the pairs of terms compared during one outermost compare_terms: two equal sizes
// built apart share few terms, and a nested pair compared anew at each occurrence takes time
// exponential in the nesting.
using CompareMemo = std::unordered_map<std::pair<const void*, const void*>, int, PairHash>;
thread_local WalkMemo<CompareMemo> compare_memo;

int compare_terms(const Size::Term& a, const Size::Term& b) {
    if (&a == &b) return 0;  // one shared term (sizes share their subterms)
    if (a.kind != b.kind) return a.kind < b.kind ? -1 : 1;
    if (a.kind == TermKind::Symbol) {
        if (a.symbol->id != b.symbol->id) return a.symbol->id < b.symbol->id ? -1 : 1;
        return 0;
    }
    if (a.divisor != b.divisor) return a.divisor < b.divisor ? -1 : 1;
    if (a.args.size() != b.args.size()) return a.args.size() < b.args.size() ? -1 : 1;
    OutermostMemo<CompareMemo> orders(compare_memo);
    const std::pair<const void*, const void*> key{&a, &b};
    if (auto it = compare_memo.memo.find(key); it != compare_memo.memo.end()) return it->second;
    int c = 0;
    for (std::size_t i = 0; i < a.args.size() && c == 0; ++i) c = compare_sizes(a.args[i], b.args[i]);
    compare_memo.memo.emplace(key, c);
    return c;
}

std::atomic<std::uint64_t> next_symbol_id{1};

// Checked arithmetic: sizes stay in [-(2^63 - 1), 2^63 - 1], so negating one never overflows.
std::int64_t in_range(bool overflowed, std::int64_t r) {
    if (overflowed || r == std::numeric_limits<std::int64_t>::min()) throw SizeOverflow();
    return r;
}
std::int64_t add(std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    bool overflowed = __builtin_add_overflow(a, b, &r);
    return in_range(overflowed, r);
}
std::int64_t mul(std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    bool overflowed = __builtin_mul_overflow(a, b, &r);
    return in_range(overflowed, r);
}

// The same for interval bounds, where a bound out of range is no bound (nullopt).
template <typename Op>
std::optional<std::int64_t> bound_of(Op op, std::optional<std::int64_t> a,
                                     std::optional<std::int64_t> b) {
    if (!a || !b) return std::nullopt;
    try {
        return op(*a, *b);
    } catch (const SizeOverflow&) {
        return std::nullopt;
    }
}

}  // namespace

// Access to Size internals for the helpers below.
struct SizeOps {
    using TermRef = std::shared_ptr<const Size::Term>;

    static Size from_term(TermRef t) {
        Size s;
        s.terms_.push_back({std::move(t), 1});
        return s;
    }

    static int compare(const Size& a, const Size& b) {
        if (a.constant_ != b.constant_) return a.constant_ < b.constant_ ? -1 : 1;
        if (a.terms_.size() != b.terms_.size()) return a.terms_.size() < b.terms_.size() ? -1 : 1;
        for (std::size_t i = 0; i < a.terms_.size(); ++i) {
            if (int c = compare_terms(*a.terms_[i].first, *b.terms_[i].first)) return c;
            if (a.terms_[i].second != b.terms_[i].second)
                return a.terms_[i].second < b.terms_[i].second ? -1 : 1;
        }
        return 0;
    }

    // a + k*b, kept canonical.
    static Size add_scaled(const Size& a, const Size& b, std::int64_t k) {
        Size r;
        r.constant_ = add(a.constant_, mul(k, b.constant_));
        std::size_t i = 0, j = 0;
        while (i < a.terms_.size() || j < b.terms_.size()) {
            int c = i == a.terms_.size()   ? 1
                    : j == b.terms_.size() ? -1
                                           : compare_terms(*a.terms_[i].first, *b.terms_[j].first);
            if (c < 0) {
                r.terms_.push_back(a.terms_[i++]);
            } else if (c > 0) {
                if (k != 0) r.terms_.push_back({b.terms_[j].first, mul(k, b.terms_[j].second)});
                ++j;
            } else {
                std::int64_t coeff = add(a.terms_[i].second, mul(k, b.terms_[j].second));
                if (coeff != 0) r.terms_.push_back({a.terms_[i].first, coeff});
                ++i, ++j;
            }
        }
        return r;
    }

    static Size extremum(TermKind kind, const Size& a, const Size& b) {
        // Sizes are never negative, so symbols range over [0, bound]: decide when we can (not
        // when a - b overflows).
        Range diff;
        try {
            diff = range_of(a - b);
        } catch (const SizeOverflow&) {
        }
        if (diff.hi && *diff.hi <= 0) return kind == TermKind::Min ? a : b;
        if (diff.lo && *diff.lo >= 0) return kind == TermKind::Min ? b : a;
        return from_term(make_term(kind, compare(a, b) <= 0 ? std::vector<Size>{a, b}
                                                            : std::vector<Size>{b, a}));
    }

    static std::int64_t floor_div(std::int64_t a, std::int64_t d) {
        std::int64_t q = a / d;
        return (a % d != 0 && (a < 0) != (d < 0)) ? q - 1 : q;
    }

    // The walks below visit each term once however often a size nests it (a slice's length
    // repeats its input's; a chain of them shares terms as a DAG that grows a term a slice, but
    // as a tree doubles a slice): a memo by term, kept for one call.
    using SizeMemo = std::unordered_map<const Size::Term*, Size>;

    static Size substitute(const Size& s, const std::unordered_map<const Symbol*, Size>& values,
                           SizeMemo& memo) {
        Size r(s.constant_);
        for (auto& [t, coeff] : s.terms_) {
            auto it = memo.find(t.get());
            if (it == memo.end()) {
                auto args = [&](std::size_t i) { return substitute(t->args[i], values, memo); };
                Size v;
                switch (t->kind) {
                    case TermKind::Symbol: {
                        auto found = values.find(t->symbol.get());
                        v = found == values.end() ? from_term(t) : found->second;
                        break;
                    }
                    case TermKind::Min: v = extremum(TermKind::Min, args(0), args(1)); break;
                    case TermKind::Max: v = extremum(TermKind::Max, args(0), args(1)); break;
                    case TermKind::FloorDiv: v = floordiv(args(0), t->divisor); break;
                }
                it = memo.emplace(t.get(), std::move(v)).first;
            }
            r = add_scaled(r, it->second, coeff);
        }
        return r;
    }

    static Size floordiv(const Size& a, std::int64_t d) {
        if (d <= 0) internal_error(cat("floordiv by ", d));
        if (d == 1) return a;
        if (auto c = a.constant()) return Size(floor_div(*c, d));
        bool divisible = a.constant_ % d == 0;
        for (auto& [t, coeff] : a.terms_) divisible = divisible && coeff % d == 0;
        if (divisible) {
            Size r = a;
            r.constant_ /= d;
            for (auto& term : r.terms_) term.second /= d;
            return r;
        }
        return from_term(make_term(TermKind::FloorDiv, {a}, d));
    }

    using ValueMemo = std::unordered_map<const Size::Term*, std::int64_t>;

    static std::int64_t evaluate(const Size& s, const Bindings& b, ValueMemo& memo) {
        std::int64_t v = s.constant_;
        for (auto& [t, coeff] : s.terms_) v = add(v, mul(coeff, evaluate_term(*t, b, memo)));
        return v;
    }

    static std::int64_t evaluate_term(const Size::Term& t, const Bindings& b, ValueMemo& memo) {
        if (t.kind == TermKind::Symbol) {
            auto it = b.find(t.symbol.get());
            if (it == b.end())
                user_error({}, cat("the size `", t.symbol->name, "` is not known for this run"));
            return it->second;
        }
        if (auto it = memo.find(&t); it != memo.end()) return it->second;
        std::int64_t v = 0;
        switch (t.kind) {
            case TermKind::Min: v = std::min(evaluate(t.args[0], b, memo), evaluate(t.args[1], b, memo)); break;
            case TermKind::Max: v = std::max(evaluate(t.args[0], b, memo), evaluate(t.args[1], b, memo)); break;
            case TermKind::FloorDiv: v = floor_div(evaluate(t.args[0], b, memo), t.divisor); break;
            case TermKind::Symbol: break;
        }
        memo.emplace(&t, v);
        return v;
    }

    static Range scale(Range r, std::int64_t k) {
        auto times_k = [k](std::optional<std::int64_t> v) { return bound_of(mul, v, k); };
        return k >= 0 ? Range{times_k(r.lo), times_k(r.hi)} : Range{times_k(r.hi), times_k(r.lo)};
    }

    // A new term of `kind` over `args`, its range set.
    static TermRef make_term(TermKind kind, std::vector<Size> args, std::int64_t divisor = 1) {
        auto t = std::make_shared<Size::Term>();
        t->kind = kind;
        t->args = std::move(args);
        t->divisor = divisor;
        t->range = range_of_term(*t);
        return t;
    }

    static Range range_of_term(const Size::Term& t) {
        switch (t.kind) {
            case TermKind::Symbol: return {0, t.symbol->bound};
            case TermKind::Min:
            case TermKind::Max: {
                Range a = range_of(t.args[0]), b = range_of(t.args[1]);
                auto pick = [&](std::optional<std::int64_t> x, std::optional<std::int64_t> y,
                                bool want_min) -> std::optional<std::int64_t> {
                    if (!x || !y) return want_min ? (x ? x : y) : std::nullopt;
                    return want_min ? std::min(*x, *y) : std::max(*x, *y);
                };
                bool is_min = t.kind == TermKind::Min;
                // min: lo = min(lo), hi = min(hi) (unbounded only if both are); max: mirrored.
                if (is_min) {
                    std::optional<std::int64_t> hi =
                        !a.hi ? b.hi : !b.hi ? a.hi : std::optional(std::min(*a.hi, *b.hi));
                    std::optional<std::int64_t> lo =
                        (a.lo && b.lo) ? std::optional(std::min(*a.lo, *b.lo)) : std::nullopt;
                    return {lo, hi};
                }
                std::optional<std::int64_t> lo =
                    !a.lo ? b.lo : !b.lo ? a.lo : std::optional(std::max(*a.lo, *b.lo));
                return {lo, pick(a.hi, b.hi, false)};
            }
            case TermKind::FloorDiv: {
                Range a = range_of(t.args[0]);
                auto div = [&](std::optional<std::int64_t> v) -> std::optional<std::int64_t> {
                    if (!v) return std::nullopt;
                    return floor_div(*v, t.divisor);
                };
                return {div(a.lo), div(a.hi)};
            }
        }
        return {};
    }

    static Range range_of(const Size& s, int depth = 1) {
        // The sums below only regroup s's terms (no term is made or freed), so the orders of
        // pairs of them hold throughout the outermost call.
        OutermostMemo<CompareMemo> orders(compare_memo);
        Range r{s.constant_, s.constant_};
        for (auto& [t, coeff] : s.terms_) {
            Range tr = scale(t->range, coeff);
            r.lo = bound_of(add, r.lo, tr.lo);
            r.hi = bound_of(add, r.hi, tr.hi);
        }
        // A min/max term bounds the sum it sits in: c*min(p, q) <= c*p for c > 0, so replacing
        // the term by either argument gives an upper bound (a lower one for max, or for c < 0).
        // This proves what clamped slices need, e.g. L - min(k, L) >= 0.
        if (depth <= 0) return r;
        for (auto& [t, coeff] : s.terms_) {
            if (t->kind != TermKind::Min && t->kind != TermKind::Max) continue;
            bool gives_lower = (t->kind == TermKind::Min) == (coeff < 0);
            for (auto& arg : t->args) {
                Range sub;
                try {
                    sub = range_of(add_scaled(add_scaled(s, from_term(t), -coeff), arg, coeff),
                                   depth - 1);
                } catch (const SizeOverflow&) {
                    continue;  // the substituted sum overflows: it proves nothing
                }
                auto& bound = gives_lower ? r.lo : r.hi;
                auto& found = gives_lower ? sub.lo : sub.hi;
                if (found && (!bound || (gives_lower ? *found > *bound : *found < *bound)))
                    bound = found;
            }
        }
        return r;
    }

    // Appends s's text to out, stopping once out holds `limit` characters: a size that nests
    // its terms deeply (a chain of concats of slices) has text exponential in the nesting, and a
    // message needs only its start.
    static void write(const Size& s, std::string& out, std::size_t limit) {
        bool first = true;
        for (auto& [t, coeff] : s.terms_) {
            if (out.size() >= limit) return;
            std::int64_t mag = coeff < 0 ? -coeff : coeff;
            out += first ? (coeff < 0 ? "-" : "") : (coeff < 0 ? " - " : " + ");
            first = false;
            if (mag != 1) out += std::to_string(mag) + "*";
            write_term(*t, out, limit);
        }
        if (first) out += std::to_string(s.constant_);
        else if (s.constant_ > 0) out += " + " + std::to_string(s.constant_);
        else if (s.constant_ < 0) out += " - " + std::to_string(-s.constant_);
    }

    static void write_term(const Size::Term& t, std::string& out, std::size_t limit) {
        if (t.kind == TermKind::Symbol) {
            out += t.symbol->name;
            return;
        }
        out += t.kind == TermKind::Min ? "min(" : t.kind == TermKind::Max ? "max(" : "floordiv(";
        write(t.args[0], out, limit);
        out += ", ";
        if (t.kind == TermKind::FloorDiv) out += std::to_string(t.divisor);
        else write(t.args[1], out, limit);
        out += ")";
    }

    static void collect_symbols(const Size& s, std::vector<SymbolRef>& out,
                                std::unordered_set<const Size::Term*>& seen) {
        for (auto& [t, coeff] : s.terms_) {
            if (!seen.insert(t.get()).second) continue;
            if (t->kind == TermKind::Symbol) {
                if (std::find(out.begin(), out.end(), t->symbol) == out.end())
                    out.push_back(t->symbol);
            }
            for (auto& a : t->args) collect_symbols(a, out, seen);
        }
    }
};

namespace {
int compare_sizes(const Size& a, const Size& b) { return SizeOps::compare(a, b); }
}  // namespace

SymbolRef Symbol::make(std::string name, std::optional<std::int64_t> bound) {
    return std::make_shared<const Symbol>(Symbol{std::move(name), bound, next_symbol_id++});
}

Size::Size(std::int64_t constant) : constant_(constant) {}

Size Size::symbol(SymbolRef s) {
    auto t = std::make_shared<Term>();
    t->kind = TermKind::Symbol;
    t->symbol = std::move(s);
    t->range = SizeOps::range_of_term(*t);
    return SizeOps::from_term(t);
}

Size Size::min(const Size& a, const Size& b) { return SizeOps::extremum(TermKind::Min, a, b); }
Size Size::max(const Size& a, const Size& b) { return SizeOps::extremum(TermKind::Max, a, b); }
Size Size::floordiv(const Size& a, std::int64_t d) { return SizeOps::floordiv(a, d); }
Size Size::ceildiv(const Size& a, std::int64_t d) {
    // A divisor past any tensor's length (a slice step near 2^63) would make a + d - 1
    // overflow, where it is evaluated if not here: floor((a - 1) / d) + 1 is the same value.
    if (d > kMaxElements) return SizeOps::floordiv(a - 1, d) + 1;
    return SizeOps::floordiv(a + (d - 1), d);
}

Size operator+(const Size& a, const Size& b) { return SizeOps::add_scaled(a, b, 1); }
Size operator-(const Size& a, const Size& b) { return SizeOps::add_scaled(a, b, -1); }
Size operator*(const Size& a, std::int64_t k) { return SizeOps::add_scaled(Size(0), a, k); }

bool Size::is_constant() const { return terms_.empty(); }

std::optional<std::int64_t> Size::constant() const {
    if (!terms_.empty()) return std::nullopt;
    return constant_;
}

SymbolRef Size::as_symbol() const {
    if (constant_ != 0 || terms_.size() != 1 || terms_[0].second != 1 ||
        terms_[0].first->kind != TermKind::Symbol)
        return nullptr;
    return terms_[0].first->symbol;
}

std::vector<Size::Part> Size::parts() const {
    std::vector<Part> out;
    for (auto& [t, coeff] : terms_) {
        constexpr Part::Kind kinds[] = {Part::Kind::Symbol, Part::Kind::Min, Part::Kind::Max,
                                        Part::Kind::FloorDiv};
        out.push_back({kinds[static_cast<int>(t->kind)], t->symbol, t->args, t->divisor, coeff});
    }
    return out;
}

std::vector<SymbolRef> Size::symbols() const {
    std::vector<SymbolRef> out;
    std::unordered_set<const Term*> seen;
    SizeOps::collect_symbols(*this, out, seen);
    return out;
}

bool Size::equals(const Size& other) const { return SizeOps::compare(*this, other) == 0; }

std::int64_t Size::evaluate(const Bindings& bindings) const {
    SizeOps::ValueMemo memo;
    return SizeOps::evaluate(*this, bindings, memo);
}

Size Size::substitute(const std::unordered_map<const Symbol*, Size>& values) const {
    SizeOps::SizeMemo memo;
    return SizeOps::substitute(*this, values, memo);
}

std::optional<std::int64_t> Size::upper_bound() const { return SizeOps::range_of(*this).hi; }

std::string Size::str() const {
    std::string out;
    SizeOps::write(*this, out, std::string::npos);
    return out;
}

std::string Size::brief(std::size_t limit) const {
    std::string out;
    SizeOps::write(*this, out, limit);
    if (out.size() > limit) out.replace(limit, std::string::npos, "...");
    return out;
}

std::string shape_str(const Shape& shape) {
    std::string out = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + shape[i].brief();
    return out + "]";
}

bool shapes_equal(const Shape& a, const Shape& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!a[i].equals(b[i])) return false;
    return true;
}

std::vector<std::int64_t> evaluate_shape(const Shape& shape, const Bindings& bindings) {
    std::vector<std::int64_t> out;
    out.reserve(shape.size());
    // Zero dims count as 1, so that no stride or offset of an empty tensor overflows either.
    std::int64_t elements = 1;
    for (auto& s : shape) {
        out.push_back(s.evaluate(bindings));
        std::int64_t n = std::max<std::int64_t>(out.back(), 1);
        if (elements > kMaxElements / n)
            user_error({}, cat("sizes too large: a tensor of shape ", shape_str(shape),
                               " would have more than 2^50 elements at these sizes"));
        elements *= n;
    }
    return out;
}

}  // namespace scanc
