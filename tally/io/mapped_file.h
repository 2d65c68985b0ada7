#pragma once
// A whole regular file mapped read-only: how tally reads checkpoints (safetensors) and token
// files without copying them into memory. The mapping outlives the descriptor.

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
