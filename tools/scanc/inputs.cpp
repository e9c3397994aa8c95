// Making a program's inputs for the CLI: random ones from --random sizes, or .npy files.
#include <charconv>
#include <random>
#include <set>

#include "cli.h"

namespace scanc::cli {
namespace {

std::string names_of(const std::vector<NodeRef>& params) {
    std::string out;
    for (auto& p : params) out += (out.empty() ? "`" : ", `") + p->name + "`";
    return out.empty() ? "none" : out;
}

std::string names_of(const std::vector<SymbolRef>& symbols) {
    std::string out;
    for (auto& s : symbols) out += (out.empty() ? "" : ", ") + s->name;
    return out.empty() ? "none" : out;
}

std::optional<std::int64_t> parse_count(std::string_view text) {
    std::int64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
    return value;
}

// Splits "NAME=VALUE"; nullopt unless both sides are non-empty.
std::optional<std::pair<std::string, std::string>> split_assignment(std::string_view item) {
    auto eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == item.size()) return std::nullopt;
    return std::pair{std::string(item.substr(0, eq)), std::string(item.substr(eq + 1))};
}

void fill_random(const Tensor& t, std::mt19937_64& rng) {
    std::uniform_real_distribution<double> real(-1.0, 1.0);
    std::uniform_int_distribution<std::int64_t> small(-8, 8), unsigned_small(0, 16), coin(0, 1);
    auto* bytes = static_cast<unsigned char*>(t.data());
    std::size_t size = dtype_size(t.dtype());
    for (std::int64_t i = 0; i < t.numel(); ++i) {
        Scalar v;
        if (is_float(t.dtype()))
            v = Scalar::of_double(t.dtype(), real(rng));
        else if (t.dtype() == DType::Bool)
            v = Scalar::of_int(t.dtype(), coin(rng));
        else if (t.dtype() == DType::U8)
            v = Scalar::of_int(t.dtype(), unsigned_small(rng));
        else
            v = Scalar::of_int(t.dtype(), small(rng));
        store_scalar(v, bytes + i * size);
    }
}

}  // namespace

CLI::Option* add_program_options(CLI::App& app, ProgramOptions& options) {
    app.add_option("file", options.file, "the .scan file")->required();
    app.add_option("--program", options.program, "which program (needed if the file has several)");
    app.add_option("--backend", options.backend, "auto|reference|cpu|cuda")->capture_default_str();
    auto* random = app.add_option("--random", options.random,
                                  "random inputs, sizes SYM=N,SYM=N (no sizes where they are all "
                                  "constant; floats uniform in [-1, 1], signed ints in [-8, 8], "
                                  "u8 in [0, 16], bool 50/50)")
                       ->expected(0, 1)
                       ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    app.add_option("--seed", options.seed, "seed of the random inputs")->capture_default_str();
    app.add_option("--threads", options.threads,
                   "cpu backend threads (0: SCANC_NUM_THREADS, else every core)")
        ->check(CLI::NonNegativeNumber);
    app.add_flag("--ordered", options.ordered,
                 "cpu backend: combine each line strictly in order (floats bitwise equal to the "
                 "reference; no splitting of one line across threads)");
    return random;
}

std::map<std::string, std::int64_t> parse_sizes(const std::vector<std::string>& specs) {
    std::map<std::string, std::int64_t> sizes;
    for (auto& spec : specs) {
        if (spec.empty()) continue;  // `--random ""`: no sizes to give
        std::string_view rest = spec;
        while (true) {
            auto comma = rest.find(',');
            std::string_view item = rest.substr(0, comma);
            auto kv = split_assignment(item);
            auto value = kv ? parse_count(kv->second) : std::nullopt;
            if (!value)
                user_error({}, cat("bad --random `", spec, "`: `", item, "` is not SYM=N (a size ",
                                   "symbol and a non-negative integer); expected e.g. ",
                                   "--random B=4,L=4096"));
            if (!sizes.emplace(kv->first, *value).second)
                user_error({}, cat("bad --random `", spec, "`: symbol `", kv->first,
                                   "` is given twice"));
            if (comma == std::string_view::npos) break;
            rest = rest.substr(comma + 1);
        }
    }
    return sizes;
}

