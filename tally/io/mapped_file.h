#pragma once
// A whole regular file mapped read-only: how tally reads checkpoints (safetensors) without
// copying them into memory. The mapping outlives the descriptor. (Token files are read with
// pread instead: io/regular_file.h.)
//
// A mapping reads the file as it is on disk, so the file must not be rewritten in place while it
// is mapped: a file cut shorter (open for writing with truncation, as `open(path, 'wb')` does)
// makes the next read of a page past its new end kill the process with SIGBUS, and bytes written
// in place are read as they are. Replace a checkpoint that may be in use by writing
// a new file and renaming it over the old one (tally's own writers do, io/atomic_file.h): the
// mapping keeps the old file's bytes until it is released.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string_view>

namespace tally::io {

struct MappedFile {
  std::shared_ptr<const uint8_t> data;  // unmapped with the last reference; null for an empty file
  uint64_t size = 0;
};

/// `path` mapped read-only. IOError naming the file as `what` ("token file", "safetensors file")
/// and the reason when it cannot be opened, is not a regular file, or cannot be mapped.
MappedFile map_readonly(const std::filesystem::path& path, std::string_view what);

}  // namespace tally::io
