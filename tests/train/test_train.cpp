// tally/train: the config table, the built-in corpus, checkpoints and bit-exact resume.

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "tally/error/error.h"
#include "tally/io/safetensors.h"
#include "tally/tally.h"
#include "tally/train/checkpoint.h"
#include "tally/train/config.h"
#include "tally/train/corpus.h"
#include "tally/train/trainer.h"
#include "expect_error.h"
#include "temp_dir.h"

namespace tally::train {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using ::tally::test::TempDir;

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
/// bit for bit the same.
void expect_stop_and_resume_bit_exact(const TrainConfig& c) {
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
  std::vector<std::string> notes;
  TrainHooks quiet;
  quiet.note = [&](const std::string& n) { notes.push_back(n); };
  const TrainResult rest = train(at("split"), true, quiet);
  EXPECT_EQ(rest.first_step, 6);
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
}

}  // namespace
}  // namespace tally::train
