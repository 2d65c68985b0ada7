// The .npy header is a magic string, a version, a header length and a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }; we parse just those three keys.

#include "differential/npy.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace tally::difftest {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw std::runtime_error("read_npy(" + path + "): " + why);
}

// The text after `'key':` in the header dict, with leading spaces removed.
std::string value_after(const std::string& header, const std::string& key, const std::string& path) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) fail(path, "header has no '" + key + "'");
  at = header.find(':', at);
  if (at == std::string::npos) fail(path, "malformed header");
  at = header.find_first_not_of(' ', at + 1);
  return header.substr(at);
}

int64_t item_size(const std::string& descr, const std::string& path) {
  if (descr.size() < 3) fail(path, "unknown descr " + descr);
  if (descr[0] == '>') fail(path, "big-endian arrays are not supported");
  return std::stoll(descr.substr(2));
}

}  // namespace

NpyArray read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open");
  std::vector<char> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (file.size() < 10 || std::memcmp(file.data(), "\x93NUMPY", 6) != 0) fail(path, "not an .npy file");
  const auto byte = [&](size_t i) { return static_cast<size_t>(static_cast<unsigned char>(file[i])); };
  const int major = file[6];
  size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = byte(8) | byte(9) << 8;
    header_start = 10;
  } else {
    if (file.size() < 12) fail(path, "truncated header");
    header_len = byte(8) | byte(9) << 8 | byte(10) << 16 | byte(11) << 24;
    header_start = 12;
  }
  if (file.size() < header_start + header_len) fail(path, "truncated header");
  const std::string header(file.data() + header_start, header_len);

  NpyArray out;
  std::string d = value_after(header, "descr", path);
  out.descr = d.substr(1, d.find('\'', 1) - 1);
  if (value_after(header, "fortran_order", path).rfind("False", 0) != 0) fail(path, "Fortran order");
  std::string s = value_after(header, "shape", path);
  s = s.substr(1, s.find(')') - 1);
  for (size_t i = 0; i < s.size();) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    std::string tok = s.substr(i, j - i);
    if (tok.find_first_not_of(' ') != std::string::npos) out.shape.push_back(std::stoll(tok));
    i = j + 1;
  }
  int64_t numel = 1;
  for (int64_t n : out.shape) numel *= n;
  const size_t nbytes = static_cast<size_t>(numel * item_size(out.descr, path));
  const size_t data_start = header_start + header_len;
  if (file.size() < data_start + nbytes) fail(path, "truncated data");
  out.bytes.assign(file.begin() + static_cast<std::ptrdiff_t>(data_start),
                   file.begin() + static_cast<std::ptrdiff_t>(data_start + nbytes));
  return out;
}

}  // namespace tally::difftest
