#include "suggest.h"

#include <algorithm>

#include "scanc/error.h"

namespace scanc::text {

namespace {

// The edit distance of a and b where it is at most k, else k + 1. A path that short stays
// within k diagonals of the main one, so only that band is computed: linear in the names'
// length, so that a name of a hundred thousand letters is an error at once, not after
// minutes of suggestions.
std::size_t edit_distance_within(std::string_view a, std::string_view b, std::size_t k) {
    if (a.size() > b.size()) std::swap(a, b);
    const std::size_t m = b.size(), far = k + 1;
    if (m - a.size() > k) return far;
    std::vector<std::size_t> prev(m + 2, far), cur(m + 2, far);
    for (std::size_t j = 0; j <= std::min(m, k); ++j) prev[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        const std::size_t lo = i > k ? i - k : 0, hi = std::min(m, i + k);
        if (lo > 0) cur[lo - 1] = far;
        cur[hi + 1] = far;
        std::size_t best = far;
        for (std::size_t j = lo; j <= hi; ++j) {
            cur[j] = j == 0 ? i
                            : std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1]), far});
            best = std::min(best, cur[j]);
        }
        if (best > k) return far;
        std::swap(prev, cur);
    }
    return std::min(prev[m], far);
}

}  // namespace

std::vector<std::string> close_names(std::string_view name,
                                     const std::vector<std::string>& candidates, int most) {
    // A typo changes about a third of a name at most, and no more than eight letters of a
    // long one; in a name of one or two letters any other short name is one edit away, so
    // only a completion is suggested there.
    std::size_t limit = name.size() <= 2 ? 0 : std::clamp<std::size_t>(name.size() / 3, 1, 8);
    std::vector<std::pair<std::size_t, std::string>> scored;
    for (auto& c : candidates) {
        std::size_t d = edit_distance_within(name, c, limit);
        bool prefix = name.size() >= 2 && c.starts_with(name);
        if ((d <= limit || prefix) && c != name &&
            std::none_of(scored.begin(), scored.end(), [&](auto& s) { return s.second == c; }))
            scored.push_back({prefix ? std::min(d, limit) : d, c});
    }
    std::stable_sort(scored.begin(), scored.end(),
                     [](auto& x, auto& y) { return x.first < y.first; });
    std::vector<std::string> out;
    for (auto& s : scored)
        if (static_cast<int>(out.size()) < most) out.push_back(s.second);
    return out;
}

std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates,
                         int most) {
    auto close = close_names(name, candidates, most);
    if (close.empty()) return "";
    std::string list;
    for (auto& c : close) list += cat(list.empty() ? "" : ", ", "`", c, "`");
    return cat("; did you mean ", close.size() == 1 ? "" : "one of ", list, "?");
}

}  // namespace scanc::text
