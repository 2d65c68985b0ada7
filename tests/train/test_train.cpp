// tally/train: the config table, the built-in corpus, checkpoints and bit-exact resume.

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "tally/error/error.h"
#include "tally/io/checksum.h"
#include "tally/io/dir_lock.h"
#include "tally/io/safetensors.h"
#include "tally/kernels/cpu/matmul.h"
#include "tally/machine/reference_peak.h"
#include "tally/tally.h"
#include "tally/train/checkpoint.h"
#include "tally/train/config.h"
#include "tally/train/corpus.h"
#include "tally/train/model_setup.h"
#include "tally/train/step_profile.h"
#include "tally/train/trainer.h"
#include "expect_error.h"
#include "tests/io/corrupt.h"
#include "temp_dir.h"

namespace tally::train {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using ::tally::test::TempDir;

using ::tally::test::expect_error;
using ::tally::test::message_of;

TEST(TrainConfig, DefaultsAreValidAndRoundTripThroughJson) {
  TrainConfig c;
  c.validate();
  TrainConfig d;
  d.lr = 1;
  apply_json(d, to_json(c), "test");
  EXPECT_EQ(to_json(d), to_json(c));
}

TEST(TrainConfig, RejectsUnknownKeysWrongTypesAndValuesOutOfRange) {
  TrainConfig c;
  EXPECT_NE(message_of([&] { apply_json(c, json{{"lrr", 0.1}}, "cfg.json"); }).find("cfg.json: unknown key \"lrr\" (known: data,"),
            std::string::npos);
  EXPECT_EQ(message_of([&] { apply_json(c, json{{"lr", -0.1}}, "cfg.json"); }), "cfg.json: lr must be > 0 and <= 10, got -0.1");
  EXPECT_EQ(message_of([&] { apply_json(c, json{{"steps", 1.5}}, "cfg.json"); }), "cfg.json: steps must be an integer, got 1.5");
  EXPECT_EQ(message_of([&] { apply_json(c, json{{"norm", "batchnorm"}}, "x"); }),
            "x: norm must be one of layernorm, rmsnorm, got \"batchnorm\"");
  EXPECT_EQ(message_of([&] { apply_json(c, json{{"num_heads", 3}}, "x"); }), "config: num_heads (3) must divide d_model (128)");
  EXPECT_EQ(message_of([&] { apply_json(c, json::array(), "x"); }), "x: expected a JSON object of settings, got array");
  // A refused overlay leaves the config as it was.
  EXPECT_EQ(c.lr, TrainConfig{}.lr);
  EXPECT_EQ(message_of([&] { parse_field_text("batch_size", "12x"); }), "--batch-size: expected an integer, got \"12x\"");
  EXPECT_EQ(parse_field_text("lr", "1e-3"), json(1e-3));
  EXPECT_EQ(parse_field_text("tied_embeddings", "false"), json(false));
}

TEST(TrainConfig, IncompatibleFieldsNameEachDifference) {
  TrainConfig a, b;
  b.d_model = 256;
  b.seed = 7;
  b.lr = 1e-2;  // may change on resume
  const auto diff = incompatible_fields(to_json(a), b);
  ASSERT_EQ(diff.size(), 2u);
  EXPECT_EQ(diff[0], "d_model: checkpoint 128, config 256");
  EXPECT_EQ(diff[1], "seed: checkpoint 0, config 7");
}

// A file's values are checked one by one as they are laid on; the combination only once the
// flags are on too, so a flag can make a file's steps valid (a warm-up below them).
TEST(TrainConfig, FlagsOverrideAFileBeforeTheMergedConfigIsValidated) {
  TempDir dir;
  const fs::path file = dir.path() / "c.json";
  std::ofstream(file) << R"({"steps": 5})";
  TrainConfig c;
  overlay_json_file(c, file.string());
  overlay_json(c, json{{"warmup_steps", 1}}, "flags");
  c.validate();
  EXPECT_EQ(c.steps, 5);
  EXPECT_EQ(c.warmup_steps, 1);
  // Alone, the file's steps against the default warm-up are refused.
  TrainConfig d;
  EXPECT_NE(message_of([&] { apply_json_file(d, file.string()); }).find("warmup_steps (20) must not exceed steps (5)"), std::string::npos);
}

// Note [Weight decay groups]: the matrices and embeddings decay, the biases and norms' gains do not,
// unless decay_all; ZeRO-1 refuses the groups it cannot keep.
TEST(TrainConfig, WeightDecayGroupsAsGpt2Trains) {
  TrainConfig c;
  c.d_model = 32, c.num_layers = 2, c.num_heads = 2;
  nn::TransformerLM model(c.model());
  optim::AdamW grouped = make_optimizer(model, c);
  ASSERT_EQ(grouped.param_groups().size(), 2u);
  auto decay = [&](size_t g) { return static_cast<const optim::AdamWOptions&>(grouped.param_groups()[g].options()).weight_decay(); };
  EXPECT_EQ(decay(0), c.weight_decay);
  EXPECT_EQ(decay(1), 0.0);
  for (const Tensor& p : grouped.param_groups()[0].params()) EXPECT_GE(p.dim(), 2);
  for (const Tensor& p : grouped.param_groups()[1].params()) EXPECT_EQ(p.dim(), 1);
  // token_embedding, position_embedding and 4 matrices a block; 4 norm vectors and 4 biases a block, and norm_f's 2.
  EXPECT_EQ(grouped.param_groups()[0].params().size(), 2u + 4 * 2);
  EXPECT_EQ(grouped.param_groups()[1].params().size(), 8u * 2 + 2);
  c.decay_all = true;
  EXPECT_EQ(make_optimizer(model, c).param_groups().size(), 1u);
  c.decay_all = false;
  c.zero = 1;
  EXPECT_NE(message_of([&] { c.validate(); }).find("add --decay-all true"), std::string::npos);
}

TEST(TrainConfig, MessagesNameTheValueAndTheFile) {
  EXPECT_EQ(message_of([] { parse_field_text("lr", "nan"); }), "--lr: expected a finite number, got \"nan\"");
  EXPECT_EQ(message_of([] { parse_field_text("lr", "inf"); }), "--lr: expected a finite number, got \"inf\"");
  // A number is the whole text, as an integer is: no spaces on either side, no hexadecimal.
  for (const char* text : {" 0.1", "0.1 ", "0x1p-3", "+0.1"})
    EXPECT_EQ(message_of([&] { parse_field_text("lr", text); }), std::string("--lr: expected a finite number, got \"") + text + "\"");
  EXPECT_EQ(message_of([] { parse_field_text("lr", "1e-400"); }), "--lr: \"1e-400\" is out of the range of a double");
  TrainConfig c;
  // Open at 1: AdamW refuses a beta of 1, and dropout 1 drops everything.
  EXPECT_EQ(message_of([&] { apply_json(c, json{{"beta1", 1.0}}, "flags"); }), "flags: beta1 must be >= 0 and < 1, got 1");
  EXPECT_EQ(message_of([&] { apply_json(c, json{{"beta2", 1.0}}, "flags"); }), "flags: beta2 must be >= 0 and < 1, got 1");
  EXPECT_EQ(message_of([&] { apply_json(c, json{{"dropout", 1.0}}, "flags"); }), "flags: dropout must be >= 0 and < 1, got 1");
  EXPECT_EQ(message_of([&] { apply_json(c, json{{"vocab_size", 1000000000}}, "flags"); }),
            "flags: vocab_size must be >= 2 and <= 100000000, got 1000000000");
  TempDir dir;
  EXPECT_EQ(message_of([&] { apply_json_file(c, dir.path().string()); }), "cannot read config file " + dir.path().string() + ": it is a directory");
  const fs::path huge = dir.path() / "huge.json";
  std::ofstream(huge) << R"({"steps": 1e400})";
  const std::string e = message_of([&] { apply_json_file(c, huge.string()); });
  EXPECT_TRUE(e.starts_with(huge.string() + ": a value out of range: ")) << e;
  EXPECT_NE(e.find("1e400"), std::string::npos) << e;
}

// What the JSON parser alone lets through: a key given twice (it keeps the last, silently), a
// file nested deep enough to crash the message that quotes a value (800,000 brackets segfaulted
// in dump()), a device that never ends (/dev/zero was read until the kernel killed the process),
// a file far larger than any config (a token file passed as --config).
TEST(TrainConfig, AConfigFileIsOneSmallObjectWithEachKeyOnce) {
  TempDir dir;
  TrainConfig c;
  auto write = [&](const char* name, const std::string& text) {
    const fs::path p = dir.path() / name;
    std::ofstream(p) << text;
    return p.string();
  };
  const std::string twice = write("twice.json", R"({"steps": 2, "d_model": 32, "steps": 4})");
  EXPECT_EQ(message_of([&] { apply_json_file(c, twice); }), twice + ": key \"steps\" appears twice; give each setting once");
  EXPECT_EQ(c.steps, TrainConfig{}.steps);
  const std::string deep = write("deep.json", "{\"steps\":" + std::string(400000, '[') + std::string(400000, ']') + "}");
  EXPECT_EQ(message_of([&] { apply_json_file(c, deep); }), deep + ": nested more than 16 levels deep; a config is one object of settings");
  const std::string nested = write("nested.json", R"({"steps": [[[1, 2, 3]]]})");
  EXPECT_EQ(message_of([&] { apply_json_file(c, nested); }), nested + ": steps must be an integer, got [[[1,2,3]]]");
  const std::string long_value = write("long.json", "{\"steps\": \"" + std::string(3000, 'x') + "\"}");
  const std::string e = message_of([&] { apply_json_file(c, long_value); });
  EXPECT_TRUE(e.ends_with(": steps must be an integer, got \"" + std::string(59, 'x') + "... (3002 characters)")) << e;
  EXPECT_EQ(message_of([&] { apply_json_file(c, "/dev/zero"); }), "cannot read config file /dev/zero: it is not a regular file");
  const std::string big = write("tokens.bin", std::string(2 << 20, 'x'));
  EXPECT_EQ(message_of([&] { apply_json_file(c, big); }),
            "config file " + big + " holds 2097152 bytes: a config is a JSON object of a few hundred bytes (at most 1048576); is it the right file?");
}

TEST(Corpus, IsDeterministicAndHasStructure) {
  const std::string a = builtin_corpus(1 << 16), b = builtin_corpus(1 << 16);
  EXPECT_EQ(a.size(), 1u << 16);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, builtin_corpus(1 << 16, 1));
  std::vector<int64_t> counts(256);
  for (unsigned char ch : a) ++counts[ch];
  const double h = unigram_entropy(counts);
  EXPECT_GT(h, 2.0);
  EXPECT_LT(h, 3.5);
  std::vector<int64_t> uniform(256, 10);
  EXPECT_NEAR(unigram_entropy(uniform), std::log(256.0), 1e-12);
}

