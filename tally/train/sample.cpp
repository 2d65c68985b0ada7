#include "tally/train/sample.h"

#include <chrono>

#include "tally/accounting/flop_counter.h"
#include "tally/accounting/memory_tracker.h"
#include "tally/machine/peak_probe.h"
#include "tally/kernels/cpu/parallel.h"
#include "tally/ops/creation.h"

namespace tally::train {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

/// FLOPs and bytes moved of what the ledger holds: generating runs no backward, so all of it is forward.
struct Totals {
  int64_t flops = 0, bytes = 0;
};
Totals totals(const accounting::FlopCounter& counter) {
  const accounting::OpTotals t = counter.totals(accounting::Phase::Forward);
  return {t.flops, t.bytes_read + t.bytes_written};
}

json phase_json(Totals t, double seconds, int64_t tokens) {
  return {{"tokens", tokens},
          {"flops", t.flops},
          {"bytes", t.bytes},
          {"seconds", seconds},
          {"tokens_per_s", seconds > 0 ? static_cast<double>(tokens) / seconds : 0.0},
          {"flops_per_byte", t.bytes > 0 ? static_cast<double>(t.flops) / static_cast<double>(t.bytes) : 0.0}};
}

}  // namespace

std::vector<int64_t> prompt_tokens(const SampleOptions& options, int64_t vocab_size) {
  std::vector<int64_t> ids = options.prompt_ids;
  if (ids.empty())
    for (unsigned char c : options.prompt) ids.push_back(c);
  TALLY_CHECK(!ids.empty(), "sample: the prompt is empty; give --prompt TEXT (its bytes are the tokens) or --prompt-ids");
  for (size_t i = 0; i < ids.size(); ++i)
    TALLY_CHECK(ids[i] >= 0 && ids[i] < vocab_size, "sample: prompt token ", i, " is ", ids[i], ", outside the model's vocabulary of ",
                vocab_size, options.prompt_ids.empty() ? " (a text prompt's bytes need a vocabulary of 256; give --prompt-ids)" : "");
  return ids;
}

