// `tally train`: the main job. Settings come from the defaults, then a JSON file (--config), then
// flags, one table for all three (tally/train/config.cpp), validated once merged. On a terminal a
// progress bar redraws in place; otherwise a plain line every log_interval steps. SIGINT or
// SIGTERM finishes the step, saves a checkpoint and exits 0; a second one exits at once, leaving
// the last committed checkpoint as it was (saves are atomic). `--resume` on a run already at its
// last step says so and exits 0, writing nothing.

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "cli/report/format.h"
#include "tally/core/allocator.h"
#include "tally/dist/process_group.h"
#include "tally/error/error.h"
#include "tally/train/sample.h"
#include "tally/train/trainer.h"

namespace tally::cli {

namespace {

using nlohmann::json;

std::atomic<bool> g_stop{false};

extern "C" void on_signal(int) {
  if (g_stop.exchange(true)) _exit(130);  // the second signal: stop now (async-signal-safe)
  const char msg[] = "\ntally train: stopping after this step (a second signal stops at once)\n";
  [[maybe_unused]] const ssize_t n = write(STDERR_FILENO, msg, sizeof msg - 1);
}

/// "20261123-174501": a run directory's default name, in UTC.
std::string utc_stamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  // The first signal only asks for a stop: system calls it interrupts carry on where the kernel
  // can restart them (SA_RESTART), and the I/O code retries the rest (tally/io/retry.h).
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);  // SIGXFSZ is ignored by main, for every command
  // mpirun forwards SIGUSR1 to every rank and goes on waiting for them; a SIGTERM it receives it
  // forwards and then ends the job itself (README, "Data parallel, over MPI").
  sigaction(SIGUSR1, &sa, nullptr);
}

std::string duration_text(double s) {
  if (!(s >= 0) || s > 1e7) return "--:--";
  const auto t = static_cast<int64_t>(s + 0.5);
  return t >= 3600 ? fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60) : fmt::format("{}:{:02}", t / 60, t % 60);
}

/// The progress line: a bar on a terminal (redrawn), plain text otherwise.
void print_step(const train::StepReport& r, bool tty, int64_t log_interval) {
  const double eta = r.elapsed_s / static_cast<double>(r.step) * static_cast<double>(r.steps - r.step);
  const std::string val = r.val_loss ? fmt::format("  val {:.4f}", *r.val_loss) : "";
  const std::string figures = fmt::format("step {}/{}  loss {:.4f}{}  {:.0f} tok/s  MFU {:.1f}%  ETA {}", r.step, r.steps, r.loss, val,
                                          r.tokens_per_s, 100 * r.mfu, duration_text(eta));
  if (tty) {
    constexpr int kWidth = 24;
    const int filled = static_cast<int>(kWidth * r.step / std::max<int64_t>(r.steps, 1));
    fmt::print("\r[{}{}] {}\x1b[K", std::string(static_cast<size_t>(filled), '#'), std::string(static_cast<size_t>(kWidth - filled), '.'),
               figures);
    if (r.step == r.steps) fmt::print("\n");
    std::fflush(stdout);
  } else if (r.step % log_interval == 0 || r.step == r.steps || r.val_loss) {
    fmt::print("{}\n", figures);
    std::fflush(stdout);
  }
}

using report::si;
std::string bytes(const json& j) { return report::bytes_text(j.get<double>()); }

double num(const json& j, const char* a, const char* b) { return j.at(a).at(b).get<double>(); }

