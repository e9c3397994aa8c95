// Helpers for the CPU backend tests: random tensors and layouts, running a program on the
// reference and the CPU backend, and comparing results.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "scanc/backends/cpu.h"
#include "scanc/backends/reference.h"
#include "scanc/dsl/expr.h"
#include "random_programs.h"

namespace scanc::cpu_test {

// Random inputs, the reference's results and their comparison (tests/common).
using test::compare;
using test::Inputs;
using test::Layout;
using test::run_reference;
using test::tolerance;
using test::Values;

std::vector<Tensor> run_cpu(const ProgramRef& p, const Inputs& in, int threads,
                            bool ordered = false);

// Runs `p` on the CPU backend with each thread count and expects every result to equal the
// reference executor's (run once: it takes most of a test's time): bitwise, or within
// tolerance(its dtype); `what` names the case in failure messages. Returns the reference's.
std::vector<Tensor> expect_matches(const ProgramRef& p, const Inputs& in, std::initializer_list<int> thread_counts,
                    bool bitwise, const std::string& what);
void expect_bitwise(const ProgramRef& p, const Inputs& in, const std::string& what,
                    std::initializer_list<int> thread_counts = {1, 2, 3, 4});

CombineRef sum_combine();
// Two leaves, not commutative; exact (wrapping) on integers.
CombineRef affine_combine();
// Three f32 leaves: affine written with a subtraction and a constant, and a sum divided by 1
// (exact on signs and small integers in any association).
CombineRef three_leaves_combine();
// For the register kernels (f32, + - * /, min, max, multiply-adds, constants): h = max(h * a, b);
// a running max and min side by side (exact in any association); weak integer literals,
// h = (h * a) * 1 + (b - 0); and every op they know on four leaves (a product, a multiply-add,
// an add of a product, max, a division by a constant, min and a subtraction, and a leaf passed
// through: only the ops and their order matter there, not associativity).
CombineRef affine_max_combine();
CombineRef max_min_combine();
CombineRef integer_literals_combine();
CombineRef every_op_combine();
// One f32 value of a random class: subnormals, tiny and ordinary normals, zeros, infinities,
// NaN.
float any_value(std::mt19937_64& rng);
// Random f32 values in [-1.5, 1.5] with NaN, infinities, signed zeros and subnormals among them.
void fill_special(Tensor& t, std::mt19937_64& rng);
// Equal f32 bit patterns, or both NaN: which NaN an op returns when both operands are NaN
// follows the operand order the compiler picked for a commutative op (x86 returns the first);
// signed zeros must match.
bool same_value(std::uint32_t x, std::uint32_t y);

// Programs of scalar functions (cpu_base_logs_test.cpp, cpu_erf_atan_test.cpp): a contiguous
// 1-D or 2-D tensor of `t` (f32 or f64) holding `values`, and its element i as a double.
Tensor tensor_of(DType t, std::vector<std::int64_t> sizes, const std::vector<double>& values);
double element(const Tensor& t, std::int64_t i);
// Units in the last place of dtype t (f32 or f64) between a and the long double b rounded to t.
double ulps_from(double a, long double b, DType t);
// On the reference, or on the CPU with `threads` (0: its default), ordered or not.
std::vector<Tensor> run_on(const ProgramRef& p, const std::vector<TensorView>& in, bool cpu, bool ordered = true,
                           int threads = 0);
// The CPU's first result of `p` against the reference's, `ref`: ordered, the same bits;
// reassociated over 1, 2 and 4 threads, within tolerance(its dtype).
void expect_cpu_follows(const ProgramRef& p, const std::vector<TensorView>& in, const Tensor& ref);

// scan `combine` over params of `dtype` and a symbolic shape of `rank` along `dim`; with
// `epilogue`, the first result is returned as y*y - y (fused: stored by the epilogue); with
// `only_leaf` >= 0, that leaf's scan alone is returned.
ProgramRef scan_program(const CombineRef& combine, DType dtype, int rank, int dim,
                        bool reverse = false, bool epilogue = false, int only_leaf = -1);

// i32 [L, N] scanned along dim 1 by a combine reading a captured value c[L, 1] per line:
// affine where it is positive, else a sum of the second leaf (associative on every line). Only
// the second leaf is returned. Inputs: `lines` lines of `n`, c = -1 on every third line from
// the second (the second of two), else 1.
ProgramRef captured_affine_or_sum(bool reverse);
Inputs captured_affine_or_sum_inputs(std::int64_t n, std::mt19937_64& rng, std::int64_t lines = 2);

}  // namespace scanc::cpu_test
