// libFuzzer target for the safetensors reader: any bytes must either parse into tensors that can
// all be read, or raise a tally::Error; a crash, a sanitizer report or another exception is a bug.
// tests/io/run_fuzz.sh builds it with clang from tally/io/safetensors_reader.cpp and checksum.cpp
// alone (the parser creates no tensors); test_io also links it and runs it over the malformed
// catalogue.
//
// load_all() is load() of each tensor: a new CPU tensor, then read_bytes() into it. The fuzzer
// calls read_bytes() into a buffer of exactly the tensor's size, which is the part of load() that
// touches the file's bytes, without the rest of the library that tensor creation needs.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "tally/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto reader = tally::io::SafetensorsReader::from_bytes(std::span<const uint8_t>(data, size), "fuzz");
    uint64_t total_bytes = 0;
    for (const tally::io::TensorInfo& t : reader.tensors()) {
      // Invariants a valid file guarantees: byte ranges inside the data section, in order.
      if (t.begin > t.end || t.end > reader.file_bytes() - 8 - reader.header_bytes() || t.begin != total_bytes) __builtin_trap();
      total_bytes = t.end;
      if (&reader.info(t.name) != &t) __builtin_trap();
      std::vector<uint8_t> out(t.end - t.begin);
      reader.read_bytes(t, out);
    }
    if (total_bytes != reader.file_bytes() - 8 - reader.header_bytes()) __builtin_trap();
    // The header is one JSON object and nothing else but whitespace.
    std::string_view header(reinterpret_cast<const char*>(data) + 8, reader.header_bytes());
    while (!header.empty() && (header.back() == ' ' || header.back() == '\n' || header.back() == '\r' || header.back() == '\t'))
      header.remove_suffix(1);
    if (header.empty() || header.front() != '{' || header.back() != '}' || header.find('\0') != std::string_view::npos) __builtin_trap();
  } catch (const tally::Error&) {
    // A rejected file: the expected outcome for almost every input.
  }
  return 0;
}