TEST(Checkpoints, KeepTheNewestAndFallBackPastAnUnreadableOne) {
  TempDir dir;
  CheckpointManager m(dir.path(), 2);
  for (int64_t step : {10, 20, 30}) m.save(step, StateDict{}, {{"step", std::to_string(step)}});
  StateDict t;
  t.insert("w", full({3}, 40.0));
  m.save(40, t, {{"step", "40"}});
  const auto list = m.list();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].first, 30);
  EXPECT_EQ(list[1].first, 40);
  EXPECT_EQ(list[1].second.filename(), "step-000000040.safetensors");
  std::vector<std::string> notes;
  auto latest = m.load_latest(notes);
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->step, 40);
  EXPECT_EQ(latest->tensors.at("w").sum().item<float>(), 120.0f);
  EXPECT_TRUE(notes.empty());
  // Cut the newest file short: the one before is loaded, with a note that says so.
  fs::resize_file(list[1].second, fs::file_size(list[1].second) - 4);
  latest = m.load_latest(notes);
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->step, 30);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("step-000000040.safetensors is unreadable"), std::string::npos) << notes[0];
}

// A corrupt file of a later step (one a resume fell back past) must not count against `keep`:
// with keep 1 it would delete the good checkpoint just saved and keep only itself.
TEST(Checkpoints, RotationNeverDeletesTheCheckpointJustSavedForAnUnreadableNewerOne) {
  TempDir dir;
  CheckpointManager m(dir.path(), 1);
  m.save(6, StateDict{}, {{"step", "6"}});
  std::ofstream(dir.path() / CheckpointManager::file_name(10), std::ios::binary) << "not a safetensors file";
  m.save(8, StateDict{}, {{"step", "8"}});
  const auto list = m.list();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].first, 8);   // the older good one went, as keep 1 says
  EXPECT_EQ(list[1].first, 10);  // the stale file stays: never counted, never the reason for a delete
  std::vector<std::string> notes;
  const auto latest = m.load_latest(notes);
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->step, 8);
}

TEST(Checkpoints, RotationCountsNeitherAnUnreadableOlderFileNorAForeignName) {
  // keep 2 with good checkpoints at 3 and 4, an emptied one at 5 and a copy named step-3: saving 6
  // kept only 6 and the empty 5 (one readable checkpoint) when every file counted.
  TempDir dir;
  CheckpointManager m(dir.path(), 2);
  m.save(3, StateDict{}, {{"step", "3"}});
  m.save(4, StateDict{}, {{"step", "4"}});
  std::ofstream(dir.path() / CheckpointManager::file_name(5), std::ios::binary).flush();  // 0 bytes
  fs::copy_file(dir.path() / CheckpointManager::file_name(3), dir.path() / "step-3.safetensors");
  m.save(6, StateDict{}, {{"step", "6"}});
  std::vector<int64_t> steps;
  for (const auto& [step, path] : m.list()) steps.push_back(step);
  EXPECT_EQ(steps, (std::vector<int64_t>{4, 5, 6}));  // 3 rotated out; the unreadable 5 neither counted nor deleted
  EXPECT_TRUE(fs::exists(dir.path() / "step-3.safetensors"));  // not a checkpoint name: left alone
  expect_error<ValueError>([&] { m.save(-3, StateDict{}, {}); }, {"step must be non-negative, got -3"});
}

