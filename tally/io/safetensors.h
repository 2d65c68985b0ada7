#pragma once
// safetensors files (the format of Hugging Face's `safetensors`): an 8-byte little-endian header
// length N, N bytes of JSON naming each tensor's dtype, shape and byte range, then the raw bytes.
// The reader is strict (Note [Strict safetensors]): a file it accepts has exactly one meaning, and
// every other file is a SafetensorsError that names the file and what is wrong with it. Files
// tally writes carry a checksum per tensor and one of the metadata, which the reader verifies
// (Note [Checksums] in checksum.cpp).

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tally/core/ordered_dict.h"
#include "tally/core/int_array_ref.h"
#include "tally/core/tensor.h"
#include "tally/dtype/dtype.h"
#include "tally/error/error.h"
#include "tally/io/regular_file.h"

namespace tally::io {

/// A malformed or unreadable safetensors file; the message names the file and the problem.
class SafetensorsError : public ValueError { using ValueError::ValueError; };

/// A file whose tensor or metadata does not match the checksum stored for it: the bytes changed
/// after they were written (bit rot, a faulty copy). The message names the file and the entry.
class ChecksumError : public SafetensorsError {
 public:
  /// `entry` is the tensor's name, or "__metadata__" for the metadata.
  ChecksumError(std::string file, std::string entry, const std::string& message)
      : SafetensorsError(message), file_(std::move(file)), entry_(std::move(entry)) {}
  /// The file's name, as the reader was given it.
  const std::string& file() const { return file_; }
  /// The tensor's name, or "__metadata__".
  const std::string& entry() const { return entry_; }

 private:
  std::string file_, entry_;
};

/// Where one tensor lies in a safetensors file.
struct TensorInfo {
  std::string name;
  /// The dtype as the file names it ("F32", "I16", ...): every dtype of the format is read.
  std::string format_dtype;
  /// Whether tally computes with that dtype; loading a tensor of one it does not raises TypeError.
  bool supported = true;
  /// tally's dtype (meaningful only when supported).
  Dtype dtype = kFloat32;
  DimVector shape;
  uint64_t begin = 0, end = 0;  // byte offsets in the data section (after the header)
  std::optional<uint64_t> checksum;  // XXH3-64 of its dtype, shape and bytes, when the file carries checksums
};

/// The safetensors name of a dtype: "F32", "BF16", "F8_E4M3", "BOOL", ...
std::string_view safetensors_dtype_name(Dtype dtype);

/// A parsed, validated safetensors file. An opened file's header is read at open and each
/// tensor's bytes when it is loaded, with pread: a file cut shorter in the meantime is an IOError
/// naming it, never a signal. Movable, not copyable.
class SafetensorsReader {
 public:
  /// Open and validate the file at `path`. IOError when it cannot be opened or read,
  /// SafetensorsError when it is not a valid safetensors file.
  static SafetensorsReader open(const std::filesystem::path& path);
  /// Validate `bytes` as a safetensors file called `name` in messages. The bytes are copied, so
  /// the reader does not depend on them staying alive.
  static SafetensorsReader from_bytes(std::span<const uint8_t> bytes, std::string name = "<memory>");

  SafetensorsReader(SafetensorsReader&&) noexcept = default;
  SafetensorsReader& operator=(SafetensorsReader&&) noexcept = default;
  SafetensorsReader(const SafetensorsReader&) = delete;
  SafetensorsReader& operator=(const SafetensorsReader&) = delete;

  /// The file's name, as given to open or from_bytes.
  const std::string& name() const { return name_; }
  /// Every tensor, in data-offset order.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  /// The header's `__metadata__` (empty when it has none), less the checksums' entry.
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  /// Whether the file carries checksums (every file tally writes does); when it does, the metadata
  /// was verified when it was opened and each tensor is when it is read.
  bool has_checksums() const { return has_checksums_; }
  /// Whether a tensor of this name is in the file.
  bool contains(std::string_view name) const;
  /// The tensor called `name`; a ValueError naming it and listing a few others when it is absent.
  const TensorInfo& info(std::string_view name) const;
  /// Size of the JSON header in bytes (padding included).
  uint64_t header_bytes() const { return header_bytes_; }
  /// Size of the whole file in bytes.
  uint64_t file_bytes() const { return size_; }
  /// Copy the bytes of `t` (one of tensors()) into `out`, which must hold exactly t.end - t.begin
  /// bytes, checking them against its checksum as they are read unless `verify` is false.
  /// ChecksumError naming the file and the tensor when they do not match; SafetensorsError for a
  /// BOOL tensor with a byte other than 0 or 1.
  void read_bytes(const TensorInfo& t, std::span<uint8_t> out, bool verify = true) const;
  /// The tensor called `name`, copied into a new contiguous CPU tensor (verified as read_bytes does).
  /// TypeError for a dtype of the format that tally does not compute with (I16, U32, ...).
  Tensor load(std::string_view name, bool verify = true) const;
  /// Every tensor, in file order, each copied as load() does.
  StateDict load_all(bool verify = true) const;

 private:
  /// TypeError naming the file, the tensor and its dtype unless tally computes with that dtype.
  void check_supported(const TensorInfo& t) const;
  SafetensorsReader() = default;
  void parse();
  void parse_checksums();
  /// ChecksumError unless `computed` is `t`'s stored checksum (or it has none).
  void check_checksum(const TensorInfo& t, uint64_t computed) const;

  std::string name_;
  std::shared_ptr<const uint8_t> bytes_;  // an opened file's length and header, or from_bytes' whole copy
  std::shared_ptr<const ReadOnlyFile> file_;  // the opened file, read with pread (null for from_bytes)
  uint64_t size_ = 0;
  uint64_t header_bytes_ = 0;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> index_;  // name -> position in tensors_
  std::map<std::string, std::string> metadata_;
  bool has_checksums_ = false;
};

/// The header JSON (with its length prefix and padding) for `tensors` written in order, each
/// contiguous; `metadata` becomes `__metadata__`. ValueError for a tensor that cannot be written.
std::vector<uint8_t> safetensors_header(const StateDict& tensors, const std::map<std::string, std::string>& metadata = {});
/// Serialise tensors (any strides: written contiguous, little-endian, in the dict's order) and
/// metadata to the bytes of a safetensors file, with checksums in the metadata unless `checksums`
/// is false (Note [Checksums]).
std::vector<uint8_t> serialize_safetensors(const StateDict& tensors, const std::map<std::string, std::string>& metadata = {},
                                           bool checksums = true);
/// Write a safetensors file atomically (AtomicFile), streaming each tensor's bytes from its storage
/// and hashing them on the way unless `checksums` is false: no second copy of the whole model is
/// made, and no second pass over it. Meta-device and CUDA tensors are a ValueError.
void save_safetensors(const std::filesystem::path& path, const StateDict& tensors,
                      const std::map<std::string, std::string>& metadata = {}, bool checksums = true);

}  // namespace tally::io