SampleResult sample(const TrainedModel& trained, const SampleOptions& options, const std::function<void(int64_t, const Tensor&)>& on_token) {
  TALLY_CHECK(options.num_samples >= 1, "sample: num_samples must be >= 1, got ", options.num_samples);
  TALLY_CHECK(options.max_new_tokens >= 1, "sample: max_new_tokens must be >= 1, got ", options.max_new_tokens);
  nn::TransformerLM& model = *trained.model;
  const std::vector<int64_t> ids = prompt_tokens(options, model.config().vocab_size);
  Tensor prompt = empty({1, static_cast<int64_t>(ids.size())}, TensorOptions(kInt64));
  std::copy(ids.begin(), ids.end(), prompt.data_ptr<int64_t>());
  prompt = prompt.expand({options.num_samples, prompt.size(1)}).contiguous();

  Generator gen(options.seed);
  nn::GenerationOptions g;
  g.max_new_tokens = options.max_new_tokens;
  g.sampling = options.sampling;
  accounting::MemoryTracker tracker;
  accounting::FlopCounter counter;
  Totals at_prefill;
  const auto start = Clock::now();
  auto prefilled = start;
  g.on_token = [&](int64_t i, const Tensor& next) {
    if (i == 0) prefilled = Clock::now(), at_prefill = totals(counter);
    if (on_token) on_token(i, next);
  };
  SampleResult r;
  if (options.keep_prompt_logits)  // every sample shares the prompt: the first row is its logits
    g.on_prompt_logits = [&](const Tensor& logits) { r.prompt_logits = logits.select(0, 0).to(kFloat32).contiguous(); };
  r.ids = model.generate(prompt, g, &gen);
  const auto end = Clock::now();
  r.prompt_tokens = prompt.size(1);

  const Totals all = totals(counter);
  const int64_t b = options.num_samples, context = model.config().context_length;
  const Totals decode{all.flops - at_prefill.flops, all.bytes - at_prefill.bytes};
  int64_t weight_bytes = 0;
  for (const Tensor& p : model.parameters()) weight_bytes += p.nbytes();
  json& books = r.books;
  books["batch"] = b;
  books["prefill"] = phase_json(at_prefill, seconds_between(start, prefilled), b * std::min(r.prompt_tokens, context));
  books["decode"] = phase_json(decode, seconds_between(prefilled, end), b * (options.max_new_tokens - 1));
  books["decode"]["steps"] = options.max_new_tokens - 1;
  books["decode"]["window_rerun"] = r.prompt_tokens + options.max_new_tokens - 1 > context;
  books["kv_cache_bytes"] = tracker.peak_allocated_bytes(MemoryCategory::KVCache);
  books["weights_bytes"] = weight_bytes;
  books["threads"] = kernels::num_threads();
  if (options.measure_machine && options.max_new_tokens > 1) {
    // Each decode step reads every weight once (and the cache), for b tokens: at the machine's
    // read bandwidth, no decoder runs faster than bandwidth / weight bytes steps a second.
    const double bandwidth = machine::measure_stream(int64_t{64} << 20, kernels::num_threads(), 3).read_bytes_per_sec;
    const double peak = machine::measure_fma_peak_flops(kernels::num_threads(), 0.2);
    const double steps_per_s = static_cast<double>(options.max_new_tokens - 1) / books["decode"]["seconds"].get<double>();
    const double bytes_per_step = static_cast<double>(decode.bytes) / static_cast<double>(options.max_new_tokens - 1);
    const double intensity = books["decode"]["flops_per_byte"].get<double>();
    books["machine"] = {{"read_bytes_per_s", bandwidth}, {"fma_peak_flops", peak}, {"ridge_flops_per_byte", peak / bandwidth}};
    books["decode"]["bound"] = intensity < peak / bandwidth ? "memory" : "compute";
    books["decode"]["achieved_bytes_per_s"] = bytes_per_step * steps_per_s;
    books["decode"]["weights_bound_tokens_per_s"] = bandwidth / static_cast<double>(weight_bytes) * static_cast<double>(b);
    books["decode"]["of_weights_bound"] = steps_per_s * static_cast<double>(weight_bytes) / bandwidth;
  }
  return r;
}

namespace {

/// The length of the well-formed UTF-8 sequence at b[i] (1–4), or 0 when it is not one.
size_t utf8_sequence(const std::vector<unsigned char>& b, size_t i) {
  const unsigned char c = b[i];
  size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
  if (n == 0 || i + n > b.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((b[i + k] & 0xC0) != 0x80) return 0;
  uint32_t cp = n == 1 ? c : c & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (b[i + k] & 0x3F);
  static constexpr uint32_t kLeast[] = {0, 0, 0x80, 0x800, 0x10000};  // overlong forms are not well-formed
  if (cp < kLeast[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

}  // namespace

std::string tokens_text(const std::vector<int64_t>& ids, int64_t vocab_size) {
  std::string text;
  if (vocab_size > 256) {
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i) text += ' ';
      text += std::to_string(ids[i]);
    }
    return text;
  }
  // A byte model writes any bytes: what is not well-formed UTF-8, and control characters other
  // than newline and tab (which could drive a terminal), print as U+FFFD, as Python's
  // errors="replace" does, so the output is always text.
  std::vector<unsigned char> bytes(ids.begin(), ids.end());
  for (size_t i = 0; i < bytes.size();) {
    const size_t n = utf8_sequence(bytes, i);
    const bool control = n == 1 && ((bytes[i] < 0x20 && bytes[i] != '\n' && bytes[i] != '\t') || bytes[i] == 0x7F);
    if (n == 0 || control) {
      text += "\xEF\xBF\xBD";
      i += 1;
    } else {
      text.append(reinterpret_cast<const char*>(&bytes[i]), n);
      i += n;
    }
  }
  return text;
}

std::string tokens_text(const Tensor& ids, int64_t vocab_size) {
  const Tensor flat = ids.contiguous().reshape({-1});
  const int64_t* p = flat.data_ptr<int64_t>();
  return tokens_text(std::vector<int64_t>(p, p + flat.numel()), vocab_size);
}

}  // namespace tally::train
