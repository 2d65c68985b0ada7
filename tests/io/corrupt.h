#pragma once
// Corruptions of a safetensors file on disk, as bit rot or a faulty copy makes them, for the
// checksum tests of tests/io and tests/train: one flipped bit that leaves the file well-formed.

#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <string>

#include "tally/io/safetensors.h"
#include "tests/io/io_test_util.h"

namespace tally::io::test {

/// Flip bit `bit` of byte `byte` of tensor `tensor`'s data in `file`.
inline void flip_bit_in_tensor(const fs::path& file, const std::string& tensor, uint64_t byte = 0, int bit = 0) {
  uint64_t at = 0;
  {
    const SafetensorsReader r = SafetensorsReader::open(file);
    const TensorInfo& t = r.info(tensor);
    ASSERT_LT(byte, t.end - t.begin) << tensor;
    at = 8 + r.header_bytes() + t.begin + byte;
  }
  std::vector<uint8_t> bytes = read_file(file);
  bytes[at] ^= static_cast<uint8_t>(1u << bit);
  write_file(file, bytes);
}

/// Flip the lowest bit of the first digit in the value of metadata key `key` in `file` (a digit
/// stays a digit, so the header still parses: only a checksum can tell).
inline void flip_digit_in_metadata(const fs::path& file, const std::string& key) {
  std::vector<uint8_t> bytes = read_file(file);
  const std::string text(bytes.begin(), bytes.end());
  const size_t value = text.find("\"" + key + "\":\"");
  ASSERT_NE(value, std::string::npos) << key;
  const size_t digit = text.find_first_of("0123456789", value + key.size() + 4);
  ASSERT_NE(digit, std::string::npos) << key;
  bytes[digit] ^= 1;
  write_file(file, bytes);
}

/// Flip bit `bit` of the first byte of `needle` in `file`'s header.
inline void flip_bit_in_header(const fs::path& file, const std::string& needle, int bit = 0) {
  std::vector<uint8_t> bytes = read_file(file);
  const size_t at = std::string(bytes.begin(), bytes.end()).find(needle);
  ASSERT_NE(at, std::string::npos) << needle;
  bytes[at] ^= static_cast<uint8_t>(1u << bit);
  write_file(file, bytes);
}

}  // namespace tally::io::test
