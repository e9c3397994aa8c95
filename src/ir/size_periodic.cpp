// Sizes over one symbol T are periodic past some length. Each is built from T by sums, constant
// multiples, min, max and floor division by a constant, and past some `start` each of its terms
// f has f(T + period) = f(T) + rise:
// - a sum takes the lcm of its terms' periods;
// - floor division by d stretches the period until its argument rises by a multiple of d;
// - min and max of two terms that rise alike keep that rise; of two that do not, they settle
//   on the one that rises less (min) or more (max), past a start found by evaluating one period.
// So a - b is 0 for every T exactly when it rises by 0 and is 0 on [0, start + period): past
// that, each period repeats the one before. floordiv(T + 1, 2) + floordiv(T, 2) (the lengths of
// x[::2] and x[1::2]) is T, which no canonical form of sums shows.
#include "size_periodic.h"

#include <algorithm>
#include <numeric>
#include <optional>

namespace scanc::detail {
namespace {

// The longest start or period, and the most evaluations, one decision takes: past them the
// sizes are left unequal.
constexpr std::int64_t kLongest = std::int64_t{1} << 14;
constexpr std::int64_t kMostEvaluations = std::int64_t{1} << 16;
// The most parts one decision walks: a size that repeats a shared term many times is left alone.
constexpr int kMostParts = 512;

struct GiveUp {};

std::int64_t add(std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) throw GiveUp{};
    return r;
}
std::int64_t sub(std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    if (__builtin_sub_overflow(a, b, &r)) throw GiveUp{};
    return r;
}
std::int64_t mul(std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) throw GiveUp{};
    return r;
}
std::int64_t within_reach(std::int64_t v) {
    if (v > kLongest) throw GiveUp{};
    return v;
}

// For every T >= start: f(T + period) = f(T) + rise.
struct Periodic {
    std::int64_t start = 0, period = 1, rise = 0;
};

class Analysis {
public:
    Periodic of(const Size& s) {
        Periodic r;  // the constant term rises by 0
        for (const Size::Part& part : s.parts()) {
            const Periodic p = of(part);
            const std::int64_t period = within_reach(std::lcm(r.period, p.period));
            r.rise = add(mul(r.rise, period / r.period),
                         mul(part.coefficient, mul(p.rise, period / p.period)));
            r.period = period;
            r.start = std::max(r.start, p.start);
        }
        return r;
    }

    // The one symbol the sizes walked mention (null for none).
    const Symbol* symbol() const { return symbol_; }

    std::int64_t value(const Size& s, std::int64_t t) {
        if (++evaluations_ > kMostEvaluations) throw GiveUp{};
        bindings_[symbol_] = t;
        try {
            return s.evaluate(bindings_);
        } catch (const SizeOverflow&) {
            throw GiveUp{};
        }
    }

private:
    Periodic of(const Size::Part& part) {
        if (++parts_ > kMostParts) throw GiveUp{};
        switch (part.kind) {
            case Size::Part::Kind::Symbol:
                if (symbol_ && symbol_ != part.symbol.get()) throw GiveUp{};  // a second symbol
                symbol_ = part.symbol.get();
                return {0, 1, 1};
            case Size::Part::Kind::FloorDiv: {
                const Periodic a = of(part.args[0]);
                const std::int64_t g = std::gcd(a.rise, part.divisor);  // gcd(0, d) = d
                return {a.start, within_reach(mul(a.period, part.divisor / g)), a.rise / g};
            }
            case Size::Part::Kind::Min:
            case Size::Part::Kind::Max: return extremum(part);
        }
        throw GiveUp{};
    }

    Periodic extremum(const Size::Part& part) {
        const Periodic a = of(part.args[0]), b = of(part.args[1]);
        const std::int64_t period = within_reach(std::lcm(a.period, b.period));
        const std::int64_t start = std::max(a.start, b.start);
        const std::int64_t rise_a = mul(a.rise, period / a.period), rise_b = mul(b.rise, period / b.period);
        if (rise_a == rise_b) return {start, period, rise_a};
        // The argument that rises more gains at least `gap` a period on the other, so it stays
        // above for good once the lowest difference over one period has been made up.
        const bool a_rises_more = rise_a > rise_b;
        const Size& more = part.args[a_rises_more ? 0 : 1];
        const Size& less = part.args[a_rises_more ? 1 : 0];
        std::int64_t lowest = 0;
        for (std::int64_t t = start; t < start + period; ++t)
            lowest = std::min(lowest, sub(value(more, t), value(less, t)));
        const std::int64_t gap = std::max(rise_a, rise_b) - std::min(rise_a, rise_b);
        const std::int64_t periods = (-lowest + gap - 1) / gap;
        const bool is_max = part.kind == Size::Part::Kind::Max;
        return {within_reach(add(start, mul(periods, period))), period,
                is_max ? std::max(rise_a, rise_b) : std::min(rise_a, rise_b)};
    }

    const Symbol* symbol_ = nullptr;
    Bindings bindings_;
    int parts_ = 0;
    std::int64_t evaluations_ = 0;
};

}  // namespace

bool equal_over_one_symbol(const Size& a, const Size& b) {
    try {
        const Size difference = a - b;
        // A sum of symbols and a constant is 0 only where its canonical form is.
        const std::vector<Size::Part> parts = difference.parts();
        if (std::all_of(parts.begin(), parts.end(),
                        [](const Size::Part& p) { return p.kind == Size::Part::Kind::Symbol; }))
            return false;
        Analysis analysis;
        const Periodic p = analysis.of(difference);
        if (!analysis.symbol()) return false;
        // Every value of T up to start + period, or up to its bound where that comes first (or
        // where the difference rises: a bounded T may never reach where it does).
        const std::optional<std::int64_t> bound = analysis.symbol()->bound;
        std::int64_t end = p.start + p.period;  // both within reach
        if (bound && (p.rise != 0 || *bound < end)) end = within_reach(*bound + 1);
        else if (p.rise != 0) return false;
        for (std::int64_t t = 0; t < end; ++t)
            if (analysis.value(difference, t) != 0) return false;
        return true;
    } catch (const GiveUp&) {
        return false;
    } catch (const SizeOverflow&) {  // a - b
        return false;
    }
}

}  // namespace scanc::detail
