#include "scanc/ir/size.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "free_in_turn.h"
#include "size_periodic.h"
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

    // Frees the terms below that only this one holds in turn, where their own destructors
    // would nest as deep as the terms do (see SizeOps::post_order).
    ~Term() {
        free_in_turn(*this, [](Term& t, auto take) {
            for (Size& size : t.args)
                for (auto& term : size.terms_) take(term.first);
        });
    }
};

namespace {

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
// Orders of the pairs of terms compared during one outermost compare: two equal sizes
// built apart share few terms, and a nested pair compared anew at each occurrence takes time
// exponential in the nesting.
using CompareMemo = std::unordered_map<std::pair<const void*, const void*>, int, PairHash>;
thread_local WalkMemo<CompareMemo> compare_memo;

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

    // Sizes in canonical order: constant, number of terms, then term by term (a term by kind,
    // symbol, divisor, then its arguments in order) and coefficient.
    static int compare(const Size& a, const Size& b) {
        if (int c = compare_heads(a, b)) return c;
        return compare_walk({&a, &b, nullptr, nullptr});
    }
    static int compare_terms(const Size::Term& a, const Size::Term& b) {
        if (auto c = compare_term_heads(a, b)) return *c;
        return compare_walk({nullptr, nullptr, &a, &b});
    }

    static int compare_heads(const Size& a, const Size& b) {
        if (a.constant_ != b.constant_) return a.constant_ < b.constant_ ? -1 : 1;
        if (a.terms_.size() != b.terms_.size()) return a.terms_.size() < b.terms_.size() ? -1 : 1;
        return 0;
    }
    // The order of two terms where it shows without comparing their arguments.
    static std::optional<int> compare_term_heads(const Size::Term& a, const Size::Term& b) {
        if (&a == &b) return 0;  // one shared term (sizes share their subterms)
        if (a.kind != b.kind) return a.kind < b.kind ? -1 : 1;
        if (a.kind == TermKind::Symbol) {
            if (a.symbol->id != b.symbol->id) return a.symbol->id < b.symbol->id ? -1 : 1;
            return 0;
        }
        if (a.divisor != b.divisor) return a.divisor < b.divisor ? -1 : 1;
        if (a.args.size() != b.args.size()) return a.args.size() < b.args.size() ? -1 : 1;
        if (auto it = compare_memo.memo.find({&a, &b}); it != compare_memo.memo.end()) return it->second;
        return std::nullopt;
    }