/// The precision line, and for a mixed-precision run what it saved against float32.
void print_precision(const json& s) {
  if (!s.contains("precision")) return;
  const json& p = s.at("precision");
  std::string line = p.at("name").get<std::string>();
  if (p.contains("final_loss_scale"))
    line += fmt::format(", loss scale {} at the end, {} step(s) skipped", p.at("final_loss_scale").get<double>(), p.at("skipped_steps").get<int64_t>());
  fmt::print("precision       {}\n", line);
  if (!p.contains("vs_float32")) return;
  const json& mem = p.at("vs_float32").at("memory");
  const json& time = p.at("vs_float32").at("step_time");
  const double peak = mem.at("peak_total").get<double>(), fp32_peak = mem.at("float32_peak_total").get<double>();
  fmt::print("  vs float32    peak memory {} against {} ({:+.0f}%); step {:.1f} ms against {:.1f} ms ({:.2f}x), ledger {:.1f} ms against {:.1f} ms\n",
             bytes(mem.at("peak_total")), bytes(mem.at("float32_peak_total")), 100 * (peak / fp32_peak - 1),
             1e3 * time.at("wall_s").get<double>(), 1e3 * time.at("float32_wall_s").get<double>(),
             time.at("float32_wall_s").get<double>() / time.at("wall_s").get<double>(), 1e3 * time.at("ledger_s").get<double>(),
             1e3 * time.at("float32_ledger_s").get<double>());
  std::string by_category;
  for (const auto& [cat, value] : mem.at("peak").items()) {
    const double f = mem.at("float32_peak").value(cat, 0.0), v = value.get<double>();
    if (f != v) by_category += fmt::format("  {} {} ({})", cat, bytes(value), report::bytes_text(f));
  }
  if (!by_category.empty()) fmt::print("  by category  {}  (float32 in brackets)\n", by_category);
}

/// The memory table: each category's own peak over a step, in the order a step's bytes come to
/// life; the simultaneous peak of them all, which is below their sum because they peak at
/// different moments; and what the process's resident set holds besides the tensors.
void print_memory(const json& mem) {
  fmt::print("memory          {:<16} {:>12} {:>12}   (each category's own peak over a step)\n", "category", "predicted", "tracked");
  double sum = 0;
  for (int c = 0; c < kNumMemoryCategories; ++c) {
    const std::string cat(memory_category_name(static_cast<MemoryCategory>(c)));
    if (!mem.at("predicted").contains(cat)) continue;
    sum += mem.at("predicted").at(cat).get<double>();
    fmt::print("                {:<16} {:>12} {:>12}{}\n", cat, bytes(mem.at("predicted").at(cat)),
               mem.at("tracked_peak").contains(cat) ? bytes(mem.at("tracked_peak").at(cat)) : "-",
               cat == "other" ? "   (tensors no graph node keeps: the batch, the loss, gradients on their way to the "
                                "parameters, outputs used once)"
                              : "");
    if (cat == "other" && mem.contains("other") && mem.at("other").contains("highest_between_ops")) {
      const json& o = mem.at("other");  // Note [What holds "other"] in tally/train/step_profile.cpp
      const auto change = [&](const char* key) { return report::signed_bytes_text(o.at(key).get<double>()); };
      fmt::print("                  its highest between ops, {} = {} live before the step, {} over the forward, {} over the "
                 "backward, {} over the optimizer\n",
                 bytes(o.at("highest_between_ops")), bytes(o.at("before_the_step")), change("change_in_forward"),
                 change("change_in_backward"), change("change_in_optimizer"));
    }
  }
  fmt::print("                {:<16} {:>12} {:>12}   (the simultaneous peak; the categories' own peaks add up to {})\n",
             "all at once", bytes(mem.at("predicted_peak_total")), bytes(mem.at("tracked_peak_total")), report::bytes_text(sum));
  fmt::print("                {:<16} {:>12} {:>12}   (the caching allocator's peak: live tensors, size-class rounding, freed "
             "blocks kept for reuse)\n",
             "reserved", "", bytes(mem.at("tracked_peak_reserved")));
  if (!mem.contains("process_at_end")) return;
  const json& p = mem.at("process_at_end");
  fmt::print("process RSS     peak {}; at the end {} = {} anonymous (tensors {} live, {} in the allocator's cache, with the heap and "
             "stacks) + {} of files (code, libraries, the token data)\n",
             bytes(mem.at("process_peak_rss")), bytes(p.at("rss")), bytes(p.at("anonymous")), bytes(p.at("tensors_live")),
             bytes(p.at("allocator_cached")), bytes(p.at("files")));
}

