#include "tally/train/step_profile.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <optional>

#include "tally/error/error.h"
#include "tally/nn/transformer.h"
#include "tally/ops/creation.h"
#include "tally/optim/adam.h"
#include "tally/optim/clip_grad.h"
#include "tally/train/model_setup.h"
#include "tally/train/precision.h"

namespace tally::train {

using nlohmann::json;

json category_json(const CategoryBytes& bytes) {
  json j = json::object();
  for (int c = 0; c < kNumMemoryCategories; ++c) {
    // A training step holds no KV cache (that is decoding's, `tally sample`): no row for it.
    if (static_cast<MemoryCategory>(c) == MemoryCategory::KVCache && bytes[c] == 0) continue;
    j[std::string(memory_category_name(static_cast<MemoryCategory>(c)))] = bytes[c];
  }
  return j;
}

namespace {

CategoryBytes live_bytes(const accounting::MemoryTracker& tracker) {
  CategoryBytes b{};
  for (int c = 0; c < kNumMemoryCategories; ++c) b[c] = tracker.allocated_bytes(static_cast<MemoryCategory>(c));
  return b;
}

}  // namespace

StepProfile::StepProfile() : other_at_start_(tracker_.allocated_bytes(MemoryCategory::Other)) {
  previous_ = ops::set_op_observer(this);
}

StepProfile::~StepProfile() { finish(); }

void StepProfile::finish() {
  if (!watching_) return;
  peak_ = peak();
  peak_total_ = tracker_.peak_allocated_bytes();
  peak_reserved_ = tracker_.peak_reserved_bytes();
  watching_ = false;
  // counter_ is the observer below this one: take both out, leaving what was installed before.
  ops::set_op_observer(previous_);
  counter_.stop();
}

void StepProfile::on_op(std::string_view name, const ops::Cost& cost, double seconds) {
  if (previous_) previous_->on_op(name, cost, seconds);  // the step's ledger (counter_) and any outer one
  json point = {{"op", timeline_.size()}, {"name", std::string(name)}, {"phase", accounting::phase_name(accounting::current_phase())}};
  point.update(category_json(live_bytes(tracker_)));
  timeline_.push_back(std::move(point));
}

// Note [What holds "other"]
// "other" is every tensor that is neither a parameter, a gradient, optimizer state nor kept by a
// graph node: the batch, results used once and dropped, gradients on their way to the
// parameters. The timeline has its live bytes after every op of the step, each op with its phase,
// so its highest point between ops splits exactly into what was live before the step began and
// what the forward, the backward and the optimizer's ops added up to that point (each phase's
// net change: what its ops allocated less what was freed while they ran). The tracked peak can be
// higher still, inside one op (its temporaries).
json StepProfile::other_json() const {
  const std::string other(memory_category_name(MemoryCategory::Other));
  std::map<std::string, int64_t> change, change_at_highest;
  int64_t previous = other_at_start_, highest = other_at_start_;
  for (const json& point : timeline_) {
    const int64_t now = point.at(other).get<int64_t>();
    change[point.at("phase").get<std::string>()] += now - previous;
    previous = now;
    if (now > highest) {
      highest = now;
      change_at_highest = change;
    }
  }
  json j = {{"highest_between_ops", highest}, {"before_the_step", other_at_start_}};
  for (accounting::Phase p : {accounting::Phase::Forward, accounting::Phase::Backward, accounting::Phase::Optimizer}) {
    const std::string name = accounting::phase_name(p);
    j["change_in_" + name] = change_at_highest.contains(name) ? change_at_highest.at(name) : 0;
  }
  return j;
}

CategoryBytes StepProfile::peak() const {
  if (!watching_) return peak_;
  CategoryBytes b{};
  for (int c = 0; c < kNumMemoryCategories; ++c) b[c] = tracker_.peak_allocated_bytes(static_cast<MemoryCategory>(c));
  return b;
}

namespace {

/// What bounds an op: "communication" for a collective (tally/dist), whose time goes to moving
/// bytes between ranks, not through this machine's memory or units; else the roofline's verdict.
const char* op_bound(const accounting::OpTotals& t, const accounting::Roofline& roofline) {
  return t.bytes_sent + t.bytes_received > 0 ? "communication" : roofline.bound(t.arithmetic_intensity());
}

}  // namespace

json StepProfile::ops_json(const accounting::Roofline& roofline) const {
  json out = json::array();
  for (const auto& [key, t] : counter_.by_op()) {
    json op = {{"name", key.first},
               {"phase", accounting::phase_name(key.second)},
               {"calls", t.calls},
               {"flops", t.flops},
               {"bytes", t.bytes_read + t.bytes_written},
               {"seconds", t.seconds},
               {"intensity", t.arithmetic_intensity()},
               {"bound", op_bound(t, roofline)}};
    if (t.bytes_sent + t.bytes_received > 0) op.update({{"bytes_sent", t.bytes_sent}, {"bytes_received", t.bytes_received}});
    out.push_back(std::move(op));
  }
  std::sort(out.begin(), out.end(), [](const json& a, const json& b) { return a["seconds"].get<double>() > b["seconds"].get<double>(); });
  return out;
}

json StepProfile::modules_json() const {
  json out = json::array();
  for (const auto& [key, t] : counter_.by_module())
    out.push_back({{"path", key.first}, {"phase", accounting::phase_name(key.second)}, {"flops", t.flops}, {"seconds", t.seconds}});
  return out;
}

json StepProfile::time_split_json(const accounting::Roofline& roofline) const {
  double compute = 0, memory = 0, communication = 0;
  for (const auto& [key, t] : counter_.by_op()) {
    const std::string_view bound = op_bound(t, roofline);
    (bound == "compute" ? compute : bound == "memory" ? memory : communication) += t.seconds;
  }
  const double total = compute + memory;  // the fraction is of the computing ops' time
  return {{"compute_bound_s", compute},
          {"memory_bound_s", memory},
          {"communication_s", communication},
          {"compute_bound_fraction", total > 0 ? compute / total : 0.0}};
}

StepPrediction predict_step(const TrainConfig& config, const accounting::Roofline& roofline) {
  StepPrediction p;
  std::optional<accounting::FlopCounter> counter;
  {
    Generator gen(0);
    nn::TransformerLM model(config.model(), TensorOptions(kFloat32).device(kMeta), &gen);
    const StepPrecision precision(config, model);
    optim::AdamW optimizer = make_optimizer(model, config);
    const TensorOptions ids = TensorOptions(kInt64).device(kMeta);
    const Tensor x = empty({config.batch_size, config.context_length}, ids), y = empty({config.batch_size, config.context_length}, ids);
    // The loss scaler's unscale (fp16) is left out: it reads values a meta run has not. Clipping
    // is counted as a step that clips runs it (clip_grad_norm_ on meta tensors).
    const auto step = [&] {
      precision.backward(precision.forward([&] { return model.loss(x, y); }));
      nn::utils::clip_grad_norm_(optimizer.parameters(), config.grad_clip > 0 ? config.grad_clip : std::numeric_limits<double>::infinity());
      optimizer.step();
      optimizer.zero_grad();
    };
    // The profiled step is a later one, whose optimizer state already exists through its forward
    // and backward: one step first, off the books, so that the predicted total peak holds the
    // state beside the activations as that step's does (the first step creates it only after
    // the backward has freed them, a peak lower by the state's bytes).
    step();
    // The books start at the step, as a real step's profile does: the model's construction (and
    // bf16-params' conversion, which holds both copies for a moment) is not part of it.
    const accounting::MemoryTracker tracker{Device(kMeta)};
    counter.emplace();
    step();
    for (int c = 0; c < kNumMemoryCategories; ++c) p.peak[c] = tracker.peak_allocated_bytes(static_cast<MemoryCategory>(c));
    p.peak_total = tracker.peak_allocated_bytes();
  }
  p.forward_flops = counter->total_flops(accounting::Phase::Forward);
  p.backward_flops = counter->total_flops(accounting::Phase::Backward);
  p.optimizer_flops = counter->total_flops(accounting::Phase::Optimizer);
  for (const auto& [key, t] : counter->by_op()) {
    const double bytes = static_cast<double>(t.bytes_read + t.bytes_written);
    p.step_seconds += std::max(static_cast<double>(t.flops) / roofline.peak_flops_per_sec, bytes / roofline.bytes_per_sec);
  }
  return p;
}

double median(std::vector<double> v) {
  TALLY_CHECK(!v.empty(), "median of no values");
  const auto half = static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), v.begin() + half, v.end());
  if (v.size() % 2 == 1) return v[v.size() / 2];
  // An even count: the mean of the two middle values, the lower of which is the largest below half.
  return (*std::max_element(v.begin(), v.begin() + half) + v[v.size() / 2]) / 2;
}

double ledger_seconds(const accounting::FlopCounter& ledger) {
  using accounting::Phase;
  return ledger.totals(Phase::Forward).seconds + ledger.totals(Phase::Backward).seconds + ledger.totals(Phase::Optimizer).seconds;
}

StepTime measure_step(const TrainConfig& config, const Tensor& x, const Tensor& y, int steps) {
  Generator gen(static_cast<uint64_t>(config.seed));
  nn::TransformerLM model(config.model(), {}, &gen);
  StepPrecision precision(config, model);
  optim::AdamW optimizer = make_optimizer(model, config);
  std::vector<double> ledger_s, wall_s;
  for (int i = 0; i <= steps; ++i) {
    accounting::FlopCounter ledger;
    const auto t0 = std::chrono::steady_clock::now();
    precision.run([&] { return model.loss(x, y); }, optimizer, config.grad_clip);
    if (i == 0) continue;  // the warm-up: first touches, new oneDNN primitives
    wall_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    ledger_s.push_back(ledger_seconds(ledger));
  }
  return {median(ledger_s), median(wall_s)};
}

}  // namespace tally::train
