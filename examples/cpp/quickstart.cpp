// Quickstart: build a scan with the C++ DSL, compile it for the default backend, run it.
// The recurrence h[t] = a[t] * h[t-1] + b[t] is a scan over pairs (a, b) with an affine combine.
#include <cmath>
#include <cstdio>
#include <vector>

#include "scanc/scanc.h"

int main() {
    using namespace scanc;
    using namespace scanc::dsl;

    // (a1, b1) ∘ (a2, b2) = (a1 * a2, a2 * b1 + b2): 2 leaves, 0 captured values.
    auto combine = [](const Exprs& l, const Exprs& r, const Exprs&) {
        return Exprs{l[0] * r[0], r[0] * l[1] + r[1]};
    };
    CombineRef affine = trace_combine("affine", 2, 0, combine);
    ProgramBuilder builder("recurrence");
    Size n = builder.symbol("N");
    Expr a = builder.param("a", DType::F32, {n});
    Expr b = builder.param("b", DType::F32, {n});
    Exprs scanned = builder.scan(affine, {a, b}, /*dim=*/0);
    ProgramRef program = builder.build({scanned[1]});
    std::printf("%s\n", print_program(*program).c_str());

    std::unique_ptr<Executable> exe = compile(program, "auto");  // verify, check, compile once
    Tensor ta = Tensor::empty(DType::F32, {5});
    Tensor tb = Tensor::empty(DType::F32, {5});
    for (int i = 0; i < 5; ++i) {
        ta.view().ptr<float>()[i] = 0.5f;
        tb.view().ptr<float>()[i] = static_cast<float>(i);
    }
    std::vector<TensorView> inputs{ta, tb};
    std::vector<Tensor> ys = exe->run(inputs);

    float h = 0.0f;
    int wrong = 0;
    for (int i = 0; i < 5; ++i) {
        h = 0.5f * h + static_cast<float>(i);
        float got = ys[0].view().ptr<float>()[i];
        std::printf("h[%d] = %g\n", i, got);
        wrong += std::fabs(got - h) > 1e-6f;
    }
    return wrong;
}
