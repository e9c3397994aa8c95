// Running a plan: binding sizes and strides as kernel arguments, allocating outputs and
// intermediates stream-ordered, launching each stage on the caller's stream.
#include "executable.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "cache.h"
#include "driver.h"
#include "stamps.h"
#include "scanc/ir/builder.h"

namespace scanc::cuda {

namespace {

using i64 = std::int64_t;

// A strided view on the device: what an Access or a Target resolves to for one run.
struct DeviceView {
    CUdeviceptr ptr = 0;
    DType dtype = DType::F32;
    std::vector<i64> sizes, strides;  // strides in elements
};

// ceil(a / b) for a > 0 (else 0), without adding b - 1, which overflows for a huge step.
i64 ceil_div(i64 a, i64 b) { return a > 0 ? (a - 1) / b + 1 : 0; }

void apply_slice(DeviceView& v, const Node& slice, const Bindings& b) {
    const auto& a = slice.as<SliceAttr>();
    const auto [s, len] = located_sizes(slice.loc, [&] { return slice_extent(a, v.sizes[a.dim], b); });
    v.ptr += static_cast<CUdeviceptr>(s * v.strides[a.dim] * static_cast<i64>(dtype_size(v.dtype)));
    if (len > 1) v.strides[a.dim] *= a.step;  // one element has no next one to step to
    v.sizes[a.dim] = len;
}

// Strides of `v` seen from a stage of shape `shape` (NumPy broadcasting, right-aligned).
std::vector<i64> broadcast_strides(const DeviceView& v, const std::vector<i64>& shape) {
    std::size_t rank = std::max<std::size_t>(shape.size(), 1), r = v.sizes.size();
    std::vector<i64> out(rank, 0);
    for (std::size_t j = 0; j < shape.size(); ++j) {
        if (j + r < shape.size()) continue;
        std::size_t k = j + r - shape.size();
        out[j] = v.sizes[k] == 1 ? 0 : v.strides[k];
    }
    return out;
}

// Lets `fn` launch with `bytes` of dynamic shared memory: past 48 KB a kernel must opt in, up to
// the device's per-block limit (static shared memory included).
void allow_dynamic_smem(CUfunction fn, unsigned bytes, const DeviceInfo& info) {
    int static_bytes = 0;
    SCANC_CU(cuFuncGetAttribute, &static_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn);
    if (static_cast<int>(bytes) + static_bytes > info.smem_optin)
        throw RuntimeError(cat("CUDA tuning needs ", bytes + static_bytes, " bytes of shared memory per ",
                               "block; this device allows ", info.smem_optin,
                               " (use fewer row items or threads)"));
    if (bytes + static_bytes > 48 * 1024)
        SCANC_CU(cuFuncSetAttribute, fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                 static_cast<int>(bytes));
}

// How rows of `len` take the look-back rows kernels' tiles (scan_rows in kernels.cpp): rows of
// one shared tile take the fewest warps of it, a power of two, whose segments hold them, and
// share it (`per_tile` rows) where that leaves room; a row that fills a look-back tile of the
// same size runs there, unless the table gives the shared kernel blocks of its own, as many or
// more (heavy combines' look-back tiles can be as short as the shared ones: logcumsumexp rows of
// 4096, 33.7% of copy in the shared kernel at 8 blocks/SM, 31.1% in the look-back one at 3;
// online softmax's rows of 4096 at 4 blocks/SM in both, 97.1% and 94.5%). `tile`: the elements
// of one tile.
struct RowTiles {
    bool shared = false;
    i64 per_tile = 1, tile = 0;
};
RowTiles row_tiles(i64 len, bool vec, const Tuning& t) {
    const i64 warps = t.row_threads / 32, segment = 32 * i64{vec ? t.row_items : t.scalar_row_items()};
    const i64 shared_segment = 32 * i64{t.shared_row_items()};
    RowTiles r;
    r.shared = len <= shared_segment * warps;
    if (r.shared) {
        i64 row_warps = 1;
        while (row_warps * shared_segment < len) row_warps *= 2;
        r.per_tile = std::max<i64>(warps / row_warps, 1);  // warps need not be a power of two
        r.shared = r.per_tile > 1 || shared_segment < segment ||  // else per_tile is 1
                   (t.shared_min_blocks && t.shared_min_blocks >= t.min_blocks);
    }
    r.tile = (r.shared ? shared_segment : segment) * warps;
    return r;
}

// The device memory a run allocates, stream ordered, and frees on its stream when the run ends,
// however it ends (an allocation or a launch that fails midway too): temporaries always, results
// unless handed over to the Tensors that own them.
class RunMemory {
public:
    explicit RunMemory(CUstream stream) : stream_(stream) {}
    RunMemory(const RunMemory&) = delete;
    RunMemory& operator=(const RunMemory&) = delete;
    ~RunMemory() {
        for (CUdeviceptr p : owned_) driver().cuMemFreeAsync(p, stream_);
    }
    CUdeviceptr allocate(std::size_t bytes) {
        if (bytes == 0) return 0;
        CUdeviceptr p = 0;
        SCANC_CU(cuMemAllocAsync, &p, bytes, stream_);
        owned_.push_back(p);
        return p;
    }
    // `p` is someone else's to free now.
    void hand_over(CUdeviceptr p) { std::erase(owned_, p); }

private:
    CUstream stream_;
    std::vector<CUdeviceptr> owned_;
};

// Bytes before the look-back status words: the tile counter, alone in its own line.
constexpr std::size_t kLookbackHeader = 256;

// While the calling thread's stream captures a graph, lets it make calls a global-mode capture
// forbids (loading a kernel's module at a first run); its stream work is still captured.
class RelaxedCaptureMode {
public:
    RelaxedCaptureMode() { SCANC_CU(cuThreadExchangeStreamCaptureMode, &mode_); }
    ~RelaxedCaptureMode() { driver().cuThreadExchangeStreamCaptureMode(&mode_); }
    RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
    RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

private:
    CUstreamCaptureMode mode_ = CU_STREAM_CAPTURE_MODE_RELAXED;
};

}  // namespace

class CudaExecutable::Run {
public:
    // `capturing`: the stream is capturing a graph, which will replay this run's launches.
    Run(CudaExecutable& exe, std::span<const TensorView> inputs, const RunOptions& options, bool capturing)
        : exe_(exe), plan_(exe.plan_), stream_(static_cast<CUstream>(options.stream)), capturing_(capturing),
          given_(!options.outputs.empty()), memory_(stream_) {
        const Program& program = *plan_.program;
        bindings_ = bind_inputs(program, inputs);
        for (const Node* n : exe.interleaves_) {  // as the reference and the CPU check them
            const int d = n->as<InterleaveAttr>().dim;
            const i64 even = n->inputs[0]->type().shape[d].evaluate(bindings_);
            const i64 odd = n->inputs[1]->type().shape[d].evaluate(bindings_);
            check_interleave_lengths(n->loc, d, even, odd);
        }
        host_ = std::none_of(inputs.begin(), inputs.end(),
                             [](auto& v) { return v.device.kind == DeviceKind::CUDA; });
        if (host_ && capturing_ && !inputs.empty())
            user_error(program.loc, cat("program `", program.name, "`: a run captured into a CUDA graph needs its ",
                                        "inputs in device memory (a replay cannot copy host memory it no longer has)"));
        if (given_) check_given_outputs(program, bindings_, inputs, options.outputs, {DeviceKind::CUDA, exe_.device_});
        for (std::size_t i = 0; i < inputs.size(); ++i) inputs_.push_back(device_input(inputs[i]));
        for (auto& b : plan_.buffers) buffers_.push_back(alloc_contiguous(b.node->type()));
        for (std::size_t r = 0; r < program.results.size(); ++r)
            results_.push_back(given_ ? given_output(options.outputs[r]) : alloc_contiguous(program.results[r]->type()));
    }

