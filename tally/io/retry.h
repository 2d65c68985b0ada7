#pragma once

#include <cerrno>

namespace tally::io {

/// Calls `call` again for as long as it fails with EINTR, and returns what it returned last. A
/// signal that arrives during a system call — SIGINT asking `tally train` to stop after its step —
/// must not become an I/O error; on FUSE and network file systems even open, fsync and rename
/// can be interrupted. (close is the exception: on Linux it has released the descriptor even when
/// it reports EINTR, so it is never retried.)
template <class Call>
auto retry_on_eintr(Call call) {
  for (;;) {
    const auto result = call();
    if (result != -1 || errno != EINTR) return result;
  }
}

}  // namespace tally::io