void print_summary(const json& s) {
  const json& run = s.at("run");
  const json& m = s.at("machine");
  fmt::print("\n== {} steps, {} tokens in {}: {:.0f} tokens/s ({:.0f} in the steps alone, without the checkpoints' saves) ==\n",
             run.at("steps").get<int64_t>(), run.at("tokens").get<int64_t>(), duration_text(run.at("seconds").get<double>()),
             run.at("tokens_per_s").get<double>(), run.value("step_tokens_per_s", 0.0));
  fmt::print("loss            {:.4f} -> {:.4f} nats/token (the corpus's unigram entropy: {:.4f})\n", run.at("first_loss").get<double>(),
             run.at("final_loss").get<double>(), run.at("unigram_entropy").get<double>());
  if (const json v = s.value("validation", json::object()); v.contains("last_loss"))
    fmt::print("validation      {:.4f} at the end, best {:.4f} at step {} (kept as {}); {} tokens of {} every {} steps\n",
               v.at("last_loss").get<double>(), v.at("best_loss").get<double>(), v.at("best_step").get<int64_t>(),
               v.at("best_checkpoint").get<std::string>(), v.at("tokens_per_evaluation").get<int64_t>(), v.at("data").get<std::string>(),
               v.at("eval_interval").get<int64_t>());
  fmt::print("parameters      {}\n", s.at("parameters").get<int64_t>());
  if (const json dp = s.value("data_parallel", json::object()); !dp.empty())
    fmt::print("data parallel   {} ranks ({}), {} reduction, {} micro-batches a step; per rank and step {} sent and received, "
               "communication {} (the link's α-β model: {}) of which {} exposed (medians); link {} latency, {}{}\n",
               dp.at("world_size").get<int>(), dp.at("backend").get<std::string>(), dp.at("reduce").get<std::string>(),
               dp.at("micro_batches_per_step").get<int64_t>(), bytes(dp.at("bytes_per_step")),
               report::seconds_text(dp.at("comm_s").get<double>()), report::seconds_text(dp.value("comm_predicted_s", 0.0)),
               report::seconds_text(dp.at("exposed_comm_s").get<double>()), report::seconds_text(dp.at("link").at("latency_s").get<double>()),
               si(dp.at("link").at("bytes_per_s").get<double>(), "B/s"),
               dp.value("zero", 0) == 1 ? "; the optimizer's state sharded over the ranks (ZeRO-1)" : "");
  const json& f = s.at("flops_per_token");
  fmt::print("FLOPs/token     forward {} predicted, {} measured; backward {} predicted, {} measured\n",
             si(num(f, "predicted", "forward"), "FLOP"), si(num(f, "measured", "forward"), "FLOP"),
             si(num(f, "predicted", "backward"), "FLOP"), si(num(f, "measured", "backward"), "FLOP"));
  // Note [MFU and HFU] in tally/train/summary.h.
  fmt::print("peak            {} promised ({}, {} at {:.2f} GHz, {}), {} measured at the end of the run\n",
             si(m.at("peak_flops_promised").get<double>(), "FLOP/s"), m.value("peak_instruction", std::string("float32 FMA")),
             m.at("threads").get<int64_t>() == 1 ? "1 thread" : fmt::format("{} threads", m.at("threads").get<int64_t>()),
             m.value("clock_ghz", 0.0), m.value("clock_source", std::string("clock not recorded")),
             si(m.at("peak_flops_measured").get<double>(), "FLOP/s"));
  for (const char* kind : {"mfu", "hfu"}) {
    const json& u = s.at(kind);
    fmt::print("{}             {:.1f}% of the promised peak, {:.1f}% of the measured one: {} per token, {}\n",
               kind == std::string("mfu") ? "MFU" : "HFU", 100 * u.at("promised").get<double>(), 100 * u.at("measured").get<double>(),
               si(u.at("flops_per_token").get<double>(), "FLOP"), u.at("formula").get<std::string>());
  }
  fmt::print("step time       {:.1f} ms predicted from the roofs, {:.1f} ms measured (median)\n",
             1e3 * num(s, "step_time", "predicted_s"), 1e3 * num(s, "step_time", "measured_s"));
  print_memory(s.at("memory"));
  if (const json& split = s.at("time_split"); split.contains("compute_bound_s"))
    fmt::print("time split      {:.0f}% in compute-bound ops, {:.0f}% in memory-bound ops{}\n", 100 * split.at("compute_bound_fraction").get<double>(),
               100 * (1 - split.at("compute_bound_fraction").get<double>()),
               split.value("communication_s", 0.0) > 0
                   ? fmt::format(" (besides {} in collectives)", report::seconds_text(split.at("communication_s").get<double>()))
                   : "");
  print_precision(s);
  fmt::print("costliest ops  ");
  for (const json& op : s.at("top_ops"))
    fmt::print(" {} ({}, {:.1f} ms)", op.at("name").get<std::string>(), op.at("phase").get<std::string>(), 1e3 * op.at("seconds").get<double>());
  fmt::print("\n");
}