TEST(Checkpoints, LoadLatestSaysWhyEachFailedWhenNoneIsReadable) {
  TempDir dir;
  CheckpointManager m(dir.path(), 3);
  for (int64_t step : {2, 4}) std::ofstream(dir.path() / CheckpointManager::file_name(step), std::ios::binary) << "garbage";
  std::vector<std::string> notes;
  EXPECT_FALSE(m.load_latest(notes));
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[0].find("step-000000004.safetensors is unreadable ("), std::string::npos) << notes[0];
  EXPECT_EQ(notes[1].find("falling back"), std::string::npos) << notes[1];  // there was nothing to fall back to
}

/// A model small enough for a unit test: a few milliseconds a step.
TrainConfig tiny(const fs::path& out) {
  TrainConfig c;
  c.out = out.string();
  c.corpus_bytes = 1 << 16;
  c.d_model = 32;
  c.num_layers = 1;
  c.num_heads = 2;
  c.context_length = 16;
  c.batch_size = 4;
  c.steps = 12;
  c.warmup_steps = 3;
  c.checkpoint_interval = 4;
  c.dropout = 0.1;  // so the default generator's state matters too
  return c;
}

std::vector<json> metrics(const fs::path& out) {
  std::vector<json> lines;
  std::ifstream in(out / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
  return lines;
}

/// Train `c` whole and again stopped after step 5 and resumed: the metrics and the final
/// checkpoint (model, optimizer, schedule and, by precision, loss scaler and FP8 scales) must be
/// bit for bit the same. `damage`, when given, corrupts the stopped run's checkpoints folder
/// before the resume and returns the step the resume falls back to; `notes` gets the resume's notes.
void expect_stop_and_resume_bit_exact(const TrainConfig& c, const std::function<int64_t(const fs::path&)>& damage = {},
                                      std::vector<std::string>* resume_notes = nullptr) {
  TempDir dir;
  auto at = [&](const char* name) {
    TrainConfig d = c;
    d.out = (dir.path() / name).string();
    return d;
  };
  const TrainResult whole = train(at("whole"), false);
  EXPECT_EQ(whole.last_step, 12);
  EXPECT_FALSE(whole.interrupted);

  // Stop after step 5 (a signal's path: finish the step, save), then resume to the end.
  std::atomic<bool> stop{false};
  TrainHooks hooks;
  hooks.stop = &stop;
  hooks.on_step = [&](const StepReport& r) { stop = r.step == 5; };
  const TrainResult first = train(at("split"), false, hooks);
  EXPECT_TRUE(first.interrupted);
  EXPECT_EQ(first.last_step, 5);
  const int64_t resumed_at = damage ? damage(dir.path() / "split" / "checkpoints") : 5;
  std::vector<std::string> notes;
  TrainHooks quiet;
  quiet.note = [&](const std::string& n) { notes.push_back(n); };
  const TrainResult rest = train(at("split"), true, quiet);
  if (resume_notes) *resume_notes = notes;
  EXPECT_EQ(rest.first_step, resumed_at + 1);
  EXPECT_EQ(rest.last_step, 12);
  EXPECT_NE(std::find_if(notes.begin(), notes.end(), [](const std::string& n) { return n.starts_with("resumed from"); }), notes.end());

  const auto a = metrics(dir.path() / "whole"), b = metrics(dir.path() / "split");
  ASSERT_EQ(a.size(), 12u);
  ASSERT_EQ(b.size(), 12u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(b[i]["step"], a[i]["step"]);
    EXPECT_EQ(b[i]["loss"].get<double>(), a[i]["loss"].get<double>()) << "step " << i + 1;  // ==, not near
    EXPECT_EQ(b[i]["lr"].get<double>(), a[i]["lr"].get<double>());
  }
  const auto wa = io::SafetensorsReader::open(dir.path() / "whole/checkpoints/step-000000012.safetensors").load_all();
  const auto wb = io::SafetensorsReader::open(dir.path() / "split/checkpoints/step-000000012.safetensors").load_all();
  ASSERT_EQ(wa.keys(), wb.keys());
  for (const auto& [name, t] : wa) {
    const Tensor& u = wb.at(name);
    ASSERT_EQ(t.nbytes(), u.nbytes()) << name;
    EXPECT_EQ(std::memcmp(t.data_ptr(), u.data_ptr(), static_cast<size_t>(t.nbytes())), 0) << name;
  }
  EXPECT_LT(a.back()["loss"].get<double>(), a.front()["loss"].get<double>());
}

/// tiny() in `precision`, with an inf injected at `inf_step` (fp16; 0: none).
TrainConfig tiny_in(const char* precision, int64_t inf_step = 0) {
  TrainConfig c = tiny("");
  c.precision = precision;
  c.inject_inf_step = inf_step;
  return c;
}

TEST(Train, StopAndResumeIsBitExact) { expect_stop_and_resume_bit_exact(tiny("")); }
// Issue 34: one flipped bit in a weight of the newest checkpoint resumed silently from corrupted
// weights. Its checksum catches it: the note names the file and the tensor, the file is kept, and
// the run resumes from the checkpoint before and ends bit-exact with the uninterrupted one.
TEST(Train, AResumeFallsBackPastAFlippedBitAndIsBitExact) {
  fs::path bad;
  std::vector<std::string> notes;
  expect_stop_and_resume_bit_exact(
      tiny(""),
      [&](const fs::path& checkpoints) {
        bad = checkpoints / CheckpointManager::file_name(5);
        io::test::flip_bit_in_tensor(bad, "model.token_embedding.weight", 100, 3);
        return int64_t{4};
      },
      &notes);
  ASSERT_FALSE(notes.empty());
  EXPECT_EQ(notes[0], "checkpoint " + bad.string() +
                          " is corrupt: tensor 'model.token_embedding.weight' does not match its checksum (the file is kept): falling back "
                          "to the one before");
}
// A checkpoint an earlier tally wrote, before checkpoints carried checksums (format 1, no
// tally.checksums), is resumed unverified with a note, and the run still ends bit-exact; the same
// file marked with the current format is damaged, and skipped.
TEST(Train, ACheckpointFromBeforeChecksumsIsResumedWithANote) {
  fs::path old;
  std::vector<std::string> notes;
  const auto rewrite = [&](const fs::path& checkpoints, const char* format) {
    old = checkpoints / CheckpointManager::file_name(5);
    const io::SafetensorsReader r = io::SafetensorsReader::open(old);
    std::map<std::string, std::string> metadata = r.metadata();
    metadata[kFormatKey] = format;
    io::save_safetensors(old, r.load_all(), metadata, /*checksums=*/false);
  };
  expect_stop_and_resume_bit_exact(
      tiny(""), [&](const fs::path& checkpoints) { return rewrite(checkpoints, kFormatBeforeChecksums), int64_t{5}; }, &notes);
  EXPECT_NE(std::find(notes.begin(), notes.end(),
                      "checkpoint " + old.string() + " was written before tally's checkpoints carried checksums (tally-checkpoint-1): it "
                      "is resumed without verification; the checkpoints this run writes carry them"),
            notes.end());
  expect_stop_and_resume_bit_exact(
      tiny(""), [&](const fs::path& checkpoints) { return rewrite(checkpoints, kFormat), int64_t{4}; }, &notes);
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes[0].find("it carries no checksums"), std::string::npos) << notes[0];
}
TEST(Train, StopAndResumeIsBitExactInBfloat16) { expect_stop_and_resume_bit_exact(tiny_in("bf16")); }
// A skipped step before the stop: the scaler's backoff must be in the checkpoint.
TEST(Train, StopAndResumeIsBitExactInFloat16WithTheLossScalersState) { expect_stop_and_resume_bit_exact(tiny_in("fp16", 3)); }
TEST(Train, StopAndResumeIsBitExactInFp8WithItsScales) { expect_stop_and_resume_bit_exact(tiny_in("fp8")); }
TEST(Train, StopAndResumeIsBitExactWithBfloat16ParametersAndStochasticRounding) {
  expect_stop_and_resume_bit_exact(tiny_in("bf16-params"));
}

