// Code generation and NVRTC: every example's kernels compile for sm_90 (no GPU needed), the
// plan fuses what it should, and the source never mentions a size.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <regex>

#include "codegen/codegen.h"
#include "nvrtc.h"
#include "scanc/backends/cuda.h"
#include "scanc/dsl/expr.h"
#include "scanc/text/parser.h"

namespace scanc {
namespace {

namespace fs = std::filesystem;
using dsl::Expr;
using dsl::Exprs;

#define SKIP_WITHOUT_NVRTC()                                                               \
    if (!cuda_nvrtc_available())                                                           \
    GTEST_SKIP() << "NVRTC not found (" << cuda_nvrtc_unavailable_reason() << ")"

CombineRef affine() {
    return dsl::trace_combine("affine", 2, 0, [](const Exprs& l, const Exprs& r, const Exprs&) {
        return Exprs{l[0] * r[0], r[0] * l[1] + r[1]};
    });
}

ProgramRef mamba_like() {
    dsl::ProgramBuilder b("mamba");
    Size B = b.symbol("B"), L = b.symbol("L"), D = b.symbol("D");
    Expr x = b.param("x", DType::F32, {B, L, D});
    Expr dt = b.param("dt", DType::F32, {B, L, D});
    Expr A = b.param("A", DType::F32, {D});
    Exprs h = b.scan(affine(), {dsl::exp(dt * A), dt * x}, 1);
    return b.build({h[1] * 2.0});
}

TEST(CudaCodegen, FusesPrologueAndEpilogueIntoOneScanKernel) {
    auto plan = cuda::make_plan(mamba_like());
    ASSERT_EQ(plan.stages.size(), 1u);
    EXPECT_TRUE(plan.stages[0].is_scan);
    EXPECT_EQ(plan.stages[0].inputs.size(), 3u);   // x, dt, A read in the kernel
    EXPECT_EQ(plan.stages[0].outputs.size(), 1u);  // h * 2 written by the epilogue
    EXPECT_TRUE(plan.buffers.empty());
}

TEST(CudaCodegen, MaterializesAScanOutputThatAnotherScanReads) {
    dsl::ProgramBuilder b("twice");
    Size N = b.symbol("N");
    Expr x = b.param("x", DType::F32, {N});
    auto sum = dsl::trace_combine("sum", 1, 0, [](const Exprs& l, const Exprs& r, const Exprs&) {
        return Exprs{l[0] + r[0]};
    });
    Exprs y = b.scan(sum, {x}, 0);
    Exprs z = b.scan(sum, {y[0]}, 0, true);
    auto plan = cuda::make_plan(b.build({z[0], y[0]}));
    ASSERT_EQ(plan.stages.size(), 2u);
    EXPECT_EQ(plan.buffers.size(), 1u);
    EXPECT_EQ(plan.stages[0].outputs.size(), 2u);  // result 1 and the buffer
}

TEST(CudaCodegen, SourceDependsOnStructureNotSizes) {
    std::string a = emit_cuda(mamba_like());
    std::string b = emit_cuda(mamba_like());
    EXPECT_EQ(a, b);
    EXPECT_NE(a.find("scanc_rows_0"), std::string::npos);
    EXPECT_NE(a.find("scanc_cols_0"), std::string::npos);
    EXPECT_NE(a.find("sc_exp"), std::string::npos);  // the prologue's exp(dt * A) is inlined
}

TEST(CudaCodegen, ContiguousLayoutStepsByElementSizeSliceStepAndZeroWhereBroadcast) {
    auto plan = cuda::make_plan(mamba_like());
    auto layout = cuda::contiguous_layout(plan);
    ASSERT_EQ(layout.size(), 1u);
    const auto& stage = plan.stages[0];
    ASSERT_EQ(layout[0].in.size(), stage.inputs.size());
    for (std::size_t k = 0; k < stage.inputs.size(); ++k)
        EXPECT_EQ(layout[0].in[k], stage.inputs[k].input == 2 ? 0 : 4) << "input " << stage.inputs[k].input;
    EXPECT_EQ(layout[0].out, std::vector<std::int64_t>{4});

    dsl::ProgramBuilder b("every_third");
    Size N = b.symbol("N");
    Expr x = b.param("x", DType::F64, {N}), w = b.param("w", DType::F64, {N});
    Exprs y = b.scan(affine(), {dsl::slice(x, 0, 0, N, 3), dsl::slice(w, 0, 0, N, 3)}, 0);
    auto sliced = cuda::make_plan(b.build({y[1]}));
    EXPECT_EQ(cuda::contiguous_layout(sliced)[0].in, (std::vector<std::int64_t>{24, 24}));
    // The source compiles the steps in; with fixsteps=0 (a measurement) they are all arguments.
    std::string source = cuda::generate_source(sliced, 90, cuda::contiguous_layout(sliced));
    EXPECT_NE(source.find("STEP_IN[NIN] = {24, 24}, STEP_OUT[NOUT] = {8}"), std::string::npos);
    EXPECT_NE(cuda::generate_source(sliced, 90, {}).find("STEP_IN[NIN] = {-1, -1}"), std::string::npos);
}

// A prologue that computes (mamba's exp(dt A), dt x) fetches every item's inputs before its
// arithmetic, and A, broadcast along the scan dim, is read once per line in row_base, not per
// item; a scan of plain inputs keeps one loop of loads (docs/history/cuda-sessions-21-37.md,
// 28th session).
TEST(CudaCodegen, AComputingPrologueFetchesFirstAndReadsBroadcastInputsOncePerLine) {
    auto plan = cuda::make_plan(mamba_like());
    const auto& stage = plan.stages[0];
    std::size_t a_access = stage.inputs.size();
    for (std::size_t k = 0; k < stage.inputs.size(); ++k) {
        EXPECT_EQ(cuda::invariant_along_scan(stage, stage.inputs[k]), stage.inputs[k].input == 2);
        if (stage.inputs[k].input == 2) a_access = k;
    }
    ASSERT_LT(a_access, stage.inputs.size());
    const std::string i = std::to_string(a_access);
    std::string source = cuda::generate_source(plan, 90, cuda::contiguous_layout(plan));
    EXPECT_NE(source.find("FETCH_FIRST = true"), std::string::npos);
    EXPECT_NE(source.find("x.i" + i + " = ld<float>(a.in[" + i + "].ptr, x.bin[" + i + "]);"), std::string::npos);
    EXPECT_EQ(source.find("ld<float>(c.in[" + i + "]"), std::string::npos);  // never per item
    EXPECT_EQ(source.find("ld4<float>(c.in[" + i + "]"), std::string::npos);

    dsl::ProgramBuilder b("plain");
    Size N = b.symbol("N"), T = b.symbol("T");
    Exprs y = b.scan(affine(), {b.param("a", DType::F32, {N, T}), b.param("x", DType::F32, {N, T})}, 1);
    auto plain = cuda::make_plan(b.build({y[1]}));
    EXPECT_NE(cuda::generate_source(plain, 90, cuda::contiguous_layout(plain)).find("FETCH_FIRST = false"), std::string::npos);
}

TEST(CudaCodegen, ACombinesWeightCountsTranscendentalsDivisionsAndOtherOps) {
    auto weight = [](const char* body, int leaves) {
        std::string params = leaves == 1 ? "a | b" : "a1, b1 | a2, b2";
        auto module = parse_module(cat("combine c(", params, ") { return ", body, " }\nprogram p(x: f32[N], y: f32[N]) {\n",
                                       leaves == 1 ? "  s = scan c(x) dim=0\n  return s }" : "  (s, t) = scan c(x, y) dim=0\n  return t }"));
        for (const cuda::Stage& stage : cuda::make_plan(module.programs.back()).stages)
            if (stage.is_scan) return cuda::combine_weight(*stage.node->as<ScanAttr>().combine);
        return -1;
    };
    EXPECT_EQ(weight("a + b", 1), 1);
    EXPECT_EQ(weight("max(a, b)", 1), 1);
    EXPECT_EQ(weight("a1 * a2, a2 * b1 + b2", 2), 3);
    EXPECT_EQ(weight("a / b", 1), 8);
    EXPECT_EQ(weight("logaddexp(a, b)", 1), cuda::kTranscendentalWeight);
    EXPECT_EQ(weight("exp(a) * exp(b) + b", 1), 2 * cuda::kTranscendentalWeight + 2);
    EXPECT_EQ(weight("log2(exp2(a) + exp2(b))", 1), 3 * cuda::kTranscendentalWeight + 1);
    EXPECT_EQ(weight("log10(a) + b", 1), cuda::kTranscendentalWeight + 1);
    EXPECT_EQ(weight("erf(a) + erfc(b)", 1), 2 * cuda::kTranscendentalWeight + 1);
    EXPECT_EQ(weight("atan2(a, b) - atan(a)", 1), 2 * cuda::kTranscendentalWeight + 1);
    EXPECT_GE(weight("logaddexp(a, b)", 1), cuda::kHeavyCombine);
    EXPECT_LT(weight("a1 * a2, a2 * b1 + b2", 2), cuda::kHeavyCombine);
}

TEST(CudaCodegen, RejectsAnUnknownArchWithAMessage) {
    try {
        emit_cuda(mamba_like(), "gfx90a");
        FAIL() << "expected a CompileError";
    } catch (const CompileError& e) {
        EXPECT_NE(std::string(e.what()).find("sm_90"), std::string::npos) << e.what();
    }
}

TEST(CudaCodegen, AnArchIsSmOrComputeAndTwoOrThreeDigitsOfEightyOrMore) {
    for (const char* arch : {"sm_7x0", "sm_4294967386", "sm_90 --foo", "sm_90;rm", "sm_75", "sm_", "sm_9"}) {
        try {
            emit_cuda(mamba_like(), arch);
            ADD_FAILURE() << arch << ": expected a CompileError";
        } catch (const CompileError& e) {
            EXPECT_NE(std::string(e.what()).find("expected sm_NN with NN >= 80"), std::string::npos) << e.what();
        }
    }
    EXPECT_NO_THROW(emit_cuda(mamba_like(), "sm_90a"));
    EXPECT_NO_THROW(emit_cuda(mamba_like(), "compute_90"));
}

TEST(CudaCodegen, AnArchThisNvrtcCannotCompileForIsRefusedWithTheOnesItCan) {
    SKIP_WITHOUT_NVRTC();
    try {
        emit_cuda(mamba_like(), "sm_999", /*ptx=*/true);
        FAIL() << "expected a CompileError";
    } catch (const CompileError& e) {
        EXPECT_NE(std::string(e.what()).find("is not one this NVRTC"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("sm_90"), std::string::npos) << e.what();
    }
}

TEST(CudaCodegen, AChainAsLongAsTheParserAllowsIsEmittedWithoutRecursingPerOp) {
    // kMaxNodeDepth ops in one chain: the emitter walks them iteratively (it overflowed the
    // stack at about 8000).
    dsl::ProgramBuilder b("chain");
    Expr x = b.param("x", DType::F32, {b.symbol("N")});
    Expr y = x;
    const int ops = kMaxNodeDepth - 8;
    for (int i = 0; i < ops; ++i) y = y * 1.0001;
    const std::string source = emit_cuda(b.build({dsl::exp(y)}), "sm_90");
    int multiplies = 0;
    for (std::size_t at = source.find("sc_mul("); at != std::string::npos; at = source.find("sc_mul(", at + 1))
        ++multiplies;
    EXPECT_GE(multiplies, ops);  // every op of the chain, in each kernel that computes it
}

TEST(CudaCodegen, AValueEveryOpUsesTwiceIsWalkedOnceNotOncePerPath) {
    // y[k+1] = y[k] + y[k], 60 times: 2^60 paths from the scan to x, 60 ops to emit (a walk per
    // path never ended).
    dsl::ProgramBuilder b("doubling");
    Expr y = b.param("x", DType::F32, {b.symbol("N")});
    for (int i = 0; i < 60; ++i) y = y + y;
    auto sum = dsl::trace_combine("sum", 1, 0, [](const Exprs& l, const Exprs& r, const Exprs&) {
        return Exprs{l[0] + r[0]};
    });
    const std::string source = emit_cuda(b.build(b.scan(sum, {y}, 0)), "sm_90");
    EXPECT_NE(source.find("scanc_rows"), std::string::npos);
}

TEST(CudaCodegen, AResultReadingItsScanThroughASliceIsAStageAfterTheScan) {
    const ProgramRef p = parse_module("combine add(a | b) { return a + b }\n"
                                      "program p(x: f32[N, T]) {\n  s = scan add(x) dim=1\n"
                                      "  r = s + slice(s, 1, 0, T)\n  return r\n}\n")
                             .programs.back();
    const cuda::Plan plan = cuda::make_plan(p);
    ASSERT_EQ(plan.stages.size(), 2u);  // the scan (writing s), then a map reading s twice
    EXPECT_TRUE(plan.stages[0].is_scan);
    EXPECT_FALSE(plan.stages[1].is_scan);
    EXPECT_NO_THROW(emit_cuda(p, "sm_90"));
}

TEST(CudaCodegen, MambaKernelsCompileWithNvrtcForSm90) {
    SKIP_WITHOUT_NVRTC();
    EXPECT_GT(cuda_compile_check(mamba_like(), "sm_90"), 0u);
}

TEST(CudaCodegen, EachKernelEntryCompilesAloneIntoCodeForThatKernelOnly) {
    SKIP_WITHOUT_NVRTC();
    auto plan = cuda::make_plan(mamba_like());
    std::string source = cuda::generate_source(plan, 90, cuda::contiguous_layout(plan));
    std::vector<std::string> names;  // in the order of their entries
    std::regex kernel(R"(__global__ void __launch_bounds__\(\d+, \d+\) (scanc_\w+)\()");
    for (std::sregex_iterator it(source.begin(), source.end(), kernel), end; it != end; ++it)
        names.push_back((*it)[1]);
    ASSERT_GE(names.size(), 4u);
    ASSERT_EQ(cuda::kernel_entry_names(source), names);
    std::vector<int> entries(names.size());
    std::iota(entries.begin(), entries.end(), 0);
    auto parts = cuda::nvrtc_compile_entries(source, "compute_90", "mamba.cu", entries);
    ASSERT_EQ(parts.size(), names.size());
    for (std::size_t i = 0; i < parts.size(); ++i) {
        std::string ptx(parts[i].binary.begin(), parts[i].binary.end());
        for (std::size_t j = 0; j < names.size(); ++j)
            EXPECT_EQ(ptx.find(".entry " + names[j] + "(") != std::string::npos, i == j)
                << "entry " << i << " (" << names[i] << "), kernel " << names[j];
        // Each compile reports its own time: one thread's CPU time, within its wall time.
        EXPECT_GT(parts[i].cpu_seconds, 0) << names[i];
        EXPECT_LE(parts[i].cpu_seconds, parts[i].seconds + 0.01) << names[i];
    }
}

TEST(CudaCodegen, CapturedExpressionsCompileWithNvrtc) {
    // A captured expression's temporaries come before the line that stores its value.
    SKIP_WITHOUT_NVRTC();
    auto module = parse_module(R"(
combine shifted(a | b; t) { return a + b + t }
program p(x: f32[N, T], y: f32[N, 1], s: f32[]) {
  u = scan shifted(x) dim=1 with (y * y)
  v = scan shifted(x) dim=1 reverse with (-s)
  w = scan shifted(x) dim=0 with (f32(i32(s) + 1))
  return u, v, w
}
)",
                               "<test>");
    EXPECT_GT(cuda_compile_check(module.programs.back(), "sm_90"), 0u);
}

TEST(CudaCodegen, Exp2Log2AndLog10CompileWithNvrtcAtEveryFloatDtype) {
    // In a combine and in a prologue and an epilogue, at f16 and bf16 (computed in f32), f32
    // and f64.
    SKIP_WITHOUT_NVRTC();
    auto module = parse_module(R"(
combine lse2(a | b) { return log2(exp2(a) + exp2(b)) }
combine decades(a | b) { return log10(pow(10, a) + pow(10, b)) }
program p(h: f16[N, T], g: bf16[N, T], x: f32[N, T], d: f64[N, T]) {
  u = scan lse2(log2(h)) dim=1
  v = scan decades(g) dim=1
  w = scan lse2(exp2(x)) dim=1
  z = scan decades(log10(d)) dim=0
  return u, v, exp2(w), log2(z)
}
)",
                               "<test>");
    EXPECT_GT(cuda_compile_check(module.programs.back(), "sm_90"), 0u);
}

TEST(CudaCodegen, ErfErfcAtanAndAtan2CompileWithNvrtcAtEveryFloatDtype) {
    // In a combine and in a prologue and an epilogue, at f16 and bf16 (computed in f32), f32
    // and f64. The combines keep the element whose function value is largest (leftmost on
    // ties: associative); sin and cos around atan2, as before, took NVRTC 94 s of CI's 2 cores.
    SKIP_WITHOUT_NVRTC();
    auto module = parse_module(R"(
combine by_atan2(a | b) { return where(atan2(a, 1) >= atan2(b, 1), a, b) }
combine by_atan(a | b) { return where(atan(a) >= atan(b), a, b) }
combine by_erf(a | b) { return where(erf(a) >= erf(b), a, b) }
combine by_erfc(a | b) { return where(erfc(a) <= erfc(b), a, b) }
program p(h: f16[N, T], g: bf16[N, T], x: f32[N, T], d: f64[N, T]) {
  u = scan by_atan2(h) dim=1
  v = scan by_erfc(g) dim=1
  w = scan by_erf(atan(x)) dim=1
  z = scan by_atan(erfc(d)) dim=0
  return u, erf(v), erfc(w), atan2(z, erf(d))
}
)",
                               "<test>");
    EXPECT_GT(cuda_compile_check(module.programs.back(), "sm_90"), 0u);
}

