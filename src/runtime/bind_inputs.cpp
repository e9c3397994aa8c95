#include "scanc/runtime/backend.h"

namespace scanc {

void check_view(const TensorView& view, const std::string& what, const SourceLoc& loc) {
    if (view.strides.size() != view.sizes.size())
        user_error(loc, cat(what, " has ", view.sizes.size(), " sizes but ", view.strides.size(), " strides"));
    bool empty = false;
    for (int d = 0; d < view.rank(); ++d) {
        if (view.sizes[d] < 0) user_error(loc, cat(what, " has size ", view.sizes[d], " along dim ", d));
        empty = empty || view.sizes[d] == 0;
    }
    if (!view.data && !empty) user_error(loc, cat(what, " has elements but no data (a null pointer)"));
    if (!element_count(view.sizes))
        user_error(loc, cat(what, " has more than 2^50 elements, more than scanc's sizes allow"));
}

Bindings bind_inputs(const Program& program, std::span<const TensorView> inputs) {
    if (inputs.size() != program.params.size())
        user_error(program.loc, cat("program `", program.name, "` takes ", program.params.size(),
                                    " input", program.params.size() == 1 ? "" : "s", ", got ",
                                    inputs.size()));
    Bindings bindings;
    std::unordered_map<const Symbol*, std::string> bound_by;  // who fixed each symbol, for errors
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const Node& param = *program.params[i];
        const Type& type = param.type();
        const TensorView& in = inputs[i];
        std::string pname = cat("input `", param.name, "`");
        check_view(in, pname, param.loc);
        if (in.dtype != type.dtype)
            user_error(param.loc, cat("dtype mismatch: ", pname, " must be ", dtype_name(type.dtype),
                                      ", got ", dtype_name(in.dtype)));
        if (in.rank() != static_cast<int>(type.shape.size()))
            user_error(param.loc, cat("shape mismatch: ", pname, " must have ", type.shape.size(),
                                      " dims ", shape_str(type.shape), ", got ", in.rank()));
        for (int d = 0; d < in.rank(); ++d) {
            const Size& want = type.shape[d];
            std::int64_t got = in.sizes[d];
            if (auto sym = want.as_symbol()) {
                auto [it, fresh] = bindings.emplace(sym.get(), got);
                if (fresh) {
                    bound_by[sym.get()] = cat(pname, " dim ", d);
                    if (sym->bound && got > *sym->bound)
                        user_error(param.loc, cat("bound exceeded: ", pname, " has ", sym->name,
                                                  " = ", got, " along dim ", d, ", but the program",
                                                  " declares ", sym->name, "<=", *sym->bound));
                } else if (it->second != got) {
                    user_error(param.loc, cat("shape mismatch: ", pname, " has size ", got,
                                              " along dim ", d, ", but ", sym->name, " = ",
                                              it->second, " from ", bound_by[sym.get()]));
                }
            } else if (auto c = want.constant()) {
                if (*c != got)
                    user_error(param.loc, cat("shape mismatch: ", pname, " must have size ", *c,
                                              " along dim ", d, ", got ", got));
            } else {
                internal_error(cat("parameter dim ", want.str(), " is neither a constant nor a symbol"));
            }
        }
    }
    return bindings;
}

}  // namespace scanc
