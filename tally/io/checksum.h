#pragma once
// Checksums of safetensors files (Note [Checksums] in checksum.cpp): XXH3-64 of each tensor (its
// dtype, shape and bytes) and of the metadata, kept in the file's `__metadata__` under
// "tally.checksums". This file depends on nothing of tally's but the standard library, so that the
// fuzzer (tests/io/run_fuzz.sh) builds the reader with it.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tally::io {

/// The `__metadata__` key holding a file's checksums: a JSON object, name -> "xxh3-64:<16 hex digits>".
inline constexpr std::string_view kChecksumsKey = "tally.checksums";
/// The name, in the checksums object, of the metadata's own checksum.
inline constexpr std::string_view kMetadataChecksumName = "__metadata__";
/// Bytes hashed and then written (or read and then hashed) at a time: they are still in the cache
/// for the second step, so the data goes through memory once.
inline constexpr size_t kChecksumChunkBytes = size_t{1} << 20;

/// A streaming XXH3-64 hash (xxHash). Movable, not copyable.
class Checksum {
 public:
  /// An empty hash (seed 0).
  Checksum();
  ~Checksum();
  Checksum(Checksum&&) noexcept;
  Checksum& operator=(Checksum&&) noexcept;
  /// Add `bytes` to what has been hashed.
  void update(std::span<const uint8_t> bytes);
  /// Add the characters of `text`.
  void update(std::string_view text);
  /// The XXH3-64 of everything added so far (more may still be added).
  uint64_t digest() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// A tensor's checksum, started with its dtype's safetensors name and its shape ("F32[2,3]");
/// its bytes are added next.
Checksum tensor_checksum(std::string_view dtype_name, std::span<const int64_t> shape);
/// The checksum of the metadata entries other than kChecksumsKey: in key order, each key and
/// value as its length (8 bytes, little-endian) and its bytes.
uint64_t metadata_checksum(const std::map<std::string, std::string>& metadata);
/// "xxh3-64:" and the 16 lowercase hex digits of `digest` (as Python's xxhash hexdigest()).
std::string checksum_text(uint64_t digest);
/// The digest in `text`, or nothing when `text` is not of checksum_text's form.
std::optional<uint64_t> parse_checksum_text(std::string_view text);

/// Call `f(chunk)` on `bytes` in pieces of kChecksumChunkBytes, in order.
template <class Bytes, class F>
void for_each_chunk(std::span<Bytes> bytes, F&& f) {
  for (size_t at = 0; at < bytes.size(); at += kChecksumChunkBytes) f(bytes.subspan(at, std::min(kChecksumChunkBytes, bytes.size() - at)));
}

}  // namespace tally::io
