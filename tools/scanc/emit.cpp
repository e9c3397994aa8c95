// `scanc emit FILE --program P --target cuda [--arch sm_90] [--ptx] -o OUT`: writes the CUDA
// source the cuda backend generates for a program (or the PTX NVRTC makes of it), so users can
// read what runs. Needs no GPU; --ptx needs libnvrtc.
#include <fstream>
#include <iostream>

#include "cli.h"
#ifdef SCANC_HAVE_CUDA
#include "scanc/backends/cuda.h"
#endif

namespace scanc::cli {

Command add_emit_command(CLI::App& parent) {
    struct Options {
        std::string file, program, target = "cuda", arch = "sm_90", output;
        bool ptx = false;
    };
    auto o = std::make_shared<Options>();
    CLI::App* app = parent.add_subcommand("emit", "Write the generated kernel source (or PTX) of a program.");
    app->add_option("file", o->file, "the .scan file")->required();
    app->add_option("--program", o->program, "the program (default: the only one)");
    app->add_option("--target", o->target, "what to generate: cuda")->check(CLI::IsMember({"cuda"}))->capture_default_str();
    app->add_option("--arch", o->arch, "GPU architecture, sm_NN or compute_NN of 80 or more")->capture_default_str();
    app->add_flag("--ptx", o->ptx, "write PTX (compiled by NVRTC) instead of CUDA C++");
    app->add_option("-o,--output", o->output, "output file (default: stdout)");
    return {app, [o]() -> int {
#ifdef SCANC_HAVE_CUDA
                Module m = load_module(o->file);
                ProgramRef program = m.program(o->program);
                check_program_associative(*program);  // what `run` refuses has no kernels to show
                std::string text = emit_cuda(program, o->arch, o->ptx);
                if (o->output.empty()) std::cout << text;
                else write_file(o->output, text);
                return 0;
#else
                user_error({}, "scanc was built without the CUDA backend (SCANC_ENABLE_CUDA=OFF or no "
                               "cuda.h); `emit --target cuda` is unavailable");
#endif
            }};
}

}  // namespace scanc::cli