/// What the model writes now: a few lines from its last checkpoint, and how to get more.
void print_short_sample(const train::TrainConfig& config) {
  std::vector<std::string> notes;
  const train::TrainedModel trained = train::load_trained_model(config.out, "", notes);
  train::SampleOptions o;
  o.max_new_tokens = 160;
  o.measure_machine = false;
  const train::SampleResult r = train::sample(trained, o);
  const int64_t vocab = trained.model->config().vocab_size;
  std::string text = train::tokens_text(r.ids.narrow(1, r.prompt_tokens, r.ids.size(1) - r.prompt_tokens), vocab);
  std::string indented;
  for (char c : text) indented += c == '\n' ? std::string("\n                ") : std::string(1, c);
  fmt::print("sample          {}\n                (`tally sample {}` for more, with the books of decoding)\n", indented, config.out);
}

/// The settings, layered: the defaults (or, resuming, the run's own config.json), then --config,
/// then the flags; each value is checked as it is laid on and the merged whole validated once, so
/// that a flag may fix what a file alone would not allow (warmup_steps against steps).
train::TrainConfig settle_config(bool resume, const std::string& out, const std::string& config_file, const json& flags) {
  train::TrainConfig config;
  // Resuming: the run's own config.json is the base, so `--resume --out DIR` needs nothing else.
  if (resume) {
    const std::string saved = out + "/config.json";
    std::error_code ec;
    if (std::filesystem::exists(saved, ec)) {
      train::overlay_json_file(config, saved);
    } else {
      TALLY_CHECK(std::filesystem::is_directory(out, ec), "cannot resume ", out, ": no such run directory");
      // Without it the defaults would stand in for the run's settings, and the checkpoint's
      // comparison would list every field the run changed instead of saying what is wrong.
      TALLY_CHECK(!config_file.empty(), "cannot resume ", out, ": ", saved,
                  " is missing (resuming reads the run's settings from it): restore it, or pass the run's settings with --config");
    }
  }
  if (!config_file.empty()) train::overlay_json_file(config, config_file);
  train::overlay_json(config, flags, "flags");
  // A new run records its data files by absolute path, so that `--resume` works from any directory.
  if (!resume)
    for (std::string* path : {&config.data, &config.val_data, &config.init_from})
      if (!path->empty()) *path = std::filesystem::absolute(*path).lexically_normal().string();
  config.validate();
  // A new run writes its merged settings to <out>/config.json: over the --config file itself,
  // when that is where it lives (`--config DIR/config.json --out DIR` replaced it without a word).
  std::error_code ec;
  TALLY_CHECK(resume || config_file.empty() || !std::filesystem::equivalent(config_file, std::filesystem::path(config.out) / "config.json", ec),
              "--config ", config_file, " is the run directory's own config.json, which a new run writes over: copy it out of ",
              config.out, " first, or pass --resume to continue that run");
  return config;
}

