#pragma once
// Token files: a long 1-d array of token ids on disk, read a window at a time and never whole
// (the lecture's np.memmap; LLaMA's data is 2.8 TB). Two layouts: the raw bytes that numpy's
// tofile writes, whose dtype the caller names, and a .npy file, whose header names it. Windows
// are read with pread rather than through a mapping, so a file cut shorter under a running job is
// an IOError naming it, not a SIGBUS; replace a file in use by renaming a new one over it.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "tally/io/regular_file.h"

namespace tally::data {

/// Element type of a token file (little-endian on disk). UInt8: a text file's bytes as tokens.
enum class TokenDtype : uint8_t { UInt16, Int32, UInt32, Int64, UInt8 };

/// Bytes per token.
int64_t element_size(TokenDtype dtype);
/// NumPy's name: "uint16", "int32", "uint32", "int64", "uint8".
std::string_view dtype_name(TokenDtype dtype);
/// The dtype with NumPy's name; ValueError lists the names for an unknown one.
TokenDtype token_dtype_from_name(std::string_view name);

/// A read-only token array in a file. Copies share the open file, closed with the last copy;
/// only the windows asked for are read from disk, and reads from several threads are safe.
class TokenFile {
 public:
  /// The raw array numpy's `array.tofile(path)` writes, with elements of `dtype`. IOError when
  /// the file cannot be opened; ValueError when it is empty, when its size is not a multiple of
  /// the dtype's, or when it starts like a .npy file (open it with open_npy).
  static TokenFile open_raw(const std::string& path, TokenDtype dtype);
  /// A .npy file (`np.save`): dtype and shape from its header (versions 1.0, 2.0, 3.0), any
  /// C-order shape read flat. IOError when it cannot be opened; ValueError for a bad header, a
  /// Fortran-order array of more than one dimension, no tokens, or a shape whose bytes differ
  /// from those after the header; TypeError for a dtype other than uint16/int32/uint32/int64.
  static TokenFile open_npy(const std::string& path);

  /// Number of tokens.
  int64_t size() const { return size_; }
  /// Element type on disk.
  TokenDtype dtype() const { return dtype_; }
  /// The file's path, as opened.
  const std::string& path() const { return path_; }
  /// Token `i` (IndexError outside [0, size())).
  int64_t at(int64_t i) const;
  /// Tokens start .. start + out.size() into out (IndexError when the window leaves the file;
  /// IOError when the file was cut shorter since it was opened).
  void gather(int64_t start, std::span<int64_t> out) const;
  /// Tokens [start, start + count) as a token file of their own (sharing the open file): a
  /// held-out part. IndexError when they leave this one.
  TokenFile slice(int64_t start, int64_t count) const;

 private:
  TokenFile(std::string path, std::shared_ptr<const io::ReadOnlyFile> file, int64_t offset_bytes, int64_t size, TokenDtype dtype);
  std::string path_;
  std::shared_ptr<const io::ReadOnlyFile> file_;
  int64_t offset_bytes_;  // the first token's byte (after a .npy header)
  int64_t size_;
  TokenDtype dtype_;
};

}  // namespace tally::data
