// `scanc`: the command line (DESIGN §3). Exit codes: 0 success; 2 the user's mistake (bad
// program text, bad inputs, bad usage) or a problem `check` found; 1 anything else (a backend
// failure, a bug). Every error is one paragraph on stderr; nothing crashes.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <new>

#include "cli.h"

namespace scanc::cli {

// Every subcommand, in --help order: NAME.cpp defines `Command add_NAME_command(CLI::App&)`.
// A new subcommand is its file plus one entry in this list.
#define SCANC_COMMANDS(X) X(run) X(check) X(print) X(bench) X(lower) X(emit)

#define SCANC_DECLARE_COMMAND(name) Command add_##name##_command(CLI::App& parent);
SCANC_COMMANDS(SCANC_DECLARE_COMMAND)
#undef SCANC_DECLARE_COMMAND

void write_file(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) user_error({}, cat("cannot write `", path, "`: ", std::strerror(errno)));
    out << text;
    if (!out.flush()) user_error({}, cat("writing `", path, "` failed (disk full?)"));
}

namespace {

int main_impl(int argc, char** argv) {
    CLI::App app{"scanc: a compiler and runtime for associative scans", "scanc"};
    app.require_subcommand(1);
    app.failure_message([](const CLI::App*, const CLI::Error& e) {
        return cat("error: ", e.what(), " (see --help for usage)\n");
    });
#define SCANC_ADD_COMMAND(name) add_##name##_command(app),
    const std::vector<Command> commands = {SCANC_COMMANDS(SCANC_ADD_COMMAND)};
#undef SCANC_ADD_COMMAND
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        int code = app.exit(e);  // prints help, or the usage error and a hint
        return code == 0 ? 0 : 2;
    }
    for (auto& command : commands)
        if (command.app->parsed()) {
            const int code = command.run();
            // What a command printed is its result: a full or closed stdout is a failed run.
            if (!std::cout.flush()) {
                std::cerr << "error: writing to standard output failed (disk full or closed?)\n";
                return 2;
            }
            return code;
        }
    return 2;  // unreachable: require_subcommand(1)
}

}  // namespace
}  // namespace scanc::cli

int main(int argc, char** argv) {
    try {
        return scanc::cli::main_impl(argc, argv);
    } catch (const scanc::CompileError& e) {
        std::cerr << e.what() << "\n";
        return 2;
    } catch (const std::bad_alloc&) {
        std::cerr << "error: out of memory (are the sizes too large?)\n";
        return 1;
    } catch (const scanc::InternalError& e) {
        std::cerr << e.what() << "\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "error: " << e.what() << "\n";
        return 1;
    }
}
