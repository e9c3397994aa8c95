// A small fixed pool of std::threads for the CPU backend. `run(n, fn)` calls fn(0..n-1), each on
// its own thread (the caller is task 0), and returns when all are done; the tasks may wait on a
// Barrier of n. Runs are serialized: one program runs on the pool at a time, so a process never
// has more busy scanc threads than the largest thread count asked for (no oversubscription).
// Threads are created lazily and idle on a condition variable, never spinning.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace scanc::cpu {

class ThreadPool {
public:
    static ThreadPool& instance();
    ~ThreadPool();

    void run(int num_tasks, const std::function<void(int task)>& fn);

private:
    void worker(int index);

    std::mutex run_mutex_;  // one run at a time
    std::mutex mutex_;
    std::condition_variable wake_, done_;
    std::vector<std::thread> threads_;
    const std::function<void(int)>* job_ = nullptr;
    int job_tasks_ = 0;
    long generation_ = 0;
    int pending_ = 0;
    bool stop_ = false;
};

}  // namespace scanc::cpu