    std::vector<Tensor> launch_all() {
        std::vector<StageViews> views;
        std::vector<std::optional<StageLayout>> wanted;
        for (const Stage& s : plan_.stages) {
            views.push_back(views_of(s));
            wanted.push_back(rows_layout(s, views.back()));
        }
        Module& module = exe_.module_for(wanted);
        std::vector<Kernel> chosen;
        for (std::size_t s = 0; s < plan_.stages.size(); ++s)
            chosen.push_back(choose(plan_.stages[s], views[s], module.kernels[s]));
        exe_.load_kernels(module, chosen, /*may_quick=*/!capturing_);
        for (std::size_t s = 0; s < plan_.stages.size(); ++s)
            if (chosen[s] != kNone) launch(plan_.stages[s], views[s], module.kernels[s], chosen[s]);
        std::vector<Tensor> out;
        const bool to_host_memory = host_ && !given_;
        for (auto& r : results_) out.push_back(to_host_memory ? to_host(r) : to_device_tensor(r));
        if (to_host_memory) SCANC_CU(cuStreamSynchronize, stream_);
        return out;
    }

private:
    DeviceView alloc_contiguous(const Type& t) {
        DeviceView v;
        v.dtype = t.dtype;
        v.sizes = evaluate_shape(t.shape, bindings_);
        v.strides = contiguous_strides(v.sizes);
        i64 n = 1;
        for (i64 s : v.sizes) n *= s;
        std::size_t bytes = static_cast<std::size_t>(n) * dtype_size(t.dtype);
        v.ptr = memory_.allocate(bytes);
        // Tests poison outputs so that an element a kernel forgets to write shows (NaN / -1).
        if (bytes && std::getenv("SCANC_CUDA_POISON")) SCANC_CU(cuMemsetD8Async, v.ptr, 0xff, bytes, stream_);
        return v;
    }

