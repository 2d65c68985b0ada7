#pragma once
// Writing a file so that a crash, a full disk or a file-size limit never leaves a partial one
// (Note [Atomic writes] in atomic_file.cpp): the bytes go to a temporary file in the same folder,
// which is fsync'd and renamed over the target, and then the folder is fsync'd. A target that
// exists keeps its permission bits. A symbolic link as the target is replaced by the new file
// (the file it pointed to is left as it was), as every rename-based writer does.

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace tally::io {

/// A file being written atomically: write() the bytes, then commit(). Until commit() returns, the
/// target is untouched; destroying the object before that removes the temporary. Movable only.
class AtomicFile {
 public:
  /// Start writing `path`: creates a temporary file beside it. IOError when that fails.
  explicit AtomicFile(std::filesystem::path path);
  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&&) = delete;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  /// Removes the temporary file unless commit() succeeded.
  ~AtomicFile();

  /// Append `bytes`. On failure (disk full, EFBIG, ...) the temporary is removed and an IOError
  /// names the target and the OS error.
  void write(std::span<const uint8_t> bytes);
  /// Write `bytes` over those already written at `offset` (pwrite), which must end within them:
  /// a header patched once the data behind it is out. Fails as write() does.
  void write_at(uint64_t offset, std::span<const uint8_t> bytes);
  /// fsync the file, rename it over the target, fsync the folder. IOError (temporary removed,
  /// target untouched) when any step before the rename fails.
  void commit();
  /// Bytes written so far.
  uint64_t size_bytes() const { return written_bytes_; }
  /// The target's path.
  const std::filesystem::path& path() const { return path_; }
  /// The temporary file's path (empty once committed or abandoned).
  const std::filesystem::path& temp_path() const { return temp_path_; }

 private:
  [[noreturn]] void fail(const std::string& what, int error);
  void abandon() noexcept;

  std::filesystem::path path_;
  std::filesystem::path temp_path_;
  int fd_ = -1;
  uint64_t written_bytes_ = 0;
};

/// Write `bytes` to `path` atomically (AtomicFile): afterwards `path` holds exactly these bytes,
/// or, on an IOError naming the path and the OS error, it is as it was before and no temporary
/// file is left.
void write_file_atomic(const std::filesystem::path& path, std::span<const uint8_t> bytes);
/// The same for text (a JSON file, a page): its bytes as they are.
inline void write_file_atomic(const std::filesystem::path& path, std::string_view text) {
  write_file_atomic(path, std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

}  // namespace tally::io
