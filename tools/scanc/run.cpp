// `scanc run`: runs one program of a file on .npy inputs or random ones, and writes each result
// to a .npy file (or prints a summary of each when no --output is given).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "cli.h"

namespace scanc::cli {
namespace {

struct RunArgs : ProgramOptions {
    std::vector<std::string> inputs, outputs;
};

int run(const RunArgs& args) {
    Module module = load_module(args.file);
    ProgramRef program = module.program(args.program);
    if (!args.outputs.empty() && args.outputs.size() != program->results.size())
        user_error({}, cat("program `", program->name, "` returns ", program->results.size(),
                           " value", program->results.size() == 1 ? "" : "s", ", but ",
                           args.outputs.size(), " --output path",
                           args.outputs.size() == 1 ? " is" : "s are",
                           " given (one per returned value, in return order, or none)"));
    for (std::size_t i = 0; i < args.outputs.size(); ++i) {
        if (program->results[i]->type().dtype == DType::BF16)
            user_error({}, cat(result_label(*program, i), " is bf16, which has no .npy dtype; cast it to f32 in ",
                               "the program to write it to `", args.outputs[i], "`"));
        for (std::size_t j = 0; j < i; ++j)
            if (args.outputs[j] == args.outputs[i])
                user_error({}, cat("--output `", args.outputs[i], "` is given for ", result_label(*program, j),
                                   " and for ", result_label(*program, i), "; give each its own file"));
    }
    if (!args.random_given && args.inputs.empty() && !program->params.empty())
        user_error({}, cat("program `", program->name, "` needs inputs: give each parameter ",
                           "with --input NAME=PATH.npy, or use --random SYM=N,... (--random alone ",
                           "where every size is constant)"));
    if (!args.random_given && !args.ranges.empty())
        user_error({}, "--range sets where --random draws an input's values; with --input the values "
                       "come from the .npy files");
    std::vector<Tensor> inputs = args.random_given ? random_inputs(*program, parse_sizes(args.random), args.seed,
                                                                   parse_ranges(*program, args.ranges))
                                                   : read_inputs(*program, args.inputs);
    auto executable = compile(program, args.backend);
    std::vector<Tensor> results = executable->run(views_of(inputs), args.run_options());
    SCANC_INTERNAL_CHECK(results.size() == program->results.size(), "backend returned ",
                         results.size(), " results for ", program->results.size());
    if (args.outputs.empty()) {
        for (std::size_t i = 0; i < results.size(); ++i)
            std::cout << result_label(*program, i) << ": " << summarize(results[i]) << "\n";
        return 0;
    }
    // Each result goes to a file beside its path, renamed into place once all are written, so
    // that a failed write leaves no result behind. Paths that are not files (/dev/stdout, a
    // pipe) are written as they are.
    std::vector<std::string> written;  // "" where written in place
    for (std::size_t i = 0; i < results.size(); ++i) {
        std::error_code ec;
        const auto kind = std::filesystem::status(args.outputs[i], ec).type();
        const bool in_place = kind != std::filesystem::file_type::not_found && kind != std::filesystem::file_type::regular;
        written.push_back(in_place ? "" : args.outputs[i] + ".scanc-partial");
        try {
            write_npy(in_place ? args.outputs[i] : written.back(), results[i]);
        } catch (const CompileError& e) {
            for (const std::string& path : written)
                if (!path.empty()) std::remove(path.c_str());
            user_error(SourceLoc{args.outputs[i]}, e.message());  // named as given
        }
    }
    for (std::size_t i = 0; i < results.size(); ++i)
        if (!written[i].empty() && std::rename(written[i].c_str(), args.outputs[i].c_str()) != 0)
            user_error({}, cat("cannot write `", args.outputs[i], "`: ", std::strerror(errno)));
    return 0;
}

}  // namespace

Command add_run_command(CLI::App& parent) {
    auto args = std::make_shared<RunArgs>();
    CLI::App* app = parent.add_subcommand(
        "run", "Run a program on .npy inputs (--input) or random ones (--random).");
    app->footer(
        "Random inputs: floats uniform in [-1, 1), signed integers in [-8, 8], u8 in [0, 16],\n"
        "bool true with probability 1/2, or where --range NAME=LO:HI says; the same --seed\n"
        "gives the same values. Without --output, prints a summary of each result (dtype,\n"
        "sizes, a few values).");
    CLI::Option* random = add_program_options(*app, *args);
    app->add_option("--input", args->inputs, "NAME=PATH.npy, once per parameter")
        ->expected(1)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
        ->excludes(random);
    app->add_option("--output", args->outputs, "PATH.npy per returned value, in return order")
        ->expected(1)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    return {app, [args, random] {
                args->random_given = random->count() > 0;
                return run(*args);
            }};
}

}  // namespace scanc::cli