    static DeviceView given_output(const TensorView& out) {
        return {reinterpret_cast<CUdeviceptr>(out.data), out.dtype, out.sizes, out.strides};
    }

    // A captured launch's look-back state: words of its own, zeroed by the graph before it and
    // freed after the run, so that every replay starts from zeroed words at epoch 1 (a replay
    // repeats the launch's arguments; the executable's words would carry the last replay's
    // epoch). None where the launch uses none.
    LookbackWords graph_lookback(std::size_t bytes, const Tuning& t) {
        if (bytes == 0 && !t.tickets) return {};
        const std::size_t total = bytes + kLookbackHeader;
        const CUdeviceptr words = memory_.allocate(total);
        SCANC_CU(cuMemsetD8Async, words, 0, total, stream_);
        return {words + kLookbackHeader, words, 1, 0};
    }

    DeviceView device_input(const TensorView& in) {
        DeviceView v{0, in.dtype, in.sizes, in.strides};
        if (in.device.kind == DeviceKind::CUDA) {
            if (in.device.index != exe_.device_)
                user_error({}, cat("input on cuda:", in.device.index, ", but this program runs on cuda:",
                                   exe_.device_, "; move the inputs to one device"));
            v.ptr = reinterpret_cast<CUdeviceptr>(in.data);
            return v;
        }
        Tensor host = in.is_contiguous() ? Tensor::wrap(in, nullptr) : contiguous_copy(in);
        std::size_t bytes = static_cast<std::size_t>(in.numel()) * dtype_size(in.dtype);
        v.strides = contiguous_strides(in.sizes);
        v.ptr = memory_.allocate(bytes);
        // From pageable memory the copy is staged before it returns, so `host` may go now.
        if (bytes) SCANC_CU(cuMemcpyHtoDAsync, v.ptr, host.data(), bytes, stream_);
        return v;
    }

    DeviceView source_view(const Access& a) {
        DeviceView v = a.input >= 0 ? inputs_[a.input] : buffers_[a.buffer];
        for (const Node* s : a.slices) apply_slice(v, *s, bindings_);
        return v;
    }

    DeviceView target_view(const Target& t) {
        DeviceView v = t.result >= 0 ? results_[t.result] : buffers_[t.buffer];
        if (!t.parent) return v;
        if (t.parent->op == Op::Interleave) {
            int d = t.parent->as<InterleaveAttr>().dim;
            v.ptr += static_cast<CUdeviceptr>(t.part * v.strides[d] * static_cast<i64>(dtype_size(v.dtype)));
            v.strides[d] *= 2;
            return v;
        }
        int d = t.parent->as<ConcatAttr>().dim;
        i64 offset = 0;
        for (int k = 0; k < t.part; ++k) offset += t.parent->inputs[k]->type().shape[d].evaluate(bindings_);
        v.ptr += static_cast<CUdeviceptr>(offset * v.strides[d] * static_cast<i64>(dtype_size(v.dtype)));
        return v;
    }