TEST(CudaCodegen, EveryDtypeCompilesWithNvrtc) {
    SKIP_WITHOUT_NVRTC();
    auto mx = dsl::trace_combine("mx", 1, 0, [](const Exprs& l, const Exprs& r, const Exprs&) {
        return Exprs{dsl::max(l[0], r[0])};
    });
    dsl::ProgramBuilder b("all_dtypes");
    Size N = b.symbol("N");
    Exprs results;
    for (DType t : kAllDTypes) {
        Expr x = b.param(std::string("x_") + std::string(dtype_name(t)), t, {N, 3});
        results.push_back(b.scan(mx, {x}, 0)[0]);
    }
    EXPECT_GT(cuda_compile_check(b.build(results), "sm_90"), 0u);
}

TEST(CudaCodegen, EveryExampleCompilesWithNvrtcForSm90) {
    SKIP_WITHOUT_NVRTC();
    int programs = 0;
    for (auto& entry : fs::directory_iterator(fs::path(SCANC_SOURCE_DIR) / "examples")) {
        if (entry.path().extension() != ".scan") continue;
        Module m = load_module(entry.path().string());
        for (auto& p : m.programs) {
            SCOPED_TRACE(entry.path().filename().string() + ": " + p->name);
            EXPECT_GT(cuda_compile_check(p, "sm_90"), 0u);
            ++programs;
        }
    }
    EXPECT_GT(programs, 0);
}

