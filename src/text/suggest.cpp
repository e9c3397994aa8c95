#include "suggest.h"

#include <algorithm>

#include "scanc/error.h"

namespace scanc::text {

namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            std::size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
            diagonal = up;
        }
    }
    return row[b.size()];
}

}  // namespace

std::vector<std::string> close_names(std::string_view name,
                                     const std::vector<std::string>& candidates, int most) {
    // A typo changes about a third of a name at most; in a name of one or two letters any
    // other short name is one edit away, so only a completion is suggested there.
    std::size_t limit = name.size() <= 2 ? 0 : std::max<std::size_t>(1, name.size() / 3);
    std::vector<std::pair<std::size_t, std::string>> scored;
    for (auto& c : candidates) {
        std::size_t d = edit_distance(name, c);
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
