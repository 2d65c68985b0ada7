// amp::GradScaler against PyTorch 1.13's GradScaler (tests/amp/grad_scaler_reference.py) on
// scripted gradient sequences with infs and NaNs: the same scale and skip sequence, the same
// parameters; and its errors and state dict.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "expect_error.h"
#include "tally/amp/grad_scaler.h"
#include "tally/tally.h"
#include "temp_dir.h"

namespace tally::amp {
namespace {

using nlohmann::json;

/// A script: two parameters, `steps` steps of unscaled gradients, with an inf, a -inf or a NaN
/// at the steps `bad` lists (in a parameter chosen by the step).
json make_script(GradScalerOptions o, int steps, const std::vector<int>& bad) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  json grads = json::array();
  for (int t = 0; t < steps; ++t) {
    json step = {json::array({u(rng), u(rng), u(rng)}), json::array({u(rng)})};
    if (std::find(bad.begin(), bad.end(), t) != bad.end()) {
      const json poison = t % 3 == 0 ? json("inf") : t % 3 == 1 ? json("-inf") : json(nullptr);
      step[t % 2][t % 2 == 0 ? 1 : 0] = poison;
    }
    grads.push_back(step);
  }
  return {{"init_scale", o.init_scale}, {"growth_factor", o.growth_factor}, {"backoff_factor", o.backoff_factor},
          {"growth_interval", o.growth_interval}, {"lr", 0.1}, {"params", {{1.0, -2.0, 0.5}, {3.0}}}, {"grads", grads}};
}

/// A float32 [n] tensor holding `v`.
Tensor floats(const std::vector<float>& v) {
  Tensor t = empty({static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data_ptr<float>());
  return t;
}

float number(const json& v) {
  if (v.is_null()) return std::nanf("");
  if (v.is_string()) return v == "inf" ? INFINITY : -INFINITY;
  return v.get<float>();
}

std::vector<json> torch_run(const json& script) {
  test::TempDir dir;
  const auto path = dir.file("script.json");
  std::ofstream(path) << script.dump();
  const std::string cmd = std::string("'") + TALLY_TEST_PYTHON + "' '" + TALLY_TEST_DIR + "/amp/grad_scaler_reference.py' '" +
                          path.string() + "' 2>/dev/null";
  std::vector<json> out;
  FILE* p = popen(cmd.c_str(), "r");
  char line[8192];
  while (p && std::fgets(line, sizeof line, p)) out.push_back(json::parse(line));
  if (p) pclose(p);
  return out;
}

/// The same script through tally: what the reference prints, per step.
std::vector<json> tally_run(const json& script) {
  std::vector<Tensor> params;
  for (const auto& p : script["params"]) params.push_back(floats(p.get<std::vector<float>>()).requires_grad_());
  optim::SGD opt(params, optim::SGDOptions(script["lr"].get<double>()));
  GradScaler scaler({script["init_scale"].get<double>(), script["growth_factor"].get<double>(), script["backoff_factor"].get<double>(),
                     script["growth_interval"].get<int64_t>()});
  std::vector<json> out;
  for (const auto& step : script["grads"]) {
    const double scale_before = scaler.get_scale();
    for (size_t i = 0; i < params.size(); ++i) {
      std::vector<float> g;
      for (const auto& v : step[i]) g.push_back(number(v));
      params[i].set_grad(floats(g) * floats(std::vector<float>{static_cast<float>(scale_before)}));
    }
    const bool taken = scaler.step(opt);
    scaler.update();
    json ps = json::array();
    for (const auto& p : params) {
      const Tensor c = p.detach().contiguous();
      ps.push_back(std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel()));
    }
    out.push_back({{"scale_before", scale_before}, {"taken", taken}, {"scale_after", scaler.get_scale()},
                   {"growth_tracker", scaler.growth_tracker()}, {"params", ps}});
  }
  return out;
}

void expect_same_sequence(const json& script) {
  const auto ref = torch_run(script), got = tally_run(script);
  ASSERT_EQ(ref.size(), script["grads"].size()) << "the reference printed too few steps";
  ASSERT_EQ(got.size(), ref.size());
  int skipped = 0;
  for (size_t t = 0; t < ref.size(); ++t) {
    EXPECT_EQ(got[t]["scale_before"], ref[t]["scale_before"]) << "step " << t;
    EXPECT_EQ(got[t]["taken"], ref[t]["taken"]) << "step " << t;
    EXPECT_EQ(got[t]["scale_after"], ref[t]["scale_after"]) << "step " << t;
    EXPECT_EQ(got[t]["growth_tracker"], ref[t]["growth_tracker"]) << "step " << t;
    for (size_t i = 0; i < ref[t]["params"].size(); ++i)
      for (size_t j = 0; j < ref[t]["params"][i].size(); ++j)
        EXPECT_NEAR(got[t]["params"][i][j].get<double>(), ref[t]["params"][i][j].get<double>(), 1e-6) << "step " << t;
    skipped += !ref[t]["taken"].get<bool>();
  }
  EXPECT_GT(skipped, 0);
}

TEST(GradScaler, SameScaleAndSkipsAsPyTorchOnAScriptWithInfs) {
  // A short growth interval so that growth, backoff and a growth cut short all happen.
  expect_same_sequence(make_script({.init_scale = 1024.0, .growth_interval = 3}, 40, {2, 3, 9, 10, 11, 20, 31}));
}

TEST(GradScaler, PyTorchDefaultsGrowAfterTwoThousandGoodSteps) {
  const GradScalerOptions defaults;
  EXPECT_EQ(defaults.init_scale, 65536.0);
  EXPECT_EQ(defaults.growth_factor, 2.0);
  EXPECT_EQ(defaults.backoff_factor, 0.5);
  EXPECT_EQ(defaults.growth_interval, 2000);
  expect_same_sequence(make_script(defaults, 4010, {5, 2100, 4005}));
}

TEST(GradScaler, SkippedStepsLeaveTheOptimizerUntouched) {
  Tensor w = floats(std::vector<float>{1, 2}).requires_grad_();
  optim::AdamW opt({w}, optim::AdamWOptions(0.1));
  GradScaler scaler;
  w.set_grad(floats(std::vector<float>{1, INFINITY}));
  EXPECT_FALSE(scaler.step(opt));
  scaler.update();
  EXPECT_EQ(opt.state(w), nullptr);  // no state made, no step counted
  EXPECT_EQ(scaler.get_scale(), 32768.0);
  w.set_grad(floats(std::vector<float>{1, 1}) * 32768.0);
  EXPECT_TRUE(scaler.step(opt));
  scaler.update();
  ASSERT_NE(opt.state(w), nullptr);
  EXPECT_EQ(opt.state(w)->step, 1);
}

TEST(GradScaler, ErrorsFollowPyTorch) {
  Tensor w = floats(std::vector<float>{1}).requires_grad_();
  optim::SGD opt({w}, optim::SGDOptions(0.1));
  GradScaler scaler;
  EXPECT_THROW(
      {
        try {
          scaler.update();
        } catch (const ValueError& e) {
          EXPECT_STREQ(e.what(), "No inf checks were recorded prior to update().");
          throw;
        }
      },
      ValueError);
  w.set_grad(floats(std::vector<float>{1}));
  scaler.unscale_(opt);
  EXPECT_THROW(scaler.unscale_(opt), ValueError);
  scaler.step(opt);
  EXPECT_THROW(scaler.step(opt), ValueError);
  EXPECT_THROW(scaler.unscale_(opt), ValueError);
  scaler.update();
  Tensor half = floats(std::vector<float>{1}).to(kFloat16).requires_grad_();
  optim::SGD opt16({half}, optim::SGDOptions(0.1));
  half.set_grad(floats(std::vector<float>{1}).to(kFloat16));
  EXPECT_THROW(scaler.unscale_(opt16), ValueError);  // "Attempting to unscale FP16 gradients."
  EXPECT_THROW(GradScaler({.growth_factor = 1.0}), ValueError);
  EXPECT_THROW(GradScaler({.backoff_factor = 1.0}), ValueError);
}

// torch.cuda.amp.GradScaler multiplies by its float32 scale tensor, which promotes a float16 or
// bfloat16 loss: tensor(1.5, float16) * full((1,), 65536.) is float32 98304. tally scaled in the
// loss's dtype, and a float16 loss of 1 or more became inf at the default scale.
TEST(GradScaler, LowPrecisionLossesAreScaledInFloat32AsTorchs) {
  GradScaler scaler;
  for (Dtype dt : {kFloat16, kBFloat16}) {
    const Tensor scaled = scaler.scale(scalar_tensor(1.5, TensorOptions(dt)));
    EXPECT_EQ(scaled.dtype(), kFloat32) << dtype_name(dt);
    EXPECT_EQ(scaled.item<float>(), 98304.0f) << dtype_name(dt);
  }
  EXPECT_EQ(scaler.scale(scalar_tensor(1.5, TensorOptions(kFloat64))).dtype(), kFloat64);
}

// torch 1.13: step() on an optimizer with no gradient raises "No inf checks were recorded for this
// optimizer." (and update() its own), update(new_scale) sets the scale, and a gradient that is not
// contiguous is unscaled in place like any other.
TEST(GradScaler, NoGradientsNewScaleAndStridedGradientsAsTorchs) {
  Tensor w = floats(std::vector<float>{1, 2, 3, 4, 5, 6}).view({3, 2}).requires_grad_();
  optim::SGD opt({w}, optim::SGDOptions(0.1));
  GradScaler scaler({.init_scale = 4.0});
  tally::test::expect_error<ValueError>([&] { scaler.step(opt); }, {"No inf checks were recorded for this optimizer."});
  tally::test::expect_error<ValueError>([&] { scaler.update(); }, {"No inf checks were recorded prior to update()."});
  scaler.update(1024.0);
  EXPECT_EQ(scaler.get_scale(), 1024.0);
  EXPECT_EQ(scaler.growth_tracker(), 0);
  tally::test::expect_error<ValueError>([&] { scaler.update(0.0); }, {"new_scale must be positive and finite", "got 0"});
  const Tensor g = floats(std::vector<float>{1024, 2048, 3072, 4096, 5120, 6144}).view({2, 3});
  w.set_grad(g.t().clone().t().t());  // a [3, 2] gradient laid out column-major
  ASSERT_FALSE(w.grad().is_contiguous());
  EXPECT_TRUE(scaler.step(opt));
  EXPECT_TRUE(equal(w.detach(), floats(std::vector<float>{1, 2, 3, 4, 5, 6}).view({3, 2}) - 0.1 * (g.t() / 1024.0)));
  scaler.update();
}

TEST(GradScaler, StateDictRoundTripsAndDisabledPassesThrough) {
  GradScaler a({.init_scale = 8.0, .growth_interval = 5});
  Tensor w = floats(std::vector<float>{1}).requires_grad_();
  optim::SGD opt({w}, optim::SGDOptions(0.1));
  for (int i = 0; i < 3; ++i) {
    w.set_grad(floats(std::vector<float>{1}));
    a.step(opt);
    a.update();
  }
  GradScaler b;
  b.load_state_dict(a.state_dict());
  EXPECT_EQ(b.get_scale(), 8.0);
  EXPECT_EQ(b.growth_tracker(), 3);
  StateDict bad = a.state_dict();
  bad.insert("extra", floats(std::vector<float>{0}));
  EXPECT_THROW(b.load_state_dict(bad), ValueError);

  GradScaler off({.enabled = false});
  EXPECT_EQ(off.get_scale(), 1.0);
  w.set_grad(floats(std::vector<float>{INFINITY}));
  EXPECT_TRUE(off.step(opt));  // disabled: the step is the optimizer's, unchecked
  off.update();
}

}  // namespace
}  // namespace tally::amp
