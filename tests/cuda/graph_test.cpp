// Runs captured into CUDA graphs, outputs written where the caller says, and runs on streams
// that go before the executable. A replay must compute from the inputs it finds, as the
// reference does, however many times it runs and whatever runs between.
#include <cstring>
#include <functional>

#include "gpu_test_util.h"

namespace scanc {
namespace {

using cuda::driver;

// A stream (blocking: ordered with the legacy default stream, which the helpers' copies use).
class Stream {
public:
    Stream() {
        cuda::ContextGuard guard(0);
        SCANC_CU(cuStreamCreate, &stream_, CU_STREAM_DEFAULT);
    }
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    ~Stream() { destroy(); }
    void destroy() {
        if (!stream_) return;
        cuda::ContextGuard guard(0);
        driver().cuStreamDestroy(stream_);
        stream_ = nullptr;
    }
    CUstream get() const { return stream_; }
    void sync() const { SCANC_CU(cuStreamSynchronize, stream_); }

private:
    CUstream stream_ = nullptr;
};

// Device memory for one contiguous result, the caller's: what RunOptions::outputs points at.
class Output {
public:
    Output(DType dtype, std::vector<std::int64_t> sizes) : host_(Tensor::empty(dtype, std::move(sizes))) {
        cuda::ContextGuard guard(0);
        SCANC_CU(cuMemAlloc, &ptr_, std::max<std::size_t>(bytes(), 1));
    }
    Output(const Output&) = delete;
    Output& operator=(const Output&) = delete;
    ~Output() {
        cuda::ContextGuard guard(0);
        driver().cuMemFree(ptr_);
    }
    TensorView view() const {
        TensorView v = host_.view();
        v.data = reinterpret_cast<void*>(ptr_);
        v.device = {DeviceKind::CUDA, 0};
        return v;
    }
    Tensor to_host() const {
        cuda::ContextGuard guard(0);
        SCANC_CU(cuMemcpyDtoHAsync, host_.data(), ptr_, bytes(), nullptr);
        SCANC_CU(cuStreamSynchronize, nullptr);
        return contiguous_copy(host_.view());
    }

private:
    std::size_t bytes() const { return host_.numel() * dtype_size(host_.dtype()); }
    Tensor host_;
    CUdeviceptr ptr_ = 0;
};

// The work `body` puts on `stream`, captured (global mode: the strictest) and instantiated.
class Graph {
public:
    Graph(const Stream& stream, const std::function<void()>& body, unsigned long long flags = 0) {
        cuda::ContextGuard guard(0);
        SCANC_CU(cuStreamBeginCapture, stream.get(), CU_STREAM_CAPTURE_MODE_GLOBAL);
        try {
            body();
        } catch (...) {
            CUgraph broken = nullptr;
            driver().cuStreamEndCapture(stream.get(), &broken);
            if (broken) driver().cuGraphDestroy(broken);
            throw;
        }
        SCANC_CU(cuStreamEndCapture, stream.get(), &graph_);
        SCANC_CU(cuGraphInstantiateWithFlags, &exec_, graph_, flags);
    }
    Graph(const Graph&) = delete;
    Graph& operator=(const Graph&) = delete;
    ~Graph() {
        cuda::ContextGuard guard(0);
        if (exec_) driver().cuGraphExecDestroy(exec_);
        if (graph_) driver().cuGraphDestroy(graph_);
    }
    void replay(const Stream& stream) const {
        cuda::ContextGuard guard(0);
        SCANC_CU(cuGraphLaunch, exec_, stream.get());
        stream.sync();
    }

private:
    CUgraph graph_ = nullptr;
    CUgraphExec exec_ = nullptr;
};

// A long 1-D scan (rows look-back), its reverse, and an affine scan along a strided dim (cols
// look-back): every kernel family that keeps look-back words.
constexpr const char* kLookbackScans = R"(
combine add(a | b) { return a + b }
combine affine(a1, b1 | a2, b2) { return a1 * a2, a2 * b1 + b2 }
program NAME(x: f32[N], a: f32[B, L, D], b: f32[B, L, D]) {
  s = scan add(x) dim=0
  r = scan add(x) dim=0 reverse
  (_, h) = scan affine(a, b) dim=1
  return s, r, h
}
)";
const std::vector<std::vector<std::int64_t>> kShapes = {{100003}, {3, 1000, 7}, {3, 1000, 7}};

// The program's inputs: small integers, where the affine coefficients stay in {-1, 0, 1}, so
// every result is exact in f32. On the host and copied to the device.
struct Inputs {
    std::vector<Tensor> host;
    std::vector<std::unique_ptr<cuda_test::DeviceCopy>> device;

