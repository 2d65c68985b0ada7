#include "tally/io/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tally/error/error.h"
#include "tally/io/retry.h"

namespace tally::io {

OpenedFile open_regular_file(const std::filesystem::path& path, std::string_view what) {
  const std::string p = path.string();
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever; the check
  // below then refuses it as not a regular file. (It changes nothing for a regular file.)
  const int fd = retry_on_eintr([&] { return ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK); });
  if (fd < 0) throw IOError(detail::str_cat("cannot open ", what, " '", p, "': ", std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw IOError(detail::str_cat("cannot stat ", what, " '", p, "': ", std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw IOError(detail::str_cat(what, " '", p, "' is not a regular file",
                                  S_ISDIR(st.st_mode) ? " (a directory)" : S_ISFIFO(st.st_mode) ? " (a FIFO)" : ""));
  }
  return {fd, static_cast<uint64_t>(st.st_size)};
}

std::shared_ptr<const ReadOnlyFile> ReadOnlyFile::open(const std::filesystem::path& path, std::string_view what) {
  const OpenedFile file = open_regular_file(path, what);
  return std::shared_ptr<const ReadOnlyFile>(new ReadOnlyFile(path.string(), std::string(what), file));
}

ReadOnlyFile::~ReadOnlyFile() { ::close(fd_); }

void ReadOnlyFile::read_at(uint64_t offset, std::span<std::byte> out) const {
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = retry_on_eintr([&] { return ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done)); });
    if (n < 0) throw IOError(detail::str_cat("cannot read ", what_, " '", path_, "' at byte ", offset + done, ": ", std::strerror(errno)));
    if (n == 0) {
      struct stat st {};
      const std::string now = ::fstat(fd_, &st) == 0 ? detail::str_cat("now holds ", st.st_size, " bytes") : "now ends sooner";
      throw IOError(detail::str_cat(what_, " '", path_, "' ", now, " where it held ", size_, " bytes when opened (byte ",
                                    offset + done, " was asked for): it was cut shorter while in use (replace a file in use "
                                    "by writing a new one and renaming it over the old, never in place)"));
    }
    done += static_cast<size_t>(n);
  }
}

}  // namespace tally::io
