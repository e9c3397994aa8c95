// NumPy .npy reading and writing (format 1.0-3.0). The header is a Python dict literal:
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// padded with spaces to a multiple of 64 bytes and ended by '\n'.
#include "scanc/runtime/npy.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string_view>

#include "scanc/error.h"

namespace scanc {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicSize = 6;

[[noreturn]] void npy_error(const std::string& path, const std::string& message) {
    user_error(SourceLoc{path}, message);
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) s.remove_suffix(1);
    return s;
}

// Maps a descr such as '<f4' to a dtype, or explains why it is not supported.
DType parse_descr(const std::string& path, std::string_view descr) {
    if (descr.size() < 2)
        npy_error(path, cat("unsupported dtype '", descr, "' in the .npy header"));
    char order = descr[0];
    std::string_view code = descr.substr(1);
    bool single_byte = code.size() == 2 && code[1] == '1';
    if (order == '>' && !single_byte)
        npy_error(path, cat("big-endian dtype '", descr, "' is not supported; convert the array ",
                            "with arr.astype(arr.dtype.newbyteorder('<'))"));
    if (order != '<' && order != '=' && order != '|' && order != '>')
        npy_error(path, cat("unsupported dtype '", descr, "' in the .npy header"));
    if (code == "f4") return DType::F32;
    if (code == "f8") return DType::F64;
    if (code == "f2") return DType::F16;
    if (code == "i1") return DType::I8;
    if (code == "i2") return DType::I16;
    if (code == "i4") return DType::I32;
    if (code == "i8") return DType::I64;
    if (code == "u1") return DType::U8;
    if (code == "b1") return DType::Bool;
    std::string what = "unsupported dtype";
    switch (code[0]) {
        case 'c': what = "complex dtype"; break;
        case 'O': what = "object dtype"; break;
        case 'U':
        case 'S': what = "string dtype"; break;
        case 'V': what = "raw-bytes dtype (bfloat16 arrays saved through ml_dtypes look like this)"; break;
        case 'M':
        case 'm': what = "date/time dtype"; break;
        case 'u': what = "unsigned integer dtype other than u1"; break;
        default: break;
    }
    npy_error(path, cat(what, " '", descr, "' is not supported; scanc reads bool, i8, i16, i32, ",
                        "i64, u8, f16, f32 and f64 (convert, e.g. arr.astype(np.float32))"));
}

struct Header {
    DType dtype;
    bool fortran;
    std::vector<std::int64_t> shape;
};

// Reads the header dict in order, as NumPy's literal_eval would: each of the three keys once,
// each value of its kind, nothing else (a key named inside a string, a key given twice, an
// unknown key are all refused, not found by searching the text).
class HeaderReader {
public:
    HeaderReader(const std::string& path, std::string_view text) : path_(path), text_(text) {}

