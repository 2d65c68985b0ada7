// The promised CPU peak uses the highest clock seen on the machine, kept in the cache folder.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tally/machine/cache_dir.h"
#include "tally/machine/cpu_info.h"
#include "tally/error/error.h"

namespace tally::machine {
namespace {

namespace fs = std::filesystem;

/// Points XDG_CACHE_HOME at a fresh folder for the test's lifetime.
class ScratchCache {
 public:
  ScratchCache() : dir_(fs::temp_directory_path() / ("tally-clock-test-" + std::to_string(::getpid()))) {
    fs::remove_all(dir_);
    const char* old = std::getenv("XDG_CACHE_HOME");
    had_old_ = old != nullptr;
    if (had_old_) old_ = old;
    ::setenv("XDG_CACHE_HOME", dir_.c_str(), 1);
  }
  ~ScratchCache() {
    if (had_old_) ::setenv("XDG_CACHE_HOME", old_.c_str(), 1);
    else ::unsetenv("XDG_CACHE_HOME");
    fs::remove_all(dir_);
  }
  fs::path file() const { return dir_ / "tally" / "clock.txt"; }

 private:
  fs::path dir_;
  bool had_old_ = false;
  std::string old_;
};

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(RememberedClock, KeepsTheHighestPerModel) {
  ScratchCache cache;
  EXPECT_DOUBLE_EQ(remembered_clock_ghz("cpu A", 2.4), 2.4);
  EXPECT_DOUBLE_EQ(remembered_clock_ghz("cpu A", 3.1), 3.1);
  EXPECT_DOUBLE_EQ(remembered_clock_ghz("cpu A", 2.4), 3.1);  // a slow moment does not lower the promise
  EXPECT_DOUBLE_EQ(remembered_clock_ghz("cpu B", 1.5), 1.5);  // another model has its own line
  EXPECT_DOUBLE_EQ(remembered_clock_ghz("cpu A", 3.0), 3.1);
  EXPECT_EQ(read(cache.file()), "cpu A\t3.1\ncpu B\t1.5\n");
}

TEST(RememberedClock, ADamagedFileIsRepairedNotTrusted) {
  ScratchCache cache;
  fs::create_directories(cache.file().parent_path());
  std::ofstream(cache.file()) << "cpu A\tnot-a-number\ngarbage line\ncpu B\t999\n";
  EXPECT_DOUBLE_EQ(remembered_clock_ghz("cpu A", 2.9), 2.9);
  EXPECT_DOUBLE_EQ(remembered_clock_ghz("cpu B", 3.3), 3.3);  // 999 GHz is no clock
  EXPECT_EQ(read(cache.file()), "garbage line\ncpu A\t2.9\ncpu B\t3.3\n");
}

TEST(RememberedClock, AtomicWriteLeavesNoTemporaryBehind) {
  ScratchCache cache;
  write_file_atomically(cache.file(), "x\n");
  write_file_atomically(cache.file(), "y\n");
  EXPECT_EQ(read(cache.file()), "y\n");
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(cache.file().parent_path())) ++entries;
  EXPECT_EQ(entries, 1);
}

TEST(RememberedClock, UnwritableTargetRaisesIOError) {
  ScratchCache cache;
  fs::create_directories(cache.file());  // a folder where the file should go: rename must fail
  EXPECT_THROW(write_file_atomically(cache.file(), "x\n"), tally::IOError);
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(cache.file().parent_path())) ++entries;
  EXPECT_EQ(entries, 1);  // the temporary was removed
}

}  // namespace
}  // namespace tally::machine