std::vector<SymbolRef> size_symbols(const Program& program) {
    std::vector<SymbolRef> symbols;
    std::set<const Symbol*> seen;
    for (auto& param : program.params)
        for (auto& dim : param->type().shape)
            for (auto& s : dim.symbols())
                if (seen.insert(s.get()).second) symbols.push_back(s);
    return symbols;
}

std::string sizes_str(const Program& program, const std::map<std::string, std::int64_t>& sizes) {
    std::string out;
    for (auto& s : size_symbols(program))
        if (auto it = sizes.find(s->name); it != sizes.end())
            out += cat(out.empty() ? "" : " ", s->name, "=", it->second);
    return out;
}

std::vector<Tensor> random_inputs(const Program& program,
                                  const std::map<std::string, std::int64_t>& sizes,
                                  std::uint64_t seed) {
    auto symbols = size_symbols(program);
    Bindings bindings;
    for (auto& s : symbols) {
        auto it = sizes.find(s->name);
        if (it == sizes.end())
            user_error({}, cat("--random gives no size for symbol `", s->name, "` of program `",
                               program.name, "` (it needs ", names_of(symbols), ")"));
        if (s->bound && it->second > *s->bound)
            user_error({}, cat("bound exceeded: --random ", s->name, "=", it->second,
                               ", but program `", program.name, "` declares ", s->name,
                               "<=", *s->bound));
        bindings[s.get()] = it->second;
    }
    for (auto& [name, value] : sizes) {
        bool known = false;
        for (auto& s : symbols) known = known || s->name == name;
        if (!known)
            user_error({}, cat("--random names `", name, "`, which is not a size symbol of ",
                               "program `", program.name, "` (its symbols: ", names_of(symbols),
                               ")"));
    }
    std::mt19937_64 rng(seed);
    std::vector<Tensor> inputs;
    for (auto& param : program.params) {
        inputs.push_back(Tensor::empty(param->type().dtype,
                                       evaluate_shape(param->type().shape, bindings)));
        fill_random(inputs.back(), rng);
    }
    return inputs;
}

std::vector<Tensor> read_inputs(const Program& program, const std::vector<std::string>& specs) {
    std::vector<Tensor> inputs(program.params.size());
    std::vector<bool> given(program.params.size(), false);  // an empty tensor has no data
    for (auto& spec : specs) {
        auto kv = split_assignment(spec);
        if (!kv)
            user_error({}, cat("bad --input `", spec, "`: expected NAME=PATH.npy"));
        std::size_t i = 0;
        while (i < program.params.size() && program.params[i]->name != kv->first) ++i;
        if (i == program.params.size())
            user_error({}, cat("unknown input `", kv->first, "`: program `", program.name,
                               "` has parameters ", names_of(program.params)));
        if (given[i]) user_error({}, cat("input `", kv->first, "` is given twice"));
        inputs[i] = read_npy(kv->second);
        given[i] = true;
        // bind_inputs checks this too, but cannot name the file.
        const Type& want = program.params[i]->type();
        if (inputs[i].dtype() != want.dtype || inputs[i].view().rank() != int(want.shape.size()))
            user_error({kv->second}, cat("input `", kv->first, "` has dtype ",
                                         dtype_name(inputs[i].dtype()), " and ",
                                         inputs[i].view().rank(), " dims, but parameter `",
                                         kv->first, "` of program `", program.name, "` is ",
                                         want.str()));
    }
    for (std::size_t i = 0; i < inputs.size(); ++i)
        if (!given[i]) {
            const Node& p = *program.params[i];
            user_error({}, cat("missing input `", p.name, "` (", p.type().str(), ") of program `",
                               program.name, "`: give it with --input ", p.name, "=PATH.npy"));
        }
    return inputs;
}

std::vector<TensorView> views_of(const std::vector<Tensor>& tensors) {
    return {tensors.begin(), tensors.end()};
}

std::int64_t bytes_of(const std::vector<Tensor>& tensors) {
    std::int64_t bytes = 0;
    for (auto& t : tensors) bytes += t.numel() * static_cast<std::int64_t>(dtype_size(t.dtype()));
    return bytes;
}

std::string result_label(const Program& program, std::size_t index) {
    const std::string& name = program.results[index]->name;
    return name.empty() ? cat("result ", index) : cat("result ", index, " `", name, "`");
}

}  // namespace scanc::cli
