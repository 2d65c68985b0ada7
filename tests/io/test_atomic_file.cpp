// Atomic writes (Note [Atomic writes] in tally/io/atomic_file.cpp): a failed write leaves the
// previous file byte-identical and no temporary behind. The disk-full case is played by a
// file-size limit (RLIMIT_FSIZE) in a forked child, where write() then fails with EFBIG.

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "tally/io/atomic_file.h"
#include "tally/tally.h"
#include "tests/io/io_test_util.h"

namespace tally::io::test {
namespace {

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

/// Runs `fn` in a child process whose files may not grow past `limit_bytes` (SIGXFSZ ignored, so
/// write() fails with EFBIG instead of killing it). Returns the IOError message the child caught,
/// or a line saying what else happened.
template <class Fn>
std::string in_child_with_file_size_limit(rlim_t limit_bytes, Fn fn) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe_fds[0]);
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{limit_bytes, limit_bytes};
    std::string report;
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) {
      report = "setrlimit failed";
    } else {
      try {
        fn();
        report = "no error";
      } catch (const IOError& e) {
        report = e.what();
      } catch (const std::exception& e) {
        report = std::string("wrong error type: ") + e.what();
      }
    }
    [[maybe_unused]] const ssize_t n = ::write(pipe_fds[1], report.data(), report.size());
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  std::string report;
  char buf[512];
  for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof(buf))) > 0;) report.append(buf, static_cast<size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) report += " (the child did not exit cleanly)";
  return report;
}

TEST(AtomicFile, WritesAndReplaces) {
  TempDir dir;
  const fs::path path = dir.file("f.bin");
  write_file_atomic(path, pattern(1000, 1));
  EXPECT_EQ(read_file(path), pattern(1000, 1));
  write_file_atomic(path, pattern(10, 2));
  EXPECT_EQ(read_file(path), pattern(10, 2));
  write_file_atomic(path, std::span<const uint8_t>{});
  EXPECT_TRUE(read_file(path).empty());
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"f.bin"});
}

TEST(AtomicFile, FileSizeLimitLeavesThePreviousFileAndNoTemporary) {
  TempDir dir;
  const fs::path path = dir.file("ckpt.bin");
  const std::vector<uint8_t> previous = pattern(3000, 3);
  write_file_atomic(path, previous);

  const std::string report = in_child_with_file_size_limit(4096, [&] { write_file_atomic(path, pattern(64 * 1024, 4)); });
  EXPECT_NE(report.find("cannot write '" + path.string() + "'"), std::string::npos) << report;
  EXPECT_NE(report.find(std::strerror(EFBIG)), std::string::npos) << report;
  EXPECT_NE(report.find("after 4096 bytes"), std::string::npos) << report;  // the partial write, then EFBIG
  EXPECT_EQ(read_file(path), previous);
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"ckpt.bin"}) << "a temporary file was left behind";
}

TEST(AtomicFile, SaveSafetensorsUnderTheLimitKeepsThePreviousCheckpoint) {
  TempDir dir;
  const fs::path path = dir.file("model.safetensors");
  StateDict small("tensor");
  small.insert("w", arange(10, kFloat32));
  save_safetensors(path, small);
  const std::vector<uint8_t> previous = read_file(path);

  StateDict big("tensor");
  big.insert("a", zeros({1000}, kFloat32));
  big.insert("b", ones({100, 100}, kFloat64).t());  // streamed after a, past the limit
  const std::string report = in_child_with_file_size_limit(8192, [&] { save_safetensors(path, big, {{"step", "2"}}); });
  EXPECT_NE(report.find("model.safetensors"), std::string::npos) << report;
  EXPECT_NE(report.find(std::strerror(EFBIG)), std::string::npos) << report;
  EXPECT_EQ(read_file(path), previous);
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"model.safetensors"});
  EXPECT_TRUE(equal(SafetensorsReader::open(path).load("w"), arange(10, kFloat32)));
}

TEST(AtomicFile, AbandonedWriteLeavesNothing) {
  TempDir dir;
  const fs::path path = dir.file("x.bin");
  {
    AtomicFile f(path);
    f.write(pattern(100, 5));
    EXPECT_TRUE(fs::exists(f.temp_path()));
    EXPECT_EQ(f.temp_path().parent_path(), path.parent_path());
    EXPECT_EQ(f.size_bytes(), 100u);
  }
  EXPECT_TRUE(dir.listing().empty());
  AtomicFile f(path);
  f.write(pattern(3, 6));
  f.commit();
  EXPECT_EQ(read_file(path), pattern(3, 6));
  expect_error<IOError>([&] { f.write(pattern(1, 1)); }, {"already committed"});
}

TEST(AtomicFile, UnwritableFolderNamesThePath) {
  TempDir dir;
  const fs::path path = dir.file("no/such/folder/x.bin");
  expect_error<IOError>([&] { write_file_atomic(path, pattern(10, 1)); },
                        {"cannot write '" + path.string() + "'", "temporary file", std::strerror(ENOENT)});
  expect_error<IOError>([&] { write_file_atomic(dir.path() / "", pattern(10, 1)); }, {"names a folder"});
  if (::geteuid() != 0) {  // root writes anywhere
    fs::create_directory(dir.file("ro"));
    fs::permissions(dir.file("ro"), fs::perms::owner_read | fs::perms::owner_exec);
    expect_error<IOError>([&] { write_file_atomic(dir.file("ro/x.bin"), pattern(10, 1)); }, {std::strerror(EACCES)});
    fs::permissions(dir.file("ro"), fs::perms::owner_all);
  }
}

TEST(AtomicFile, AFileWrittenOverKeepsItsPermissions) {
  // A private checkpoint (0600) written over came back 0644, readable by everyone.
  TempDir dir;
  const fs::path path = dir.file("private.bin");
  write_file_atomic(path, pattern(10, 1));
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
  write_file_atomic(path, pattern(20, 2));
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(read_file(path), pattern(20, 2));
}

TEST(ReadOnlyFile, AFifoIsRefusedWithoutWaitingForAWriter) {
  // Opening a FIFO for reading waited for a writer forever (tally inspect hung on one).
  TempDir dir;
  const fs::path path = dir.file("pipe.safetensors");
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0) << std::strerror(errno);
  expect_error<IOError>([&] { SafetensorsReader::open(path); }, {"is not a regular file (a FIFO)"});
}

}  // namespace
}  // namespace tally::io::test
