// Making a program's inputs for the CLI: random ones from --random sizes, or .npy files.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
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

// Where random_inputs draws a dtype's values unless --range says: floats in [-1, 1), u8 in
// [0, 16], other integers in [-8, 8] (bool: a coin).
ValueRange default_range(DType t) {
    if (is_float(t)) return {-1, 1};
    return t == DType::U8 ? ValueRange{0, 16} : ValueRange{-8, 8};
}

void fill_random(const Tensor& t, std::mt19937_64& rng, const ValueRange& range) {
    // A range wider than the largest double (f64 from -1e308 to 1e308) is drawn at half scale
    // and doubled, which is exact: uniform_real_distribution needs hi - lo to be finite.
    const double scale = std::isfinite(range.hi - range.lo) ? 1 : 2;
    std::uniform_real_distribution<double> real(range.lo / scale, range.hi / scale);
    std::uniform_int_distribution<std::int64_t> integer(std::int64_t(range.lo), std::int64_t(range.hi)), coin(0, 1);
    auto* bytes = static_cast<unsigned char*>(t.data());
    std::size_t size = dtype_size(t.dtype());
    for (std::int64_t i = 0; i < t.numel(); ++i) {
        Scalar v;
        if (is_float(t.dtype()))
            v = Scalar::of_double(t.dtype(), scale * real(rng));
        else if (t.dtype() == DType::Bool)
            v = Scalar::of_int(t.dtype(), coin(rng));
        else
            v = Scalar::of_int(t.dtype(), integer(rng));
        store_scalar(v, bytes + i * size);
    }
}

// The values a dtype holds, as far as --range takes them: finite floats, and integers that a
// double holds exactly (|v| <= 2^53).
std::pair<double, double> range_limits(DType t) {
    constexpr double exact = 9007199254740992.0;  // 2^53
    switch (t) {
        case DType::I8: return {-128, 127};
        case DType::I16: return {-32768, 32767};
        case DType::I32: return {-2147483648.0, 2147483647.0};
        case DType::I64: return {-exact, exact};
        case DType::U8: return {0, 255};
        case DType::F16: return {-65504, 65504};
        case DType::BF16: return {-3.3895313892515355e38, 3.3895313892515355e38};
        case DType::F32: return {-std::numeric_limits<float>::max(), std::numeric_limits<float>::max()};
        default: return {-std::numeric_limits<double>::max(), std::numeric_limits<double>::max()};
    }
}

std::optional<double> parse_number(std::string_view text) {
    double value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) return std::nullopt;
    return value;
}

}  // namespace

CLI::Option* add_program_options(CLI::App& app, ProgramOptions& options) {
    app.add_option("file", options.file, "the .scan file")->required();
    app.add_option("--program", options.program, "which program (needed if the file has several)");
    app.add_option("--backend", options.backend, "auto|reference|cpu|cuda")->capture_default_str();
    auto* random = app.add_option("--random", options.random,
                                  "random inputs, sizes SYM=N,SYM=N (no sizes where they are all "
                                  "constant; floats uniform in [-1, 1), signed ints in [-8, 8], "
                                  "u8 in [0, 16], bool 50/50)")
                       ->expected(0, 1)
                       ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    app.add_option("--range", options.ranges,
                   "random values of parameter NAME in a range of your own, NAME=LO:HI (floats "
                   "uniform in [LO, HI) in f64, then rounded to NAME's dtype, which may round up to "
                   "HI; integers in [LO, HI]; LO = HI: that value everywhere); repeatable")
        ->expected(1)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    app.add_option("--seed", options.seed, "seed of the random inputs")
        ->capture_default_str()
        ->check(
            [](const std::string& text) {
                // Checked as written: CLI11 wraps -1 and clamps 2^64 into a uint64.
                std::uint64_t value = 0;
                auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
                return error == std::errc() && end == text.data() + text.size()
                           ? std::string()
                           : std::string("a seed is a whole number from 0 to 2^64 - 1");
            },
            "UINT64");
    app.add_option("--threads", options.threads,
                   "cpu backend threads (0: SCANC_NUM_THREADS, else every core)")
        ->check(CLI::Range(0, 65536));
    app.add_flag("--ordered", options.ordered,
                 "cpu backend: combine each line strictly in order (floats bitwise equal to the "
                 "reference; no splitting of one line across threads)");
    return random;
}