TEST(Train, Float16SkipsAStepWithAnInjectedInf) {
  TempDir dir;
  TrainConfig c = tiny(dir.path());
  c.precision = "fp16";
  c.steps = 6;
  c.inject_inf_step = 4;
  std::vector<std::string> notes;
  TrainHooks hooks;
  hooks.note = [&](const std::string& n) { notes.push_back(n); };
  const TrainResult r = train(c, false, hooks);
  const auto m = metrics(dir.path());
  ASSERT_EQ(m.size(), 6u);
  for (const json& line : m) EXPECT_EQ(line.value("skipped", false), line["step"] == 4) << line.dump();
  // The scale halves at the skipped step; the learning rate does not move past it.
  EXPECT_EQ(m[4]["loss_scale"].get<double>(), m[3]["loss_scale"].get<double>() / 2);
  EXPECT_EQ(m[4]["lr"].get<double>(), m[3]["lr"].get<double>());
  EXPECT_EQ(r.summary["precision"]["skipped_steps"], 1);
  EXPECT_NE(std::find_if(notes.begin(), notes.end(), [](const std::string& n) { return n.starts_with("step 4: inf or NaN gradients"); }),
            notes.end());
}

TEST(Train, InjectingAnInfNeedsTheLossScaler) {
  TrainConfig c = tiny("x");
  c.inject_inf_step = 2;
  EXPECT_NE(test::message_of([&] { c.validate(); }).find("inject_inf_step (2) needs precision fp16"), std::string::npos);
}

TEST(Train, RefusesToOverwriteOrResumeAnotherConfiguration) {
  TempDir dir;
  TrainConfig c = tiny(dir.path());
  c.steps = 4;
  train(c, false);
  EXPECT_NE(message_of([&] { train(c, false); }).find("already has checkpoints: pass --resume"), std::string::npos);
  TrainConfig other = c;
  other.d_model = 64;
  other.steps = 8;
  const std::string e = message_of([&] { train(other, true); });
  EXPECT_NE(e.find("was trained with another configuration:\n  d_model: checkpoint 32, config 64"), std::string::npos) << e;
}

TEST(Train, BadDataGivesOneClearError) {
  TempDir dir;
  TrainConfig c = tiny(dir.path() / "run");
  c.data = (dir.path() / "missing.bin").string();
  EXPECT_NE(message_of([&] { train(c, false); }).find("does not exist"), std::string::npos);
  const fs::path odd = dir.path() / "odd.bin";
  std::ofstream(odd, std::ios::binary) << "abc";  // 3 bytes: not a whole number of uint16
  c.data = odd.string();
  EXPECT_NE(message_of([&] { train(c, false); }).find("multiple"), std::string::npos);
  const fs::path big = dir.path() / "big.bin";
  {
    std::vector<uint16_t> tokens(4096, 7);
    tokens[1000] = 300;
    std::ofstream(big, std::ios::binary).write(reinterpret_cast<const char*>(tokens.data()), static_cast<std::streamsize>(tokens.size() * 2));
  }
  c.data = big.string();
  EXPECT_NE(message_of([&] { train(c, false); }).find("token 300 at position 1000 is outside the vocabulary [0, 256)"), std::string::npos);
}