/// What `--resume` says of a run that is already at (or past) the steps asked for.
std::string nothing_to_do_text(const train::TrainConfig& config, int64_t at) {
  if (at == config.steps)
    return fmt::format("run in {} is already at step {} of {}: nothing to do; raise --steps to train further", config.out, at, config.steps);
  return fmt::format("run in {} is already at step {}, past --steps {}: nothing to do; raise --steps above {} to train further",
                     config.out, at, config.steps, at);
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "train a GPT-style model (defaults: a small byte-level model on the built-in corpus, about a minute)");
  auto config_file = std::make_shared<std::string>();
  auto resume = std::make_shared<bool>(false);
  auto flags = std::make_shared<std::map<std::string, std::string>>();
  cmd->add_option("--config", *config_file, "JSON file of settings (the keys below, without --; unknown keys are refused)");
  cmd->add_flag("--resume", *resume, "continue from the newest readable checkpoint in --out");
  auto no_memory_check = std::make_shared<bool>(false);
  cmd->add_flag("--no-memory-check", *no_memory_check,
                "start even when the run's predicted memory exceeds what this process may use (by default it is refused)");
  const json defaults = train::to_json(train::TrainConfig{});
  for (const auto& f : train::config_fields()) {
    std::string flag = "--" + f.name;
    std::replace(flag.begin(), flag.end(), '_', '-');
    const json& d = defaults.at(f.name);
    const std::string shown = d.is_string() ? (d.get<std::string>().empty() ? "none" : d.get<std::string>()) : d.dump();
    std::string help = f.help;
    if (!f.choices.empty()) {
      help += ": one of ";
      for (size_t i = 0; i < f.choices.size(); ++i) help += (i ? ", " : "") + f.choices[i];
    }
    if (help.find("(default:") == std::string::npos) help += " (default: " + shown + ")";  // some name their own
    static constexpr const char* kTypeNames[] = {"INT", "NUMBER", "TEXT", "BOOL"};
    CLI::Option* option =
        cmd->add_option_function<std::string>(flag, [flags, name = f.name](const std::string& v) { (*flags)[name] = v; }, help)
            ->type_name(kTypeNames[f.kind]);
    if (f.testing_only) option->group("");  // CLI11 lists no option of the nameless group
  }
  cmd->callback([=] {
    json overrides = json::object();
    for (const auto& [name, text] : *flags) overrides[name] = train::parse_field_text(name, text);
    const std::string out_flag = overrides.contains("out") ? overrides["out"].get<std::string>() : "";
    TALLY_CHECK(!*resume || !out_flag.empty(), "--resume needs --out RUN_DIR, the run to continue");
    train::TrainConfig config = settle_config(*resume, out_flag, *config_file, overrides);
    // Under mpirun every rank must name one run directory: a time stamp each picks could differ.
    TALLY_CHECK(!config.out.empty() || !dist::launched_by_mpirun(), "under mpirun, name the run directory with --out (every rank writes to it ",
                "through rank 0)");
    if (config.out.empty()) config.out = "runs/" + utc_stamp();
    refuse_foreign_report(config.out);  // the run ends by writing its report there
    install_signal_handlers();
    const bool tty = isatty(STDOUT_FILENO) != 0;
    train::TrainHooks hooks;
    hooks.stop = &g_stop;
    hooks.check_memory = !*no_memory_check;
    hooks.on_step = [&](const train::StepReport& r) { print_step(r, tty, config.log_interval); };
    hooks.note = [&](const std::string& line) {
      if (tty) fmt::print("\r\x1b[K");
      fmt::print("{}\n", line);
      std::fflush(stdout);
    };
    // Under mpirun, rank 0 speaks for the job; a rank that fails ends every rank at once, so that
    // none waits for it in a collective.
    dist::ProcessGroup& group = dist::world();
    const bool speaks = group.rank() == 0;
    if (!speaks) hooks.on_step = nullptr, hooks.note = nullptr;
    const auto model = config.model();
    if (speaks)
      fmt::print("tally train: {} layers, d_model {}, {} heads, context {}, batch {}, {} steps -> {}\n", model.num_layers,
                 model.d_model, model.num_heads, model.context_length, config.batch_size, config.steps, config.out);
    train::TrainResult result;
    try {
      result = train::train(config, *resume, hooks);
    } catch (const std::exception& e) {
      if (group.size() == 1) throw;
      std::fprintf(stderr, "tally: error on rank %d of %d: %s\n", group.rank(), group.size(), e.what());
      std::fflush(stderr);
      group.abort(1);
    }
    if (!speaks) return;
    if (result.nothing_to_do) {  // exit 0, as a finished loop does: the run is where it was asked to end
      fmt::print("{}\n", nothing_to_do_text(config, result.last_step));
      std::error_code ec;
      if (!std::filesystem::exists(std::filesystem::path(config.out) / "summary.json", ec))
        fmt::print("its summary.json is missing (the run was stopped after its last checkpoint, before its books were written): "
                   "metrics.jsonl and the checkpoints are whole, and `tally report {}` draws the run without the books\n",
                   config.out);
      return;
    }
    if (result.interrupted) fmt::print("\nstopped at step {} by a signal; `tally train --resume --out {}` continues\n", result.last_step, config.out);
    print_summary(result.summary);
    fmt::print("\nrun directory   {}  (config.json, metrics.jsonl, summary.json, checkpoints/{})\n", config.out,
               config.data.empty() ? ", corpus.u16" : "");
    fmt::print("report          {}  (open it in a browser; `tally report {}` redraws it)\n", write_report(config.out).string(), config.out);
    if (!result.interrupted) print_short_sample(config);
  });
}

}  // namespace tally::cli
