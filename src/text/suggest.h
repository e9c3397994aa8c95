// "Did you mean" help for unknown names. Private to src/text.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace scanc::text {

// Up to `most` candidates close to `name` in edit distance (closest first, then in the given
// order); none when nothing is close enough to be a plausible typo.
std::vector<std::string> close_names(std::string_view name,
                                     const std::vector<std::string>& candidates, int most = 3);

// "; did you mean `a`?" or "; did you mean one of `a`, `b`?" or "".
std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates,
                         int most = 3);

}  // namespace scanc::text