    Header read() {
        Header h{};
        bool descr = false, fortran = false, shape = false;
        expect('{');
        while (!accept('}')) {
            std::string_view key = quoted("a key");
            expect(':');
            auto once = [&](bool& seen) {
                if (seen) bad(cat("'", key, "' given twice"));
                seen = true;
            };
            if (key == "descr") {
                once(descr);
                if (at('['))
                    npy_error(path_, "structured dtype (a record with named fields) is not "
                                     "supported; save each field as its own array");
                h.dtype = parse_descr(path_, quoted("'descr' as a string"));
            } else if (key == "fortran_order") {
                once(fortran);
                h.fortran = boolean();
            } else if (key == "shape") {
                once(shape);
                h.shape = dims();
            } else {
                bad(cat("unexpected key '", key, "'"));
            }
            if (!accept(',')) {
                expect('}');
                break;
            }
        }
        space();
        if (pos_ < text_.size()) bad("text after the dict");
        if (!descr) bad("no 'descr'");
        if (!fortran) bad("no 'fortran_order'");
        if (!shape) bad("no 'shape' tuple");
        return h;
    }

private:
    [[noreturn]] void bad(const std::string& what) const {
        npy_error(path_, cat("malformed .npy header (", what, "): ", trim(text_)));
    }
    void space() {
        while (pos_ < text_.size() && std::string_view(" \t\n").find(text_[pos_]) != std::string_view::npos)
            ++pos_;
    }
    bool at(char c) {
        space();
        return pos_ < text_.size() && text_[pos_] == c;
    }
    bool accept(char c) {
        if (!at(c)) return false;
        ++pos_;
        return true;
    }
    void expect(char c) {
        if (!accept(c)) bad(cat("expected '", c, "'"));
    }
    std::string_view quoted(const char* what) {
        space();
        char q = pos_ < text_.size() ? text_[pos_] : 0;
        if (q != '\'' && q != '"') bad(cat("expected ", what));
        auto end = text_.find(q, pos_ + 1);
        if (end == std::string_view::npos) bad(cat("unterminated ", what));
        std::string_view s = text_.substr(pos_ + 1, end - pos_ - 1);
        pos_ = end + 1;
        return s;
    }
    bool boolean() {
        space();
        for (bool v : {true, false}) {
            std::string_view word = v ? "True" : "False";
            if (text_.substr(pos_).starts_with(word)) {
                pos_ += word.size();
                return v;
            }
        }
        bad("'fortran_order' is neither True nor False");
    }
    // `(3, 4)`, `(3,)`, `()`.
    std::vector<std::int64_t> dims() {
        if (!accept('(')) bad("no 'shape' tuple");
        std::vector<std::int64_t> out;
        while (!accept(')')) {
            space();
            // substr(pos, npos - pos) is still "to the end"
            std::string_view item = text_.substr(pos_, text_.find_first_not_of("0123456789", pos_) - pos_);
            std::string_view written = trim(text_.substr(pos_, text_.find_first_of(",)", pos_) - pos_));
            if (item.empty() || item.size() > 18 || item.size() != written.size())
                bad(cat("bad dimension '", written, "'"));
            out.push_back(std::stoll(std::string(item)));
            pos_ += item.size();
            if (!accept(',')) {
                if (!accept(')')) bad("unterminated 'shape'");
                break;
            }
        }
        return out;
    }

    const std::string& path_;
    std::string_view text_;
    std::size_t pos_ = 0;
};

Header parse_header(const std::string& path, std::string_view text) {
    return HeaderReader(path, text).read();
}

// The .npy descr of a dtype; bf16 has none.
std::string_view descr_of(DType t) {
    switch (t) {
        case DType::Bool: return "|b1";
        case DType::I8: return "|i1";
        case DType::I16: return "<i2";
        case DType::I32: return "<i4";
        case DType::I64: return "<i8";
        case DType::U8: return "|u1";
        case DType::F16: return "<f2";
        case DType::F32: return "<f4";
        case DType::F64: return "<f8";
        case DType::BF16: return "";
    }
    return "";
}

}  // namespace

