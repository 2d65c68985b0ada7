#pragma once
// An exclusive lock on a directory, held for as long as a process writes into it: two `tally
// train` on one run directory would otherwise interleave their metrics, rotate each other's
// checkpoints and leave a record that is half of each. The lock is an advisory flock on the
// directory itself (no lock file to leave behind), so it is released however the holder ends,
// kill -9 included.

#include <filesystem>
#include <string>

namespace tally::io {

class DirLock {
 public:
  /// Lock `dir` (which must exist) or raise IOError at once, without waiting, when another open
  /// description of it holds the lock; `what` names the user ("tally train") in that message.
  DirLock(const std::filesystem::path& dir, const std::string& what);
  DirLock(DirLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  DirLock& operator=(DirLock&&) = delete;
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;
  ~DirLock();

 private:
  int fd_ = -1;
};

}  // namespace tally::io
