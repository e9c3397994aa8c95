// scanc's public entry point: load programs, compile them for a backend, run them.
//
//   scanc::Module m = scanc::load_module("mamba.scan");
//   auto exe = scanc::compile(m.program("mamba"), "auto");
//   std::vector<scanc::Tensor> ys = exe->run({x, dt, A});
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "scanc/dsl/expr.h"
#include "scanc/error.h"
#include "scanc/ir/node.h"
#include "scanc/passes/passes.h"
#include "scanc/runtime/backend.h"
#include "scanc/runtime/npy.h"
#include "scanc/text/parser.h"
#include "scanc/text/printer.h"

namespace scanc {

// Backend names: "reference", "cpu", "cuda", and "auto" (cuda when a GPU is present, else cpu).
std::vector<std::string> available_backends();
// The backend "auto" picks on this machine.
std::string default_backend();
// Verifies the program (types, shapes, associativity of every scan), then compiles it once
// for `backend`. CompileError for an unknown or unavailable backend.
std::unique_ptr<Executable> compile(const ProgramRef& program, std::string_view backend = "auto");

// Waits until no backend compiles in the background. The CUDA backend's first run of a program
// launches quick builds of its kernels and compiles the full builds behind it (backends/cuda.h);
// call this before timing runs, so that they time the full builds.
void finish_compiles();

}  // namespace scanc
