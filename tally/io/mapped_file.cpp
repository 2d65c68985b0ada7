#include "tally/io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tally/error/error.h"
#include "tally/io/retry.h"

namespace tally::io {

MappedFile map_readonly(const std::filesystem::path& path, std::string_view what) {
  const std::string p = path.string();
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever; the check
  // below then refuses it as not a regular file. (It changes nothing for a regular file.)
  const int fd = retry_on_eintr([&] { return ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK); });
  if (fd < 0) throw IOError(detail::str_cat("cannot open ", what, " '", p, "': ", std::strerror(errno)));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }  // the mapping stays valid
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw IOError(detail::str_cat("cannot stat ", what, " '", p, "': ", std::strerror(errno)));
  if (!S_ISREG(st.st_mode))
    throw IOError(detail::str_cat(what, " '", p, "' is not a regular file",
                                  S_ISDIR(st.st_mode) ? " (a directory)" : S_ISFIFO(st.st_mode) ? " (a FIFO)" : ""));
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size == 0) return {};
  void* data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (data == MAP_FAILED) throw IOError(detail::str_cat("cannot mmap ", what, " '", p, "' (", size, " bytes): ", std::strerror(errno)));
  return {std::shared_ptr<const uint8_t>(static_cast<const uint8_t*>(data), [size](const uint8_t* q) { ::munmap(const_cast<uint8_t*>(q), size); }),
          size};
}

}  // namespace tally::io
