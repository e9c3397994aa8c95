// CpuBackend: compile = plan + bytecode once per program; run = bind sizes, run the stages.
#include "scanc/backends/cpu.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include "plan.h"
#include "run_stage.h"

namespace scanc {

namespace {

std::atomic<int> g_num_threads{0};

int default_threads() {
    if (const char* env = std::getenv("SCANC_NUM_THREADS")) {
        char* end = nullptr;
        long n = std::strtol(env, &end, 10);
        if (end != env && *end == '\0' && n > 0) return static_cast<int>(std::min(n, 1024L));
    }
    unsigned hw = std::thread::hardware_concurrency();
    return hw ? static_cast<int>(hw) : 1;
}

class CpuExecutable : public Executable {
public:
    explicit CpuExecutable(ProgramRef program)
        : program_(std::move(program)), plan_(cpu::make_plan(*program_)) {}

    std::vector<Tensor> run(std::span<const TensorView> inputs, const RunOptions& options) override {
        if (options.num_threads < 0)
            user_error(program_->loc, cat("num_threads ", options.num_threads,
                                          ": must be 0 (the default) or a thread count"));
        for (std::size_t i = 0; i < inputs.size(); ++i)
            if (inputs[i].device.kind != DeviceKind::CPU)
                throw CompileError(program_->loc, cat("the cpu backend needs CPU tensors; input ",
                                                      i, " is on a GPU"));
        // This run's cache: the last run's, unless another run holds it now.
        std::unique_ptr<RunCache> cache;
        {
            std::lock_guard lock(cache_mutex_);
            cache = std::move(cache_);
        }
        if (!cache) {
            cache = std::make_unique<RunCache>();
            cache->stages.resize(plan_.stages.size());
        }
        // Bindings depend on the inputs' dtypes and sizes only.
        if (!cache->bound || !cache->same_inputs(inputs)) {
            cache->bound = false;
            cache->bindings = bind_inputs(*program_, inputs);
            cache->keep_inputs(inputs);
        }
        const Bindings& bindings = cache->bindings;
        std::vector<Tensor> values(plan_.values.size());
        for (int i = 0; i < plan_.num_params; ++i) values[i] = Tensor::wrap(inputs[i], nullptr);
        const std::span<const TensorView> given = options.outputs;
        if (!given.empty()) {
            check_given_outputs(*program_, bindings, inputs, given, {DeviceKind::CPU, 0});
            // A result the stages make goes straight into its given output, whatever its strides
            // (the stages write through slots, as they read any input view): run_fused writes into
            // a value it finds made. An input, a view, a value returned twice, or an output not
            // aligned to its element size is copied there after the run.
            for (std::size_t r = 0; r < given.size(); ++r) {
                const int v = plan_.results[r];
                if (v >= plan_.num_params && !values[v].defined() &&
                    reinterpret_cast<std::uintptr_t>(given[r].data) % dtype_size(given[r].dtype) == 0)
                    values[v] = Tensor::wrap(given[r], nullptr);
            }
        }
        cpu::RunConfig config;
        config.threads = options.num_threads > 0 ? options.num_threads : cpu_num_threads();
        config.ordered = options.ordered;
        for (std::size_t i = 0; i < plan_.stages.size(); ++i) {
            const cpu::Stage& s = plan_.stages[i];
            if (s.kind == cpu::Stage::Kind::Fused)
                cpu::run_fused(s, plan_, values, bindings, config, cache->stages[i]);
            else cpu::run_structural(s, values, bindings);
        }
        {
            std::lock_guard lock(cache_mutex_);
            cache_ = std::move(cache);
        }
        std::vector<Tensor> out;
        if (!given.empty()) {
            for (std::size_t r = 0; r < given.size(); ++r) {
                const Tensor& t = values[plan_.results[r]];
                if (t.data() != given[r].data || t.view().strides != given[r].strides) copy_elements(given[r], t.view());
                out.push_back(Tensor::wrap(given[r], nullptr));  // the caller's memory
            }
            return out;
        }
        // Results own fresh contiguous memory: never the caller's inputs, a view, or one
        // tensor returned twice.
        for (std::size_t r = 0; r < plan_.results.size(); ++r) {
            int v = plan_.results[r];
            const Tensor& t = values[v];
            bool again = std::find(plan_.results.begin(), plan_.results.begin() + r, v) !=
                         plan_.results.begin() + r;
            bool fresh = v >= plan_.num_params && t.view().is_contiguous() &&
                         plan_.values[v]->op != Op::Slice && !again;
            out.push_back(fresh ? t : contiguous_copy(t.view()));
        }
        return out;
    }

private:
    // What runs keep for the next (setup hoisted out of the per-call path): the bindings of
    // the last inputs' dtypes and sizes, and each stage's layout and workers (stage_cache.h).
    struct RunCache {
        bool bound = false;
        Bindings bindings;
        std::vector<std::pair<DType, std::vector<std::int64_t>>> inputs;
        std::vector<cpu::StageCache> stages;  // per plan stage (Fused ones used)

        bool same_inputs(std::span<const TensorView> in) const {
            if (in.size() != inputs.size()) return false;
            for (std::size_t i = 0; i < in.size(); ++i)
                if (in[i].dtype != inputs[i].first || in[i].sizes != inputs[i].second)
                    return false;
            return true;
        }
        void keep_inputs(std::span<const TensorView> in) {
            inputs.clear();
            for (const TensorView& v : in) inputs.emplace_back(v.dtype, v.sizes);
            bound = true;
        }
    };

    ProgramRef program_;
    cpu::Plan plan_;
    std::mutex cache_mutex_;
    std::unique_ptr<RunCache> cache_;  // null while a run holds it
};

}  // namespace

std::unique_ptr<Executable> CpuBackend::compile(const ProgramRef& program) {
    return std::make_unique<CpuExecutable>(program);
}

void set_cpu_num_threads(int n) { g_num_threads = n > 0 ? n : 0; }

int cpu_num_threads() {
    int n = g_num_threads.load();
    if (n > 0) return n;
    static const int fallback = default_threads();
    return fallback;
}

}  // namespace scanc
