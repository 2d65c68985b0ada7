#pragma once
// Where tally keeps what it measured about this machine between runs: $XDG_CACHE_HOME/tally, or
// ~/.cache/tally, or the working directory when neither is set.

#include <filesystem>
#include <optional>
#include <string>

namespace tally::machine {

/// The cache folder (not created here).
std::filesystem::path cache_dir();

/// The whole of a small text file (a /proc or /sys entry, a stored measurement); nothing when it
/// cannot be opened.
std::optional<std::string> read_text_file(const std::filesystem::path& path);

/// Replace `path` by `contents` atomically: written to a temporary file beside it, then renamed,
/// so a reader or a crash never sees half a file. Creates the folder. Raises IOError on failure.
void write_file_atomically(const std::filesystem::path& path, const std::string& contents);

/// Now in UTC, ISO 8601 ("2026-11-23T10:00:52Z"): when a stored measurement was taken.
std::string utc_timestamp();

}  // namespace tally::machine
