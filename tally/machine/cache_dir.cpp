#include "tally/machine/cache_dir.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>

#include "tally/error/error.h"
#include "tally/io/atomic_file.h"

namespace tally::machine {

namespace fs = std::filesystem;

fs::path cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0') return fs::path(x) / "tally";
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') return fs::path(h) / ".cache" / "tally";
  return fs::current_path();
}

std::optional<std::string> read_text_file(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_cache_file(const fs::path& path, std::string_view contents) {
  std::error_code ec;  // a folder that cannot be made shows as the write's own error, which names the path
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  io::write_file_atomic(path, contents);
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
