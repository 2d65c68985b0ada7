#pragma once
// Where tally keeps what it measured about this machine between runs: $XDG_CACHE_HOME/tally, or
// ~/.cache/tally, or the working directory when neither is set.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace tally::machine {

/// The cache folder (not created here).
std::filesystem::path cache_dir();

/// The whole of a small text file (a /proc or /sys entry, a stored measurement); nothing when it
/// cannot be opened.
std::optional<std::string> read_text_file(const std::filesystem::path& path);

/// Replace the stored measurement at `path` (in the cache folder, which is created) by
/// `contents`, atomically (io::write_file_atomic). Raises IOError on failure.
void write_cache_file(const std::filesystem::path& path, std::string_view contents);

/// Now in UTC, ISO 8601 ("2026-11-23T10:00:52Z"): when a stored measurement was taken.
std::string utc_timestamp();

}  // namespace tally::machine
