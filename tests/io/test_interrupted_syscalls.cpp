// A signal during a system call (SIGINT asking `tally train` to stop after its step) must not turn
// a save or a load into an IOError: on FUSE and network file systems even open, fsync and rename
// can fail with EINTR. test_io is linked with `--wrap` for those three (tests/CMakeLists.txt), so
// that the calls tally's I/O makes go through the wrappers below, which fail the next N calls with
// EINTR and then pass through.

#include <fcntl.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>

#include "tally/io/atomic_file.h"
#include "tally/tally.h"
#include "tests/io/io_test_util.h"

// Where libtally is a shared library, its calls go from libtally.so to libc directly: --wrap
// rewrites only the references linked into test_io itself (tests/CMakeLists.txt then leaves it out).
#ifdef TALLY_TEST_NO_SYSCALL_WRAPS
#define TALLY_REQUIRE_SYSCALL_WRAPS() \
  GTEST_SKIP() << "libtally is a shared library in this build: the linker's --wrap cannot reach the calls libtally.so makes"
#else
#define TALLY_REQUIRE_SYSCALL_WRAPS() static_cast<void>(0)
#endif

namespace {
std::atomic<int> g_interrupt_open{0}, g_interrupt_fsync{0}, g_interrupt_rename{0};

/// True (and one fewer to come) while `pending` calls are still to fail.
bool interrupt(std::atomic<int>& pending) {
  for (int n = pending.load(); n > 0;)
    if (pending.compare_exchange_weak(n, n - 1)) return true;
  return false;
}
}  // namespace

#ifndef TALLY_TEST_NO_SYSCALL_WRAPS
extern "C" {
int __real_open(const char* path, int flags, ...);
int __real_fsync(int fd);
int __real_rename(const char* from, const char* to);

int __wrap_open(const char* path, int flags, ...) {
  mode_t mode = 0;
  if ((flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE) {
    va_list args;
    va_start(args, flags);
    mode = static_cast<mode_t>(va_arg(args, unsigned));
    va_end(args);
  }
  if (interrupt(g_interrupt_open)) {
    errno = EINTR;
    return -1;
  }
  return __real_open(path, flags, mode);
}

int __wrap_fsync(int fd) {
  if (interrupt(g_interrupt_fsync)) {
    errno = EINTR;
    return -1;
  }
  return __real_fsync(fd);
}

int __wrap_rename(const char* from, const char* to) {
  if (interrupt(g_interrupt_rename)) {
    errno = EINTR;
    return -1;
  }
  return __real_rename(from, to);
}
}
#endif

namespace tally::io::test {
namespace {

TEST(InterruptedSyscalls, AtomicWriteRetriesEveryInterruptedCall) {
  TALLY_REQUIRE_SYSCALL_WRAPS();
  TempDir dir;
  const fs::path path = dir.file("ckpt.bin");
  const std::vector<uint8_t> bytes(5000, 42);
  // Two interruptions of each: the temporary's open and the folder's, the file's fsync and the
  // folder's, and the rename twice over.
  g_interrupt_open = 2;
  g_interrupt_fsync = 2;
  g_interrupt_rename = 2;
  write_file_atomic(path, bytes);
  EXPECT_EQ(g_interrupt_open.load(), 0) << "the wrappers did not see tally's open calls";
  EXPECT_EQ(g_interrupt_fsync.load(), 0);
  EXPECT_EQ(g_interrupt_rename.load(), 0);
  EXPECT_EQ(read_file(path), bytes);
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"ckpt.bin"}) << "a temporary file was left behind";
}

TEST(InterruptedSyscalls, SafetensorsSaveAndLoadRetry) {
  TALLY_REQUIRE_SYSCALL_WRAPS();
  TempDir dir;
  const fs::path path = dir.file("model.safetensors");
  StateDict state("tensor");
  state.insert("w", arange(12, kFloat32).view({3, 4}));
  g_interrupt_fsync = 1;
  g_interrupt_rename = 1;
  save_safetensors(path, state, {{"step", "7"}});
  g_interrupt_open = 3;
  const SafetensorsReader reader = SafetensorsReader::open(path);
  EXPECT_EQ(g_interrupt_open.load(), 0);
  EXPECT_EQ(g_interrupt_fsync.load(), 0);
  EXPECT_EQ(g_interrupt_rename.load(), 0);
  EXPECT_TRUE(equal(reader.load("w"), arange(12, kFloat32).view({3, 4})));
  EXPECT_EQ(reader.metadata().at("step"), "7");
}

TEST(InterruptedSyscalls, OtherErrorsAreStillReported) {
  TALLY_REQUIRE_SYSCALL_WRAPS();
  TempDir dir;
  g_interrupt_open = 1;  // interrupted, then a real ENOENT: the retry must not hide it
  expect_error<IOError>([&] { SafetensorsReader::open(dir.file("missing.safetensors")); }, {"missing.safetensors", std::strerror(ENOENT)});
  EXPECT_EQ(g_interrupt_open.load(), 0);
}

}  // namespace
}  // namespace tally::io::test
