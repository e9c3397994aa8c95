// Module.check() for Python: verifies every program and tests every scan's combine for
// associativity at the scan's dtypes (the same checks `scanc check` and compile() run), and
// reports what each scan was recognized as.
#pragma once

#include <string>
#include <vector>

#include "scanc/ir/node.h"

namespace scanc::python {

struct ScanReport {
    std::string program;
    std::string combine;
    int dim = 0;
    bool reverse = false;
    int trials = 0;          // associativity trials that passed
    std::string pattern;     // "sum", "affine (a: a1, b: b1)", or "unknown"
    std::string location;    // file:line:col of the scan
};

// CompileError (at the scan, with a counterexample) when a program is malformed or a combine
// is not associative.
std::vector<ScanReport> check_module(const Module& module);

}  // namespace scanc::python