    // A stage's iteration shape and the views of its accesses and outputs, their strides
    // (elements) broadcast to that shape: worked out once per run.
    struct StageViews {
        std::vector<i64> shape;
        std::vector<DeviceView> in, out;
    };

    StageViews views_of(const Stage& s) {
        StageViews v;
        v.shape = evaluate_shape(stage_shape(s), bindings_);
        auto broadcast = [&](DeviceView d) {
            d.strides = broadcast_strides(d, v.shape);
            return d;
        };
        for (const Access& a : s.inputs) v.in.push_back(broadcast(source_view(a)));
        if (s.inputs.empty()) v.in.push_back(broadcast(DeviceView{0, DType::F32, {}, {}}));  // NIN >= 1
        for (const StageOutput& o : s.outputs) v.out.push_back(broadcast(target_view(o.target)));
        return v;
    }

    // The layout class stage `s` needs when a rows kernel runs it (inner extent 1, rows longer
    // than one element): each access's and output's byte step along the scan dim, where it is its
    // element size, 0 or the contiguous class's step, else kRuntimeStep (a stride that depends on
    // sizes must not be compiled in). None when any class will do.
    std::optional<StageLayout> rows_layout(const Stage& s, const StageViews& views) {
        if (!s.is_scan) return std::nullopt;
        const std::vector<i64>& shape = views.shape;
        i64 inner = 1;
        for (std::size_t j = s.dim + 1; j < shape.size(); ++j) inner *= shape[j];
        if (inner != 1 || shape[s.dim] <= 1) return std::nullopt;
        const StageLayout& contiguous = exe_.modules_.front().layout[s.id];
        auto step = [&](const DeviceView& v, i64 expected) {
            const i64 size = static_cast<i64>(dtype_size(v.dtype));
            const i64 actual = v.strides[s.dim] * size;
            return actual == 0 || actual == size || actual == expected ? actual : kRuntimeStep;
        };
        StageLayout layout;
        for (std::size_t k = 0; k < s.inputs.size(); ++k) layout.in.push_back(step(views.in[k], contiguous.in[k]));
        for (std::size_t k = 0; k < s.outputs.size(); ++k) layout.out.push_back(step(views.out[k], contiguous.out[k]));
        return layout;
    }

    // Whether the vector rows kernels may run stage `s` (its module has them, so every access
    // steps by its element size or 0 along the scan dim): rows of a multiple of 4 elements
    // whose every row of every stepping access and output starts at a multiple of 4 elements'
    // bytes (pointer and the other dims' strides).
    bool whole_vectors(const Stage& s, const StageViews& views) {
        if (views.shape[s.dim] % 4) return false;
        auto aligned = [&](const DeviceView& v) {
            if (v.strides[s.dim] == 0) return true;  // broadcast along the row: read as a scalar
            bool ok = v.ptr % (4 * dtype_size(v.dtype)) == 0;
            for (std::size_t j = 0; j < v.strides.size(); ++j) ok = ok && (static_cast<int>(j) == s.dim || v.strides[j] % 4 == 0);
            return ok;
        };
        return std::all_of(views.in.begin(), views.in.end(), aligned) &&
               std::all_of(views.out.begin(), views.out.end(), aligned);
    }

    // Kernel argument block: size[R], in[NIN] {ptr, byte stride[R]}, out[NOUT] {...}, scan params.
    std::vector<i64> pack(const StageViews& views) {
        std::size_t rank = std::max<std::size_t>(views.shape.size(), 1);
        std::vector<i64> args(rank, 1);
        std::copy(views.shape.begin(), views.shape.end(), args.begin());
        auto put = [&](const DeviceView& v) {
            args.push_back(static_cast<i64>(v.ptr));
            for (i64 stride : v.strides) args.push_back(stride * static_cast<i64>(dtype_size(v.dtype)));
        };
        for (const DeviceView& v : views.in) put(v);
        for (const DeviceView& v : views.out) put(v);
        return args;
    }