// The kernel entries emitted for a sum over x: f32[shape] along `dim`.
std::vector<std::string> sum_kernels(const std::string& shape, int dim) {
    auto module = parse_module(cat("combine add(a | b) { return a + b }\nprogram p(x: f32", shape,
                                   ") {\n  y = scan add(x) dim=", dim, "\n  return y\n}\n"),
                               "<test>");
    return cuda::kernel_entry_names(emit_cuda(module.programs.back(), "sm_90"));
}

TEST(CudaCodegen, AProgramCompilesOnlyTheKernelsItsConstantExtentsCanReach) {
    using Names = std::vector<std::string>;
    const Names rows = {"scanc_rows_0", "scanc_rows_shared_0", "scanc_rows_vec_0", "scanc_rows_shared_vec_0"};
    const Names resident = {"scanc_resident_0"}, groups = {"scanc_resident_groups_0"}, cols = {"scanc_cols_0", "scanc_cols_few_lines_0"};
    auto all = [](std::initializer_list<Names> parts) {
        Names out;
        for (const Names& p : parts) out.insert(out.end(), p.begin(), p.end());
        return out;
    };
    // Sizes known at run time keep every kernel that some size would take.
    EXPECT_EQ(sum_kernels("[B, L, D]", 1), all({rows, resident, groups, cols}));
    // The last dim has an inner extent of 1 whatever the sizes: no cols kernel.
    EXPECT_EQ(sum_kernels("[N, T]", 1), all({rows, resident, groups}));
    EXPECT_EQ(sum_kernels("[T]", 0), all({rows, resident, groups}));
    EXPECT_EQ(sum_kernels("[N, T, 1]", 1), all({rows, resident, groups}));
    // A constant inner extent above 1: cols only.
    EXPECT_EQ(sum_kernels("[N, 7]", 0), cols);
    // Constant row lengths (4-byte states on sm_90: resident rows up to 32 x 32, in lane
    // groups up to 16 x 32): the one kernel family that length takes.
    EXPECT_EQ(sum_kernels("[N, 128]", 1), groups);
    EXPECT_EQ(sum_kernels("[N, 700]", 1), resident);
    EXPECT_EQ(sum_kernels("[N, 3000]", 1), rows);
    // An extent of 0: never launched, nothing settled.
    EXPECT_EQ(sum_kernels("[0, 7]", 0), all({rows, resident, groups, cols}));
}

