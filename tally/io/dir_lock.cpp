#include "tally/io/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tally/error/error.h"
#include "tally/io/retry.h"

namespace tally::io {

DirLock::DirLock(const std::filesystem::path& dir, const std::string& what) {
  fd_ = retry_on_eintr([&] { return ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); });
  if (fd_ < 0) throw IOError("cannot open directory " + dir.string() + " to lock it: " + std::strerror(errno));
  if (retry_on_eintr([&] { return ::flock(fd_, LOCK_EX | LOCK_NB); }) == 0) return;
  const int error = errno;
  ::close(fd_);
  fd_ = -1;
  if (error == EWOULDBLOCK)
    throw IOError(dir.string() + " is in use: another process (" + what + " of the same directory) holds its lock; " +
                  "wait for it to end, or choose another directory");
  throw IOError("cannot lock directory " + dir.string() + ": " + std::strerror(error));
}

DirLock::~DirLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

}  // namespace tally::io
