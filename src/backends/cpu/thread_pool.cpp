#include "thread_pool.h"

#include <exception>

namespace scanc::cpu {

namespace {

// Polls `done` for up to ThreadPool::kSpin; true if it came true.
template <class F> bool spin_until(F done) {
    const auto end = std::chrono::steady_clock::now() + ThreadPool::kSpin;
    for (int i = 0;; ++i) {
        if (done()) return true;
        if (i % 64 == 63 && std::chrono::steady_clock::now() > end) return false;
#if defined(__x86_64__)
        __builtin_ia32_pause();
#endif
    }
}

}  // namespace

ThreadPool& ThreadPool::instance() {
    static ThreadPool pool;
    return pool;
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
}

void ThreadPool::worker(int index) {
    long seen = 0;
    for (;;) {
        const std::function<void(int)>* job;
        spin_until([&] { return stop_ || generation_.load() != seen; });
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
            if (stop_) return;
            seen = generation_;
            if (index + 1 >= job_tasks_) continue;  // not needed for this run
            job = job_;
        }
        (*job)(index + 1);
        if (--pending_ == 0) {
            std::lock_guard lock(mutex_);  // the caller tests pending_ under it before it waits
            done_.notify_one();
        }
    }
}

void ThreadPool::run(int num_tasks, const std::function<void(int)>& fn) {
    if (num_tasks <= 1) {
        fn(0);
        return;
    }
    std::lock_guard serial(run_mutex_);
    // Exceptions from tasks are kept and rethrown here, so a task never leaves the pool
    // half-finished (the other tasks still arrive at their barriers).
    std::exception_ptr error;
    std::mutex error_mutex;
    std::function<void(int)> guarded = [&](int task) {
        try {
            fn(task);
        } catch (...) {
            std::lock_guard lock(error_mutex);
            if (!error) error = std::current_exception();
        }
    };
    {
        std::lock_guard lock(mutex_);
        while (static_cast<int>(threads_.size()) < num_tasks - 1) {
            int index = static_cast<int>(threads_.size());
            threads_.emplace_back([this, index] { worker(index); });
        }
        job_ = &guarded;
        job_tasks_ = num_tasks;
        pending_ = num_tasks - 1;
        ++generation_;
    }
    wake_.notify_all();
    guarded(0);
    spin_until([&] { return pending_.load() == 0; });
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return pending_ == 0; });
    job_ = nullptr;
    if (error) std::rethrow_exception(error);
}

}  // namespace scanc::cpu