    explicit Inputs(std::mt19937_64& rng) {
        const cuda_test::Fill coefficients{true, -1, 1};
        for (const cuda_test::Fill& fill : {cuda_test::Fill{}, coefficients, cuda_test::Fill{}}) {
            host.push_back(cuda_test::random_tensor(DType::F32, kShapes[host.size()], rng, fill));
            device.push_back(std::make_unique<cuda_test::DeviceCopy>(host.back()));
        }
    }
    std::vector<TensorView> on_device() const {
        std::vector<TensorView> v;
        for (std::size_t i = 0; i < host.size(); ++i) v.push_back(device[i]->on_device(host[i].view()));
        return v;
    }
    // New values, in the same host and device memory (where a captured graph reads them).
    void refill(std::mt19937_64& rng) {
        Inputs next(rng);
        for (std::size_t i = 0; i < host.size(); ++i) {
            std::memcpy(host[i].data(), next.host[i].data(), host[i].numel() * dtype_size(host[i].dtype()));
            device[i]->upload(host[i]);
        }
    }
};

std::vector<Tensor> reference(const ProgramRef& program, const Inputs& in) {
    return ReferenceBackend().compile(program)->run(cuda_test::views(in.host));
}

ProgramRef lookback_program(const std::string& name) {
    std::string text = kLookbackScans;
    text.replace(text.find("NAME"), 4, name);
    return cuda_test::parse_program(text);
}

// Memory of the caller's for each result of the look-back program, and its views.
struct Outputs {
    std::vector<std::unique_ptr<Output>> memory;
    std::vector<TensorView> views;
    Outputs() {
        for (const auto& shape : {kShapes[0], kShapes[0], kShapes[1]}) {
            memory.push_back(std::make_unique<Output>(DType::F32, shape));
            views.push_back(memory.back()->view());
        }
    }
};

// A program's executable, inputs, and the stream (in `options`) its runs are captured on.
struct Capture {
    ProgramRef program;
    std::unique_ptr<Executable> exe;
    std::mt19937_64 rng;
    Inputs in;
    Stream stream;
    RunOptions options;
    Capture(ProgramRef p, unsigned seed) : program(std::move(p)), exe(CudaBackend().compile(program)), rng(seed), in(rng) {
        options.stream = stream.get();
    }
};

// Replays `graph` `rounds` times, each on new inputs, and expects every result (`result(r)`,
// on the host) to be the reference's for those inputs.
void expect_replays_match_reference(const Graph& graph, const Stream& stream, const ProgramRef& program, Inputs& in,
                                    std::mt19937_64& rng, int rounds, const std::function<Tensor(std::size_t)>& result,
                                    const std::function<void(int)>& between = {}) {
    for (int round = 0; round < rounds; ++round) {
        in.refill(rng);
        graph.replay(stream);
        auto want = reference(program, in);
        for (std::size_t r = 0; r < want.size(); ++r)
            EXPECT_TRUE(cuda_test::close(result(r), want[r], 0, 0)) << "replay " << round << ", result " << r;
        if (between) between(round);
    }
}

TEST(CudaGraph, ReplaysOfACapturedRunComputeFromTheInputsEachFindsWhileEagerRunsGoOnBeside) {
    SKIP_WITHOUT_GPU();
    Capture c(lookback_program("replayed"), 21);
    Inputs eager_in(c.rng);
    Outputs outs;
    Stream side;
    RunOptions on_side;
    on_side.stream = side.get();
    c.exe->run(c.in.on_device(), on_side);  // compiled and loaded before the capture
    c.options.outputs = outs.views;
    Graph graph(c.stream, [&] {
        auto got = c.exe->run(c.in.on_device(), c.options);
        ASSERT_EQ(got.size(), 3u);
        EXPECT_EQ(got[2].data(), outs.views[2].data) << "the results view the given memory";
    });
    auto result = [&](std::size_t r) { return outs.memory[r]->to_host(); };
    expect_replays_match_reference(graph, c.stream, c.program, c.in, c.rng, 3, result, [&](int round) {
        // An eager run between replays uses the executable's own look-back words.
        eager_in.refill(c.rng);
        auto eager = c.exe->run(eager_in.on_device(), on_side);
        side.sync();
        auto eager_want = reference(c.program, eager_in);
        for (std::size_t r = 0; r < eager.size(); ++r)
            EXPECT_TRUE(cuda_test::close(cuda_test::to_host(eager[r]), eager_want[r], 0, 0))
                << "eager run after replay " << round << ", result " << r;
    });
}

TEST(CudaGraph, AFirstRunInsideACaptureCompilesItsKernelsThereAndReplaysRight) {
    SKIP_WITHOUT_GPU();
    // Its own epilogue (r * 3): kernels new to this process, so its first run compiles them.
    std::string text = kLookbackScans;
    text.replace(text.find("NAME"), 4, "first_run_captured");
    text.replace(text.find("return s, r, h"), 14, "r3 = r * 3.0\n  return s, r3, h");
    const CudaCacheStats before = cuda_cache_stats();
    Capture c(cuda_test::parse_program(text), 22);  // compile() counts it; kernels wait for a run
    Outputs outs;
    c.options.outputs = outs.views;
    Graph graph(c.stream, [&] {
        c.exe = CudaBackend().compile(c.program);  // compile() too, inside the capture
        c.exe->run(c.in.on_device(), c.options);
    });
    // New to this process (compiled, or read from an earlier process's disk cache): the run
    // inside the capture was the first to load its kernels.
    const CudaCacheStats after = cuda_cache_stats();
    EXPECT_EQ(after.compiles + after.disk_hits - before.compiles - before.disk_hits, 1);
    EXPECT_EQ(after.memory_hits - before.memory_hits, 1) << "the compile() inside found the first's program";
    EXPECT_EQ(after.quick_builds, before.quick_builds) << "a captured run waits for full builds";
    expect_replays_match_reference(graph, c.stream, c.program, c.in, c.rng, 2,
                                   [&](std::size_t r) { return outs.memory[r]->to_host(); });
}

TEST(CudaGraph, OutputsACapturedRunAllocatesAreTheGraphsAndHoldEachReplaysResults) {
    // No RunOptions::outputs: the results are graph allocations, at one address for the graph's
    // life; a graph instantiated to free them at its next launch can be replayed at will.
    SKIP_WITHOUT_GPU();
    Capture c(lookback_program("graph_allocates"), 23);
    std::vector<Tensor> got;
    Graph graph(c.stream, [&] { got = c.exe->run(c.in.on_device(), c.options); },
                CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH);
    ASSERT_EQ(got.size(), 3u);
    expect_replays_match_reference(graph, c.stream, c.program, c.in, c.rng, 3,
                                   [&](std::size_t r) { return cuda_test::to_host(got[r]); });
    got.clear();  // freed on the stream, outside the graph
    c.stream.sync();
}

TEST(CudaGraph, AHostInputInsideACaptureIsRefusedBeforeAnyWork) {
    SKIP_WITHOUT_GPU();
    Capture c(lookback_program("host_input_captured"), 24);
    std::string refusal;
    try {
        Graph graph(c.stream, [&] { c.exe->run(cuda_test::views(c.in.host), c.options); });
    } catch (const CompileError& e) {
        refusal = e.what();
    }
    EXPECT_NE(refusal.find("a run captured into a CUDA graph needs its inputs in device memory"), std::string::npos)
        << refusal;
    auto got = c.exe->run(cuda_test::views(c.in.host));  // and outside a capture, host inputs work
    auto want = reference(c.program, c.in);
    for (std::size_t r = 0; r < got.size(); ++r) EXPECT_TRUE(cuda_test::close(got[r], want[r], 0, 0)) << "result " << r;
}

TEST(CudaGraph, RunsOnStreamsDestroyedBeforeTheExecutableStayOrderedAndRight) {
    // Each run waits for the last through an event; the executable frees its look-back words
    // after that event on a stream of its own, so no caller's stream must outlive it.
    SKIP_WITHOUT_GPU();
    auto program = lookback_program("streams_come_and_go");
    auto exe = CudaBackend().compile(program);
    std::mt19937_64 rng(25);
    for (int round = 0; round < 3; ++round) {
        Inputs in(rng);
        Stream stream;
        RunOptions options;
        options.stream = stream.get();
        auto got = exe->run(in.on_device(), options);
        auto want = reference(program, in);
        for (std::size_t r = 0; r < got.size(); ++r)
            EXPECT_TRUE(cuda_test::close(cuda_test::to_host(got[r]), want[r], 0, 0)) << "round " << round << ", result " << r;
        got.clear();
        stream.destroy();  // right after the frees were queued on it
    }
    exe.reset();  // frees its look-back words after its last run, on this thread's stream
    cuda::ContextGuard guard(0);
    SCANC_CU(cuStreamSynchronize, CU_STREAM_PER_THREAD);
}

TEST(CudaGraph, GivenStridedOutputsReceiveTheResultsInTheirOwnLayout) {
    // Eager, into a transposed output: the rows scan writes with the output's strides.
    SKIP_WITHOUT_GPU();
    auto program = cuda_test::parse_program(R"(
combine add(a | b) { return a + b }
program into_transposed(x: f32[M, N]) { y = scan add(x) dim=1
  return y }
)");
    auto exe = CudaBackend().compile(program);
    std::mt19937_64 rng(26);
    for (auto [m, n] : {std::pair<std::int64_t, std::int64_t>{37, 4099}, {257, 31}, {5, 100003}}) {
        Tensor x = cuda_test::random_tensor(DType::F32, {m, n}, rng);
        cuda_test::DeviceCopy device(x);
        Output storage(DType::F32, {n, m});  // y[i, j] at j * m + i
        TensorView out = storage.view();
        out.sizes = {m, n};
        out.strides = {1, m};
        std::vector<TensorView> outputs = {out};
        RunOptions options;
        options.outputs = outputs;
        auto got = exe->run(std::vector<TensorView>{device.on_device(x.view())}, options);
        EXPECT_EQ(got[0].data(), out.data);
        EXPECT_EQ(got[0].view().strides, out.strides);
        Tensor back = storage.to_host();
        TensorView seen = back.view();
        seen.sizes = {m, n};
        seen.strides = {1, m};
        auto want = ReferenceBackend().compile(program)->run(std::vector<TensorView>{x.view()});
        EXPECT_TRUE(cuda_test::close(seen, want[0], 0, 0)) << m << "x" << n;
    }
}

}  // namespace
}  // namespace scanc
