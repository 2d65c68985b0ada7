// The optimizer base and what it promises beyond matching PyTorch: state_dict round trips,
// zero_grad, PyTorch's errors, one ledger row per step with the documented cost, optimizer
// state memory equal to the lecture's formula, the LR schedules.

#include <cmath>
#include <memory>

#include "optim/common.h"

namespace optim_test {
namespace {

using namespace tally;
using namespace tally::optim;
using accounting::Phase;

/// Runs steps [from, to) of the Problem.
void run_steps(Optimizer& opt, std::vector<Tensor>& params, int from, int to) {
  for (int t = from; t < to; ++t) {
    Problem::get().set_grads(params, t);
    opt.step();
  }
}

template <class Opt, class Options>
void expect_round_trip(const Options& options) {
  const Problem& problem = Problem::get();
  std::vector<Tensor> straight = problem.fresh_params();
  Opt uninterrupted(straight, options);
  run_steps(uninterrupted, straight, 0, Problem::kSteps);

  std::vector<Tensor> first = problem.fresh_params();
  Opt before(first, options);
  run_steps(before, first, 0, Problem::kSteps / 2);
  const StateDict saved = before.state_dict();

  // A fresh optimizer over parameters holding the values saved with it, as a checkpoint would.
  std::vector<Tensor> resumed = problem.fresh_params();
  {
    NoGradGuard no_grad;
    for (size_t k = 0; k < resumed.size(); ++k) resumed[k].copy_(first[k]);
  }
  Opt after(resumed, options);
  after.load_state_dict(saved);
  EXPECT_EQ(after.state_dict().keys(), saved.keys());
  run_steps(after, resumed, Problem::kSteps / 2, Problem::kSteps);
  for (size_t k = 0; k < resumed.size(); ++k) EXPECT_TRUE(resumed[k].equal(straight[k])) << "parameter " << k;
  const StateDict a = after.state_dict(), b = uninterrupted.state_dict();
  ASSERT_EQ(a.keys(), b.keys());
  for (const auto& [key, t] : a) EXPECT_TRUE(t.equal(b[key])) << key;
}

TEST(OptimStateDict, RoundTripIsExact) {
  expect_round_trip<AdamW>(AdamWOptions(0.01).amsgrad(true));
  expect_round_trip<Adam>(AdamOptions(0.01).weight_decay(0.1));
  expect_round_trip<SGD>(SGDOptions(0.1).momentum(0.9).dampening(0.1));
  expect_round_trip<Adagrad>(AdagradOptions(0.1).lr_decay(0.01));
  expect_round_trip<RMSprop>(RMSpropOptions(0.01).momentum(0.5).centered(true));
}

TEST(OptimStateDict, KeysAreTensors) {
  std::vector<Tensor> params = Problem::get().fresh_params();
  AdamW opt(params, AdamWOptions(0.01));
  run_steps(opt, params, 0, 1);  // parameter 2 has no gradient at step 0: no state yet
  const StateDict d = opt.state_dict();
  EXPECT_EQ(d["state.0.step"].dtype(), kInt64);
  EXPECT_EQ(d["state.0.step"].dim(), 0);
  EXPECT_EQ(d["state.0.step"].item<int64_t>(), 1);
  EXPECT_EQ(d["state.1.exp_avg_sq"].sizes().vec(), (std::vector<int64_t>{3, 5}));
  EXPECT_FALSE(d.contains("state.2.step"));
  EXPECT_TRUE(d.contains("state.3.exp_avg"));
  EXPECT_EQ(d["param_groups.0.lr"].dtype(), kFloat64);
  EXPECT_DOUBLE_EQ(d["param_groups.0.weight_decay"].item<double>(), 1e-2);
  EXPECT_DOUBLE_EQ(d["param_groups.0.amsgrad"].item<double>(), 0.0);
  EXPECT_TRUE(d["param_groups.0.params"].equal(tensor({0, 1, 2, 3})));
}

TEST(OptimStateDict, LoadIsStrict) {
  std::vector<Tensor> params = Problem::get().fresh_params();
  Adam opt(params, AdamOptions(0.01));
  run_steps(opt, params, 0, 2);
  const StateDict good = opt.state_dict();

  StateDict missing("key");
  for (const auto& [k, v] : good)
    if (k != "state.1.exp_avg") missing.insert(k, v);
  expect_error<ValueError>([&] { opt.load_state_dict(missing); }, {"missing key 'state.1.exp_avg'", "[3, 5]"});

  StateDict extra = good;
  extra.insert("state.0.momentum_buffer", zeros({4, 5}));
  expect_error<ValueError>([&] { opt.load_state_dict(extra); }, {"unexpected key 'state.0.momentum_buffer'", "[4, 5]"});

  StateDict reshaped = good;
  reshaped.insert_or_assign("state.1.exp_avg", zeros({5, 3}));
  expect_error<ValueError>([&] { opt.load_state_dict(reshaped); }, {"'state.1.exp_avg'", "[5, 3]", "[3, 5]"});

  StateDict bad_lr = good;
  bad_lr.insert_or_assign("param_groups.0.lr", scalar_tensor(-1.0, TensorOptions(kFloat64)));
  expect_error<ValueError>([&] { opt.load_state_dict(bad_lr); }, {"Invalid learning rate: -1"});

  // A refused dict changed nothing: the optimizer continues as if it had not been offered.
  EXPECT_DOUBLE_EQ(opt.param_groups()[0].options().get_lr(), 0.01);
  EXPECT_TRUE(opt.state_dict()["state.1.exp_avg"].equal(good["state.1.exp_avg"]));
}

TEST(Optim, ZeroGrad) {
  std::vector<Tensor> params = Problem::get().fresh_params();
  SGD opt(params, SGDOptions(0.1));
  Problem::get().set_grads(params, 1);
  const Tensor g0 = params[0].grad();
  opt.zero_grad(/*set_to_none=*/false);
  ASSERT_TRUE(params[0].grad().defined());
  EXPECT_TRUE(params[0].grad().is_same_storage(g0));  // zeroed in place, not replaced
  EXPECT_TRUE(params[0].grad().equal(zeros({4, 5})));
  opt.zero_grad();
  for (const Tensor& p : params) EXPECT_FALSE(p.grad().defined());
}

TEST(Optim, SkipsParametersWithoutGradient) {
  std::vector<Tensor> params = Problem::get().fresh_params();
  Adam opt(params, AdamOptions(0.1));
  Problem::get().set_grads(params, 0);  // parameter 2 has none at step 0
  opt.step();
  EXPECT_TRUE(params[2].equal(Problem::get().initial[2]));
  EXPECT_EQ(opt.state(params[2]), nullptr);
  EXPECT_FALSE(params[0].equal(Problem::get().initial[0]));
}

TEST(Optim, ClosureLossIsReturned) {
  Tensor w = tensor({1.0, 2.0}).requires_grad_();
  SGD opt({w}, SGDOptions(0.5));
  const Tensor loss = opt.step([&] {
    opt.zero_grad();
    Tensor l = (w * w).sum();
    l.backward();
    return l;
  });
  EXPECT_FLOAT_EQ(loss.item<float>(), 5.0f);
  EXPECT_TRUE(w.allclose(tensor({0.0, 0.0})));  // w − 0.5 · 2w
}

TEST(Optim, Float64MatchesFloat32) {
  std::vector<Tensor> p32 = Problem::get().fresh_params(), p64 = Problem::get().fresh_params(kFloat64);
  AdamW a(p32, AdamWOptions(0.01)), b(p64, AdamWOptions(0.01));
  run_steps(a, p32, 0, 5);
  run_steps(b, p64, 0, 5);
  for (size_t k = 0; k < p32.size(); ++k) {
    EXPECT_EQ(p64[k].dtype(), kFloat64);
    expect_close(p64[k], p32[k].to(kFloat64), 1e-5, "float64 parameter " + std::to_string(k));
  }
}

TEST(OptimErrors, PyTorchMessages) {
  std::vector<Tensor> params = {zeros({2}).requires_grad_()};
  expect_error<ValueError>([&] { SGD(params, SGDOptions(-0.1)); }, {"Invalid learning rate: -0.1"});
  expect_error<ValueError>([&] { SGD(params, SGDOptions(0.1).momentum(-1)); }, {"Invalid momentum value: -1"});
  expect_error<ValueError>([&] { SGD(params, SGDOptions(0.1).nesterov(true)); },
                           {"Nesterov momentum requires a momentum and zero dampening"});
  expect_error<ValueError>([&] { SGD(params, SGDOptions(0.1).momentum(0.9).dampening(0.1).nesterov(true)); },
                           {"Nesterov momentum requires a momentum and zero dampening"});
  expect_error<ValueError>([&] { Adam(params, AdamOptions().betas({1.0, 0.999})); }, {"Invalid beta parameter at index 0: 1"});
  expect_error<ValueError>([&] { AdamW(params, AdamWOptions().betas({0.9, -0.1})); }, {"Invalid beta parameter at index 1: -0.1"});
  expect_error<ValueError>([&] { AdamW(params, AdamWOptions().eps(-1)); }, {"Invalid epsilon value: -1"});
  expect_error<ValueError>([&] { Adam(params, AdamOptions().weight_decay(-1)); }, {"Invalid weight_decay value: -1"});
  expect_error<ValueError>([&] { Adagrad(params, AdagradOptions().lr_decay(-1)); }, {"Invalid lr_decay value: -1"});
  expect_error<ValueError>([&] { Adagrad(params, AdagradOptions().initial_accumulator_value(-1)); },
                           {"Invalid initial_accumulator_value value: -1"});
  expect_error<ValueError>([&] { RMSprop(params, RMSpropOptions().alpha(-1)); }, {"Invalid alpha value: -1"});
  expect_error<ValueError>([&] { RMSprop(params, RMSpropOptions().momentum(-1)); }, {"Invalid momentum value: -1"});
  // A group's own options are checked as the defaults are.
  expect_error<ValueError>([&] {
    SGD opt(params, SGDOptions(0.1));
    opt.add_param_group(OptimizerParamGroup({zeros({3})}, std::make_unique<SGDOptions>(SGDOptions(-2))));
  }, {"Invalid learning rate: -2"});
}

TEST(OptimErrors, Parameters) {
  expect_error<ValueError>([] { SGD(std::vector<Tensor>{}, SGDOptions(0.1)); }, {"optimizer got an empty parameter list"});
  Tensor w = zeros({2}).requires_grad_();
  expect_error<ValueError>([&] { SGD({w, w}, SGDOptions(0.1)); }, {"a parameter group with duplicate parameters", "shape [2]"});
  Tensor v = zeros({3}).requires_grad_();
  SGD two_groups({w}, SGDOptions(0.1));
  expect_error<ValueError>([&] { two_groups.add_param_group(OptimizerParamGroup({v, w})); },
                           {"some parameters appear in more than one parameter group"});
  expect_error<ValueError>([&] { SGD({w * 2}, SGDOptions(0.1)); }, {"can't optimize a non-leaf Tensor"});
  // bfloat16 parameters train with stochastic rounding (tests/amp/test_bf16_params.cpp); float16 ones are refused.
  Tensor h = zeros({2}, TensorOptions(kFloat16)).requires_grad_();
  AdamW opt({h});
  h.set_grad(zeros({2}, TensorOptions(kFloat16)));
  expect_error<TypeError>([&] { opt.step(); }, {"adamw_step", "float32, float64 and bfloat16", "got float16"});
}

// One AdamW step over params of N elements in all is one ledger row in the optimizer phase:
// 14 FLOPs per element (adam.cpp); reads p, g, m, v and writes p, m, v at 4 bytes each.
TEST(OptimLedger, AdamWStepIsOneRowWithItsCost) {
  Tensor a = zeros({100, 30}).requires_grad_(), b = zeros({24}).requires_grad_();
  const int64_t N = 100 * 30 + 24;
  AdamW opt({a, b});
  a.set_grad(ones({100, 30}));
  b.set_grad(ones({24}));
  accounting::FlopCounter counter;
  opt.step();
  ASSERT_EQ(counter.by_op().size(), 1u) << counter.table();
  const accounting::OpTotals row = counter.op("adamw_step", Phase::Optimizer);
  EXPECT_EQ(row.calls, 1);
  EXPECT_EQ(row.flops, 14 * N);
  EXPECT_EQ(row.bytes_read, 4 * 4 * N);
  EXPECT_EQ(row.bytes_written, 3 * 4 * N);
  EXPECT_EQ(counter.total_flops(Phase::Forward), 0);

  // With AMSGrad: one more FLOP (max) and one more tensor read and written per element.
  AdamW ams({a, b}, AdamWOptions().amsgrad(true));
  accounting::FlopCounter counter2;
  ams.step();
  EXPECT_EQ(counter2.op("adamw_step", Phase::Optimizer).flops, 15 * N);
  EXPECT_EQ(counter2.op("adamw_step", Phase::Optimizer).bytes_read, 5 * 4 * N);
}

TEST(OptimLedger, ZeroGradAndClipAreOptimizerWork) {
  Tensor a = zeros({10}).requires_grad_();
  SGD opt({a}, SGDOptions(0.1));
  a.set_grad(full({10}, 3.0));
  accounting::FlopCounter counter;
  nn::utils::clip_grad_norm_({a}, 1.0);
  opt.zero_grad(false);
  EXPECT_EQ(counter.totals(Phase::Forward).calls, 0) << counter.table();
  EXPECT_EQ(counter.op("_foreach_zero_", Phase::Optimizer).calls, 1);
  EXPECT_EQ(counter.op("_foreach_mul_", Phase::Optimizer).calls, 1);
}

// The lecture's bytes per parameter: AdamW keeps 4 + 4 bytes of state per float32 parameter.
TEST(OptimMemory, StateBytesAreTheFormula) {
  const int64_t N = 1000 + 37;
  {
    Tensor a = zeros({1000}).requires_grad_(), b = zeros({37}).requires_grad_();
    accounting::MemoryTracker tracker;
    const int64_t before = tracker.allocated_bytes(MemoryCategory::OptimizerState);
    AdamW opt({a, b});
    a.set_grad(ones({1000}));
    b.set_grad(ones({37}));
    opt.step();
    EXPECT_EQ(tracker.allocated_bytes(MemoryCategory::OptimizerState) - before, 2 * 4 * N);
    EXPECT_EQ(before, 0);
  }
  {
    Tensor a = zeros({1000}).requires_grad_(), b = zeros({37}).requires_grad_();
    accounting::MemoryTracker tracker;
    Adagrad opt({a, b});
    a.set_grad(ones({1000}));
    b.set_grad(ones({37}));
    opt.step();
    EXPECT_EQ(tracker.allocated_bytes(MemoryCategory::OptimizerState), 1 * 4 * N);
  }
  accounting::MemoryTracker after;
  EXPECT_EQ(after.allocated_bytes(MemoryCategory::OptimizerState), 0);  // freed with the optimizers
}

// On the meta device a step computes nothing but still counts its state and its ledger row.
TEST(OptimMemory, MetaStepPredicts) {
  const int64_t N = 4096;
  Tensor w = empty({N}, TensorOptions().device(Device(kMeta))).requires_grad_();
  AdamW opt({w});
  w.set_grad(empty({N}, TensorOptions().device(Device(kMeta))));
  accounting::MemoryTracker tracker{Device(kMeta)};
  accounting::FlopCounter counter;
  opt.step();
  EXPECT_EQ(tracker.allocated_bytes(MemoryCategory::OptimizerState), 2 * 4 * N);
  EXPECT_EQ(counter.op("adamw_step", Phase::Optimizer).flops, 14 * N);
}

TEST(OptimSchedule, ConstantLR) {
  Tensor w = zeros({2}).requires_grad_();
  SGD opt({w}, SGDOptions(0.1));
  ConstantLR schedule(opt, 0.5, 3);
  std::vector<double> seen;
  for (int t = 0; t < 5; ++t) {
    seen.push_back(opt.param_groups()[0].options().get_lr());
    schedule.step();
  }
  EXPECT_EQ(seen, (std::vector<double>{0.05, 0.05, 0.05, 0.1, 0.1}));
  EXPECT_EQ(schedule.get_last_lr(), std::vector<double>{0.1});
  expect_error<ValueError>([&] { ConstantLR(opt, 2.0); }, {"Constant multiplicative factor expected to be between 0 and 1."});
}

// torch 1.13's ConstantLR is chainable: it scales the lr it finds at step 0 and undoes that at
// total_iters, and every schedule's base is the group's initial_lr. tally's set base·factor from
// the lr it found (already scaled by another schedule) and wrote over lrs set by hand.
TEST(OptimSchedule, ConstantLRChainsAsTorchs) {
  Tensor w = zeros({2}).requires_grad_(), v = zeros({2}).requires_grad_();
  SGD opt({w}, SGDOptions(0.1));
  opt.add_param_group(OptimizerParamGroup({v}, std::make_unique<SGDOptions>(SGDOptions(0.5))));
  ConstantLR first(opt, 0.5, 3), second(opt, 0.5, 5);
  std::vector<double> seen0, seen1;
  for (int t = 0; t < 8; ++t) {
    seen0.push_back(opt.param_groups()[0].options().get_lr());
    seen1.push_back(opt.param_groups()[1].options().get_lr());
    first.step();
    second.step();
  }
  EXPECT_EQ(seen0, (std::vector<double>{0.025, 0.025, 0.025, 0.05, 0.05, 0.1, 0.1, 0.1}));  // torch's
  EXPECT_EQ(seen1, (std::vector<double>{0.125, 0.125, 0.125, 0.25, 0.25, 0.5, 0.5, 0.5}));
  EXPECT_EQ(opt.param_groups()[0].initial_lr(), 0.1);
  EXPECT_EQ(first.state_dict().at("base_lrs").data_ptr<double>()[0], 0.1);
  EXPECT_EQ(second.state_dict().at("base_lrs").data_ptr<double>()[1], 0.5);

  SGD by_hand({w}, SGDOptions(0.1));
  ConstantLR quarter(by_hand, 0.25, 3);
  by_hand.param_groups()[0].options().set_lr(1.0);  // a user's change is kept, then undone by 4 at step 3
  std::vector<double> kept;
  for (int t = 1; t <= 4; ++t) {
    quarter.step();
    kept.push_back(by_hand.param_groups()[0].options().get_lr());
  }
  EXPECT_EQ(kept, (std::vector<double>{1.0, 1.0, 4.0, 4.0}));

  SGD never({w}, SGDOptions(0.1));
  ConstantLR zero_iters(never, 0.5, 0);  // torch scales at step 0 and never restores
  for (int t = 0; t < 3; ++t) zero_iters.step();
  EXPECT_EQ(never.param_groups()[0].options().get_lr(), 0.05);
}

// Each schedule against torch.optim.lr_scheduler of PyTorch 1.13: two SGD groups (lr 0.1 and 0.5),
// twelve steps, the lrs each step sees. The expected values are torch's, printed by
//   opt = torch.optim.SGD([{"params": [w], "lr": 0.1}, {"params": [v], "lr": 0.5}])
//   for t in range(12): record [g["lr"] for g in opt.param_groups]; opt.step(); scheduler.step()
// with the scheduler named in each case (torch's arguments are the C++ ones, by name).
TEST(OptimSchedule, EachScheduleMatchesTorchs) {
  auto lrs_of = [](auto&& make) {
    Tensor w = zeros({2}).requires_grad_(), v = zeros({2}).requires_grad_();
    SGD opt({w}, SGDOptions(0.1));
    opt.add_param_group(OptimizerParamGroup({v}, std::make_unique<SGDOptions>(SGDOptions(0.5))));
    return make(opt);
  };
  using Lrs = std::vector<std::vector<double>>;
  auto record = [](Optimizer& opt, auto step) {
    Lrs seen;
    for (int t = 0; t < 12; ++t) {
      seen.push_back({opt.param_groups()[0].options().get_lr(), opt.param_groups()[1].options().get_lr()});
      step();
    }
    return seen;
  };
  auto expect_lrs = [](const std::string& name, const Lrs& got, const Lrs& torch) {
    ASSERT_EQ(got.size(), torch.size()) << name;
    for (size_t t = 0; t < got.size(); ++t)
      for (size_t g = 0; g < 2; ++g) EXPECT_DOUBLE_EQ(got[t][g], torch[t][g]) << name << " step " << t << " group " << g;
  };
  expect_lrs("step", lrs_of([&](SGD& opt) {
    StepLR s(opt, 3, 0.5);
    return record(opt, [&] { s.step(); });
  }), Lrs{{0.1, 0.5}, {0.1, 0.5}, {0.1, 0.5},
          {0.05, 0.25}, {0.05, 0.25}, {0.05, 0.25},
          {0.025, 0.125}, {0.025, 0.125}, {0.025, 0.125},
          {0.0125, 0.0625}, {0.0125, 0.0625}, {0.0125, 0.0625}});
  expect_lrs("multistep", lrs_of([&](SGD& opt) {
    MultiStepLR s(opt, {5, 2, 8, 5}, 0.1);
    return record(opt, [&] { s.step(); });
  }), Lrs{{0.1, 0.5}, {0.1, 0.5}, {0.010000000000000002, 0.05},
          {0.010000000000000002, 0.05}, {0.010000000000000002, 0.05}, {0.00010000000000000005, 0.0005000000000000001},
          {0.00010000000000000005, 0.0005000000000000001}, {0.00010000000000000005, 0.0005000000000000001}, {1.0000000000000006e-05, 5.0000000000000016e-05},
          {1.0000000000000006e-05, 5.0000000000000016e-05}, {1.0000000000000006e-05, 5.0000000000000016e-05}, {1.0000000000000006e-05, 5.0000000000000016e-05}});
  expect_lrs("exponential", lrs_of([&](SGD& opt) {
    ExponentialLR s(opt, 0.9);
    return record(opt, [&] { s.step(); });
  }), Lrs{{0.1, 0.5}, {0.09000000000000001, 0.45}, {0.08100000000000002, 0.405},
          {0.07290000000000002, 0.36450000000000005}, {0.06561000000000002, 0.32805000000000006}, {0.05904900000000002, 0.2952450000000001},
          {0.05314410000000002, 0.2657205000000001}, {0.04782969000000002, 0.23914845000000007}, {0.043046721000000024, 0.21523360500000008},
          {0.03874204890000002, 0.19371024450000007}, {0.03486784401000002, 0.17433922005000008}, {0.03138105960900001, 0.15690529804500009}});
  expect_lrs("linear", lrs_of([&](SGD& opt) {
    LinearLR s(opt, 0.25, 1.0, 4);
    return record(opt, [&] { s.step(); });
  }), Lrs{{0.025, 0.125}, {0.043750000000000004, 0.21875}, {0.06250000000000001, 0.3125},
          {0.08125000000000002, 0.40625}, {0.10000000000000002, 0.5}, {0.10000000000000002, 0.5},
          {0.10000000000000002, 0.5}, {0.10000000000000002, 0.5}, {0.10000000000000002, 0.5},
          {0.10000000000000002, 0.5}, {0.10000000000000002, 0.5}, {0.10000000000000002, 0.5}});
  expect_lrs("linear_down", lrs_of([&](SGD& opt) {
    LinearLR s(opt, 1.0, 0.1, 5);
    return record(opt, [&] { s.step(); });
  }), Lrs{{0.1, 0.5}, {0.08200000000000002, 0.41000000000000003}, {0.06400000000000002, 0.32000000000000006},
          {0.04600000000000001, 0.23000000000000004}, {0.02800000000000001, 0.14000000000000004}, {0.010000000000000002, 0.05000000000000001},
          {0.010000000000000002, 0.05000000000000001}, {0.010000000000000002, 0.05000000000000001}, {0.010000000000000002, 0.05000000000000001},
          {0.010000000000000002, 0.05000000000000001}, {0.010000000000000002, 0.05000000000000001}, {0.010000000000000002, 0.05000000000000001}});
  expect_lrs("cosine", lrs_of([&](SGD& opt) {
    CosineAnnealingLR s(opt, 4, 0.01);
    return record(opt, [&] { s.step(); });
  }), Lrs{{0.1, 0.5}, {0.08681980515339464, 0.4282411613907041}, {0.05500000000000001, 0.255},
          {0.023180194846605363, 0.08175883860929586}, {0.01, 0.01}, {0.023180194846605363, 0.08175883860929584},
          {0.05500000000000002, 0.255}, {0.08681980515339469, 0.42824116139070423}, {0.10000000000000006, 0.5000000000000001},
          {0.0868198051533947, 0.4282411613907043}, {0.05500000000000005, 0.2550000000000001}, {0.023180194846605412, 0.08175883860929607}});
  expect_lrs("lambda", lrs_of([&](SGD& opt) {
    LambdaLR s(opt, [](int64_t e) { return 1.0 / static_cast<double>(e + 1); });
    return record(opt, [&] { s.step(); });
  }), Lrs{{0.1, 0.5}, {0.05, 0.25}, {0.03333333333333333, 0.16666666666666666},
          {0.025, 0.125}, {0.020000000000000004, 0.1}, {0.016666666666666666, 0.08333333333333333},
          {0.014285714285714285, 0.07142857142857142}, {0.0125, 0.0625}, {0.011111111111111112, 0.05555555555555555},
          {0.010000000000000002, 0.05}, {0.009090909090909092, 0.045454545454545456}, {0.008333333333333333, 0.041666666666666664}});
  expect_lrs("linear_then_exp", lrs_of([&](SGD& opt) {
    LinearLR s(opt, 0.5, 1.0, 3);
    ExponentialLR s2(opt, 0.9);
    return record(opt, [&] { s.step(); s2.step(); });
  }), Lrs{{0.05, 0.25}, {0.06, 0.3}, {0.0675, 0.3375},
          {0.0729, 0.36450000000000005}, {0.06561, 0.32805000000000006}, {0.059049000000000004, 0.2952450000000001},
          {0.05314410000000001, 0.2657205000000001}, {0.04782969000000001, 0.23914845000000007}, {0.04304672100000001, 0.21523360500000008},
          {0.03874204890000001, 0.19371024450000007}, {0.03486784401000001, 0.17433922005000008}, {0.03138105960900001, 0.15690529804500009}});
}

// A schedule's load restores its counter and lrs and leaves the optimizer's lrs alone, as
// torch's: resuming the optimizer and two chained schedules continues their product exactly (a
// load that set each schedule's closed form left the last one's alone, 39% off here), and a
// schedule loaded without its optimizer changes no lr. Bad arguments are named.
TEST(OptimSchedule, LoadedSchedulesResumeTheChainAndBadArgumentsAreNamed) {
  Tensor w = zeros({2}).requires_grad_();
  SGD a({w}, SGDOptions(0.1)), b({w}, SGDOptions(0.1));
  LinearLR warm_a(a, 0.25, 1.0, 8);
  CosineAnnealingLR cos_a(a, 20, 0.001);
  for (int t = 0; t < 5; ++t) warm_a.step(), cos_a.step();
  LinearLR warm_b(b, 0.25, 1.0, 8);
  CosineAnnealingLR cos_b(b, 20, 0.001);
  b.load_state_dict(a.state_dict());
  warm_b.load_state_dict(warm_a.state_dict());
  cos_b.load_state_dict(cos_a.state_dict());
  EXPECT_EQ(b.param_groups()[0].options().get_lr(), a.param_groups()[0].options().get_lr());
  EXPECT_NEAR(a.param_groups()[0].options().get_lr(), 0.0615276739027, 1e-12);  // torch 1.13's, both schedules stepped 5 times
  EXPECT_EQ(cos_b.get_last_lr(), cos_a.get_last_lr());
  for (int t = 0; t < 10; ++t) {
    warm_a.step(), cos_a.step(), warm_b.step(), cos_b.step();
    EXPECT_EQ(b.param_groups()[0].options().get_lr(), a.param_groups()[0].options().get_lr()) << t;
  }
  SGD c({w}, SGDOptions(0.1));
  StepLR alone(c, 3, 0.5);
  StateDict at_seven = alone.state_dict();
  at_seven.insert_or_assign("last_epoch", scalar_tensor(int64_t{7}, TensorOptions(kInt64)));
  alone.load_state_dict(at_seven);
  EXPECT_EQ(c.param_groups()[0].options().get_lr(), 0.1);  // torch 1.13 leaves it too
  EXPECT_EQ(alone.last_epoch(), 7);
  at_seven.insert_or_assign("last_epoch", scalar_tensor(int64_t{-3}, TensorOptions(kInt64)));
  expect_error<ValueError>([&] { alone.load_state_dict(at_seven); }, {"'last_epoch' must be a step count (>= 0), got -3"});
  expect_error<ValueError>([&] { StepLR(a, 0); }, {"StepLR: step_size must be positive, got 0"});
  expect_error<ValueError>([&] { LinearLR(a, 0.0); }, {"LinearLR: start_factor must be in (0, 1], got 0"});
  expect_error<ValueError>([&] { LinearLR(a, 0.5, 1.5); }, {"LinearLR: end_factor must be in [0, 1], got 1.5"});
  expect_error<ValueError>([&] { CosineAnnealingLR(a, 0); }, {"CosineAnnealingLR: T_max must be positive, got 0"});
  expect_error<ValueError>([&] { LambdaLR(a, nullptr); }, {"LambdaLR: lr_lambda is empty"});
}

TEST(OptimSchedule, WarmupCosine) {
  Tensor w = zeros({2}).requires_grad_(), v = zeros({3}).requires_grad_();
  AdamW opt({w});
  opt.add_param_group(OptimizerParamGroup({v}, std::make_unique<AdamWOptions>(AdamWOptions(2e-3))));
  WarmupCosineLR schedule(opt, /*warmup_steps=*/4, /*total_steps=*/12, /*min_lr=*/1e-4);
  std::vector<std::vector<double>> lrs;
  for (int t = 0; t <= 14; ++t) {
    lrs.push_back(schedule.get_last_lr());
    EXPECT_EQ(opt.param_groups()[1].options().get_lr(), lrs.back()[1]);
    schedule.step();
  }
  EXPECT_DOUBLE_EQ(lrs[0][0], 1e-3 / 4);  // the first step learns already
  EXPECT_DOUBLE_EQ(lrs[2][0], 1e-3 * 3 / 4);
  EXPECT_DOUBLE_EQ(lrs[3][0], 1e-3);
  EXPECT_DOUBLE_EQ(lrs[4][0], 1e-3);  // the peak: the base lr
  EXPECT_DOUBLE_EQ(lrs[8][0], 1e-4 + 0.5 * (1e-3 - 1e-4));  // halfway down the cosine
  EXPECT_DOUBLE_EQ(lrs[8][1], 1e-4 + 0.5 * (2e-3 - 1e-4));
  EXPECT_DOUBLE_EQ(lrs[6][0], 1e-4 + 0.5 * (1 + std::cos(M_PI / 4)) * (1e-3 - 1e-4));
  EXPECT_DOUBLE_EQ(lrs[12][0], 1e-4);
  EXPECT_DOUBLE_EQ(lrs[14][0], 1e-4);
  expect_error<ValueError>([&] { WarmupCosineLR(opt, 10, 5); }, {"total_steps (5) must be at least warmup_steps (10)"});
}

TEST(OptimSchedule, StateDictResumes) {
  Tensor w = zeros({2}).requires_grad_();
  AdamW opt({w}, AdamWOptions(1e-3));
  WarmupCosineLR schedule(opt, 4, 12, 1e-4);
  for (int t = 0; t < 7; ++t) schedule.step();
  const StateDict saved = schedule.state_dict();
  EXPECT_EQ(saved["last_epoch"].item<int64_t>(), 7);

  Tensor w2 = zeros({2}).requires_grad_();
  AdamW opt2({w2}, AdamWOptions(1e-3));
  WarmupCosineLR resumed(opt2, 4, 12, 1e-4);
  resumed.load_state_dict(saved);
  EXPECT_EQ(resumed.get_last_lr(), schedule.get_last_lr());
  schedule.step();
  resumed.step();
  EXPECT_EQ(resumed.get_last_lr(), schedule.get_last_lr());
  EXPECT_EQ(opt2.param_groups()[0].options().get_lr(), opt.param_groups()[0].options().get_lr());
}

TEST(OptimClip, NothingToClip) {
  Tensor w = zeros({2}).requires_grad_();
  EXPECT_EQ(nn::utils::clip_grad_norm_(w, 1.0), 0.0);
  w.set_grad(tensor({3.0f, 4.0f}));
  EXPECT_FLOAT_EQ(nn::utils::clip_grad_norm_(w, 10.0), 5.0f);
  EXPECT_TRUE(w.grad().equal(tensor({3.0f, 4.0f})));  // coefficient above 1: untouched
  w.set_grad(tensor({INFINITY, 1.0f}));
  expect_error<ValueError>([&] { nn::utils::clip_grad_norm_(w, 1.0, 2.0, /*error_if_nonfinite=*/true); }, {"non-finite"});
  // torch 1.13: a NaN total norm makes every gradient NaN (the clamped coefficient is NaN).
  Tensor a = zeros({2}).requires_grad_(), b = zeros({1}).requires_grad_();
  a.set_grad(tensor({NAN, 4.0f}));
  b.set_grad(tensor({12.0f}));
  EXPECT_TRUE(std::isnan(nn::utils::clip_grad_norm_(std::vector<Tensor>{a, b}, 1.0)));
  EXPECT_TRUE(all(b.grad() != b.grad()).item<bool>());
  EXPECT_TRUE(all(a.grad() != a.grad()).item<bool>());
}

TEST(OptimErrors, AParameterThatChangedDtypeAfterAStepIsRefused) {
  // Its state is still float32: reading it as float64 ran past the buffers (heap corruption).
  Tensor p = ones({64}).requires_grad_();
  AdamW opt(std::vector<Tensor>{p}, AdamWOptions(1e-3));
  p.set_grad(ones({64}));
  opt.step();
  {
    NoGradGuard no_grad;
    p.set_data(p.detach().to(kFloat64));
  }
  p.set_grad(ones({64}, kFloat64));
  expect_error<ValueError>([&] { opt.step(); }, {"optimizer state 'exp_avg' is float32 [64] on cpu, but its parameter is now float64 [64]"});
}

TEST(Optim, MomentumTurnedOnAfterAStepStartsFromTheGradient) {
  // torch 1.13: SGD(lr 0.1), one plain step, then momentum 0.9 and dampening 0.5: the new buffer
  // is the gradient itself (no dampening on its first step), so p = 1 - 0.1·1 - 0.1·1 = 0.8.
  Tensor p = ones({3}).requires_grad_();
  SGD opt(std::vector<Tensor>{p}, SGDOptions(0.1));
  p.set_grad(ones({3}));
  opt.step();
  static_cast<SGDOptions&>(opt.param_groups()[0].options()).momentum(0.9).dampening(0.5);
  opt.step();
  EXPECT_TRUE(allclose(p.detach(), full({3}, 0.8)));
  opt.step();  // buf = 0.9·1 + 0.5·1 = 1.4: p = 0.8 - 0.14
  EXPECT_TRUE(allclose(p.detach(), full({3}, 0.66)));
}

TEST(Optim, StateAnOptionNoLongerUsesIsDroppedSoTheStateDictLoadsBack) {
  // torch 1.13: SGD(lr 0.1, momentum 0.9) steps p = [1, 2] with g = [1, 1] to [0.9, 1.9]; with
  // momentum then 0, to [0.8, 1.8]. Its state_dict loads into itself and into a fresh SGD.
  Tensor p = tensor({1.0, 2.0}).requires_grad_();
  SGD opt(std::vector<Tensor>{p}, SGDOptions(0.1).momentum(0.9));
  p.set_grad(ones({2}));
  opt.step();
  EXPECT_EQ(opt.state(p)->tensors.size(), 1u);
  static_cast<SGDOptions&>(opt.param_groups()[0].options()).momentum(0.0);
  opt.step();
  EXPECT_TRUE(allclose(p.detach(), tensor({0.8, 1.8})));
  EXPECT_EQ(opt.state(p)->tensors.size(), 0u);  // no momentum buffer held (and tracked) for nothing
  opt.load_state_dict(opt.state_dict());
  SGD fresh(std::vector<Tensor>{p}, SGDOptions(0.1));
  fresh.load_state_dict(opt.state_dict());
  // The same for Adam with AMSGrad turned off: max_exp_avg_sq goes, the rest stays.
  Tensor q = tensor({1.0, 2.0}).requires_grad_();
  Adam adam(std::vector<Tensor>{q}, AdamOptions(0.1).amsgrad(true));
  q.set_grad(ones({2}));
  adam.step();
  static_cast<AdamOptions&>(adam.param_groups()[0].options()).amsgrad(false);
  adam.step();
  EXPECT_FALSE(adam.state(q)->tensors.contains("max_exp_avg_sq"));
  Adam adam_fresh(std::vector<Tensor>{q}, AdamOptions(0.1));
  adam_fresh.load_state_dict(adam.state_dict());
}

TEST(Optim, AmsgradKeepsANaNAsTorchMaximumDoes) {
  // torch 1.13, AdamW(lr 0.1, amsgrad, foreach=False) on float64 p = [1, 2]: g = [0.5, 0.5], then
  // [0.5, nan] gives max_exp_avg_sq = [0.0004997500000000004, nan] (std::max kept 0.00025).
  for (int64_t n : {2, 17}) {  // 17: the vector lanes too
    Tensor p = full({n}, 1.0, TensorOptions(kFloat64)).requires_grad_();
    AdamW opt(std::vector<Tensor>{p}, AdamWOptions(0.1).amsgrad(true));
    p.set_grad(full({n}, 0.5, TensorOptions(kFloat64)));
    opt.step();
    Tensor g = full({n}, 0.5, TensorOptions(kFloat64));
    g.select(0, 1).fill_(std::nan(""));
    p.set_grad(g);
    opt.step();
    const Tensor vmax = opt.state(p)->tensors.at("max_exp_avg_sq");
    EXPECT_NEAR(vmax.select(0, 0).item<double>(), 0.0004997500000000004, 1e-18) << n;
    EXPECT_TRUE(std::isnan(vmax.select(0, 1).item<double>())) << n;
  }
}

}  // namespace
}  // namespace optim_test
