#pragma once
// Writing a whole buffer to a descriptor, for tally's writers (io/atomic_file.h, the trainer's
// metrics.jsonl): write(2) may write less than asked, or be interrupted by a signal.

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>

#include "tally/io/retry.h"

namespace tally::io {

/// Write all of `bytes` to `fd`, at its end (write) or, given `offset`, there (pwrite), retrying
/// short writes and EINTR. Returns 0, or the errno of the write that failed (EIO for one that wrote
/// nothing); `written` counts the bytes that went out.
inline int write_all(int fd, std::span<const uint8_t> bytes, uint64_t& written, std::optional<uint64_t> offset = std::nullopt) {
  while (written < bytes.size()) {
    const ssize_t n = retry_on_eintr([&] {
      const uint8_t* from = bytes.data() + written;
      const size_t left = bytes.size() - written;
      return offset ? ::pwrite(fd, from, left, static_cast<off_t>(*offset + written)) : ::write(fd, from, left);
    });
    if (n < 0) return errno;
    if (n == 0) return EIO;
    written += static_cast<uint64_t>(n);
  }
  return 0;
}

/// strerror(error), with what usually causes EFBIG.
inline std::string write_error_text(int error) {
  return std::string(std::strerror(error)) + (error == EFBIG ? " (the file-size limit, ulimit -f, or the file system's largest file)" : "");
}

}  // namespace tally::io
