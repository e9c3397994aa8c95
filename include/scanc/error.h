// Errors. Three kinds, so callers can tell whose fault a failure is:
//   CompileError  - the user's: bad program text, bad inputs, a bound exceeded. Carries the
//                   place (file:line:col) when there is one. CLI exit code 2, Python ValueError.
//   InternalError - ours: a broken invariant inside scanc.
//   RuntimeError  - a backend failed (driver, compiler); the backend's log is in the message.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace scanc {

// A place in program text. Line and column are 1-based; line 0 means "no place".
struct SourceLoc {
    std::string file;
    int line = 0;
    int col = 0;

    bool valid() const { return line > 0; }
    // "file:line:col", or "file" when there is no line, or "" when there is nothing.
    std::string str() const;
};

class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class CompileError : public Error {
public:
    CompileError(SourceLoc loc, const std::string& message);
    const SourceLoc& loc() const { return loc_; }
    // The message without the place prefix.
    const std::string& message() const { return message_; }

private:
    SourceLoc loc_;
    std::string message_;
};

class InternalError : public Error {
public:
    using Error::Error;
};

class RuntimeError : public Error {
public:
    using Error::Error;
};

// Concatenates anything printable with operator<<: cat("dim ", d, " out of range").
template <typename... Args>
std::string cat(Args&&... args) {
    std::ostringstream out;
    (out << ... << std::forward<Args>(args));
    return out.str();
}

[[noreturn]] void user_error(const SourceLoc& loc, const std::string& message);
[[noreturn]] void internal_error(const std::string& message);

}  // namespace scanc

#define SCANC_INTERNAL_CHECK(cond, ...)                                                        \
    do {                                                                                       \
        if (!(cond))                                                                           \
            ::scanc::internal_error(::scanc::cat(__FILE__, ":", __LINE__, ": check `" #cond    \
                                                 "` failed: ", __VA_ARGS__));                  \
    } while (0)