std::map<std::string, std::int64_t> parse_sizes(const std::vector<std::string>& specs,
                                                const std::string& option) {
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
                user_error({}, cat("bad ", option, " `", spec, "`: `", item, "` is not SYM=N (a ",
                                   "size symbol and a non-negative integer); expected e.g. ",
                                   option, " B=4,L=4096"));
            if (!sizes.emplace(kv->first, *value).second)
                user_error({}, cat("bad ", option, " `", spec, "`: symbol `", kv->first,
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

std::map<std::string, ValueRange> parse_ranges(const Program& program, const std::vector<std::string>& specs) {
    std::map<std::string, ValueRange> ranges;
    for (auto& spec : specs) {
        auto kv = split_assignment(spec);
        std::optional<double> lo, hi;
        if (auto colon = kv ? kv->second.find(':') : std::string::npos; colon != std::string::npos) {
            std::string_view bounds = kv->second;
            lo = parse_number(bounds.substr(0, colon)), hi = parse_number(bounds.substr(colon + 1));
        }
        if (!lo || !hi)
            user_error({}, cat("bad --range `", spec, "`: expected NAME=LO:HI (a parameter and two finite ",
                               "numbers), e.g. --range dt=0.001:0.1"));
        auto param = std::find_if(program.params.begin(), program.params.end(),
                                  [&](const NodeRef& p) { return p->name == kv->first; });
        if (param == program.params.end())
            user_error({}, cat("bad --range `", spec, "`: program `", program.name, "` has no parameter `",
                               kv->first, "` (its parameters: ", names_of(program.params), ")"));
        const DType dtype = (*param)->type().dtype;
        if (dtype == DType::Bool)
            user_error({}, cat("bad --range `", spec, "`: `", kv->first, "` is bool, whose random values ",
                               "take no range"));
        if (*lo > *hi) user_error({}, cat("bad --range `", spec, "`: LO is above HI"));
        auto [min, max] = range_limits(dtype);
        if (*lo < min || *hi > max)
            user_error({}, cat("bad --range `", spec, "`: `", kv->first, "` is ", dtype_name(dtype),
                               ", which holds ", min, " to ", max, is_integer(dtype) ? " (exactly, here)" : ""));
        if (is_integer(dtype) && (std::floor(*lo) != *lo || std::floor(*hi) != *hi))
            user_error({}, cat("bad --range `", spec, "`: `", kv->first, "` is ", dtype_name(dtype),
                               ", so LO and HI are integers"));
        if (!ranges.emplace(kv->first, ValueRange{*lo, *hi}).second)
            user_error({}, cat("bad --range `", spec, "`: parameter `", kv->first, "` is given twice"));
    }
    return ranges;
}

std::string ranges_str(const Program& program, const std::map<std::string, ValueRange>& ranges) {
    std::string out;
    for (auto& p : program.params)
        if (auto it = ranges.find(p->name); it != ranges.end())
            out += cat(out.empty() ? "" : " ", p->name, " in [", it->second.lo, ", ", it->second.hi,
                       is_float(p->type().dtype) ? ")" : "]");
    return out;
}

std::vector<Tensor> random_inputs(const Program& program,
                                  const std::map<std::string, std::int64_t>& sizes,
                                  std::uint64_t seed, const std::map<std::string, ValueRange>& ranges) {
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
        auto range = ranges.find(param->name);
        fill_random(inputs.back(), rng, range == ranges.end() ? default_range(param->type().dtype) : range->second);
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
