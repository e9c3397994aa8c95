#include "scanc/error.h"

namespace scanc {

std::string SourceLoc::str() const {
    if (!valid()) return file;
    return cat(file.empty() ? "<input>" : file, ":", line, ":", col);
}

static std::string with_place(const SourceLoc& loc, const std::string& message) {
    std::string place = loc.str();
    return place.empty() ? "error: " + message : place + ": error: " + message;
}

CompileError::CompileError(SourceLoc loc, const std::string& message)
    : Error(with_place(loc, message)), loc_(std::move(loc)), message_(message) {}

void user_error(const SourceLoc& loc, const std::string& message) {
    throw CompileError(loc, message);
}

void internal_error(const std::string& message) {
    throw InternalError("internal error (a bug in scanc): " + message);
}

}  // namespace scanc
