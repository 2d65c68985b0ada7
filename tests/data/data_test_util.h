#pragma once
// Shared by the data tests: a temporary folder removed at the end of each test, and token files
// written from C++ or by NumPy.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "tally/data/data.h"
#include "expect_error.h"
#include "temp_dir.h"

namespace tally::data::test {

namespace fs = std::filesystem;

using ::tally::test::TempDir;

/// `bytes` written as they are.
inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// The raw array numpy's tofile would write for `tokens` as T (the host is little-endian).
template <class T>
void write_raw(const std::string& path, const std::vector<int64_t>& tokens) {
  std::string bytes(tokens.size() * sizeof(T), '\0');
  for (size_t i = 0; i < tokens.size(); ++i) {
    const T v = static_cast<T>(tokens[i]);
    std::memcpy(bytes.data() + i * sizeof(T), &v, sizeof(T));
  }
  write_bytes(path, bytes);
}

/// 0, 1, ..., n - 1 as an int32 token file.
inline TokenFile arange_file(const TempDir& dir, int64_t n) {
  std::vector<int64_t> tokens(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) tokens[static_cast<size_t>(i)] = i;
  const std::string path = dir.file("arange.bin");
  write_raw<int32_t>(path, tokens);
  return TokenFile::open_raw(path, TokenDtype::Int32);
}

/// Runs `script` with the reference Python (numpy); fails the test when it does not exit 0.
inline void run_python(const TempDir& dir, const std::string& script) {
  const std::string path = dir.file("write.py");
  write_bytes(path, script);
  const std::string cmd = std::string("'") + TALLY_TEST_PYTHON + "' '" + path + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

using ::tally::test::expect_error;

}  // namespace tally::data::test
