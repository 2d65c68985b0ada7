#pragma once
// The run directory as `tally train` writes it (docs/run_dir.md): the data it reads, the built-in
// corpus it writes, metrics.jsonl, and what a new run may not write over.

#include <exception>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include <optional>

#include "tally/data/token_file.h"
#include "tally/train/checkpoint.h"
#include "tally/train/config.h"

namespace tally::train {

/// A token file by its extension: .npy by its header, .txt as bytes (uint8), any other as raw
/// tokens of `dtype` ("auto": uint16), or of uint8 when a .txt file is named with "auto".
data::TokenFile open_token_file(const std::string& path, const std::string& dtype);
/// The config's token file (open_token_file of data and data_dtype).
data::TokenFile open_data_file(const TrainConfig& c);

/// The training and validation tokens: val_data, or the data's last val_fraction held out (none
/// when val_fraction is 0). ValueError when either part has too few tokens for one context.
struct DataSplit {
  data::TokenFile train;
  std::optional<data::TokenFile> validation;
  std::string validation_source;  ///< "FILE", or "the last 10% of FILE"
};
DataSplit split_data(const data::TokenFile& tokens, const TrainConfig& c);
/// The built-in corpus of `corpus_bytes` as the bytes of its file: little-endian uint16 tokens, one
/// per byte of text.
std::string builtin_corpus_file_bytes(int64_t corpus_bytes);
/// Whether the run directory's corpus.u16 already holds `corpus`, this config's built-in corpus.
/// A built-in corpus of another size (left by a run killed before its first step) is the run's own
/// to write over; anything else there is the user's, and a ValueError (Note [Refuse before writing] in trainer.cpp).
bool corpus_in_place(const std::filesystem::path& out, const std::string& corpus);
/// The built-in corpus in the run directory, written there unless corpus_in_place found it.
/// Under mpirun, rank 0 writes it and the other ranks open it.
data::TokenFile write_builtin_corpus(const std::filesystem::path& out, const std::string& corpus, bool in_place);
/// Where the run directory keeps the built-in corpus: corpus.u16.
inline std::filesystem::path builtin_corpus_path(const std::filesystem::path& out) { return out / "corpus.u16"; }
/// The run directory's built-in corpus, as written.
data::TokenFile open_builtin_corpus(const std::filesystem::path& out);
/// Checks every token is a class of the model and returns the tokens' unigram entropy (nats). The
/// error for one outside says what the file was read as and how to fix it.
double check_tokens(const data::TokenFile& file, int64_t vocab_size);

// Note [A failed start leaves nothing]
// A new run that fails before its first step is done (an out-of-memory error in that step, a
// disk that fills while the corpus is written) has no record worth keeping: a config.json, an
// empty metrics.jsonl and a corpus in a directory that never saw a step only make the next
// `tally train --out` there refuse. So every file and folder a new run creates is noted, and
// removed again if an error leaves train() before the first step's metrics line is written.
// A resumed run keeps everything: its files are the run's record.

/// The files a new run created, removed again unless kept (Note [A failed start leaves nothing]).
class CreatedFiles {
 public:
  CreatedFiles() : errors_before_(std::uncaught_exceptions()) {}
  ~CreatedFiles() {
    if (kept_ || std::uncaught_exceptions() == errors_before_) return;
    std::error_code ec;
    for (auto it = paths_.rbegin(); it != paths_.rend(); ++it) std::filesystem::remove(*it, ec);  // a folder only if it is empty
  }
  CreatedFiles(const CreatedFiles&) = delete;
  CreatedFiles& operator=(const CreatedFiles&) = delete;
  /// Note `path` if it does not exist yet: call before creating it.
  void will_create(const std::filesystem::path& path) {
    std::error_code ec;
    if (!kept_ && !std::filesystem::exists(std::filesystem::symlink_status(path, ec))) paths_.push_back(path);
  }
  /// The run has a record: keep everything from now on.
  void keep() { kept_ = true; }

 private:
  int errors_before_;
  bool kept_ = false;
  std::vector<std::filesystem::path> paths_;
};


/// A new run (no --resume) must not start over another one's record: its checkpoints, or the
/// metrics and summary of a run that saved none.
void refuse_existing_run(const std::filesystem::path& out, const CheckpointManager& checkpoints);

/// Keep the metrics lines of steps up to `step` (a resumed run rewrites those after it). A line
/// that does not parse (cut short by a kill, or damaged) is dropped alone, not every line after
/// it; returns the numbers of the lines dropped so.
std::vector<int64_t> truncate_metrics(const std::filesystem::path& path, int64_t step);

/// metrics.jsonl, open for appending whole lines (unbuffered: a line is on disk, or in the page
/// cache, when append returns).
class MetricsFile {
 public:
  MetricsFile(std::filesystem::path path, std::filesystem::path checkpoint_dir);
  MetricsFile(const MetricsFile&) = delete;
  MetricsFile& operator=(const MetricsFile&) = delete;
  ~MetricsFile();
  /// Append one step's line. A write that fails (a full disk, the file-size limit) stops the run:
  /// a record with steps missing, or half a line, is not written on. The part of the line that
  /// was written is cut off again, so that the file stays whole lines.
  void append(const std::string& line);

 private:
  std::filesystem::path path_, checkpoint_dir_;
  int fd_ = -1;
};

}  // namespace tally::train