TEST(Train, SummaryHasTheBooks) {
  TempDir dir;
  TrainConfig c = tiny(dir.path());
  c.steps = 6;
  const TrainResult r = train(c, false);
  const json& s = r.summary;
  EXPECT_EQ(s["run"]["steps"], 6);
  EXPECT_GT(s["parameters"].get<int64_t>(), 0);
  // The ledger's forward FLOPs per token equal the meta run's: the same model, the same shapes.
  EXPECT_DOUBLE_EQ(s["flops_per_token"]["measured"]["forward"].get<double>(), s["flops_per_token"]["predicted"]["forward"].get<double>());
  EXPECT_DOUBLE_EQ(s["flops_per_token"]["measured"]["backward"].get<double>(), s["flops_per_token"]["predicted"]["backward"].get<double>());
  EXPECT_FALSE(s["ops"].empty());
  EXPECT_FALSE(s["memory_timeline"].empty());
  EXPECT_EQ(s["top_ops"].size(), 5u);
  EXPECT_GT(s["memory"]["process_peak_rss"].get<int64_t>(), 0);
  // The allocator holds at least the live tensors' bytes.
  EXPECT_GE(s["memory"]["tracked_peak_reserved"].get<int64_t>(), s["memory"]["tracked_peak_total"].get<int64_t>());
  EXPECT_GT(s["memory"]["tracked_peak_total"].get<int64_t>(), 0);
  EXPECT_TRUE(fs::exists(dir.path() / "summary.json"));
  EXPECT_EQ(json::parse(std::ifstream(dir.path() / "summary.json"))["parameters"], s["parameters"]);
  EXPECT_EQ(s["precision"]["name"], "fp32");
  EXPECT_FALSE(s["precision"].contains("vs_float32"));
  EXPECT_EQ(s["machine"]["peak_instruction"], "float32 FMA");
  EXPECT_EQ(s["machine"]["peak_dtype"], "float32");
  // MFU by PaLM's formula (learned positions: N less the position table), HFU by the ledger, over
  // the same median step and peak (Note [MFU and HFU]).
  const double tokens_per_step = static_cast<double>(c.batch_size * c.context_length);
  const double n = s["parameters"].get<double>() - static_cast<double>(c.context_length * c.d_model);
  const double palm = 6.0 * n + 12.0 * static_cast<double>(c.num_layers * c.d_model * c.context_length);
  const double step_s = s["step_time"]["measured_s"].get<double>(), peak = s["machine"]["peak_flops_promised"].get<double>();
  EXPECT_DOUBLE_EQ(s["mfu"]["flops_per_token"].get<double>(), palm);
  EXPECT_NEAR(s["mfu"]["promised"].get<double>(), palm * tokens_per_step / step_s / peak, 1e-12);
  const json& f = s["flops_per_token"]["predicted"];
  EXPECT_NEAR(s["hfu"]["promised"].get<double>(),
              (f["forward"].get<double>() + f["backward"].get<double>() + f["optimizer"].get<double>()) * tokens_per_step / step_s / peak,
              1e-9);
  EXPECT_GT(s["hfu"]["promised"].get<double>(), s["mfu"]["promised"].get<double>());
  // "other" at its highest between ops is exactly what was live before the step plus what each
  // phase added (Note [What holds "other"]), and no more than its tracked peak.
  const json& o = s["memory"]["other"];
  EXPECT_EQ(o["highest_between_ops"].get<int64_t>(), o["before_the_step"].get<int64_t>() + o["change_in_forward"].get<int64_t>() +
                                                         o["change_in_backward"].get<int64_t>() + o["change_in_optimizer"].get<int64_t>());
  EXPECT_LE(o["highest_between_ops"].get<int64_t>(), s["memory"]["tracked_peak"]["other"].get<int64_t>());
  EXPECT_GT(o["highest_between_ops"].get<int64_t>(), 0);
  // The clock of the promise is named and kept (Note [The promised clock]).
  EXPECT_GT(s["machine"]["clock_ghz"].get<double>(), 0.0);
  EXPECT_FALSE(s["machine"]["clock_source"].get<std::string>().empty());
  // The steps alone are faster than the run with its saves, and their seconds are part of it.
  EXPECT_GT(s["run"]["step_tokens_per_s"].get<double>(), s["run"]["tokens_per_s"].get<double>());
  EXPECT_LT(s["run"]["steps_seconds"].get<double>(), s["run"]["seconds"].get<double>());
}

// The summary's step time is a median: of an even count, the mean of the two middle values (it
// was the upper one: 13.3 ms for 4.8, 10.4, 13.3, 13.3, where the median is 11.8).
TEST(StepProfile, TheMedianOfAnEvenCountIsTheMeanOfTheMiddleTwo) {
  EXPECT_DOUBLE_EQ(median({13.294, 10.400, 13.283, 4.780}), (10.400 + 13.283) / 2);
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({5}), 5);
  EXPECT_DOUBLE_EQ(median({2, 1}), 1.5);
}

// The predicted optimizer FLOPs are the measured ones, gradient clipping included: the norm runs
// at every step, and the scaling in a step that clips (grad_clip 1e-3: every step) or in none.
TEST(Train, PredictedOptimizerFlopsIncludeGradientClipping) {
  for (const double clip : {1e-3, 0.0}) {
    TempDir dir;
    TrainConfig c = tiny(dir.path());
    c.steps = 4;
    c.grad_clip = clip;
    const json s = train(c, false).summary;
    EXPECT_DOUBLE_EQ(s["flops_per_token"]["measured"]["optimizer"].get<double>(), s["flops_per_token"]["predicted"]["optimizer"].get<double>())
        << "grad_clip " << clip;
  }
}

/// The promised peak of `dtype`'s products for the threads a run used, as the trainer should give it.
double promised_for(std::string_view dtype, int64_t threads) {
  const machine::CpuInfo cpu = kernels::detail::matmul_cpu_features();
  return machine::peak_for_dtype(cpu, {}, dtype).promised.flops_per_sec * static_cast<double>(threads) / cpu.usable_cores;
}

// The summary's predicted memory (a meta-device step) is the profiled step's, category by category
// and in total, exactly, in every precision: fp8's CPU product holds bfloat16 copies of its
// operands, which the meta run counts by running the same ops (Note [Meta device]).
TEST(Train, PredictedMemoryIsTheTrackedPeakExactly) {
  for (const char* precision : {"fp32", "bf16", "fp16", "bf16-params", "fp8"}) {
    SCOPED_TRACE(precision);
    TempDir dir;
    TrainConfig c = tiny_in(precision);
    c.out = dir.path().string();
    c.steps = 4;
    const json m = train(c, false).summary["memory"];
    EXPECT_EQ(m["predicted"], m["tracked_peak"]);
    EXPECT_EQ(m["predicted_peak_total"], m["tracked_peak_total"]);
  }
}

TEST(Train, ABfloat16SummarySetsItsMemoryAndTimeAgainstFloat32) {
  TempDir dir;
  TrainConfig c = tiny(dir.path());
  c.precision = "bf16";
  c.steps = 4;
  const json s = train(c, false).summary;
  EXPECT_DOUBLE_EQ(s["flops_per_token"]["measured"]["forward"].get<double>(), s["flops_per_token"]["predicted"]["forward"].get<double>());
  const json& vs = s["precision"]["vs_float32"];
  // Working copies exist only in bfloat16; parameters (the float32 masters) are the same bytes.
  EXPECT_GT(vs["memory"]["peak"]["working_copies"].get<int64_t>(), 0);
  EXPECT_EQ(vs["memory"]["float32_peak"]["working_copies"].get<int64_t>(), 0);
  EXPECT_EQ(vs["memory"]["peak"]["parameters"], vs["memory"]["float32_peak"]["parameters"]);
  EXPECT_LT(vs["memory"]["peak"]["activations"].get<int64_t>(), vs["memory"]["float32_peak"]["activations"].get<int64_t>());
  EXPECT_GT(vs["step_time"]["float32_wall_s"].get<double>(), 0);
  EXPECT_GT(vs["step_time"]["ledger_s"].get<double>(), 0);
  // MFU is against the peak of the instruction bf16 products run on (vdpbf16ps or AMX where
  // oneDNN has them), for the run's threads; it was float32's, which halved the bf16 peak.
  const json& m = s["machine"];
  EXPECT_EQ(m["peak_dtype"], "bfloat16");
  EXPECT_DOUBLE_EQ(m["peak_flops_promised"].get<double>(), promised_for("bfloat16", m["threads"].get<int64_t>()));
  if (kernels::detail::matmul_cpu_features().avx512_bf16) {
    EXPECT_NE(m["peak_instruction"], "float32 FMA");
  }
}