Tensor read_npy(const std::string& path) {
    if (std::error_code ec; std::filesystem::is_directory(path, ec)) npy_error(path, "cannot read it: it is a directory");
    std::ifstream in(path, std::ios::binary);
    if (!in) npy_error(path, "cannot open the file (it does not exist or is not readable)");
    in.seekg(0, std::ios::end);
    auto file_size = static_cast<std::uint64_t>(in.tellg());
    in.seekg(0);

    char prelude[kMagicSize + 2];
    if (file_size < sizeof prelude || !in.read(prelude, sizeof prelude) ||
        std::memcmp(prelude, kMagic, kMagicSize) != 0)
        npy_error(path, "not a .npy file (it does not start with the \\x93NUMPY magic)");
    int major = static_cast<unsigned char>(prelude[kMagicSize]);
    if (major < 1 || major > 3)
        npy_error(path, cat("unsupported .npy format version ", major, ".",
                            static_cast<int>(static_cast<unsigned char>(prelude[kMagicSize + 1])),
                            " (scanc reads 1.0, 2.0 and 3.0)"));
    std::size_t len_bytes = major == 1 ? 2 : 4;
    unsigned char len_buf[4] = {0, 0, 0, 0};
    std::uint64_t header_start = sizeof prelude + len_bytes;
    if (file_size < header_start || !in.read(reinterpret_cast<char*>(len_buf), len_bytes))
        npy_error(path, "file is truncated: the header length is missing");
    std::uint64_t header_len = len_buf[0] | (len_buf[1] << 8) | (std::uint64_t{len_buf[2]} << 16) |
                               (std::uint64_t{len_buf[3]} << 24);
    if (file_size - header_start < header_len)
        npy_error(path, cat("file is truncated: expected a header of ", header_len,
                            " bytes, found ", file_size - header_start));
    std::string header(header_len, '\0');
    in.read(header.data(), static_cast<std::streamsize>(header_len));
    Header h = parse_header(path, header);

    const std::optional<std::int64_t> numel = element_count(h.shape);
    if (!numel) npy_error(path, "the header's shape is too large");
    std::uint64_t data_bytes = static_cast<std::uint64_t>(*numel) * dtype_size(h.dtype);
    std::uint64_t available = file_size - header_start - header_len;
    if (available < data_bytes)
        npy_error(path, cat("file is truncated: expected ", data_bytes, " bytes of data, found ",
                            available));

    // Fortran order is column-major data: read it as is and describe it with strides.
    std::vector<std::int64_t> storage_sizes(h.shape.rbegin(), h.shape.rend());
    Tensor buffer = Tensor::empty(h.dtype, h.fortran ? storage_sizes : h.shape);
    if (data_bytes && !in.read(static_cast<char*>(buffer.data()), static_cast<std::streamsize>(data_bytes)))
        npy_error(path, "cannot read the data");
    if (!h.fortran) return buffer;
    TensorView view = buffer.view();
    view.sizes = h.shape;
    view.strides = contiguous_strides(storage_sizes);
    std::reverse(view.strides.begin(), view.strides.end());
    return Tensor::wrap(std::move(view), std::make_shared<Tensor>(std::move(buffer)));
}

void write_npy(const std::string& path, const TensorView& tensor) {
    if (tensor.dtype == DType::BF16)
        npy_error(path, "bf16 has no .npy dtype; convert the tensor to f32 before writing it");
    if (tensor.device.kind != DeviceKind::CPU)
        npy_error(path, "cannot write a CUDA tensor; copy it to the CPU first");
    std::string shape;
    for (auto s : tensor.sizes) shape += cat(s, ", ");
    if (tensor.sizes.size() > 1) shape.resize(shape.size() - 2);  // (3,) keeps its comma
    else if (tensor.sizes.size() == 1) shape.pop_back();
    std::string header = cat("{'descr': '", descr_of(tensor.dtype), "', 'fortran_order': False, ",
                             "'shape': (", shape, "), }");
    // magic(6) + version(2) + length(2) + header + '\n', padded to a multiple of 64.
    std::size_t total = kMagicSize + 4 + header.size() + 1;
    header.append((64 - total % 64) % 64, ' ');
    header.push_back('\n');
    SCANC_INTERNAL_CHECK(header.size() <= 65535, "npy header of ", header.size(), " bytes");

    Tensor data = tensor.is_contiguous() ? Tensor::wrap(tensor, nullptr) : contiguous_copy(tensor);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) npy_error(path, "cannot open the file for writing");
    out.write(kMagic, kMagicSize);
    const char version_and_length[4] = {1, 0, static_cast<char>(header.size() & 0xff),
                                        static_cast<char>(header.size() >> 8)};
    out.write(version_and_length, 4);
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    std::size_t bytes = static_cast<std::size_t>(tensor.numel()) * dtype_size(tensor.dtype);
    if (bytes) out.write(static_cast<const char*>(data.data()), static_cast<std::streamsize>(bytes));
    if (!out.flush()) npy_error(path, "writing the file failed (disk full or not writable?)");
}

}  // namespace scanc
