// Freeing a DAG of shared_ptr nodes without recursion: a chain kMaxNodeDepth deep freed by
// nested destructors takes a frame a link (a 256 KiB stack overflowed).
#pragma once

#include <memory>
#include <vector>

namespace scanc {

// Called from ~T: frees the children that only `self` holds one after another, each child's
// own such children taken out first so that its destructor finds none. for_each_child(x, take)
// calls take on each child reference of x.
template <class T, class ForEachChild>
void free_in_turn(T& self, ForEachChild for_each_child) {
    std::vector<std::shared_ptr<const T>> last_held;
    auto take = [&](std::shared_ptr<const T>& ref) {
        if (ref.use_count() == 1) last_held.push_back(std::move(ref));
    };
    for_each_child(self, take);
    while (!last_held.empty()) {
        std::shared_ptr<const T> t = std::move(last_held.back());
        last_held.pop_back();
        for_each_child(const_cast<T&>(*t), take);  // its only holder is t: nothing reads it again
    }
}

}  // namespace scanc
