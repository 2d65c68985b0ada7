#include "tally/train/run_dir.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tally/error/error.h"
#include "tally/io/retry.h"
#include "tally/io/write_all.h"
#include "tally/io/atomic_file.h"
#include "tally/machine/cache_dir.h"
#include "tally/train/corpus.h"

namespace tally::train {

namespace fs = std::filesystem;
using nlohmann::json;

data::TokenFile open_token_file(const std::string& path, const std::string& dtype) {
  TALLY_CHECK_TYPE(IOError, fs::exists(path), "data file ", path, " does not exist");
  if (path.ends_with(".npy")) return data::TokenFile::open_npy(path);
  const std::string chosen = dtype != "auto" ? dtype : path.ends_with(".txt") ? "uint8" : "uint16";
  return data::TokenFile::open_raw(path, data::token_dtype_from_name(chosen));
}

data::TokenFile open_data_file(const TrainConfig& c) { return open_token_file(c.data, c.data_dtype); }

DataSplit split_data(const data::TokenFile& tokens, const TrainConfig& c) {
  auto enough = [&](const data::TokenFile& f, const std::string& what) {
    TALLY_CHECK(f.size() > c.context_length, what, " has ", f.size(), " tokens: too few for context_length ", c.context_length,
                c.val_data.empty() && c.val_fraction > 0 ? " (set --val-fraction, or --val-data FILE)" : "");
  };
  if (!c.val_data.empty()) {
    DataSplit s{tokens, open_token_file(c.val_data, c.data_dtype), c.val_data};
    enough(*s.validation, "validation file " + c.val_data);
    return s;
  }
  const auto held = static_cast<int64_t>(static_cast<double>(tokens.size()) * c.val_fraction);
  if (held == 0) return {tokens, std::nullopt, ""};
  const std::string name = c.data.empty() ? "the built-in corpus" : tokens.path();
  DataSplit s{tokens.slice(0, tokens.size() - held), tokens.slice(tokens.size() - held, held),
              "the last " + std::to_string(static_cast<int>(std::lround(100 * c.val_fraction))) + "% of " + name};
  enough(s.train, "the training part of " + name + " (all but its last " + std::to_string(held) + " tokens)");
  enough(*s.validation, "the validation part of " + name + " (its last " + std::to_string(held) + " tokens)");
  return s;
}

std::string builtin_corpus_file_bytes(int64_t corpus_bytes) {
  const std::string text = builtin_corpus(corpus_bytes);
  std::string bytes(text.size() * 2, '\0');
  for (size_t i = 0; i < text.size(); ++i) bytes[2 * i] = text[i];
  return bytes;
}

/// Whether `path` holds exactly `bytes`.
namespace {

bool file_holds(const fs::path& path, const std::string& bytes) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec) || fs::file_size(path, ec) != bytes.size() || ec) return false;
  std::ifstream in(path, std::ios::binary);
  std::string chunk(std::min<size_t>(bytes.size(), size_t{1} << 20), '\0');
  for (size_t at = 0; at < bytes.size(); at += chunk.size()) {
    const size_t n = std::min(chunk.size(), bytes.size() - at);
    if (!in.read(chunk.data(), static_cast<std::streamsize>(n)) || bytes.compare(at, n, chunk, 0, n) != 0) return false;
  }
  return true;
}

}  // namespace

bool corpus_in_place(const fs::path& out, const std::string& corpus) {
  const fs::path path = builtin_corpus_path(out);
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) return false;
  if (file_holds(path, corpus)) return true;
  const auto held = fs::is_regular_file(path, ec) ? fs::file_size(path, ec) : 0;
  if (!ec && held > 0 && held % 2 == 0 && held / 2 <= 1'000'000'000 &&
      file_holds(path, builtin_corpus_file_bytes(static_cast<int64_t>(held / 2))))
    return false;
  throw ValueError(detail::str_cat("run directory ", out.string(), " holds a corpus.u16 that is not a built-in corpus (this run writes one of ",
                                   corpus.size() / 2, " tokens there): tally does not write over it; move it, pass it as --data ",
                                   "(with --data-dtype uint16), or choose another --out"));
}

data::TokenFile write_builtin_corpus(const fs::path& out, const std::string& corpus, bool in_place) {
  if (!in_place) io::write_file_atomic(builtin_corpus_path(out), corpus);
  return open_builtin_corpus(out);
}

data::TokenFile open_builtin_corpus(const fs::path& out) {
  return data::TokenFile::open_raw(builtin_corpus_path(out).string(), data::TokenDtype::UInt16);
}

