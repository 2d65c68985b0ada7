#include "tally/io/mapped_file.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tally/error/error.h"
#include "tally/io/regular_file.h"

namespace tally::io {

MappedFile map_readonly(const std::filesystem::path& path, std::string_view what) {
  const OpenedFile opened = open_regular_file(path, what);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }  // the mapping stays valid
  } closer{opened.fd};
  const uint64_t size = opened.size;
  if (size == 0) return {};
  void* data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, opened.fd, 0);
  if (data == MAP_FAILED) throw IOError(detail::str_cat("cannot mmap ", what, " '", path.string(), "' (", size, " bytes): ", std::strerror(errno)));
  return {std::shared_ptr<const uint8_t>(static_cast<const uint8_t*>(data), [size](const uint8_t* q) { ::munmap(const_cast<uint8_t*>(q), size); }),
          size};
}

}  // namespace tally::io