TEST(CudaCodegen, EmitsPtxWithoutAGpu) {
    SKIP_WITHOUT_NVRTC();
    std::string ptx = emit_cuda(mamba_like(), "sm_90", true);
    for (const char* kernel : {"scanc_rows_0", "scanc_rows_shared_0", "scanc_resident_0", "scanc_resident_groups_0", "scanc_cols_0",
                               "scanc_cols_few_lines_0"})
        EXPECT_NE(ptx.find(std::string(".entry ") + kernel + "("), std::string::npos) << kernel;
    EXPECT_NE(ptx.find(".target sm_90"), std::string::npos);
}

TEST(CudaCodegen, AComputingPrologueAddsNoBranchPerItem) {
    // Its items are chosen by selects (keep_if): a branch each serialized their arithmetic and
    // cost mamba's rows kernel a third of its speed (docs/history/cuda-sessions-21-37.md, 29th
    // session). So each kernel has as many branches as the same scan of plain inputs.
    SKIP_WITHOUT_NVRTC();
    dsl::ProgramBuilder b("plain");
    Size B = b.symbol("B"), L = b.symbol("L"), D = b.symbol("D");
    Exprs h = b.scan(affine(), {b.param("a", DType::F32, {B, L, D}), b.param("x", DType::F32, {B, L, D})}, 1);
    const std::string plain = emit_cuda(b.build({h[1] * 2.0}), "sm_90", true);
    const std::string mamba = emit_cuda(mamba_like(), "sm_90", true);
    auto branches = [](const std::string& ptx, const std::string& kernel) {
        const std::size_t begin = ptx.find(".entry " + kernel + "(");
        if (begin == std::string::npos) return -1;
        const std::size_t end = ptx.find("\n}", begin);
        int n = 0;
        for (std::size_t at = ptx.find("bra", begin); at < end; at = ptx.find("bra", at + 3)) ++n;
        return n;
    };
    for (const char* kernel : {"scanc_rows_0", "scanc_rows_vec_0", "scanc_resident_0", "scanc_cols_0", "scanc_cols_few_lines_0"}) {
        const int n = branches(mamba, kernel);
        EXPECT_GT(n, 0) << kernel;
        EXPECT_LE(n, branches(plain, kernel) + 2) << kernel;
    }
}