    // Whether a cols launch has so few lines of col_lanes that at least 16 of a line's tiles
    // would be resident at once (at the tuning's minimum blocks per SM), each waiting on the
    // look-back of those before it: lines of few_lines_lanes then make fewer, taller tiles per
    // line. (Twentieth session, H200: 16-lane lines took sum 65536x512 along dim 0 from 57 to 75%
    // of copy, at 4 resident tiles a line. Forty-second session, H100, once a cols tile published
    // one run of look-back words: at 4 to 8 a line, 32-lane lines read 2-4 points more, the main
    // job's shape 61 -> 65%; at 16, sum 65536x512 still read 3 points more with 16 lanes.)
    bool few_lines(const std::vector<i64>& shape, int dim, i64 inner, const Tuning& t) const {
        i64 outer = 1;
        for (int j = 0; j < dim; ++j) outer *= shape[j];
        return 16 * outer * ceil_div(inner, t.col_lanes) <= i64{exe_.sm_count_} * t.cols_min_blocks();
    }

    // The kernel stage `s` launches with (kNone: it has no elements).
    Kernel choose(const Stage& s, const StageViews& views, const Kernels& k) {
        const std::vector<i64>& shape = views.shape;
        if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return kNone;
        if (!s.is_scan) return kMap;
        i64 inner = 1, len = shape[s.dim];
        for (std::size_t j = s.dim + 1; j < shape.size(); ++j) inner *= shape[j];
        const Tuning& t = k.tuning;
        if (inner != 1) return k.has(kColsFewLines) && few_lines(shape, s.dim, inner, t) ? kColsFewLines : kCols;
        if (len <= t.resident_len()) return t.resident_lane_bits(len) == 5 ? kResident : kResidentGroups;
        const bool vec = k.has(kRowsVec) && whole_vectors(s, views);
        if (row_tiles(len, vec, t).shared) return vec ? kRowsSharedVec : kRowsShared;
        return vec ? kRowsVec : kRows;
    }

