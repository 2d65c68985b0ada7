// Token files written by NumPy (tofile and np.save, every dtype, .npy versions 1.0 to 3.0) read
// back identically, and every malformed file refused with a typed error
// that names the problem and the file.

#include <climits>
#include <sstream>

#include "data/data_test_util.h"

namespace tally::data::test {
namespace {

struct DtypeCase {
  TokenDtype dtype;
  std::vector<int64_t> values;
};

/// Each dtype's extremes, then enough tokens to span several pages.
std::vector<DtypeCase> dtype_cases() {
  std::vector<DtypeCase> cases = {
      {TokenDtype::UInt16, {0, 1, 65535, 256, 50256}},
      {TokenDtype::Int32, {0, -1, INT32_MAX, INT32_MIN, 100277}},
      {TokenDtype::UInt32, {0, UINT32_MAX, 2147483648LL, 3, 200019}},
      {TokenDtype::Int64, {0, -1, INT64_MAX, INT64_MIN, int64_t{1} << 40}},
  };
  for (DtypeCase& c : cases)
    for (int64_t i = 0; i < 3000; ++i) c.values.push_back(i * 37 % 60000);
  return cases;
}

std::string python_list(const std::vector<int64_t>& values) {
  std::ostringstream os;
  os << "[";
  for (int64_t v : values) os << v << ",";
  os << "]";
  return os.str();
}

/// .npy bytes with a hand-written header dict (no padding) and `data` after it.
std::string npy_bytes(const std::string& dict, const std::string& data = "", int major = 1) {
  std::string out = std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0';
  const size_t len = dict.size();
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>(len >> 8 & 0xff);
  if (major >= 2) out += std::string(2, '\0');
  return out + dict + data;
}

std::vector<int64_t> read_all(const TokenFile& f) {
  std::vector<int64_t> out(static_cast<size_t>(f.size()));
  f.gather(0, out);
  return out;
}

/// Every dtype written by NumPy once, in every layout the tests read.
class NumpyFiles : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    std::ostringstream py;
    py << "import numpy as np\nd = '" << dir_->file("").string() << "'\n";
    for (const DtypeCase& c : dtype_cases()) {
      const std::string name(dtype_name(c.dtype));
      py << "a = np.array(" << python_list(c.values) << ", dtype=np." << name << ")\n"
         << "a.tofile(d + '" << name << ".bin')\n"
         << "np.save(d + '" << name << ".npy', a)\n"
         << "for v in (2, 3):\n"
         << "    with open(d + '" << name << "_v%d.npy' % v, 'wb') as f:\n"
         << "        np.lib.format.write_array(f, a, version=(v, 0))\n"
         << "np.save(d + '" << name << "_2d.npy', a[:len(a) // 4 * 4].reshape(4, -1))\n";
    }
    py << "np.array(range(1, 11), dtype=np.int32).tofile(d + 'data.npy')\n"  // the lecture's file
       << "np.save(d + 'fortran.npy', np.asfortranarray(np.arange(12, dtype=np.int32).reshape(3, 4)))\n"
       << "np.save(d + 'float32.npy', np.arange(5, dtype=np.float32))\n"
       << "np.save(d + 'bigendian.npy', np.arange(5, dtype='>i4'))\n"
       << "np.save(d + 'empty.npy', np.zeros(0, dtype=np.int32))\n";
    run_python(*dir_, py.str());
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string file(const std::string& name) { return dir_->file(name); }
  static TempDir* dir_;
};
TempDir* NumpyFiles::dir_ = nullptr;

TEST_F(NumpyFiles, RawFilesReadBackIdentically) {
  for (const DtypeCase& c : dtype_cases()) {
    const std::string name(dtype_name(c.dtype));
    const TokenFile f = TokenFile::open_raw(file(name + ".bin"), c.dtype);
    EXPECT_EQ(f.dtype(), c.dtype);
    ASSERT_EQ(f.size(), static_cast<int64_t>(c.values.size())) << name;
    EXPECT_EQ(read_all(f), c.values) << name;
    for (int64_t i : {int64_t{0}, int64_t{2}, int64_t{3}, f.size() - 1}) EXPECT_EQ(f.at(i), c.values[size_t(i)]) << name;
  }
}

TEST_F(NumpyFiles, NpyFilesOfEveryVersionReadBackIdentically) {
  for (const DtypeCase& c : dtype_cases()) {
    const std::string name(dtype_name(c.dtype));
    for (const std::string suffix : {".npy", "_v2.npy", "_v3.npy"}) {
      const TokenFile f = TokenFile::open_npy(file(name + suffix));
      EXPECT_EQ(f.dtype(), c.dtype) << name + suffix;
      EXPECT_EQ(read_all(f), c.values) << name + suffix;
    }
    const TokenFile flat = TokenFile::open_npy(file(name + "_2d.npy"));  // C order: read flat
    EXPECT_EQ(read_all(flat), std::vector<int64_t>(c.values.begin(), c.values.begin() + flat.size())) << name;
    EXPECT_EQ(flat.size(), static_cast<int64_t>(c.values.size()) / 4 * 4);
  }
}

TEST_F(NumpyFiles, LecturesTofileNamedNpyIsRaw) {
  const TokenFile f = TokenFile::open_raw(file("data.npy"), TokenDtype::Int32);
  EXPECT_EQ(read_all(f), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
}

TEST_F(NumpyFiles, GatherWindowsAndBounds) {
  const DtypeCase c = dtype_cases()[0];
  const TokenFile f = TokenFile::open_npy(file("uint16.npy"));
  std::vector<int64_t> window(100);
  f.gather(f.size() - 100, window);
  EXPECT_EQ(window, std::vector<int64_t>(c.values.end() - 100, c.values.end()));
  expect_error<IndexError>([&] { f.gather(f.size() - 99, window); }, {"out of bounds", "uint16.npy", "3005"});
  expect_error<IndexError>([&] { f.gather(-1, window); }, {"out of bounds"});
  expect_error<IndexError>([&] { f.at(f.size()); }, {"index 3005", "uint16.npy"});
  const TokenFile copy = f;  // copies share the open file
  EXPECT_EQ(copy.at(2), 65535);
}

TEST_F(NumpyFiles, RefusesUnsupportedDtypes) {
  expect_error<TypeError>([] { TokenFile::open_npy(file("float32.npy")); }, {"'<f4'", "float32.npy", "uint16"});
  expect_error<TypeError>([] { TokenFile::open_npy(file("bigendian.npy")); }, {"big-endian .npy dtype '>i4'", "save it as '<i4'", "bigendian.npy"});
}

TEST_F(NumpyFiles, RefusesFortranOrder) {
  expect_error<ValueError>([] { TokenFile::open_npy(file("fortran.npy")); }, {"Fortran-order", "fortran.npy", "2 dimensions"});
}

TEST_F(NumpyFiles, RefusesEmptyArrays) {
  expect_error<ValueError>([] { TokenFile::open_npy(file("empty.npy")); }, {"empty", "empty.npy", "0 tokens"});
}

TEST_F(NumpyFiles, RefusesNpyOpenedAsRaw) {
  expect_error<ValueError>([] { TokenFile::open_raw(file("int32.npy"), TokenDtype::Int32); }, {"magic", "int32.npy", "open_npy"});
}

TEST_F(NumpyFiles, RefusesHeadersThatLie) {
  TempDir dir;
  const std::string shorter = dir.file("short.npy"), longer = dir.file("long.npy");
  fs::copy_file(file("int32.npy"), shorter);
  fs::copy_file(file("int32.npy"), longer);
  fs::resize_file(shorter, fs::file_size(shorter) - 4);
  fs::resize_file(longer, fs::file_size(longer) + 8);
  expect_error<ValueError>([&] { TokenFile::open_npy(shorter); },
                           {"short.npy", "declares 3005 elements of int32", "12016 bytes follow the 128-byte header"});
  expect_error<ValueError>([&] { TokenFile::open_npy(longer); }, {"long.npy", "3005 elements", "12028 bytes follow"});
}

TEST(TokenFile, RefusesMissingFiles) {
  TempDir dir;
  expect_error<IOError>([&] { TokenFile::open_raw(dir.file("absent.bin"), TokenDtype::UInt16); },
                        {"cannot open", "absent.bin", "No such file"});
  expect_error<IOError>([&] { TokenFile::open_npy(dir.file("absent.npy")); }, {"cannot open", "absent.npy"});
}

// A file cut shorter in place while it is open (`open(path, 'wb')` and a smaller array) killed the
// reading process with SIGBUS when token files were mapped; it is now an IOError at the first
// window it no longer holds, and the windows it still holds read as before.
TEST(TokenFile, AFileCutShorterWhileOpenIsAnIOErrorNotASignal) {
  TempDir dir;
  std::string bytes;
  for (int i = 0; i < 100000; ++i) bytes += std::string{static_cast<char>(i & 0xff), static_cast<char>(i >> 8 & 0xff)};
  write_bytes(dir.file("cut.bin"), bytes);
  const TokenFile f = TokenFile::open_raw(dir.file("cut.bin"), TokenDtype::UInt16);
  ASSERT_EQ(f.size(), 100000);
  write_bytes(dir.file("cut.bin"), bytes.substr(0, 2000));  // truncated and rewritten in place
  std::vector<int64_t> window(10);
  f.gather(990, window);
  EXPECT_EQ(window.front(), 990);
  EXPECT_EQ(window.back(), 999);
  expect_error<IOError>([&] { f.gather(99000, window); }, {"cut.bin", "now holds 2000 bytes", "200000 bytes when opened", "byte 198000", "renaming"});
  expect_error<IOError>([&] { f.gather(995, window); }, {"now holds 2000 bytes", "byte 2000 was asked for"});
}

TEST(TokenFile, RefusesEmptyFiles) {
  TempDir dir;
  write_bytes(dir.file("empty.bin"), "");
  expect_error<ValueError>([&] { TokenFile::open_raw(dir.file("empty.bin"), TokenDtype::Int32); }, {"empty", "empty.bin", "0 bytes"});
  expect_error<ValueError>([&] { TokenFile::open_npy(dir.file("empty.bin")); }, {"empty", "empty.bin"});
}

TEST(TokenFile, RefusesSizesThatAreNotWholeTokens) {
  TempDir dir;
  write_bytes(dir.file("odd.bin"), std::string(1002, '\1'));
  expect_error<ValueError>([&] { TokenFile::open_raw(dir.file("odd.bin"), TokenDtype::Int32); },
                           {"odd.bin", "1002 bytes", "not a multiple of 4", "int32"});
  EXPECT_EQ(TokenFile::open_raw(dir.file("odd.bin"), TokenDtype::UInt16).size(), 501);
}

TEST(TokenFile, RefusesBadMagicAndVersions) {
  TempDir dir;
  std::string bad_magic = npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }", "abcd");
  bad_magic[5] = 'X';
  write_bytes(dir.file("magic.npy"), bad_magic);
  expect_error<ValueError>([&] { TokenFile::open_npy(dir.file("magic.npy")); }, {"magic.npy", "bad magic"});
  write_bytes(dir.file("v4.npy"), npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }", "abcd", 4));
  expect_error<ValueError>([&] { TokenFile::open_npy(dir.file("v4.npy")); }, {"v4.npy", "version 4.0"});
}

TEST(NpyHeader, ParsesWhatNumpyWrites) {
  const std::string bytes = npy_bytes("{'descr': '<u2', 'fortran_order': False, 'shape': (2, 3), }  \n", "", 2);
  const NpyHeader h = parse_npy_header(bytes.data(), static_cast<int64_t>(bytes.size()), "h.npy");
  EXPECT_EQ(h.major_version, 2);
  EXPECT_EQ(h.descr, "<u2");
  EXPECT_FALSE(h.fortran_order);
  EXPECT_EQ(h.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(h.numel(), 6);
  EXPECT_EQ(h.data_offset, static_cast<int64_t>(bytes.size()));
  const std::string scalar = npy_bytes("{'descr': '<i8', 'fortran_order': True, 'shape': (), }");
  const NpyHeader s = parse_npy_header(scalar.data(), static_cast<int64_t>(scalar.size()), "s.npy");
  EXPECT_TRUE(s.shape.empty());
  EXPECT_TRUE(s.fortran_order);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(npy_item_size("<f8", "x.npy"), 8);
}

TEST(NpyHeader, RefusesBrokenDicts) {
  const auto parse = [](const std::string& dict) {
    const std::string bytes = npy_bytes(dict);
    parse_npy_header(bytes.data(), static_cast<int64_t>(bytes.size()), "d.npy");
  };
  expect_error<ValueError>([&] { parse("{'fortran_order': False, 'shape': (1,), }"); }, {"d.npy", "no 'descr'"});
  expect_error<ValueError>([&] { parse("{'descr': '<i4', 'fortran_order': 0, 'shape': (1,), }"); }, {"'fortran_order'"});
  expect_error<ValueError>([&] { parse("{'descr': '<i4', 'fortran_order': False, 'shape': (-1,), }"); }, {"'shape'", "'-1'"});
  expect_error<ValueError>([&] { parse("{'descr': '<i4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }"); },
                           {"d.npy", "2^63 - 1 elements"});
  // numpy's reader keeps the last of two equal keys; reading the first would take a wrong shape.
  expect_error<ValueError>([&] { parse("{'descr': '<i4', 'fortran_order': False, 'shape': (8,), 'shape': (4,), }"); },
                           {"d.npy", "'shape' key twice"});
  expect_error<ValueError>([&] { parse("{'descr': '<i4', 'descr': '<u2', 'fortran_order': False, 'shape': (8,), }"); },
                           {"'descr' key twice"});
  const std::string cut = npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }");
  expect_error<ValueError>([&] { parse_npy_header(cut.data(), 20, "c.npy"); }, {"c.npy", "header declares"});
}

TEST(TokenDtype, NamesAndSizes) {
  for (TokenDtype d : {TokenDtype::UInt16, TokenDtype::Int32, TokenDtype::UInt32, TokenDtype::Int64})
    EXPECT_EQ(token_dtype_from_name(dtype_name(d)), d);
  EXPECT_EQ(element_size(TokenDtype::UInt16), 2);
  EXPECT_EQ(element_size(TokenDtype::Int64), 8);
  expect_error<ValueError>([] { token_dtype_from_name("float32"); }, {"'float32'", "uint16"});
}

// A text file's bytes are its tokens (uint8); a slice is a token file of its own over part of the
// same file, as training and validation split one.
TEST(TokenFile, BytesAsTokensAndSlices) {
  TempDir dir;
  write_bytes(dir.file("notes.txt"), "tally\xff");
  const TokenFile f = TokenFile::open_raw(dir.file("notes.txt"), TokenDtype::UInt8);
  ASSERT_EQ(f.size(), 6);
  EXPECT_EQ(dtype_name(f.dtype()), "uint8");
  EXPECT_EQ(token_dtype_from_name("uint8"), TokenDtype::UInt8);
  std::vector<int64_t> all(6);
  f.gather(0, all);
  EXPECT_EQ(all, (std::vector<int64_t>{'t', 'a', 'l', 'l', 'y', 255}));
  const TokenFile tail = f.slice(4, 2);
  ASSERT_EQ(tail.size(), 2);
  EXPECT_EQ(tail.at(0), 'y');
  EXPECT_EQ(tail.at(1), 255);
  expect_error<IndexError>([&] { tail.at(2); }, {"notes.txt"});
  expect_error<IndexError>([&] { f.slice(5, 2); }, {"tokens [5, 7) are out of bounds", "6 tokens"});
  const TokenFile wide = TokenFile::open_raw(dir.file("notes.txt"), TokenDtype::UInt16).slice(1, 2);
  EXPECT_EQ(wide.at(0), 'l' | 'l' << 8);  // the second pair of bytes
}

}  // namespace
}  // namespace tally::data::test