TEST(CudaCodegen, SourcesCarryTheirNvrtcOptionsWhichTheCompileUses) {
    // SCANC_NVRTC_OPTIONS goes into the source (so into the cache key and `scanc emit`), and
    // NVRTC gets it from there: a bad option fails the compile naming it.
    SKIP_WITHOUT_NVRTC();
    const std::string plain = emit_cuda(mamba_like());
    EXPECT_EQ(plain.find(cuda::kNvrtcOptionsLine), std::string::npos) << "no options line by default";
    setenv("SCANC_NVRTC_OPTIONS", "-DSCANC_TEST_OPTION=1 --no-such-option", 1);
    const std::string marked = emit_cuda(mamba_like());
    unsetenv("SCANC_NVRTC_OPTIONS");
    EXPECT_NE(marked.find("// nvrtc options: -DSCANC_TEST_OPTION=1 --no-such-option\n"), std::string::npos);
    try {
        cuda::nvrtc_compile(marked, "compute_90", "marked.cu", 0);
        ADD_FAILURE() << "NVRTC took an option it does not have";
    } catch (const RuntimeError& e) {
        EXPECT_NE(std::string(e.what()).find("--no-such-option"), std::string::npos) << e.what();
    }
    // A known option passes through: the define reaches the source.
    std::string checked = marked;
    checked.replace(checked.find(" --no-such-option"), 17, "");
    checked += "\n#ifndef SCANC_TEST_OPTION\n#error the options line did not reach NVRTC\n#endif\n";
    EXPECT_FALSE(cuda::nvrtc_compile(checked, "compute_90", "checked.cu", 0).binary.empty());
}

}  // namespace
}  // namespace scanc