    void launch(const Stage& s, const StageViews& views, const Kernels& k, Kernel kernel) {
        const std::vector<i64>& shape = views.shape;
        i64 numel = 1;
        for (i64 x : shape) numel *= x;
        std::vector<i64> args = pack(views);
        unsigned threads, smem = k.smem[kernel];
        i64 blocks;
        CUfunction fn = k.fns[kernel];
        std::optional<std::pair<CUdeviceptr, StampsHeader>> stamps;  // where tile records go
        if (kernel == kMap) {
            threads = static_cast<unsigned>(k.tuning.map_threads);
            blocks = std::min<i64>(ceil_div(numel, threads), static_cast<i64>(exe_.sm_count_) * 32);
        } else {
            i64 outer = 1, inner = 1, len = shape[s.dim];
            for (int j = 0; j < s.dim; ++j) outer *= shape[j];
            for (std::size_t j = s.dim + 1; j < shape.size(); ++j) inner *= shape[j];
            int nw = stage_state_words(s);
            i64 chunks, groups = 1, per_tile = 1, status_words, lookback_words = 0, tile = 0;
            const Tuning& t = k.tuning;
            if (kernel == kResident || kernel == kResidentGroups) {
                // A row fits a warp's segment: a resident grid strides over the rows, one per
                // group of 2^lw lanes (the fewest whose items hold it; scan_rows_resident_groups
                // in kernels.cpp), no look-back. Whole warps have a kernel of their own.
                chunks = 1;
                const int lw = t.resident_lane_bits(len);
                const i64 per_block = i64{t.res_threads / 32} << (5 - lw);
                blocks = std::min<i64>(ceil_div(outer, per_block), i64{exe_.sm_count_} * k.per_sm[kernel]);
                threads = static_cast<unsigned>(t.res_threads);
                status_words = 0;
            } else if (kernel == kCols || kernel == kColsFewLines) {
                const int lanes = kernel == kCols ? t.col_lanes : t.few_lines_lanes;
                groups = ceil_div(inner, lanes);
                chunks = ceil_div(len, i64{t.col_steps(lanes)});
                blocks = outer * groups * chunks;
                threads = static_cast<unsigned>(t.col_warps * 32);
                status_words = chunks > 1 ? blocks * lanes * 2 * nw : 0;
            } else {
                const RowTiles rows = row_tiles(len, kernel == kRowsVec || kernel == kRowsSharedVec, t);
                per_tile = rows.per_tile;
                tile = rows.tile;
                chunks = rows.shared ? 1 : ceil_div(len, tile);
                blocks = ceil_div(outer, per_tile) * chunks;
                threads = static_cast<unsigned>(t.row_threads);
                // A, then the copies of P (per row and chunk), the window ends' F (f and A: skip),
                // then the stamps' records (per tile)
                lookback_words = outer * chunks * (1 + t.row_pcopies + (t.row_skip ? 2 : 0)) * nw;
                status_words = chunks > 1 || t.stamps ? lookback_words + (t.stamps ? blocks * 8 : 0) : 0;
                // The stamps of look-back tiles, after the look-back words (A, P copies).
                if (t.stamps) stamps.emplace(0, StampsHeader{blocks, chunks, outer, len, t.row_window, tile, nw});
            }
            if (blocks >= (i64{1} << 31))
                user_error({}, cat("scan too large for one launch: ", blocks, " tiles"));
            const std::size_t bytes = static_cast<std::size_t>(status_words) * 8;
            const LookbackWords w = capturing_ ? graph_lookback(bytes, t)
                                               : exe_.prepare_lookback(bytes, static_cast<std::uint32_t>(blocks), stream_);
            for (i64 v : {static_cast<i64>(w.status), static_cast<i64>(w.counter), i64{w.epoch}, i64{w.tile_base},
                          outer, len, inner, chunks, groups, per_tile})
                args.push_back(v);
            if (stamps) stamps->first = w.status + static_cast<CUdeviceptr>(lookback_words * 8);
        }
        if (!fn) {  // reachable_kernels and choose disagree: a bug, not bad input
            std::string dims;
            for (i64 x : shape) dims += cat(dims.empty() ? "" : ", ", x);
            throw RuntimeError(cat("CUDA: stage ", s.id, " of shape (", dims,
                                   ") needs a kernel its program left out (internal error)"));
        }
        void* params[] = {args.data()};
        SCANC_CU(cuLaunchKernel, fn, static_cast<unsigned>(blocks), 1, 1, threads, 1, 1, smem, stream_,
                 params, nullptr);
        if (stamps) dump_tile_stamps(stamps->first, stamps->second, stream_);
    }

    Tensor to_host(const DeviceView& v) {
        Tensor t = Tensor::empty(v.dtype, v.sizes);
        std::size_t bytes = static_cast<std::size_t>(t.numel()) * dtype_size(v.dtype);
        if (bytes) SCANC_CU(cuMemcpyDtoHAsync, t.data(), v.ptr, bytes, stream_);
        return t;  // the device copy goes with the run's memory, after the copy on its stream
    }

    Tensor to_device_tensor(const DeviceView& v) {
        TensorView view;
        view.data = reinterpret_cast<void*>(v.ptr);
        view.dtype = v.dtype;
        view.sizes = v.sizes;
        view.strides = v.strides;
        view.device = {DeviceKind::CUDA, exe_.device_};
        if (given_) return Tensor::wrap(view, nullptr);  // the caller's memory
        memory_.hand_over(v.ptr);
        CUstream stream = stream_;
        int device = exe_.device_;
        std::shared_ptr<void> owner(reinterpret_cast<void*>(v.ptr), [stream, device](void* p) {
            if (!p) return;
            ContextGuard guard(device);
            driver().cuMemFreeAsync(reinterpret_cast<CUdeviceptr>(p), stream);
        });
        return Tensor::wrap(view, v.ptr ? owner : std::shared_ptr<void>());
    }