double check_tokens(const data::TokenFile& file, int64_t vocab_size) {
  std::vector<int64_t> counts(static_cast<size_t>(std::min<int64_t>(vocab_size, int64_t{1} << 24)));
  std::vector<int64_t> chunk(1 << 16);
  for (int64_t start = 0; start < file.size(); start += static_cast<int64_t>(chunk.size())) {
    const int64_t n = std::min<int64_t>(static_cast<int64_t>(chunk.size()), file.size() - start);
    file.gather(start, std::span<int64_t>(chunk.data(), static_cast<size_t>(n)));
    for (int64_t i = 0; i < n; ++i) {
      const int64_t t = chunk[static_cast<size_t>(i)];
      TALLY_CHECK(t >= 0 && t < vocab_size, "data file ", file.path(), ": token ", t, " at position ", start + i,
                  " is outside the vocabulary [0, ", vocab_size, ") (the file was read as ", data::dtype_name(file.dtype()), "; ",
                  file.dtype() == data::TokenDtype::UInt8
                      ? "its bytes need --vocab-size 256"
                      : "a text file trains as bytes when it is named .txt or with --data-dtype uint8; a token id of " +
                            std::to_string(t) + " needs --vocab-size " + std::to_string(t + 1) + " or more",
                  ")");
      if (t < static_cast<int64_t>(counts.size())) ++counts[static_cast<size_t>(t)];
    }
  }
  return unigram_entropy(counts);
}

void refuse_existing_run(const fs::path& out, const CheckpointManager& checkpoints) {
  TALLY_CHECK(checkpoints.list().empty(), "run directory ", out.string(),
              " already has checkpoints: pass --resume to continue it, or choose another --out");
  std::error_code ec;
  const auto metrics_bytes = fs::file_size(out / "metrics.jsonl", ec);
  const bool has_metrics = !ec && metrics_bytes > 0;  // an empty one is a run killed before its first step
  const bool has_summary = fs::exists(out / "summary.json", ec);
  TALLY_CHECK(!has_metrics && !has_summary, "run directory ", out.string(), " already holds a run (",
              has_metrics && has_summary ? "metrics.jsonl, summary.json" : has_metrics ? "metrics.jsonl" : "summary.json",
              ") but no checkpoint to resume it from: choose another --out, or remove those files to start over");
  // A config.json that reads as a tally config is a run's own, left by one killed before its first
  // step; anything else there is the user's.
  const fs::path config_path = out / "config.json";
  if (!fs::exists(fs::symlink_status(config_path, ec))) return;
  bool ours = true;
  try {
    TrainConfig c;
    overlay_json_file(c, config_path.string());
  } catch (const Error&) {
    ours = false;
  }
  TALLY_CHECK(ours, "run directory ", out.string(), " holds a config.json that is not a tally training config: a new run writes ",
              "its own there, and tally does not write over it; move it (pass it as --config if it is one), or choose another --out");
}

std::vector<int64_t> truncate_metrics(const fs::path& path, int64_t step) {
  std::vector<int64_t> unreadable;
  std::ifstream in(path);
  if (!in) return unreadable;
  std::string kept, line;
  for (int64_t line_no = 1; std::getline(in, line); ++line_no) {
    bool readable = false;
    try {
      const json at = json::parse(line).at("step");  // a step that is not a whole number from 1 is a damaged line
      readable = at.is_number_integer() && at.get<int64_t>() >= 1;
      if (readable && at.get<int64_t>() <= step) kept += line + "\n";
    } catch (const json::exception&) {
    }
    if (!readable) unreadable.push_back(line_no);
  }
  io::write_file_atomic(path, kept);
  return unreadable;
}

MetricsFile::MetricsFile(fs::path path, fs::path checkpoint_dir) : path_(std::move(path)), checkpoint_dir_(std::move(checkpoint_dir)) {
  fd_ = io::retry_on_eintr([&] { return ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC); });
  if (fd_ < 0) throw IOError("cannot open " + path_.string() + " for appending: " + std::strerror(errno));
}

MetricsFile::~MetricsFile() { ::close(fd_); }

void MetricsFile::append(const std::string& line) {
  const off_t before = ::lseek(fd_, 0, SEEK_END);
  uint64_t written = 0;
  const int error = io::write_all(fd_, std::span(reinterpret_cast<const uint8_t*>(line.data()), line.size()), written);
  if (error == 0) return;
  if (before >= 0) (void)::ftruncate(fd_, before);
  throw IOError("cannot append to " + path_.string() + ": " + io::write_error_text(error) + ": the run stopped; the checkpoints in " +
                checkpoint_dir_.string() + " are as they were and `--resume` continues from the newest");
}

}  // namespace tally::train