/// Every file under `dir` (relative path -> a hash of its bytes): what "nothing was written" is
/// checked against (hashes, so that a failure prints a readable list).
std::map<std::string, size_t> snapshot(const fs::path& dir) {
  std::map<std::string, size_t> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    files[fs::relative(e.path(), dir).string()] = std::hash<std::string>{}(bytes.str());
  }
  return files;
}

// Resuming a run that is already at (or past) the steps asked for trains nothing and writes
// nothing: its summary, metrics and config stay those of the run that made them.
TEST(Train, ResumingAFinishedRunDoesNothingAndWritesNothing) {
  TempDir dir;
  TrainConfig c = tiny(dir.path());
  c.steps = 4;
  train(c, false);
  const auto before = snapshot(dir.path());
  ASSERT_TRUE(before.contains("summary.json"));
  for (int64_t steps : {4, 2}) {
    SCOPED_TRACE(steps);
    c.steps = steps;
    c.warmup_steps = 1;
    const TrainResult r = train(c, true);
    EXPECT_TRUE(r.nothing_to_do);
    EXPECT_EQ(r.last_step, 4);
    EXPECT_EQ(snapshot(dir.path()), before);
  }
}

// --resume with nothing to resume from is an error that names the directory and why, and writes
// nothing: a missing directory, one without checkpoints, one whose checkpoints are all unreadable.
TEST(Train, ResumeWithNothingToResumeFromIsAnErrorAndWritesNothing) {
  TempDir dir;
  TrainConfig c = tiny(dir.path() / "run");
  c.steps = 4;
  c.checkpoint_interval = 2;
  expect_error<ValueError>([&] { train(c, true); }, {"cannot resume " + c.out + ": no such run directory"});
  EXPECT_FALSE(fs::exists(c.out));

  train(c, false);
  c.steps = 8;
  fs::rename(dir.path() / "run/checkpoints", dir.path() / "saved");
  auto before = snapshot(c.out);
  expect_error<ValueError>([&] { train(c, true); }, {"cannot resume " + c.out + ": it has no checkpoints folder"});
  EXPECT_EQ(snapshot(c.out), before);

  fs::rename(dir.path() / "saved", dir.path() / "run/checkpoints");
  for (const auto& [step, path] : CheckpointManager(dir.path() / "run/checkpoints", 3).list()) fs::resize_file(path, 100);
  before = snapshot(c.out);
  expect_error<ValueError>([&] { train(c, true); },
                           {"none of its checkpoints reads back whole", "step-000000004.safetensors is unreadable (",
                            "step-000000002.safetensors is unreadable ("});
  EXPECT_EQ(snapshot(c.out), before);
}

// A new run refuses a directory that holds another run's record even when it saved no checkpoint;
// a directory with an empty metrics.jsonl (a run killed before its first step) is free to reuse.
TEST(Train, RefusesToStartOverARunThatSavedNoCheckpoint) {
  TempDir dir;
  TrainConfig c = tiny(dir.path());
  c.steps = 2;
  c.warmup_steps = 1;
  train(c, false);
  fs::remove_all(dir.path() / "checkpoints");
  const auto before = snapshot(dir.path());
  expect_error<ValueError>([&] { train(c, false); }, {"already holds a run (metrics.jsonl, summary.json) but no checkpoint"});
  EXPECT_EQ(snapshot(dir.path()), before);
  fs::remove(dir.path() / "summary.json");
  std::ofstream(dir.path() / "metrics.jsonl", std::ios::trunc).close();
  EXPECT_EQ(train(c, false).last_step, 2);
}

// A bad config or data file refuses the run before its directory is made.
TEST(Train, ARefusedConfigCreatesNothing) {
  TempDir dir;
  TrainConfig c = tiny(dir.path() / "run");
  c.beta1 = 1;
  expect_error<ValueError>([&] { train(c, false); }, {"beta1 must be >= 0 and < 1, got 1"});
  EXPECT_FALSE(fs::exists(c.out));
  c = tiny(dir.path() / "run");
  c.data = (dir.path() / "missing.bin").string();
  expect_error<IOError>([&] { train(c, false); }, {"does not exist"});
  EXPECT_FALSE(fs::exists(c.out));
}

/// Rewrite checkpoint `path` with `edit` applied to each (name, tensor copy) and to its metadata.
void rewrite_checkpoint(const fs::path& path, const std::function<void(const std::string&, Tensor&)>& edit_tensor,
                        const std::function<void(std::map<std::string, std::string>&)>& edit_metadata = {}) {
  const io::SafetensorsReader reader = io::SafetensorsReader::open(path);
  StateDict edited;
  for (const auto& [name, t] : reader.load_all()) {
    Tensor copy = t.clone();
    edit_tensor(name, copy);
    edited.insert(name, copy);
  }
  auto metadata = reader.metadata();
  if (edit_metadata) edit_metadata(metadata);
  io::save_safetensors(path, edited, metadata);
}

/// tiny() trained for 4 steps with a checkpoint after each, keeping only the newest.
TrainConfig four_steps_keeping_one(const fs::path& out) {
  TrainConfig c = tiny(out);
  c.steps = 4;
  c.keep = 1;
  c.checkpoint_interval = 1;
  train(c, false);
  return c;
}

// A checkpoint whose weights hold a NaN: the resumed run stops at its first step, before saving,
// so the checkpoints it resumed from are all still there.
TEST(Train, ANonFiniteLossStopsTheRunBeforeACheckpointIsSaved) {
  TempDir dir;
  TrainConfig c = four_steps_keeping_one(dir.path());
  rewrite_checkpoint(dir.path() / "checkpoints" / CheckpointManager::file_name(4), [](const std::string& name, Tensor& t) {
    if (name == "model.token_embedding.weight") t.view({-1}).narrow(0, 0, 1).fill_(NAN);
  });
  const auto before = snapshot(dir.path() / "checkpoints");
  c.steps = 8;
  expect_error<ValueError>([&] { train(c, true); }, {"step 5: the loss is nan", "stopped before saving a checkpoint"});
  EXPECT_EQ(snapshot(dir.path() / "checkpoints"), before);
}

// A NaN in AdamW's state leaves step 5's loss (computed before the update) finite, but the update
// makes the weights NaN: the run stops before saving them, where the save would have rotated out
// the checkpoint it resumed from (keep 1) and left only garbage.
TEST(Train, WeightsMadeNonFiniteByTheUpdateAreNeverSaved) {
  TempDir dir;
  TrainConfig c = four_steps_keeping_one(dir.path());
  rewrite_checkpoint(dir.path() / "checkpoints" / CheckpointManager::file_name(4), [](const std::string& name, Tensor& t) {
    if (name.starts_with("optimizer.") && name.ends_with(".exp_avg_sq")) t.fill_(NAN);
  });
  const auto before = snapshot(dir.path() / "checkpoints");
  c.steps = 8;
  expect_error<ValueError>([&] { train(c, true); }, {"step 5: model.", "holds NaN or inf after the optimizer's update", "stopped before saving"});
  EXPECT_EQ(snapshot(dir.path() / "checkpoints"), before);
}

