#include "tally/machine/cache_dir.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>

#include "tally/error/error.h"

namespace tally::machine {

namespace fs = std::filesystem;

fs::path cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0') return fs::path(x) / "tally";
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') return fs::path(h) / ".cache" / "tally";
  return fs::current_path();
}

void write_file_atomically(const fs::path& path, const std::string& contents) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  // The pid keeps two processes writing the same file from sharing a temporary.
  const fs::path tmp = path.string() + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw IOError(detail::str_cat("cannot write ", tmp.string()));
    out << contents;
    if (!out.flush()) {
      fs::remove(tmp, ec);
      throw IOError(detail::str_cat("cannot write ", tmp.string()));
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw IOError(detail::str_cat("cannot replace ", path.string(), ": ", ec.message()));
  }
}

std::string utc_timestamp() {
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

}  // namespace tally::machine