    CudaExecutable& exe_;
    const Plan& plan_;
    CUstream stream_;
    bool capturing_, given_;  // given_: the results go where RunOptions::outputs says
    Bindings bindings_;
    bool host_ = false;
    RunMemory memory_;
    std::vector<DeviceView> inputs_, buffers_, results_;
};

CudaExecutable::CudaExecutable(ProgramRef program, int device)
    : program_(std::move(program)), device_(device) {
    plan_ = make_plan(program_);
    for (const Node* n : topo_order(program_->results))
        if (n->op == Op::Interleave) interleaves_.push_back(n);
    ContextGuard guard(device_);
    RelaxedCaptureMode relaxed;  // compile() inside a graph capture (scanc.torch's first call)
    const DeviceInfo& info = device_info(device_);
    sm_count_ = info.sm_count;
    int cc = info.cc_major * 10 + info.cc_minor;
    if (cc < 80)  // the kernels use sm_80's warp reductions
        throw RuntimeError(cat("scanc's CUDA kernels need a GPU of compute capability 8.0 or newer; device ",
                               device_, " is ", info.cc_major, ".", info.cc_minor));
    // Keep freed stream-ordered memory in the pool: runs reuse it without a driver round trip.
    CUmemoryPool pool;
    CUdevice dev;
    SCANC_CU(cuDeviceGet, &dev, device_);
    if (driver().cuDeviceGetDefaultMemPool(&pool, dev) == CUDA_SUCCESS) {
        cuuint64_t keep = ~cuuint64_t{0};
        driver().cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep);
    }
    cc_ = cc;
    modules_.push_back(load(contiguous_layout(plan_)));
}

CudaExecutable::Module CudaExecutable::load(const Layout& layout) {
    Module m{layout, &program_kernels(generate_source(plan_, cc_, layout), device_info(device_).arch(), device_), {}};
    for (const Stage& s : plan_.stages) {
        Kernels k;
        k.tuning = stage_tuning(s, cc_);
        auto name = [&](Kernel kernel, const std::string& n) {
            if (m.program->has(n)) k.names[kernel] = n;
        };
        if (s.is_scan) {
            name(kRows, rows_kernel_name(s.id, false, false));
            name(kRowsShared, rows_kernel_name(s.id, true, false));
            name(kRowsVec, rows_kernel_name(s.id, false, true));
            name(kRowsSharedVec, rows_kernel_name(s.id, true, true));
            name(kResident, resident_kernel_name(s.id, false));
            name(kResidentGroups, resident_kernel_name(s.id, true));
            name(kCols, cols_kernel_name(s.id, false));
            name(kColsFewLines, cols_kernel_name(s.id, true));
            const Tuning& t = k.tuning;
            const int nw = stage_state_words(s);
            auto transpose = [&](int items, bool vec) {
                return static_cast<unsigned>(transpose_smem_bytes(t.row_threads, items, nw, vec));
            };
            k.smem[kRows] = transpose(t.scalar_row_items(), false);
            k.smem[kRowsShared] = transpose(t.shared_row_items(), false);
            k.smem[kRowsVec] = transpose(t.row_items, true);
            k.smem[kRowsSharedVec] = transpose(t.shared_row_items(), true);
            k.smem[kResident] = k.smem[kResidentGroups] =
                static_cast<unsigned>(transpose_smem_bytes(t.res_threads, t.res_items, nw));
        } else {
            name(kMap, cat("scanc_map_", s.id));
        }
        m.kernels.push_back(k);
    }
    return m;
}

void CudaExecutable::load_kernels(Module& m, const std::vector<Kernel>& chosen, bool may_quick) {
    // A kernel loads at its first launch, and again when it was a quick build whose full build
    // is done, or that a graph capture is about to keep.
    std::vector<char> wanted(chosen.size(), 0);
    std::vector<std::string> names;
    for (std::size_t s = 0; s < chosen.size(); ++s) {
        const Kernels& k = m.kernels[s];
        const Kernel kernel = chosen[s];
        wanted[s] = kernel != kNone && (!k.fns[kernel] || (k.quick[kernel] && (!may_quick ||
                                                                              m.program->full_ready(k.names[kernel]))));
        if (wanted[s]) names.push_back(k.names[kernel]);
    }
    if (names.empty()) return;
    std::vector<ProgramKernels::Loaded> fns = m.program->load(names, may_quick);
    const DeviceInfo& info = device_info(device_);
    for (std::size_t s = 0, at = 0; s < chosen.size(); ++s) {
        if (!wanted[s]) continue;
        Kernels& k = m.kernels[s];
        const Kernel kernel = chosen[s];
        const auto [fn, quick] = fns[at++];
        if (!fn) continue;  // the program lacks it: launch says so
        k.quick[kernel] = quick;
        allow_dynamic_smem(fn, k.smem[kernel], info);
        if (kernel == kResident || kernel == kResidentGroups) {
            int blocks = 0;
            SCANC_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor, &blocks, fn, k.tuning.res_threads, k.smem[kernel]);
            k.per_sm[kernel] = std::max(blocks, 1);
        }
        k.fns[kernel] = fn;
    }
}

