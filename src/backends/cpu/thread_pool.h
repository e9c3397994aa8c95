// A small fixed pool of std::threads for the CPU backend. `run(n, fn)` calls fn(0..n-1), each on
// its own thread (the caller is task 0), and returns when all are done; the tasks may wait on a
// Barrier of n. Runs are serialized: one program runs on the pool at a time, so a process never
// has more busy scanc threads than the largest thread count asked for (no oversubscription).
// Threads are created lazily and live as long as the process (a forked child gets a new pool:
// thread_pool.cpp). Between runs they spin for at most kSpin, then sleep on a condition
// variable; the caller spins as long for the tasks to finish. On a VM, waking a sleeping thread
// takes tens of microseconds (an interrupt to a halted vCPU), more than a small scan runs.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace scanc::cpu {

class ThreadPool {
public:
    static constexpr std::chrono::microseconds kSpin{50};

    static ThreadPool& instance();

    void run(int num_tasks, const std::function<void(int task)>& fn);

private:
    void worker(int index);

    std::mutex run_mutex_;  // one run at a time
    std::mutex mutex_;
    std::condition_variable wake_, done_;
    std::vector<std::thread> threads_;
    const std::function<void(int)>* job_ = nullptr;
    int job_tasks_ = 0;
    // Written under mutex_ (but pending_'s decrements), read by spinning threads without it.
    std::atomic<long> generation_ = 0;
    std::atomic<int> pending_ = 0;
};

}  // namespace scanc::cpu
