// `scanc print`: the canonical text of a .scan file (parse(print(m)) prints identically).
#include <iostream>

#include "cli.h"

namespace scanc::cli {

Command add_print_command(CLI::App& parent) {
    auto file = std::make_shared<std::string>();
    CLI::App* app = parent.add_subcommand("print", "Print a .scan file in canonical form.");
    app->add_option("file", *file, "the .scan file")->required();
    return {app, [file] {
                std::cout << print_module(load_module(*file));
                return 0;
            }};
}

}  // namespace scanc::cli
