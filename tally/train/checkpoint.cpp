#include "tally/train/checkpoint.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>

#include "tally/error/error.h"
#include "tally/io/checksum.h"
#include "tally/io/safetensors.h"

namespace tally::train {

namespace fs = std::filesystem;

// Note [Rotation counts what is behind the save]
// A save deletes the oldest checkpoints beyond `keep`, counting only those at or below the step it
// just wrote. A file of a later step can only be one that a resume fell back past (the newest
// readable checkpoint is where a run resumes, so anything newer did not read back whole): counted,
// it would crowd out the good checkpoint just written, and with keep 1 delete it. Not counted, the
// newest good checkpoint (the one just saved) is always kept; the stale file stays until the run
// reaches its step and replaces it, or someone removes it. Below the save, a file whose header
// does not read (cut short, emptied) is not counted either, nor deleted: counted, it would take
// the place of a good checkpoint, which rotation would then delete. Only checkpoints named as
// save() names them count ("step-3.safetensors", a copy, is not step 3's checkpoint).

namespace {

constexpr std::string_view kPrefix = "step-";
constexpr std::string_view kSuffix = ".safetensors";

/// The step a committed checkpoint's file name carries, or none for any other file (including
/// names save() does not make, such as "step-3.safetensors").
std::optional<int64_t> step_of(const std::string& name) {
  if (name.size() <= kPrefix.size() + kSuffix.size() || !name.starts_with(kPrefix) || !name.ends_with(kSuffix)) return std::nullopt;
  const char* first = name.data() + kPrefix.size();
  const char* last = name.data() + name.size() - kSuffix.size();
  int64_t step = 0;
  const auto [end, ec] = std::from_chars(first, last, step);
  if (ec != std::errc() || end != last || step < 0 || CheckpointManager::file_name(step) != name) return std::nullopt;
  return step;
}

/// Whether a checkpoint's header reads (the whole file is read only by a load).
bool header_reads(const fs::path& path) {
  try {
    io::SafetensorsReader::open(path);
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

CheckpointManager::CheckpointManager(fs::path dir, int64_t keep) : dir_(std::move(dir)), keep_(keep) {
  TALLY_CHECK(keep >= 1, "CheckpointManager: keep must be >= 1, got ", keep);
}

std::string CheckpointManager::file_name(int64_t step) { return fmt::format("{}{:09d}{}", kPrefix, step, kSuffix); }

fs::path CheckpointManager::save(int64_t step, const StateDict& tensors, const std::map<std::string, std::string>& metadata) const {
  TALLY_CHECK(step >= 0, "CheckpointManager::save: step must be non-negative, got ", step);
  const fs::path path = write(file_name(step), tensors, metadata);
  // Only once the new file is committed: the oldest beyond `keep` go. Files of later steps are
  // not counted (Note [Rotation counts what is behind the save]).
  auto committed = list();
  std::erase_if(committed, [&](const auto& c) { return c.first > step || (c.first < step && !header_reads(c.second)); });
  while (static_cast<int64_t>(committed.size()) > keep_) {
    std::error_code ec;
    fs::remove(committed.front().second, ec);  // a failed delete costs disk, never data
    committed.erase(committed.begin());
  }
  return path;
}

fs::path CheckpointManager::save_best(const StateDict& tensors, const std::map<std::string, std::string>& metadata) const {
  return write(kBestFileName, tensors, metadata);
}

fs::path CheckpointManager::write(const std::string& name, const StateDict& tensors, const std::map<std::string, std::string>& metadata) const {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  TALLY_CHECK_TYPE(IOError, !ec, "cannot create checkpoint folder ", dir_.string(), ": ", ec.message());
  const fs::path path = dir_ / name;
  io::save_safetensors(path, tensors, metadata);
  return path;
}

std::vector<std::pair<int64_t, fs::path>> CheckpointManager::list() const {
  std::vector<std::pair<int64_t, fs::path>> out;
  std::error_code ec;
  if (!fs::is_directory(dir_, ec)) return out;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    if (const auto step = step_of(entry.path().filename().string()); step && entry.is_regular_file(ec)) out.emplace_back(*step, entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

int64_t CheckpointManager::remove_stale_temporaries() const {
  int64_t removed = 0;
  std::error_code ec;
  if (!fs::is_directory(dir_, ec)) return 0;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    const size_t tmp = name.find(".tmp.");
    const bool ours = tmp != std::string::npos && (step_of(name.substr(1, tmp - 1)) || name.substr(1, tmp - 1) == kBestFileName);
    if (name.starts_with(".") && ours && fs::remove(entry.path(), ec)) ++removed;
  }
  return removed;
}

std::optional<Checkpoint> CheckpointManager::load_latest(std::vector<std::string>& notes) const {
  const auto committed = list();
  std::vector<std::string> unreadable;
  for (auto it = committed.rbegin(); it != committed.rend(); ++it) {
    const std::string path = it->second.string();
    try {
      const io::SafetensorsReader reader = io::SafetensorsReader::open(it->second);
      // save() writes checksums into every checkpoint of the current format: one without them was
      // damaged where the key is (a flipped bit in its name) or was not written by tally. One of
      // the format before checksums is an earlier tally's, resumed as it was then.
      const auto format = reader.metadata().find(kFormatKey);
      const bool before_checksums = format != reader.metadata().end() && format->second == kFormatBeforeChecksums;
      TALLY_CHECK_TYPE(io::SafetensorsError, reader.has_checksums() || before_checksums, "it carries no checksums ('",
                       io::kChecksumsKey, "' is not in its metadata), so it cannot be verified");
      Checkpoint c{it->first, it->second, reader.load_all(), reader.metadata()};
      for (const auto& u : unreadable) notes.push_back(u + ": falling back to the one before");
      if (!reader.has_checksums())
        notes.push_back("checkpoint " + path + " was written before tally's checkpoints carried checksums (" + kFormatBeforeChecksums +
                        "): it is resumed without verification; the checkpoints this run writes carry them");
      return c;
    } catch (const io::ChecksumError& e) {
      const std::string what = e.entry() == io::kMetadataChecksumName ? "its metadata" : "tensor '" + e.entry() + "'";
      unreadable.push_back("checkpoint " + path + " is corrupt: " + what + " does not match its checksum (the file is kept)");
    } catch (const Error& e) {
      unreadable.push_back("checkpoint " + path + " is unreadable (" + e.what() + ")");
    }
  }
  notes.insert(notes.end(), unreadable.begin(), unreadable.end());
  return std::nullopt;
}

}  // namespace tally::train
