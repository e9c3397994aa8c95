// scanc._core: the compiled half of the Python package. The pure-Python half (scanc/__init__.py)
// turns Python scalars into arrays, picks the program and the output framework, and calls
// CoreModule.run here. Errors: CompileError -> scanc.CompileError (a ValueError), every other
// scanc error -> RuntimeError.
#include <cctype>
#include <climits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "module_check.h"
#include "scanc/scanc.h"
#ifdef SCANC_HAVE_CUDA
#include "scanc/backends/cuda.h"
#endif
#ifdef SCANC_HAVE_ONNX
#include "scanc/backends/onnx.h"
#endif
#include "tensor_convert.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace scanc::python {
namespace {

// A compiled program with a lock: backends need not allow concurrent runs of one executable.
struct CompiledProgram {
    std::unique_ptr<Executable> executable;
    std::mutex run_mutex;
};

// A parsed module plus its executables, compiled on first use per (program, backend).
class CoreModule {
public:
    explicit CoreModule(Module module) : module_(std::move(module)) {}

    std::vector<std::string> programs() const {
        std::vector<std::string> names;
        for (const auto& p : module_.programs) names.push_back(p->name);
        return names;
    }

    std::vector<std::string> combines() const {
        std::vector<std::string> names;
        for (const auto& c : module_.combines) names.push_back(c->name);
        return names;
    }

    std::string text() const { return print_module(module_); }

    // scanc lower: the program with its scans lowered (DESIGN §6), as .scan text (str) or an
    // ONNX model (bytes). bounds/sizes map size symbols to a bound / a fixed size.
    nb::object lower(const std::string& program, const std::string& algorithm,
                     const std::map<std::string, std::int64_t>& bounds,
                     const std::map<std::string, std::int64_t>& sizes, const std::string& emit,
                     bool native_cumsum) const {
        LowerOptions options;
        options.algorithm = parse_algorithm(algorithm);
        options.bounds.assign(bounds.begin(), bounds.end());
        options.sizes.assign(sizes.begin(), sizes.end());
        options.native_cumsum = native_cumsum;
        options.spelling = LowerOptions::Spelling::Python;
        ProgramRef original = module_.program(program);
        ProgramRef lowered = lower_scans(*original, options);
        check_lowered(*lowered, native_cumsum, original.get());
        if (emit == "onnx") {
#ifdef SCANC_HAVE_ONNX
            std::string bytes = export_onnx(*lowered);
            return nb::bytes(bytes.data(), bytes.size());
#else
            user_error({}, "this scanc was built without ONNX export; emit=\"scan\" works");
#endif
        }
        if (emit != "scan") user_error({}, cat("emit=\"", emit, "\": expected \"scan\" or \"onnx\""));
        Module out;
        for (const Node* n : topo_order(lowered->results))
            if (n->op == Op::Scan) out.combines.push_back(n->as<ScanAttr>().combine);
        out.programs.push_back(lowered);
        return nb::str(print_module(out).c_str());
    }

    // scanc emit: the CUDA source the cuda backend generates for `program`, or the PTX NVRTC
    // makes of it for `arch`. Needs no GPU.
    std::string emit(const std::string& program, const std::string& target, const std::string& arch,
                     bool ptx) const {
        if (target != "cuda") user_error({}, cat("target=\"", target, "\": expected \"cuda\""));
#ifdef SCANC_HAVE_CUDA
        ProgramRef p = module_.program(program);
        check_program_associative(*p);  // what run refuses has no kernels to show
        nb::gil_scoped_release release;
        return emit_cuda(p, arch, ptx);
#else
        (void)program, (void)arch, (void)ptx;
        user_error({}, "this scanc was built without the CUDA backend; emit is unavailable");
#endif
    }

    // (name, dtype, dims) per parameter of `program`: dims are ints or symbol names.
    nb::list params(const std::string& program) const {
        nb::list out;
        for (const NodeRef& p : module_.program(program)->params) {
            nb::list dims;
            for (const Size& s : p->type().shape) {
                if (auto c = s.constant())
                    dims.append(*c);
                else
                    dims.append(s.str());
            }
            out.append(nb::make_tuple(p->name, std::string(dtype_name(p->type().dtype)), dims));
        }
        return out;
    }

    nb::list check() const {
        std::vector<ScanReport> reports;
        {
            nb::gil_scoped_release release;
            reports = check_module(module_);
        }
        nb::list out;
        for (const ScanReport& r : reports) {
            nb::dict d;
            d["program"] = r.program;
            d["combine"] = r.combine;
            d["dim"] = r.dim;
            d["reverse"] = r.reverse;
            d["trials"] = r.trials;
            d["pattern"] = r.pattern;
            d["location"] = r.location;
            out.append(d);
        }
        return out;
    }

