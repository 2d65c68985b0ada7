#pragma once
// Opening a regular file for reading, and reading it at offsets. Token files are read this way
// (pread), not mapped: a file cut shorter while a job reads it is then an IOError at the read
// that misses its bytes, where a mapping's read past the new end kills the process with SIGBUS.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace tally::io {

/// A descriptor of `path` opened read-only, and its size. IOError naming the file as `what`
/// ("token file", "safetensors file") and the reason when it cannot be opened or stat'ed or is not
/// a regular file (a directory, a FIFO: opened without waiting for a writer). The caller closes it.
struct OpenedFile {
  int fd;
  uint64_t size;
};
OpenedFile open_regular_file(const std::filesystem::path& path, std::string_view what);

/// A regular file open for positional reads (pread): copies of the shared_ptr share the
/// descriptor, which closes with the last; reads from several threads at once are safe.
class ReadOnlyFile {
 public:
  /// Opens `path` (open_regular_file's errors).
  static std::shared_ptr<const ReadOnlyFile> open(const std::filesystem::path& path, std::string_view what);
  ~ReadOnlyFile();
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;

  /// The size when it was opened.
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }
  /// Bytes [offset, offset + out.size()) into out. IOError when the read fails, or when the file
  /// now ends before them: it was cut shorter in place while open (the message says to replace a
  /// file in use by renaming a new one over it).
  void read_at(uint64_t offset, std::span<std::byte> out) const;

 private:
  ReadOnlyFile(std::string path, std::string what, OpenedFile file) : path_(std::move(path)), what_(std::move(what)), fd_(file.fd), size_(file.size) {}
  std::string path_, what_;
  int fd_;
  uint64_t size_;
};

}  // namespace tally::io
