// The reference executor: the executable specification. Sequential and obviously correct; any
// dtype, dim, strides, reverse, several leaves, captured values, symbolic sizes. Every other
// backend is tested against it.
#pragma once

#include "scanc/runtime/backend.h"

namespace scanc {

class ReferenceBackend : public Backend {
public:
    std::string name() const override { return "reference"; }
    std::unique_ptr<Executable> compile(const ProgramRef& program) override;
};

}  // namespace scanc
