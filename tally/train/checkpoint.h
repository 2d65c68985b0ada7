#pragma once
// A run's checkpoints: one safetensors file per save in one folder, committed atomically (Note
// [Atomic save] in io/atomic_file.h), the newest `keep` kept. Loading takes the newest one that
// reads back and verifies against its checksums and, when a newer file does not, falls back to the
// one before and says so.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tally/core/ordered_dict.h"
#include "tally/core/tensor.h"

namespace tally::train {

/// The metadata key naming a training checkpoint's format, and the format tally writes: every
/// tensor and the metadata carry checksums.
inline constexpr const char* kFormatKey = "tally.format";
inline constexpr const char* kFormat = "tally-checkpoint-2";
/// The format of checkpoints written before they carried checksums: still resumed, unverified,
/// with a note. A file of the current format without checksums is damaged, and skipped.
inline constexpr const char* kFormatBeforeChecksums = "tally-checkpoint-1";

/// A loaded checkpoint.
struct Checkpoint {
  int64_t step = 0;
  std::filesystem::path path;
  StateDict tensors;
  std::map<std::string, std::string> metadata;
};

class CheckpointManager {
 public:
  /// Checkpoints in `dir` (created on the first save), keeping the newest `keep`.
  CheckpointManager(std::filesystem::path dir, int64_t keep);

  /// Commit `tensors` and `metadata` as step `step`'s checkpoint, then delete the oldest beyond
  /// `keep` among those at or below `step` (Note [Rotation counts what is behind the save]).
  /// IOError (the committed checkpoints untouched) when the write fails.
  std::filesystem::path save(int64_t step, const StateDict& tensors, const std::map<std::string, std::string>& metadata) const;

  /// The file the best checkpoint is kept in, beside the steps' (Note [The best checkpoint] in trainer.cpp).
  static constexpr const char* kBestFileName = "best.safetensors";
  /// Commit `tensors` and `metadata` as the best checkpoint, replacing the one before; never
  /// rotated, never what load_latest() resumes from. IOError (the one before kept) when it fails.
  std::filesystem::path save_best(const StateDict& tensors, const std::map<std::string, std::string>& metadata) const;

  /// The committed checkpoints, oldest first: (step, path).
  std::vector<std::pair<int64_t, std::filesystem::path>> list() const;

  /// The newest checkpoint that reads back whole and verifies (Note [Checksums] in
  /// io/checksum.cpp); each newer one that does not is skipped, never deleted, with a line in
  /// `notes` naming it and why (for a checksum, the tensor or the metadata that fails). Empty when there is none (or none readable: then `notes`
  /// has a line for every checkpoint). A checkpoint of kFormatBeforeChecksums loads unverified,
  /// with a note that says so.
  std::optional<Checkpoint> load_latest(std::vector<std::string>& notes) const;

  /// Delete the temporaries of saves that never committed (a process killed while writing):
  /// `.step-….safetensors.tmp.*` and `.best.safetensors.tmp.*` files (io::AtomicFile's names).
  /// Returns how many went.
  int64_t remove_stale_temporaries() const;

  /// The file name of step `step`'s checkpoint: "step-000000100.safetensors".
  static std::string file_name(int64_t step);

  const std::filesystem::path& dir() const { return dir_; }

 private:
  /// `name` in the folder (made if need be), committed atomically with checksums.
  std::filesystem::path write(const std::string& name, const StateDict& tensors, const std::map<std::string, std::string>& metadata) const;
  std::filesystem::path dir_;
  int64_t keep_;
};

}  // namespace tally::train