// The step in a checkpoint's metadata must be the one its name says, written as save() writes
// it: an altered one (-5, 0, "4x") made the resumed run truncate metrics.jsonl to it and save
// over the run's checkpoints. Nothing is written.
// The catalogue of issue 34: one flipped bit in each kind of state a checkpoint holds (a model
// tensor, an optimizer state, the LR schedule, the RNG state, the step, the checksums' own key), or
// a cut tail. Each is caught and named, the file is kept, and the load falls back to the one before.
TEST(Checkpoints, EachKindOfCorruptionIsCaughtNamedAndFallenBackPast) {
  TempDir dir;
  TrainConfig c = tiny(dir.path() / "run");
  c.steps = 4;
  c.checkpoint_interval = 2;
  train(c, false);
  const fs::path checkpoints = fs::path(c.out) / "checkpoints";
  const std::string newest = CheckpointManager::file_name(4);
  std::vector<std::string> names;
  const io::SafetensorsReader reader = io::SafetensorsReader::open(checkpoints / newest);
  for (const io::TensorInfo& t : reader.tensors()) names.push_back(t.name);
  const auto first_with = [&](const std::string& prefix) {
    const auto it = std::find_if(names.begin(), names.end(), [&](const std::string& n) { return n.starts_with(prefix); });
    EXPECT_NE(it, names.end()) << prefix;
    return it == names.end() ? std::string() : *it;
  };
  const std::string model = first_with("model."), optimizer = first_with("optimizer.state."), schedule = first_with("scheduler.");
  struct Corruption {
    std::string what;
    std::function<void(const fs::path&)> apply;
    std::string note;
  };
  using namespace io::test;
  const std::vector<Corruption> catalogue = {
      {"a model tensor", [&](const fs::path& f) { flip_bit_in_tensor(f, model, 1, 6); }, "corrupt: tensor '" + model + "' does not match"},
      {"an optimizer state", [&](const fs::path& f) { flip_bit_in_tensor(f, optimizer, 2, 0); },
       "corrupt: tensor '" + optimizer + "' does not match"},
      {"the LR schedule", [&](const fs::path& f) { flip_bit_in_tensor(f, schedule, 0, 1); }, "corrupt: tensor '" + schedule + "' does not match"},
      {"the RNG state", [](const fs::path& f) { flip_digit_in_metadata(f, "tally.generators"); }, "corrupt: its metadata does not match"},
      {"the step", [](const fs::path& f) { flip_digit_in_metadata(f, "tally.step"); }, "corrupt: its metadata does not match"},
      {"the checksums' key", [](const fs::path& f) { flip_bit_in_header(f, std::string(io::kChecksumsKey)); }, "carries no checksums"},
      {"a truncated tail", [](const fs::path& f) { fs::resize_file(f, fs::file_size(f) - 1); }, "is unreadable ("},
  };
  for (size_t i = 0; i < catalogue.size(); ++i) {
    const Corruption& k = catalogue[i];
    const fs::path copy = dir.path() / ("copy" + std::to_string(i));
    fs::copy(checkpoints, copy);
    k.apply(copy / newest);
    std::vector<std::string> notes;
    const auto latest = CheckpointManager(copy, 3).load_latest(notes);
    ASSERT_TRUE(latest) << k.what;
    EXPECT_EQ(latest->step, 2) << k.what;
    ASSERT_EQ(notes.size(), 1u) << k.what;
    EXPECT_NE(notes[0].find("checkpoint " + (copy / newest).string() + " "), std::string::npos) << k.what << ": " << notes[0];
    EXPECT_NE(notes[0].find(k.note), std::string::npos) << k.what << ": " << notes[0];
    EXPECT_TRUE(fs::exists(copy / newest)) << k.what;
  }
  // When none verifies, the resume is a clear error naming each, and writes nothing.
  flip_bit_in_tensor(checkpoints / newest, model);
  flip_bit_in_tensor(checkpoints / CheckpointManager::file_name(2), optimizer);
  const auto before = snapshot(dir.path() / "run");
  c.steps = 6;
  expect_error<ValueError>([&] { train(c, true); }, {"none of its checkpoints reads back whole and verifies", newest + " is corrupt: tensor '" + model,
                                                     CheckpointManager::file_name(2) + " is corrupt: tensor '" + optimizer});
  EXPECT_EQ(snapshot(dir.path() / "run"), before);
}

TEST(Train, ACheckpointWhoseMetadataStepIsAlteredIsRefusedAndNothingIsWritten) {
  for (const char* altered : {"-5", "0", "4x", "3", ""}) {
    TempDir dir;
    TrainConfig c = four_steps_keeping_one(dir.path());
    rewrite_checkpoint(
        dir.path() / "checkpoints" / CheckpointManager::file_name(4), [](const std::string&, Tensor&) {},
        [&](std::map<std::string, std::string>& m) { m["tally.step"] = altered; });
    const auto before = snapshot(dir.path());
    c.steps = 6;
    const std::string a = altered;
    const bool number = a == "0" || a == "3";
    expect_error<ValueError>([&] { train(c, true); }, {CheckpointManager::file_name(4), number ? "is step 4's by its name but its metadata says step " + a
                                                                                              : "metadata 'tally.step' is '" + a + "', not a non-negative integer"});
    EXPECT_EQ(snapshot(dir.path()), before) << altered;
  }
  TempDir dir;
  TrainConfig c = four_steps_keeping_one(dir.path());
  rewrite_checkpoint(
      dir.path() / "checkpoints" / CheckpointManager::file_name(4), [](const std::string&, Tensor&) {},
      [&](std::map<std::string, std::string>& m) { m.erase("tally.generators"); });
  c.steps = 6;
  expect_error<ValueError>([&] { train(c, true); }, {"has no 'tally.generators' in its metadata"});  // it said "map::at"
}

