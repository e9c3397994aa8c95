// The reference executor: evaluates a program's nodes in topological order, each into a
// contiguous CPU tensor, and checks every computed size against the node's symbolic shape.
#include "scanc/backends/reference.h"

#include <unordered_map>
#include <unordered_set>

#include "reference_ops.h"
#include "scanc/ir/scalar_eval.h"

namespace scanc {

namespace {

// A weak (literal-derived) captured value computes as f32 or i64, as make_scan types it.
DType instantiated_dtype(const Type& t) {
    if (!t.weak) return t.dtype;
    return t.dtype == DType::F64 ? DType::F32 : DType::I64;
}

Tensor literal_tensor(const Node& node) {
    const auto& lit = node.as<LiteralAttr>();
    DType t = node.type().dtype;
    Tensor out = Tensor::empty(t, {});
    Scalar v = lit.is_float ? Scalar::of_double(t, lit.f) : Scalar::of_int(t, lit.i);
    store_scalar(v, out.data());
    return out;
}

class ReferenceExecutable : public Executable {
public:
    ReferenceExecutable(ProgramRef program, bool f64_carries)
        : program_(std::move(program)), order_(topo_order(program_->results)) {
        // Instantiate every scan's combine once; runs only evaluate.
        for (const Node* n : order_) {
            if (n->op != Op::Scan) continue;
            const auto& attr = n->as<ScanAttr>();
            std::vector<DType> leaves, captured;
            for (int i = 0; i < attr.num_leaves; ++i) leaves.push_back(n->types[i].dtype);
            for (std::size_t c = attr.num_leaves; c < n->inputs.size(); ++c)
                captured.push_back(instantiated_dtype(n->inputs[c]->type()));
            combine_types_.emplace(n, f64_carries ? widened(*attr.combine, leaves, captured, n->loc)
                                                  : instantiate_combine(*attr.combine, leaves, captured, n->loc));
        }
        // Results stay alive to the end; everything else is freed after its last reader.
        for (const Node* n : order_)
            for (auto& in : n->inputs) ++readers_[in.get()];
        for (auto& r : program_->results) readers_[r.get()] += 1;
    }

    std::vector<Tensor> run(std::span<const TensorView> inputs, const RunOptions& options) override {
        refuse_given_outputs(options, *program_, "reference");
        Bindings bindings = bind_inputs(*program_, inputs);
        std::unordered_map<const Node*, std::vector<Tensor>> values;
        std::unordered_map<const Node*, int> remaining = readers_;
        for (const Node* n : order_) {
            if (n->op == Op::Project) {  // the tensor the scan made; no copy
                const auto& multi = values.at(n->inputs[0].get());
                values.emplace(n, std::vector<Tensor>{multi.at(n->as<ProjectAttr>().index)});
                release_inputs(*n, remaining, values);
                continue;
            }
            std::vector<Tensor> args;
            for (auto& in : n->inputs) {
                const auto& v = values.at(in.get());
                SCANC_INTERNAL_CHECK(v.size() == 1, "node ", n->op, " reads a multi-output ",
                                     in->op, " without a project");
                args.push_back(v[0]);
            }
            std::vector<Tensor> out = evaluate(*n, args, inputs, bindings);
            check_sizes(*n, out, bindings);
            values.emplace(n, std::move(out));
            release_inputs(*n, remaining, values);
        }
        std::vector<Tensor> results;
        std::unordered_set<const void*> returned;
        for (auto& r : program_->results) {
            Tensor t = values.at(r.get())[0];
            // Outputs never share memory, even when a value is returned twice.
            if (t.numel() > 0 && !returned.insert(t.data()).second) t = contiguous_copy(t);
            results.push_back(std::move(t));
        }
        return results;
    }

private:
    std::vector<Tensor> evaluate(const Node& n, std::span<const Tensor> args,
                                 std::span<const TensorView> inputs, const Bindings& bindings) {
        switch (n.op) {
            case Op::Param: {
                const auto& p = n.as<ParamAttr>();
                const TensorView& in = inputs[p.index];
                if (in.device.kind != DeviceKind::CPU)
                    user_error(n.loc, cat("the reference backend runs on CPU tensors, but input `",
                                          p.name, "` is on a CUDA device"));
                return {contiguous_copy(in)};
            }
            case Op::Literal: return {literal_tensor(n)};
            case Op::Scan: return reference::run_scan(n, combine_types_.at(&n), args);
            case Op::Slice: return {reference::run_slice(n, args[0], bindings)};
            case Op::Concat: return {reference::run_concat(n, args)};
            case Op::Interleave: return {reference::run_interleave(n, args[0], args[1])};
            default:
                return {reference::run_elementwise(n, args, evaluate_shape(n.type().shape, bindings))};
        }
    }

    // The combine typed with f32 leaves and captured values at f64, where it can be (a combine
    // that casts to f32 cannot), else as the program has it.
    static CombineTypes widened(const Combine& combine, std::vector<DType> leaves, std::vector<DType> captured,
                                const SourceLoc& loc) {
        auto wide = [](std::vector<DType> ts) {
            for (DType& t : ts) t = t == DType::F32 ? DType::F64 : t;
            return ts;
        };
        try {
            return instantiate_combine(combine, wide(leaves), wide(captured), loc);
        } catch (const CompileError&) {
            return instantiate_combine(combine, leaves, captured, loc);
        }
    }

    static void release_inputs(const Node& n, std::unordered_map<const Node*, int>& remaining,
                               std::unordered_map<const Node*, std::vector<Tensor>>& values) {
        for (auto& in : n.inputs)
            if (--remaining.at(in.get()) == 0) values.erase(in.get());
    }

    static void check_sizes(const Node& n, const std::vector<Tensor>& out, const Bindings& b) {
        SCANC_INTERNAL_CHECK(static_cast<int>(out.size()) == n.num_outputs(), "node ", n.op,
                             " made ", out.size(), " outputs, expected ", n.num_outputs());
        for (std::size_t k = 0; k < out.size(); ++k) {
            std::vector<std::int64_t> want = evaluate_shape(n.types[k].shape, b);
            SCANC_INTERNAL_CHECK(out[k].sizes() == want, "node ", n.op, " at ", n.loc.str(),
                                 " computed sizes that differ from its shape ",
                                 shape_str(n.types[k].shape));
        }
    }

    ProgramRef program_;
    std::vector<const Node*> order_;
    std::unordered_map<const Node*, CombineTypes> combine_types_;
    std::unordered_map<const Node*, int> readers_;  // input slots (and results) reading each node
};

}  // namespace

std::unique_ptr<Executable> ReferenceBackend::compile(const ProgramRef& program) {
    return std::make_unique<ReferenceExecutable>(program, f64_carries_);
}

}  // namespace scanc
