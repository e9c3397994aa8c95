// .npy reading and writing. Files with unusual headers or corrupt contents are written byte by
// byte here, following the format description, not with write_npy.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "scanc/error.h"
#include "scanc/runtime/npy.h"

namespace scanc {
namespace {

std::string temp_path(const std::string& name) {
    return (std::filesystem::path(::testing::TempDir()) / ("scanc_npy_" + name)).string();
}

// A .npy file: magic, version, little-endian header length (2 bytes for 1.0, else 4), the dict
// padded with spaces and '\n' to a multiple of 64, then `data`.
void write_raw(const std::string& path, int major, const std::string& dict, const std::string& data) {
    std::size_t len_bytes = major == 1 ? 2 : 4;
    std::string header = dict;
    std::size_t total = 8 + len_bytes + header.size() + 1;
    header.append((64 - total % 64) % 64, ' ');
    header.push_back('\n');
    std::string bytes = "\x93NUMPY";
    bytes.push_back(static_cast<char>(major));
    bytes.push_back(0);
    for (std::size_t i = 0; i < len_bytes; ++i) bytes.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xff));
    bytes += header + data;
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

template <typename T>
std::string bytes_of(const std::vector<T>& v) {
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

std::string read_error(const std::string& path) {
    try {
        read_npy(path);
    } catch (const CompileError& e) {
        return e.what();
    }
    return "";
}

// Logical elements of a CPU view, as bytes in row-major order.
std::string logical_bytes(const TensorView& v) {
    std::string out;
    std::size_t elem = dtype_size(v.dtype);
    std::vector<std::int64_t> index(v.sizes.size(), 0);
    for (std::int64_t k = 0; k < v.numel(); ++k) {
        std::int64_t offset = 0;
        for (std::size_t d = 0; d < index.size(); ++d) offset += index[d] * v.strides[d];
        out.append(static_cast<const char*>(v.data) + offset * static_cast<std::int64_t>(elem), elem);
        for (std::size_t d = index.size(); d-- > 0;) {
            if (++index[d] < v.sizes[d]) break;
            index[d] = 0;
        }
    }
    return out;
}

TEST(Npy, EveryDtypeAndShapeRoundTrips) {
    const std::vector<std::vector<std::int64_t>> shapes = {{}, {0}, {1}, {7}, {2, 3, 5}, {4, 0, 2}};
    for (DType t : kAllDTypes) {
        if (t == DType::BF16) continue;
        for (const auto& shape : shapes) {
            Tensor x = Tensor::empty(t, shape);
            auto* p = static_cast<unsigned char*>(x.data());
            std::size_t bytes = static_cast<std::size_t>(x.numel()) * dtype_size(t);
            for (std::size_t i = 0; i < bytes; ++i) p[i] = static_cast<unsigned char>(i * 37 + 11);
            if (t == DType::Bool)
                for (std::size_t i = 0; i < bytes; ++i) p[i] &= 1;
            std::string path = temp_path("roundtrip.npy");
            write_npy(path, x);
            Tensor y = read_npy(path);
            EXPECT_EQ(y.dtype(), t);
            EXPECT_EQ(y.sizes(), shape) << dtype_name(t);
            EXPECT_EQ(logical_bytes(y), logical_bytes(x)) << dtype_name(t);
        }
    }
}

TEST(Npy, WrittenFilesAreVersionOneCOrderWithAPaddedHeader) {
    Tensor x = Tensor::empty(DType::F32, {2, 3});
    std::string path = temp_path("header.npy");
    write_npy(path, x);
    std::ifstream in(path, std::ios::binary);
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_GE(all.size(), 10u);
    EXPECT_EQ(all.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
    std::size_t header_len = static_cast<unsigned char>(all[8]) | (static_cast<unsigned char>(all[9]) << 8);
    EXPECT_EQ((10 + header_len) % 64, 0u);
    std::string header = all.substr(10, header_len);
    EXPECT_NE(header.find("'descr': '<f4'"), std::string::npos) << header;
    EXPECT_NE(header.find("'fortran_order': False"), std::string::npos) << header;
    EXPECT_NE(header.find("'shape': (2, 3)"), std::string::npos) << header;
    EXPECT_EQ(header.back(), '\n');
    EXPECT_EQ(all.size(), 10 + header_len + 6 * 4);
}

TEST(Npy, NonContiguousViewsAreWrittenInLogicalOrder) {
    std::vector<float> storage(24);
    for (int i = 0; i < 24; ++i) storage[i] = static_cast<float>(i);
    TensorView transposed{storage.data(), DType::F32, {6, 4}, {1, 6}, {}};
    TensorView reversed{storage.data() + 23, DType::F32, {3, 4}, {-8, -2}, {}};
    TensorView broadcast{storage.data(), DType::F32, {3, 5}, {0, 1}, {}};
    for (const TensorView& v : {transposed, reversed, broadcast}) {
        std::string path = temp_path("view.npy");
        write_npy(path, v);
        Tensor y = read_npy(path);
        EXPECT_EQ(y.sizes(), v.sizes);
        EXPECT_EQ(logical_bytes(y), logical_bytes(v));
    }
}

TEST(Npy, FortranOrderIsReadAsStrides) {
    // A 2x3 array [[0, 1, 2], [3, 4, 5]] stored column-major: 0 3 1 4 2 5.
    std::string path = temp_path("fortran.npy");
    write_raw(path, 1, "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }",
              bytes_of(std::vector<std::int32_t>{0, 3, 1, 4, 2, 5}));
    Tensor y = read_npy(path);
    EXPECT_EQ(y.sizes(), (std::vector<std::int64_t>{2, 3}));
    EXPECT_EQ(logical_bytes(y), bytes_of(std::vector<std::int32_t>{0, 1, 2, 3, 4, 5}));
}

TEST(Npy, AnEmptyArrayWithHugeSizesBesideItsZeroIsReadInEitherOrder) {
    for (const char* order : {"False", "True"}) {
        SCOPED_TRACE(order);
        std::string path = temp_path("empty_huge.npy");
        write_raw(path, 1, std::string("{'descr': '<f4', 'fortran_order': ") + order +
                               ", 'shape': (0, 100000000000000000, 100000000000000000), }", "");
        Tensor y = read_npy(path);
        EXPECT_EQ(y.sizes(), (std::vector<std::int64_t>{0, 100000000000000000, 100000000000000000}));
        EXPECT_EQ(y.view().numel(), 0);
        for (std::int64_t stride : y.view().strides) EXPECT_GE(stride, 0);  // no wrapped products
    }
}

TEST(Npy, VersionsTwoAndThreeAndNativeOrderDescrsAreRead) {
    for (int major : {2, 3}) {
        std::string path = temp_path("v23.npy");
        write_raw(path, major, "{'descr': '=f8', 'fortran_order': False, 'shape': (3,), }",
                  bytes_of(std::vector<double>{1.5, -2, 1e300}));
        Tensor y = read_npy(path);
        EXPECT_EQ(y.dtype(), DType::F64);
        EXPECT_EQ(logical_bytes(y), bytes_of(std::vector<double>{1.5, -2, 1e300}));
    }
    std::string path = temp_path("u1.npy");
    write_raw(path, 1, "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 1), }", "\x07\xff");
    Tensor y = read_npy(path);
    EXPECT_EQ(y.dtype(), DType::U8);
    EXPECT_EQ(logical_bytes(y), "\x07\xff");
}

TEST(Npy, HeadersInAnyKeyOrderQuotingAndSpacingAreRead) {
    for (const char* dict : {"{\"shape\":(2,),\"fortran_order\":False,\"descr\":\"<i2\"}",
                             "{ 'fortran_order' : False , 'descr' : '<i2' , 'shape' : ( 2 , ) }",
                             "{'descr': '<i2', 'fortran_order': False, 'shape': (2,),}"}) {
        std::string path = temp_path("order.npy");
        write_raw(path, 1, dict, bytes_of(std::vector<std::int16_t>{7, -3}));
        Tensor y = read_npy(path);
        EXPECT_EQ(y.sizes(), (std::vector<std::int64_t>{2})) << dict;
        EXPECT_EQ(logical_bytes(y), bytes_of(std::vector<std::int16_t>{7, -3})) << dict;
    }
}

struct BadFile {
    const char* name;
    std::string dict;  // empty: write `raw` as the whole file
    std::string data;
    const char* expect;  // part of the message
    std::string raw = "";
};

TEST(Npy, EveryKindOfBadFileGivesACompileErrorNamingTheFileAndTheProblem) {
    const std::string ok_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }";
    const std::vector<BadFile> cases = {
        {"magic", "", "", "not a .npy file", "PK\x03\x04 this is a zip file"},
        {"empty", "", "", "not a .npy file", ""},
        {"short_header", "", "", "truncated", std::string("\x93NUMPY\x01\x00\x76\x00{'descr'", 17)},
        {"short_data", ok_dict, std::string(10, 'x'), "expected 16 bytes of data, found 10"},
        {"big_endian", "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", "abcd", "big-endian"},
        {"complex", "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", "abcdefgh", "complex"},
        {"object", "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", "abcdefgh", "object"},
        {"structured", "{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False, 'shape': (1,), }",
         "abcdefgh", "structured"},
        {"bf16_as_void", "{'descr': '|V2', 'fortran_order': False, 'shape': (1,), }", "ab", "bfloat16"},
        {"u4", "{'descr': '<u4', 'fortran_order': False, 'shape': (1,), }", "abcd", "'<u4'"},
        {"no_shape", "{'descr': '<f4', 'fortran_order': False, }", "", "no 'shape'"},
        {"bad_dim", "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", "", "bad dimension"},
        {"float_dim", "{'descr': '<f4', 'fortran_order': False, 'shape': (2.5,), }", "", "bad dimension '2.5'"},
        // Keys are read in order, not found by searching: NumPy takes the last of two, and
        // refuses a key it does not know; neither may pass for a smaller array here.
        {"twice", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'shape': (3, 4), }", "abcd",
         "'shape' given twice"},
        {"key_in_a_string", "{'note': \"'shape': (1,)\", 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}",
         "abcdefgh", "unexpected key 'note'"},
        {"after_the_dict", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} 'shape': (2,)", "abcd",
         "text after the dict"},
        {"version", "", "", "format version 9.0", std::string("\x93NUMPY\x09\x00\x00\x00", 10)},
    };
    for (const BadFile& c : cases) {
        std::string path = temp_path(std::string("bad_") + c.name + ".npy");
        if (c.dict.empty()) std::ofstream(path, std::ios::binary) << c.raw;
        else write_raw(path, 1, c.dict, c.data);
        std::string msg = read_error(path);
        EXPECT_NE(msg.find(path), std::string::npos) << c.name << ": " << msg;
        EXPECT_NE(msg.find(c.expect), std::string::npos) << c.name << ": " << msg;
    }
    std::string missing = temp_path("does_not_exist.npy");
    std::string msg = read_error(missing);
    EXPECT_NE(msg.find(missing), std::string::npos) << msg;
    EXPECT_NE(msg.find("does not exist"), std::string::npos) << msg;
}

TEST(Npy, WritingBf16SaysToConvert) {
    Tensor x = Tensor::empty(DType::BF16, {2});
    try {
        write_npy(temp_path("bf16.npy"), x);
        FAIL() << "no error";
    } catch (const CompileError& e) {
        EXPECT_NE(std::string(e.what()).find("bf16 has no .npy dtype"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("convert"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace scanc
