// Running a test's steps on a thread with a small stack: walks that a chain of kMaxNodeDepth
// operations makes that deep must not recurse.
#pragma once

#include <gtest/gtest.h>
#include <pthread.h>

#include <cstddef>
#include <functional>

namespace scanc {

// Runs f on a new thread whose stack holds `bytes`.
inline void on_a_stack_of(std::size_t bytes, const std::function<void()>& f) {
    pthread_attr_t attr;
    ASSERT_EQ(pthread_attr_init(&attr), 0);
    ASSERT_EQ(pthread_attr_setstacksize(&attr, bytes), 0);
    pthread_t thread;
    auto run = [](void* fn) -> void* {
        (*static_cast<const std::function<void()>*>(fn))();
        return nullptr;
    };
    ASSERT_EQ(pthread_create(&thread, &attr, run, const_cast<std::function<void()>*>(&f)), 0);
    pthread_join(thread, nullptr);
    pthread_attr_destroy(&attr);
}

}  // namespace scanc
