#include "tally/io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "tally/error/error.h"
#include "tally/io/retry.h"
#include "tally/io/write_all.h"

namespace tally::io {

// Note [Atomic writes]
// A checkpoint overwritten in place is lost if the process dies half way (or the disk fills), and
// then so is the run. So a file is written beside its target under a temporary name, fsync'd (its
// bytes are on the disk), renamed over the target (rename is atomic within one file system: a
// reader sees the old file or the new one, never a mix), and then the folder is fsync'd (the
// rename itself is on the disk). Any failure before the rename removes the temporary and leaves
// the target as it was. A failure of the folder's fsync comes after the rename: the new file is
// in place, but its name may not survive a power cut, so that is an error too.

namespace {

std::filesystem::path parent_or_dot(const std::filesystem::path& path) {
  std::filesystem::path dir = path.parent_path();
  return dir.empty() ? std::filesystem::path(".") : dir;
}

/// `.NAME.tmp.PID.RANDOM` beside the target: hidden, unique per writer, and easy to recognise.
std::filesystem::path temp_name(const std::filesystem::path& path) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char suffix[64];
  std::snprintf(suffix, sizeof(suffix), ".tmp.%ld.%016llx", static_cast<long>(::getpid()),
                static_cast<unsigned long long>(rng()));
  std::string name = ".";  // built by appending: GCC 12 warns (-Wrestrict, wrongly) on "." + string
  name += path.filename().string();
  name += suffix;
  return parent_or_dot(path) / name;
}

}  // namespace

AtomicFile::AtomicFile(std::filesystem::path path) : path_(std::move(path)) {
  if (path_.filename().empty())
    throw IOError(detail::str_cat("cannot write '", path_.string(), "': the path names a folder, not a file"));
  for (int attempt = 0; attempt < 16 && fd_ < 0; ++attempt) {
    temp_path_ = temp_name(path_);
    fd_ = retry_on_eintr([&] { return ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644); });
    if (fd_ < 0 && errno != EEXIST) break;
  }
  if (fd_ < 0) {
    const int error = errno;
    temp_path_.clear();
    throw IOError(detail::str_cat("cannot write '", path_.string(), "': cannot create a temporary file in '",
                                  parent_or_dot(path_).string(), "': ", std::strerror(error)));
  }
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : path_(std::move(other.path_)), temp_path_(std::move(other.temp_path_)), fd_(other.fd_),
      written_bytes_(other.written_bytes_) {
  other.fd_ = -1;
  other.temp_path_.clear();
}

AtomicFile::~AtomicFile() { abandon(); }

void AtomicFile::abandon() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_path_.empty()) ::unlink(temp_path_.c_str());
  temp_path_.clear();
}

void AtomicFile::fail(const std::string& what, int error) {
  abandon();
  throw IOError(detail::str_cat("cannot write '", path_.string(), "': ", what, ": ", write_error_text(error)));
}

void AtomicFile::write(std::span<const uint8_t> bytes) {
  if (fd_ < 0) throw IOError(detail::str_cat("cannot write '", path_.string(), "': the file was already committed or abandoned"));
  uint64_t written = 0;
  const int error = write_all(fd_, bytes, written);
  written_bytes_ += written;
  if (error != 0) fail(detail::str_cat("write failed after ", written_bytes_, " bytes"), error);
}

void AtomicFile::write_at(uint64_t offset, std::span<const uint8_t> bytes) {
  if (fd_ < 0) throw IOError(detail::str_cat("cannot write '", path_.string(), "': the file was already committed or abandoned"));
  TALLY_CHECK(offset <= written_bytes_ && bytes.size() <= written_bytes_ - offset, "AtomicFile::write_at: bytes [", offset, ", ",
              offset + bytes.size(), ") do not lie within the ", written_bytes_, " written");
  uint64_t written = 0;
  const int error = write_all(fd_, bytes, written, offset);
  if (error != 0) fail(detail::str_cat("rewrite of bytes [", offset, ", ", offset + bytes.size(), ") failed after ", written, " bytes"), error);
}

void AtomicFile::commit() {
  if (fd_ < 0) throw IOError(detail::str_cat("cannot write '", path_.string(), "': the file was already committed or abandoned"));
  // A file written over keeps its permission bits: a private (0600) checkpoint must not come back
  // readable by everyone. A new file has 0644 less the umask.
  struct stat old {};
  if (::stat(path_.c_str(), &old) == 0 && S_ISREG(old.st_mode) && ::fchmod(fd_, old.st_mode & 07777) != 0)
    fail("fchmod failed", errno);
  if (retry_on_eintr([&] { return ::fsync(fd_); }) != 0) fail("fsync failed", errno);
  const int fd = fd_;
  fd_ = -1;
  // close() can report a deferred write error (NFS, some FUSE file systems); EINTR is not one.
  if (::close(fd) != 0 && errno != EINTR) fail("close failed", errno);
  if (retry_on_eintr([&] { return ::rename(temp_path_.c_str(), path_.c_str()); }) != 0) fail("rename of the temporary file failed", errno);
  temp_path_.clear();
  const std::filesystem::path dir = parent_or_dot(path_);
  const int dir_fd = retry_on_eintr([&] { return ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); });
  if (dir_fd < 0) fail(detail::str_cat("written, but cannot open its folder '", dir.string(), "' to fsync it"), errno);
  const int rc = retry_on_eintr([&] { return ::fsync(dir_fd); }), error = errno;
  ::close(dir_fd);
  // Some file systems do not fsync folders (EINVAL): the rename is as durable as they make it.
  if (rc != 0 && error != EINVAL) fail(detail::str_cat("written, but fsync of its folder '", dir.string(), "' failed"), error);
}

void write_file_atomic(const std::filesystem::path& path, std::span<const uint8_t> bytes) {
  AtomicFile file(path);
  file.write(bytes);
  file.commit();
}

}  // namespace tally::io
