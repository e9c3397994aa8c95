// CpuBackend: compile = plan + bytecode once per program; run = bind sizes, run the stages.
#include "scanc/backends/cpu.h"

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>
#include <unordered_set>

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
        for (std::size_t i = 0; i < inputs.size(); ++i)
            if (inputs[i].device.kind != DeviceKind::CPU)
                throw CompileError(program_->loc, cat("the cpu backend needs CPU tensors; input ",
                                                      i, " is on a GPU"));
        Bindings bindings = bind_inputs(*program_, inputs);
        std::vector<Tensor> values(plan_.values.size());
        for (int i = 0; i < plan_.num_params; ++i) values[i] = Tensor::wrap(inputs[i], nullptr);
        cpu::RunConfig config;
        config.threads = options.num_threads > 0 ? options.num_threads : cpu_num_threads();
        config.ordered = options.ordered;
        for (const cpu::Stage& s : plan_.stages) {
            if (s.kind == cpu::Stage::Kind::Fused) cpu::run_fused(s, plan_, values, bindings, config);
            else cpu::run_structural(s, values, bindings);
        }
        // Results own fresh contiguous memory: never the caller's inputs, a view, or one
        // tensor returned twice.
        std::vector<Tensor> out;
        std::unordered_set<int> returned;
        for (int v : plan_.results) {
            const Tensor& t = values[v];
            bool fresh = v >= plan_.num_params && t.view().is_contiguous() &&
                         plan_.values[v]->op != Op::Slice && returned.insert(v).second;
            out.push_back(fresh ? t : contiguous_copy(t.view()));
        }
        return out;
    }

private:
    ProgramRef program_;
    cpu::Plan plan_;
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