CudaExecutable::Module& CudaExecutable::module_for(const std::vector<std::optional<StageLayout>>& wanted) {
    auto runs = [&](const Module& m) {
        for (std::size_t s = 0; s < wanted.size(); ++s)
            if (wanted[s] && !(*wanted[s] == m.layout[s])) return false;
        return true;
    };
    for (Module& m : modules_)
        if (runs(m)) return m;
    Layout layout = modules_.front().layout;
    for (std::size_t s = 0; s < wanted.size(); ++s)
        if (wanted[s]) layout[s] = *wanted[s];
    modules_.push_back(load(layout));
    return modules_.back();
}

CudaExecutable::~CudaExecutable() {
    if (!last_run_) return;
    try {
        ContextGuard guard(device_);
        // Freed after the last run, on a stream of this thread's: the caller's may be gone.
        if (lookback_ && driver().cuStreamWaitEvent(CU_STREAM_PER_THREAD, last_run_, 0) == CUDA_SUCCESS)
            driver().cuMemFreeAsync(lookback_, CU_STREAM_PER_THREAD);
        driver().cuEventDestroy(last_run_);
    } catch (...) {  // a destructor must not throw; the memory goes with the context
    }
}

CudaExecutable::LookbackWords CudaExecutable::prepare_lookback(std::size_t bytes, std::uint32_t tiles, CUstream stream) {
    if (!lookback_ || bytes + kLookbackHeader > lookback_bytes_) {
        if (lookback_) SCANC_CU(cuMemFreeAsync, lookback_, stream);
        lookback_bytes_ = std::max(bytes + kLookbackHeader, lookback_bytes_ * 2);
        SCANC_CU(cuMemAllocAsync, &lookback_, lookback_bytes_, stream);
        SCANC_CU(cuMemsetD8Async, lookback_, 0, lookback_bytes_, stream);
        epoch_ = 0;
        tickets_ = 0;
    }
    if (++epoch_ == 0) {  // after 2^32 launches: words of epoch 0 would look current
        SCANC_CU(cuMemsetD8Async, lookback_, 0, lookback_bytes_, stream);
        epoch_ = 1;
        tickets_ = 0;
    }
    const LookbackWords words{lookback_ + kLookbackHeader, lookback_, epoch_, tickets_};
    tickets_ += tiles;
    return words;
}

std::vector<Tensor> CudaExecutable::run(std::span<const TensorView> inputs, const RunOptions& options) {
    std::lock_guard lock(mu_);
    ContextGuard guard(device_);
    CUstream stream = static_cast<CUstream>(options.stream);
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    SCANC_CU(cuStreamIsCapturing, stream, &capture);
    if (capture == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
        // Captured launches use look-back words of their own (Run::graph_lookback), not the
        // executable's: nothing to order against the eager runs.
        RelaxedCaptureMode relaxed;
        Run run(*this, inputs, options, true);
        return run.launch_all();
    }
    // The look-back words are shared by this executable's runs: each waits for the last one,
    // whatever its stream (a no-op on the same stream).
    if (last_run_)
        SCANC_CU(cuStreamWaitEvent, stream, last_run_, 0);
    else
        SCANC_CU(cuEventCreate, &last_run_, CU_EVENT_DISABLE_TIMING);
    Run run(*this, inputs, options, false);
    try {
        std::vector<Tensor> out = run.launch_all();
        SCANC_CU(cuEventRecord, last_run_, stream);
        return out;
    } catch (...) {  // launches that went out before the failure still use the words
        driver().cuEventRecord(last_run_, stream);
        throw;
    }
}

}  // namespace scanc::cuda
