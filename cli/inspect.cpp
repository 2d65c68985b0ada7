// `tally inspect FILE`: what a safetensors file holds (tensors, bytes, metadata), read with the
// strict reader, so a file this prints is one tally will load; every tensor is read and checked
// against its checksum (Note [Checksums] in tally/io/checksum.cpp), and any that fails is named.

#include <fmt/core.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "tally/accounting/memory_tracker.h"
#include "tally/error/error.h"
#include "tally/io/checksum.h"
#include "tally/io/safetensors.h"

namespace tally::cli {

namespace {

/// [2, 3], as tally's error messages print a shape.
std::string shape_str(const DimVector& shape) { return detail::str_cat(IntArrayRef(shape)); }

/// `text` safe to print on a terminal: control characters (C0, DEL, and C1 such as U+009B, which
/// some terminals take as the start of an escape sequence) written as escapes; the rest as is.
std::string escaped(const std::string& text) {
  std::string s;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    const auto next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
    if (c == '\n') s += "\\n";
    else if (c == '\t') s += "\\t";
    else if (c < 0x20 || c == 0x7f) s += fmt::format("\\x{:02x}", c);
    else if (c == 0xC2 && next >= 0x80 && next <= 0x9F) s += fmt::format("\\u{:04x}", next), ++i;  // C1, UTF-8 encoded
    else s += static_cast<char>(c);
  }
  return s;
}

/// A metadata value on one line: escaped, long values cut with their length.
std::string one_line(const std::string& value, size_t max_chars = 72) {
  const std::string s = escaped(value);
  if (s.size() <= max_chars) return s;
  size_t cut = max_chars - 3;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
  return s.substr(0, cut) + "... (" + std::to_string(value.size()) + " bytes)";
}

/// Reads every tensor of `r`, which checks its checksum (and a BOOL's bytes: Note [Strict
/// safetensors]): the names of those that fail, and the message of the first.
std::pair<std::vector<std::string>, std::string> failing_tensors(const io::SafetensorsReader& r) {
  std::vector<std::string> bad;
  std::string first;
  std::vector<uint8_t> bytes;
  for (const io::TensorInfo& t : r.tensors()) {
    bytes.resize(t.end - t.begin);
    try {
      r.read_bytes(t, bytes);
    } catch (const io::ChecksumError& e) {
      if (bad.empty()) first = e.what();
      bad.push_back(t.name);
    }
  }
  return {bad, first};
}

/// The line that says what the checksums found; a ChecksumError naming every tensor that failed.
void report_checksums(const io::SafetensorsReader& r, const std::vector<std::string>& bad, const std::string& first) {
  if (!r.has_checksums()) {
    fmt::print("checksums: none (the file was not written by tally, which adds them): nothing was verified\n");
    return;
  }
  if (bad.empty()) {
    fmt::print("checksums: all {} verify ({} tensor{} and the metadata, {})\n", r.tensors().size() + 1, r.tensors().size(),
               r.tensors().size() == 1 ? "" : "s", "xxh3-64");
    return;
  }
  std::string others;
  for (size_t i = 1; i < bad.size(); ++i) others += (i > 1 ? ", '" : "'") + escaped(bad[i]) + "'";
  throw io::ChecksumError(r.name(), bad[0], bad.size() == 1 ? first : detail::str_cat(first, "; ", bad.size() - 1, " more fail: ", others));
}

void run_inspect(const std::string& path) {
  const io::SafetensorsReader r = io::SafetensorsReader::open(path);  // the metadata's checksum is checked here
  const auto& tensors = r.tensors();
  const auto [bad, first] = failing_tensors(r);
  fmt::print("{}: safetensors, {} bytes (8-byte length, {}-byte header, {} bytes of tensor data)\n\n", path, r.file_bytes(),
             r.header_bytes(), r.file_bytes() - 8 - r.header_bytes());

  size_t name_w = 4, dtype_w = 5, shape_w = 5;
  std::set<std::string> unsupported;  // dtypes of the format that tally reads but does not compute with
  uint64_t total = 0, elements = 0;
  // Names are escaped as metadata is: a file may carry terminal escapes or newlines in them.
  for (const io::TensorInfo& t : tensors) {
    name_w = std::max(name_w, escaped(t.name).size());
    dtype_w = std::max(dtype_w, t.format_dtype.size());
    shape_w = std::max(shape_w, shape_str(t.shape).size());
  }
  if (!tensors.empty()) {
    fmt::print("{:<{}}  {:<{}}  {:<{}}  {:>12}\n", "name", name_w, "dtype", dtype_w, "shape", shape_w, "bytes");
    for (const io::TensorInfo& t : tensors) {
      fmt::print("{:<{}}  {:<{}}  {:<{}}  {:>12}\n", escaped(t.name), name_w, t.format_dtype, dtype_w, shape_str(t.shape),
                 shape_w, t.end - t.begin);
      total += t.end - t.begin;
      elements += static_cast<uint64_t>(std::accumulate(t.shape.begin(), t.shape.end(), int64_t{1}, std::multiplies<>()));
      if (!t.supported) unsupported.insert(t.format_dtype);
    }
    fmt::print("\n");
  }
  fmt::print("total: {} tensor{}, {} elements, {} bytes ({})\n", tensors.size(), tensors.size() == 1 ? "" : "s", elements, total,
             accounting::format_bytes(static_cast<int64_t>(total)));
  for (const std::string& d : unsupported)
    fmt::print("note: {} is a safetensors dtype tally does not compute with: its tensors are listed, and loading "
               "one raises a TypeError\n", d);

  const auto& metadata = r.metadata();
  if (metadata.empty()) {
    fmt::print("metadata: none\n");
  } else {
    size_t key_w = 0;
    for (const auto& [k, v] : metadata) key_w = std::max(key_w, std::min<size_t>(one_line(k, 32).size(), 32));
    fmt::print("metadata: {} key{}\n", metadata.size(), metadata.size() == 1 ? "" : "s");
    for (const auto& [k, v] : metadata) fmt::print("  {:<{}}  {}\n", one_line(k, 32), key_w, one_line(v));
  }
  report_checksums(r, bad, first);
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("inspect", "List the tensors (name, dtype, shape, bytes) and metadata of a safetensors file");
  auto path = std::make_shared<std::string>();
  cmd->add_option("file", *path, "a .safetensors file")->required();
  cmd->callback([path] { run_inspect(*path); });
}

}  // namespace tally::cli
