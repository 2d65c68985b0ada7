#pragma once
// Shared by the io tests: a temporary folder, files as bytes, the reference Python, and error checks.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "tally/io/safetensors.h"
#include "expect_error.h"
#include "temp_dir.h"

namespace tally::io::test {

namespace fs = std::filesystem;

using ::tally::test::TempDir;

inline std::vector<uint8_t> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

inline void write_file(const fs::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

/// Runs a script of tests/io with the reference Python (numpy) and `args`; returns its exit status.
inline int run_python(const std::string& script, const std::string& args) {
  const std::string cmd = std::string("'") + TALLY_TEST_PYTHON + "' '" + TALLY_TEST_DIR + "/io/" + script + "' " + args;
  return std::system(cmd.c_str());
}

/// A tensor's bytes, contiguous.
inline std::vector<uint8_t> bytes_of(const Tensor& t) {
  const Tensor c = t.contiguous();
  const auto* p = static_cast<const uint8_t*>(c.numel() ? c.data_ptr() : nullptr);
  return p ? std::vector<uint8_t>(p, p + c.nbytes()) : std::vector<uint8_t>();
}

/// Same dtype, shape and bytes (so -0.0 and NaN payloads count).
inline void expect_identical(const Tensor& got, const Tensor& want, const std::string& what) {
  EXPECT_EQ(got.dtype(), want.dtype()) << what;
  EXPECT_EQ(std::vector<int64_t>(got.sizes().begin(), got.sizes().end()),
            std::vector<int64_t>(want.sizes().begin(), want.sizes().end())) << what;
  EXPECT_TRUE(got.is_contiguous()) << what;
  EXPECT_EQ(bytes_of(got), bytes_of(want)) << what;
}

using ::tally::test::expect_error;

}  // namespace tally::io::test