    // `outputs`: None, or one tensor per result that the run writes into (RunOptions::outputs);
    // the run then returns them.
    nb::tuple run(const std::string& program, const nb::list& inputs, const std::string& backend,
                  const std::string& framework, std::int64_t num_threads, bool ordered,
                  std::uintptr_t stream, const nb::object& outputs_given) {
        ProgramRef prog = module_.program(program);
        if (num_threads < 0 || num_threads > INT_MAX)
            user_error(prog->loc, cat("num_threads ", num_threads, ": must be 0 (the default) or a thread count"));
        std::vector<InputArray> arrays(inputs.size());  // keep the callers' tensors referenced
        std::vector<TensorView> views = import_inputs(*prog, inputs, arrays, backend);
        if (!outputs_given.is_none() && !nb::isinstance<nb::list>(outputs_given) && !nb::isinstance<nb::tuple>(outputs_given))
            throw nb::type_error(cat("out= takes a list or tuple of tensors, one per result of program `", prog->name,
                                     "` (", prog->results.size(), "); got a ",
                                     nb::cast<std::string>(nb::str(outputs_given.type().attr("__name__"))))
                                     .c_str());
        nb::list given = outputs_given.is_none() ? nb::list() : nb::list(outputs_given);
        // An empty list would read as "no outputs given" below (RunOptions::outputs).
        if (!outputs_given.is_none() && given.size() == 0) check_output_count(*prog, 0);
        std::vector<InputArray> given_arrays(given.size());
        std::vector<TensorView> given_views;
        for (std::size_t r = 0; r < given.size(); ++r) {
            std::string what = cat("output ", r, " of program `", prog->name, "`");
            nb::ndarray<> writable;  // the run writes there: a read-only array is refused
            if (nb::try_cast(given[r], writable)) {
                given_arrays[r] = InputArray(writable);
                given_views.push_back(to_view(given_arrays[r], what));
                continue;
            }
            PyErr_Clear();
            if (nb::hasattr(given[r], "flags") && nb::hasattr(given[r].attr("flags"), "writeable") &&
                !nb::cast<bool>(given[r].attr("flags").attr("writeable")))
                user_error(prog->loc, cat(what, " is read-only; the run writes its results there"));
            given_views.push_back(import_array(given[r], given_arrays[r], what, what, "a DLPack tensor"));
        }
        RunOptions options;
        options.num_threads = static_cast<int>(num_threads);
        options.ordered = ordered;
        options.stream = reinterpret_cast<void*>(stream);  // CUDA: the caller's CUstream
        options.outputs = given_views;
        std::vector<Tensor> outputs;
        {
            // The arrays stay referenced by `arrays`, so their memory outlives the run.
            nb::gil_scoped_release release;
            CompiledProgram& compiled = executable(prog, backend);
            std::lock_guard lock(compiled.run_mutex);
            outputs = compiled.executable->run(views, options);
        }
        if (!given_views.empty()) return nb::tuple(given);
        Framework fw = parse_framework(framework);
        nb::list results;
        for (Tensor& t : outputs) results.append(to_python(std::move(t), fw));
        return nb::tuple(results);
    }

private:
    // CompileError when `object` lives on a device that is neither a CPU nor CUDA (torch's meta,
    // mps, ...): its DLPack export fails, and its dtype is not why.
    static void refuse_unreadable_device(nb::handle object, const std::string& what) {
        if (!nb::hasattr(object, "device")) return;
        const nb::object device_object = object.attr("device");
        const std::string device = nb::cast<std::string>(nb::str(device_object));
        std::string lower = device;
        for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (lower.find("cpu") == std::string::npos && lower.find("cuda") == std::string::npos)
            user_error({}, cat(what, " is on device `", device, "`; scanc reads CPU memory, and CUDA memory on ",
                               "the cuda backend"));
    }