// What the model and optimizer would load (converting a dtype, restarting a missing state, not
// looking at a key of no part) a resume refuses, naming the tensor, with nothing written.
TEST(Train, ACheckpointWithAConvertedTensorAMissingStateOrAStrayKeyIsRefused) {
  struct Damage {
    std::function<void(StateDict&)> edit;
    std::vector<std::string> message;
  };
  const std::vector<Damage> damages = {
      {[](StateDict& d) { d.insert_or_assign("model.norm_f.weight", d.at("model.norm_f.weight").to(kInt32)); },
       {"'model.norm_f.weight' has dtype int32 where the model's is float32"}},
      {[](StateDict& d) {
         StateDict kept;
         for (const auto& [k, t] : d)
           if (!k.starts_with("optimizer.state.0.")) kept.insert(k, t);
         d = kept;
       },
       {"holds the optimizer state of", "parameter 0's is missing"}},
      {[](StateDict& d) { d.insert("junk", zeros({2})); }, {"holds 'junk', which is part of no run state"}},
  };
  for (const Damage& damage : damages) {
    TempDir dir;
    TrainConfig c = four_steps_keeping_one(dir.path());
    const fs::path file = dir.path() / "checkpoints" / CheckpointManager::file_name(4);
    {
      const io::SafetensorsReader reader = io::SafetensorsReader::open(file);
      StateDict tensors = reader.load_all();
      damage.edit(tensors);
      io::save_safetensors(file, tensors, reader.metadata());
    }
    const auto before = snapshot(dir.path());
    c.steps = 6;
    std::vector<std::string> parts = damage.message;
    parts.push_back(CheckpointManager::file_name(4));
    try {
      train(c, true);
      ADD_FAILURE() << "resumed from a damaged checkpoint: " << damage.message[0];
    } catch (const Error& e) {
      for (const std::string& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
    EXPECT_EQ(snapshot(dir.path()), before) << damage.message[0];
  }
}

/// Rewrite the run's metrics.jsonl as `lines`, resume it to `steps`: the steps metrics.jsonl then
/// holds, and the notes the resume gave.
std::pair<std::vector<int64_t>, std::vector<std::string>> resume_over(TrainConfig c, const std::vector<std::string>& lines, int64_t steps) {
  {
    std::ofstream out(fs::path(c.out) / "metrics.jsonl", std::ios::trunc);
    for (const auto& line : lines) out << line << "\n";
  }
  c.steps = steps;
  std::vector<std::string> notes;
  TrainHooks hooks;
  hooks.note = [&](const std::string& n) { notes.push_back(n); };
  train(c, true, hooks);
  std::vector<int64_t> kept;
  for (const json& m : metrics(c.out)) kept.push_back(m["step"].get<int64_t>());
  return {kept, notes};
}

// One damaged line of metrics.jsonl costs that line alone on resume, said in a note.
TEST(Train, ResumeKeepsTheMetricsLinesAroundAnUnparsableOne) {
  TempDir dir;
  TrainConfig c = tiny(dir.path());
  c.steps = 4;
  train(c, false);
  std::vector<std::string> lines;
  {
    std::ifstream in(dir.path() / "metrics.jsonl");
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  ASSERT_EQ(lines.size(), 4u);
  lines[1] = lines[1].substr(0, lines[1].size() / 2);  // step 2 cut short
  const auto [steps, notes] = resume_over(c, lines, 6);
  EXPECT_EQ(steps, (std::vector<int64_t>{1, 3, 4, 5, 6}));
  EXPECT_NE(std::find(notes.begin(), notes.end(), "metrics.jsonl: dropped 1 line(s) that do not parse (line 2), kept the rest"), notes.end());
}

// A step that is not a whole number from 1 (a hand-edited or damaged line) is dropped on resume,
// as an unparsable line is; it was kept when it did not fit in int64 or was 3.7 or -1.
TEST(Train, ResumeDropsMetricsLinesWhoseStepIsNotAStep) {
  TempDir dir;
  TrainConfig c = tiny(dir.path());
  c.steps = 4;
  train(c, false);
  std::vector<json> records = metrics(dir.path());
  ASSERT_EQ(records.size(), 4u);
  records[1]["step"] = 3.7;
  records[2]["step"] = -1;
  std::vector<std::string> lines;
  for (const json& r : records) lines.push_back(r.dump());
  lines[0].replace(lines[0].find("\"step\":1"), 8, "\"step\":99999999999999999999999");
  const auto [steps, notes] = resume_over(c, lines, 5);
  EXPECT_EQ(steps, (std::vector<int64_t>{4, 5}));
  EXPECT_NE(std::find(notes.begin(), notes.end(), "metrics.jsonl: dropped 3 line(s) that do not parse (line 1, 2 and 3), kept the rest"),
            notes.end());
}

// Two runs in one directory interleaved their metrics and rotated each other's checkpoints: the
// second is refused while the first holds the directory's lock, and reads or writes nothing.
TEST(Train, ARunDirectoryInUseIsRefused) {
  TempDir dir;
  TrainConfig c = tiny(dir.path());
  c.steps = 4;
  {
    const io::DirLock held(dir.path(), "a test");
    expect_error<IOError>([&] { train(c, false); }, {dir.path().string(), "is in use: another process", "holds its lock"});
    EXPECT_FALSE(fs::exists(dir.path() / "config.json"));
  }
  train(c, false);  // the lock goes with its holder
  const io::DirLock held(dir.path(), "a test");
  c.steps = 5;
  expect_error<IOError>([&] { train(c, true); }, {"is in use"});
  EXPECT_EQ(metrics(dir.path()).size(), 4u);
}

// A run killed before its first step leaves its corpus.u16; a new run with another corpus size
// takes the directory over, as it takes over that run's config.json (the corpus is a built-in one).
TEST(Train, ABuiltInCorpusOfAnotherSizeIsARunsOwn) {
  TempDir dir;
  TrainConfig c = tiny(dir.path());
  c.steps = 4;
  c.corpus_bytes = 1 << 15;
  train(c, false);
  fs::remove_all(dir.path() / "checkpoints");
  fs::remove(dir.path() / "summary.json");
  std::ofstream(dir.path() / "metrics.jsonl", std::ios::trunc).close();  // as a run killed before step 1 leaves it
  c.corpus_bytes = 1 << 16;
  train(c, false);
  EXPECT_EQ(fs::file_size(dir.path() / "corpus.u16"), uintmax_t{2} << 16);
  EXPECT_EQ(metrics(dir.path()).size(), 4u);
}

// A new run wrote its config over the user's config.json; one that reads as a tally config (a run
// killed before its first step) is still the run's own.
TEST(Train, AUsersConfigJsonIsNotWrittenOver) {
  TempDir dir;
  fs::create_directories(dir.path());
  {
    std::ofstream(dir.path() / "config.json") << "{\"my\": \"notes\"}\n";
  }
  TrainConfig c = tiny(dir.path());
  c.steps = 4;
  expect_error<ValueError>([&] { train(c, false); }, {"holds a config.json that is not a tally training config", "does not write over it"});
  std::ifstream in(dir.path() / "config.json");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "{\"my\": \"notes\"}\n");
  {
    std::ofstream(dir.path() / "config.json") << to_json(c).dump(2);
  }
  EXPECT_NO_THROW(train(c, false));
}

}  // namespace
}  // namespace tally::train
