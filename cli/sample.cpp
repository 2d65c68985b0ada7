// `tally sample RUN_DIR`: a trained model continues a prompt, and the decoding's books are
// printed: prefill against decode, and the decode's bytes/s against the measured bandwidth.

#include <fmt/core.h>
#include <omp.h>

#include <cstdio>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "cli/report/format.h"
#include "tally/io/safetensors.h"
#include "tally/train/sample.h"

namespace tally::cli {

namespace {

using nlohmann::json;
using report::bytes_text;
using report::si;

struct SampleArgs {
  std::string run_dir, checkpoint, prompt_ids, logits_out;
  train::SampleOptions options;
  int threads = 0;
  bool json_out = false;
};

std::vector<int64_t> parse_ids(const std::string& text) {
  std::vector<int64_t> ids;
  std::istringstream in(text);
  std::string word;
  while (in >> word) {
    try {
      size_t used = 0;
      ids.push_back(std::stoll(word, &used));
      TALLY_CHECK(used == word.size(), "");
    } catch (const std::exception&) {
      TALLY_CHECK(false, "--prompt-ids: '", word, "' is not a token id (give integers separated by spaces)");
    }
  }
  return ids;
}

void print_phase(const char* name, const json& p, const char* note) {
  fmt::print("{:<9} {:>6} tokens  {:>12}  {:>12} moved  {:>7.1f} ms  {:>9.1f} tok/s  {:.2f} FLOP/byte{}\n", name,
             p.at("tokens").get<int64_t>(), report::flops_text(p.at("flops").get<double>()), bytes_text(p.at("bytes").get<double>()),
             1e3 * p.at("seconds").get<double>(), p.at("tokens_per_s").get<double>(), p.at("flops_per_byte").get<double>(), note);
}

void print_books(const json& b) {
  fmt::print("\nbooks of decoding (batch {}, {} threads)\n", b.at("batch").get<int64_t>(), b.at("threads").get<int64_t>());
  print_phase("prefill", b.at("prefill"), "   (the prompt, one forward over all its positions)");
  const json& d = b.at("decode");
  print_phase("decode", d,
              d.at("window_rerun").get<bool>() ? "   (past the context, each step runs the whole window again)" : "   (one position a step, over the KV cache)");
  fmt::print("kv cache  {}   weights {}\n", bytes_text(b.at("kv_cache_bytes").get<double>()), bytes_text(b.at("weights_bytes").get<double>()));
  if (!b.contains("machine")) return;
  const json& m = b.at("machine");
  fmt::print("roofline  decode at {:.2f} FLOP/byte against a ridge of {:.1f} ({} FMA peak / {} read bandwidth, measured): {}-bound\n",
             d.at("flops_per_byte").get<double>(), m.at("ridge_flops_per_byte").get<double>(),
             si(m.at("fma_peak_flops").get<double>(), "FLOP/s"), si(m.at("read_bytes_per_s").get<double>(), "B/s"),
             d.at("bound").get<std::string>());
  fmt::print("          decode moved {} (the ledger's bytes over its time); reading the weights once a step at the measured "
             "bandwidth allows {:.1f} tok/s: {:.0f}% of that bound\n",
             si(d.at("achieved_bytes_per_s").get<double>(), "B/s"), d.at("weights_bound_tokens_per_s").get<double>(),
             100 * d.at("of_weights_bound").get<double>());
}

// The prompt's logits as safetensors: "logits" [T, vocab] float32 and "ids" [T] int64 (the
// positions they score), which numpy reads with docs/python.md's loader.
void write_logits(const std::string& path, const train::SampleResult& r, const train::TrainedModel& trained) {
  const int64_t T = r.prompt_logits.size(0);
  const Tensor ids = r.ids.select(0, 0).narrow(0, r.prompt_tokens - T, T).contiguous();
  StateDict tensors;
  tensors.insert("logits", r.prompt_logits);
  tensors.insert("ids", ids);
  io::save_safetensors(path, tensors, {{"tally.checkpoint", trained.checkpoint.string()}, {"tally.step", std::to_string(trained.step)}});
  std::fprintf(stderr, "tally sample: wrote the logits of the prompt's %lld positions to %s\n", static_cast<long long>(T), path.c_str());
}

void run_sample(SampleArgs& a) {
  // Refused before the model is loaded or any text printed, so that a refusal costs nothing.
  if (!a.logits_out.empty()) refuse_existing_output(a.logits_out, "sample", "give another --logits-out");
  a.options.keep_prompt_logits = !a.logits_out.empty();
  if (a.threads > 0) omp_set_num_threads(a.threads);
  if (!a.prompt_ids.empty()) a.options.prompt_ids = parse_ids(a.prompt_ids);
  std::vector<std::string> notes;
  const train::TrainedModel trained = train::load_trained_model(a.run_dir, a.checkpoint, notes);
  for (const std::string& n : notes) std::fprintf(stderr, "tally sample: %s\n", n.c_str());
  const int64_t vocab = trained.model->config().vocab_size;
  // One sequence streams as it is decoded; several are printed each whole at the end.
  const bool stream = a.options.num_samples == 1 && !a.json_out;
  auto on_token = [&](int64_t, const Tensor& next) {
    if (!stream) return;
    fmt::print("{}{}", vocab > 256 ? " " : "", train::tokens_text(next, vocab));
    std::fflush(stdout);
  };
  if (stream) {
    fmt::print("{}", train::tokens_text(train::prompt_tokens(a.options, vocab), vocab));
    std::fflush(stdout);
  }
  const train::SampleResult r = train::sample(trained, a.options, on_token);
  if (!a.logits_out.empty()) write_logits(a.logits_out, r, trained);
  if (a.json_out) {
    json out = {{"run_dir", a.run_dir}, {"checkpoint", trained.checkpoint.string()}, {"step", trained.step}, {"books", r.books}};
    for (int64_t s = 0; s < r.ids.size(0); ++s) {
      const Tensor row = r.ids.select(0, s).contiguous();
      out["samples"].push_back(train::tokens_text(row, vocab));
      out["sample_ids"].push_back(std::vector<int64_t>(row.data_ptr<int64_t>(), row.data_ptr<int64_t>() + row.numel()));
    }
    fmt::print("{}\n", out.dump(2));
    return;
  }
  if (stream) fmt::print("\n");
  else
    for (int64_t s = 0; s < r.ids.size(0); ++s) fmt::print("--- sample {} ---\n{}\n", s + 1, train::tokens_text(r.ids.select(0, s), vocab));
  fmt::print("\n(step {} of {}, seed {})\n", trained.step, trained.checkpoint.string(), a.options.seed);
  print_books(r.books);
}

}  // namespace

void add_sample_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("sample", "Continue a prompt with a trained run's model, and print the books of decoding");
  auto a = std::make_shared<SampleArgs>();
  cmd->add_option("run_dir", a->run_dir, "a run directory `tally train` wrote")->required();
  cmd->add_option("--checkpoint", a->checkpoint, "a checkpoint file (default: the run's newest that verifies)");
  cmd->add_option("--prompt", a->options.prompt, "the text to continue; its bytes are the tokens")->capture_default_str();
  cmd->add_option("--prompt-ids", a->prompt_ids, "the prompt as token ids separated by spaces (for vocabularies other than bytes)");
  cmd->add_option("--max-new-tokens", a->options.max_new_tokens, "tokens to generate")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--temperature", a->options.sampling.temperature, "0: greedy; otherwise the logits are divided by it")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--top-k", a->options.sampling.top_k, "draw from the k most likely tokens (0: all)")->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--top-p", a->options.sampling.top_p, "draw from the fewest most likely tokens whose probability reaches p")
      ->capture_default_str()
      ->check(CLI::Range(1e-9, 1.0));
  cmd->add_option("--seed", a->options.seed, "the same seed gives the same text")->capture_default_str();
  cmd->add_option("--num-samples", a->options.num_samples, "sequences, decoded together as one batch")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--threads", a->threads, "threads (0: every core)")->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_flag("--json", a->json_out, "print the samples and the books as JSON");
  cmd->add_option("--logits-out", a->logits_out,
                  "write the prompt's logits to this safetensors file (\"logits\" [T, vocab] float32, \"ids\" [T]): "
                  "to compare the model with another framework");
  cmd->callback([a] { run_sample(*a); });
}

}  // namespace tally::cli