    // `object` as a view of its memory, kept referenced by `array` (`what` names it in dtype and
    // device errors); TypeError "`named` is a T; expected `expected`" when it is not a tensor.
    static TensorView import_array(nb::handle object, InputArray& array, const std::string& named,
                                   const std::string& what, const char* expected) {
        if (!nb::try_cast(object, array)) {
            PyErr_Clear();  // what the failed cast left (e.g. __dlpack__'s BufferError)
            // An array DLPack cannot carry (NumPy's object dtype, or bytes not in this machine's order).
            if (nb::hasattr(object, "dtype") && nb::hasattr(object, "__dlpack__")) {
                refuse_unreadable_device(object, what);
                const nb::object dtype_object = object.attr("dtype");
                const std::string dtype = nb::cast<std::string>(nb::str(dtype_object));
                if (dtype == "bfloat16")  // ml_dtypes' NumPy dtype, which DLPack cannot carry
                    user_error({}, cat(what, " is a NumPy bfloat16 array (ml_dtypes), which DLPack cannot ",
                                       "carry; pass bf16 as a torch, JAX or CuPy tensor"));
                unsupported_dtype(what, dtype);
            }
            throw nb::type_error(cat(named, " is a ", nb::inst_name(object).c_str(), "; expected ", expected).c_str());
        }
        return to_view(array, what);
    }

    // Views of the inputs' memory; TypeError for what is not a tensor, CompileError for a
    // dtype or device scanc (or the backend) cannot read.
    static std::vector<TensorView> import_inputs(const Program& prog, const nb::list& inputs,
                                                 std::vector<InputArray>& arrays,
                                                 const std::string& backend) {
        // Only the CUDA backend reads device memory; any other would dereference it.
        std::string resolved = backend == "auto" ? default_backend() : backend;
        std::vector<TensorView> views;
        for (std::size_t i = 0; i < arrays.size(); ++i) {
            std::string what = i < prog.params.size() ? cat("input `", prog.params[i]->name, "`")
                                                      : cat("input ", i);
            views.push_back(import_array(inputs[i], arrays[i], cat(what, " of program `", prog.name, "`"), what,
                                         "a NumPy array or a DLPack tensor"));
            if (views.back().device.kind == DeviceKind::CUDA && resolved != "cuda")
                user_error({}, cat(what, " is in CUDA memory, but backend `", resolved,
                                   "` runs on the CPU; use backend=\"cuda\" or move it there"));
        }
        return views;
    }

    CompiledProgram& executable(const ProgramRef& program, const std::string& backend) {
        std::lock_guard lock(cache_mutex_);
        auto& slot = cache_[{program.get(), backend}];
        if (!slot) {
            auto compiled = std::make_unique<CompiledProgram>();
            compiled->executable = compile(program, backend);
            slot = std::move(compiled);
        }
        return *slot;
    }

    Module module_;
    std::mutex cache_mutex_;
    std::map<std::pair<const Program*, std::string>, std::unique_ptr<CompiledProgram>> cache_;
};

}  // namespace
}  // namespace scanc::python

NB_MODULE(_core, m) {
    using scanc::python::CoreModule;
    m.doc() = "scanc's compiled core; use the `scanc` package, not this module.";

    static nb::exception<scanc::CompileError> compile_error(m, "CompileError", PyExc_ValueError);
    nb::register_exception_translator([](const std::exception_ptr& p, void*) {
        try {
            std::rethrow_exception(p);
        } catch (const scanc::CompileError& e) {
            PyErr_SetString(compile_error.ptr(), e.what());
        } catch (const scanc::Error& e) {
            PyErr_SetString(PyExc_RuntimeError, e.what());
        }
    });

    nb::class_<CoreModule>(m, "CoreModule")
        .def_prop_ro("programs", &CoreModule::programs)
        .def_prop_ro("combines", &CoreModule::combines)
        .def("text", &CoreModule::text)
        .def("params", &CoreModule::params, "program"_a)
        .def("emit", &CoreModule::emit, "program"_a, "target"_a, "arch"_a, "ptx"_a)
        .def("check", &CoreModule::check)
        .def("lower", &CoreModule::lower, "program"_a, "algorithm"_a, "bounds"_a, "sizes"_a,
             "emit"_a, "native_cumsum"_a)
        .def("run", &CoreModule::run, "program"_a, "inputs"_a, "backend"_a, "framework"_a,
             "num_threads"_a = 0, "ordered"_a = false, "stream"_a = 0,
             "outputs"_a = nb::none());

    m.def("loads", [](const std::string& text, const std::string& file) {
        return std::make_unique<CoreModule>(scanc::parse_module(text, file));
    }, "text"_a, "file"_a = "<string>");
    m.def("load", [](const std::string& path) {
        return std::make_unique<CoreModule>(scanc::load_module(path));
    }, "path"_a);
    m.def("available_backends", &scanc::available_backends);
    m.def("default_backend", &scanc::default_backend);
    m.def("finish_compiles", &scanc::finish_compiles, nb::call_guard<nb::gil_scoped_release>());
}
