#include "thread_pool.h"

#include <pthread.h>

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

// The process's pool. A forked child inherits the parent's pool but none of its threads (and
// perhaps a mutex that another thread held at the fork), so a run there would wait forever for
// workers that do not exist (a DataLoader worker, a multiprocessing pool): the child starts a
// pool of its own in pthread_atfork's child handler, where it runs alone (glibc's malloc works
// there). Pools are never destroyed, so no process joins threads it does not have; idle workers
// sleep on their pool's condition variable until the process exits.
std::atomic<ThreadPool*> current_pool{nullptr};

void start_a_pool_in_the_child() { current_pool.store(new ThreadPool, std::memory_order_release); }

}  // namespace

ThreadPool& ThreadPool::instance() {
    static const bool started = [] {
        current_pool.store(new ThreadPool, std::memory_order_release);
        pthread_atfork(nullptr, nullptr, start_a_pool_in_the_child);
        return true;
    }();
    (void)started;
    return *current_pool.load(std::memory_order_acquire);
}

void ThreadPool::worker(int index) {
    long seen = 0;
    for (;;) {
        const std::function<void(int)>* job;
        spin_until([&] { return generation_.load() != seen; });
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return generation_ != seen; });
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