    // A pair of sizes whose terms are compared in order, or of terms whose arguments are.
    struct ComparePair {
        const Size *a, *b;
        const Size::Term *ta, *tb;
        std::size_t next = 0;  // the next term or argument to compare
    };
    // The order of a pair whose heads are equal, with a stack of its own (see post_order): the
    // pair on top compares its next part, pushing a pair for it where heads do not decide, and
    // a pair done hands its order to the one below.
    static int compare_walk(ComparePair first) {
        OutermostMemo<CompareMemo> orders(compare_memo);
        std::vector<ComparePair> stack{first};
        int c = 0;  // the order of the part last compared
        while (!stack.empty()) {
            ComparePair& p = stack.back();
            if (p.ta) {
                if (c != 0 || p.next == p.ta->args.size()) {
                    compare_memo.memo.emplace(std::pair<const void*, const void*>{p.ta, p.tb}, c);
                    stack.pop_back();
                    continue;
                }
                const Size &x = p.ta->args[p.next], &y = p.tb->args[p.next];
                ++p.next;
                if ((c = compare_heads(x, y)) == 0) stack.push_back({&x, &y, nullptr, nullptr});
                continue;
            }
            if (c == 0 && p.next > 0) {  // the terms before were equal: their coefficients
                std::int64_t ka = p.a->terms_[p.next - 1].second, kb = p.b->terms_[p.next - 1].second;
                if (ka != kb) c = ka < kb ? -1 : 1;
            }
            if (c != 0 || p.next == p.a->terms_.size()) {
                stack.pop_back();
                continue;
            }
            const Size::Term &x = *p.a->terms_[p.next].first, &y = *p.b->terms_[p.next].first;
            ++p.next;
            if (auto known = compare_term_heads(x, y)) c = *known;
            else stack.push_back({nullptr, nullptr, &x, &y});
        }
        return c;
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

    // Every min, max and floordiv term below s, once each and its arguments' terms before it,
    // passed to visit; done(t) says whether t has been visited (symbols, which have no
    // arguments, are the callers' to read). The walks below go through here, visiting each term
    // once however often a size nests it (a slice's length repeats its input's: a chain of them
    // shares terms as a DAG that grows a term a slice, but as a tree doubles a slice), and with
    // a stack of their own: a chain of kMaxNodeDepth slices nests its length that deep, past
    // what a recursion can hold on a small thread stack (2 MiB overflowed at 10000 links).
    template <class Done, class Visit>
    static void post_order(const Size& s, Done done, Visit visit) {
        std::vector<const Size::Term*> stack;
        // Pushes x's terms still to visit; whether there were none.
        auto push_pending = [&](const Size& x) {
            bool none = true;
            for (auto& [t, coeff] : x.terms_)
                if (t->kind != TermKind::Symbol && !done(*t)) stack.push_back(t.get()), none = false;
            return none;
        };
        push_pending(s);
        while (!stack.empty()) {
            const Size::Term& t = *stack.back();
            if (done(t)) {  // pushed again by another term before its visit
                stack.pop_back();
                continue;
            }
            bool ready = true;
            for (auto& arg : t.args) ready = push_pending(arg) && ready;
            if (ready) {
                stack.pop_back();
                visit(t);
            }
        }
    }

    using SizeMemo = std::unordered_map<const Size::Term*, Size>;

    static Size substitute(const Size& s, const std::unordered_map<const Symbol*, Size>& values) {
        SizeMemo memo;
        auto sized = [&](const Size& x) {
            Size r(x.constant_);
            for (auto& [t, coeff] : x.terms_) {
                if (t->kind != TermKind::Symbol) {
                    r = add_scaled(r, memo.at(t.get()), coeff);
                    continue;
                }
                auto found = values.find(t->symbol.get());
                r = add_scaled(r, found == values.end() ? from_term(t) : found->second, coeff);
            }
            return r;
        };
        post_order(
            s, [&](const Size::Term& t) { return memo.count(&t) != 0; },
            [&](const Size::Term& t) {
                Size v;
                switch (t.kind) {
                    case TermKind::Min: v = extremum(TermKind::Min, sized(t.args[0]), sized(t.args[1])); break;
                    case TermKind::Max: v = extremum(TermKind::Max, sized(t.args[0]), sized(t.args[1])); break;
                    case TermKind::FloorDiv: v = floordiv(sized(t.args[0]), t.divisor); break;
                    case TermKind::Symbol: break;
                }
                memo.emplace(&t, std::move(v));
            });
        return sized(s);
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

    static std::int64_t evaluate(const Size& s, const Bindings& b) {
        std::unordered_map<const Size::Term*, std::int64_t> memo;
        auto value = [&](const Size& x) {
            std::int64_t v = x.constant_;
            for (auto& [t, coeff] : x.terms_) {
                std::int64_t tv = 0;
                if (t->kind != TermKind::Symbol) {
                    tv = memo.at(t.get());
                } else if (auto it = b.find(t->symbol.get()); it != b.end()) {
                    tv = it->second;
                } else {
                    user_error({}, cat("the size `", t->symbol->name, "` is not known for this run"));
                }
                v = add(v, mul(coeff, tv));
            }
            return v;
        };
        post_order(
            s, [&](const Size::Term& t) { return memo.count(&t) != 0; },
            [&](const Size::Term& t) {
                std::int64_t v = 0;
                switch (t.kind) {
                    case TermKind::Min: v = std::min(value(t.args[0]), value(t.args[1])); break;
                    case TermKind::Max: v = std::max(value(t.args[0]), value(t.args[1])); break;
                    case TermKind::FloorDiv: v = floor_div(value(t.args[0]), t.divisor); break;
                    case TermKind::Symbol: break;
                }
                memo.emplace(&t, v);
            });
        return value(s);
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

    // Symbols in the order a depth-first walk of the terms first meets them, with a stack of its
    // own (see post_order).
    static std::vector<SymbolRef> symbols(const Size& s) {
        std::vector<SymbolRef> out;
        std::unordered_set<const Size::Term*> seen;
        std::vector<const Size::Term*> stack;
        auto push_reversed = [&](const Size& x) {
            for (auto it = x.terms_.rbegin(); it != x.terms_.rend(); ++it) stack.push_back(it->first.get());
        };
        push_reversed(s);
        while (!stack.empty()) {
            const Size::Term* t = stack.back();
            stack.pop_back();
            if (!seen.insert(t).second) continue;
            if (t->kind == TermKind::Symbol && std::find(out.begin(), out.end(), t->symbol) == out.end())
                out.push_back(t->symbol);
            for (auto it = t->args.rbegin(); it != t->args.rend(); ++it) push_reversed(*it);
        }
        return out;
    }
};

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

std::vector<SymbolRef> Size::symbols() const { return SizeOps::symbols(*this); }

bool Size::equals(const Size& other) const { return SizeOps::compare(*this, other) == 0; }

bool Size::same_value(const Size& other) const {
    return equals(other) || detail::equal_over_one_symbol(*this, other);
}

std::int64_t Size::evaluate(const Bindings& bindings) const { return SizeOps::evaluate(*this, bindings); }

Size Size::substitute(const std::unordered_map<const Symbol*, Size>& values) const {
    return SizeOps::substitute(*this, values);
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
        if (!a[i].same_value(b[i])) return false;
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
