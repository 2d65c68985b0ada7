// nn::Module: registration, names, state_dict and its errors, modes, dtype, gradients, and the
// ledger's attribution of forward and backward ops to module paths.

#include <gtest/gtest.h>

#include "tally/tally.h"
#include "expect_error.h"

namespace tally {
namespace {

using accounting::FlopCounter;
using accounting::Phase;

std::vector<std::string> names(const OrderedDict<Tensor>& d) { return d.keys(); }

TEST(Module, CruncherNamesAndCountsAreTheLecturesOnes) {
  Generator gen(0);
  nn::Cruncher model(64, 2, {}, &gen);
  EXPECT_EQ(names(model.named_parameters()), (std::vector<std::string>{"layers.0.weight", "layers.1.weight", "final.weight"}));
  EXPECT_EQ(model.num_parameters(), 64 * 64 * 2 + 64);
  EXPECT_EQ(model.named_parameters().at("final.weight").sizes(), (IntArrayRef{64, 1}));
  Tensor y = model.forward(ones({8, 64}));
  EXPECT_EQ(y.sizes(), (IntArrayRef{8}));
  for (const Tensor& p : model.parameters()) EXPECT_TRUE(p.requires_grad());
  const auto modules = model.named_modules();
  EXPECT_EQ(modules.keys(), (std::vector<std::string>{"", "layers", "layers.0", "layers.1", "final"}));
}

TEST(Module, TransformerParameterNamesFollowRegistrationOrder) {
  const nn::TransformerConfig c{.vocab_size = 16, .context_length = 4, .d_model = 8, .num_layers = 1, .num_heads = 2, .tied_embeddings = false};
  nn::TransformerLM lm(c);
  EXPECT_EQ(names(lm.named_parameters()),
            (std::vector<std::string>{"token_embedding.weight", "position_embedding.weight", "blocks.0.norm1.weight",
                                      "blocks.0.norm1.bias", "blocks.0.attn.qkv.weight", "blocks.0.attn.qkv.bias",
                                      "blocks.0.attn.proj.weight", "blocks.0.attn.proj.bias", "blocks.0.norm2.weight",
                                      "blocks.0.norm2.bias", "blocks.0.mlp.fc.weight", "blocks.0.mlp.fc.bias",
                                      "blocks.0.mlp.proj.weight", "blocks.0.mlp.proj.bias", "norm_f.weight", "norm_f.bias",
                                      "lm_head.weight"}));
  // 12·L·d² + 13·L·d (blocks) + V·d·2 (embedding, untied head) + T·d + 2·d (final norm)
  EXPECT_EQ(lm.num_parameters(), 12 * 64 + 13 * 8 + 16 * 8 * 2 + 4 * 8 + 2 * 8);
}

TEST(Module, RegistrationErrorsNameTheAttribute) {
  nn::Linear layer(3, 2);
  try {
    layer.register_parameter("weight", zeros({1}));
    FAIL() << "a second 'weight' was accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("'weight' is already registered"), std::string::npos) << e.what();
  }
  EXPECT_THROW(layer.register_parameter("a.b", zeros({1})), ValueError);
  EXPECT_THROW(layer.register_buffer("", zeros({1})), ValueError);
}

TEST(Module, StateDictRoundTripsAndLoadIsStrict) {
  Generator gen(1), other(2);
  nn::Cruncher a(8, 2, {}, &gen), b(8, 2, {}, &other);
  b.load_state_dict(a.state_dict());
  for (const auto& [name, t] : a.state_dict()) EXPECT_TRUE(b.state_dict().at(name).equal(t)) << name;
  // The loaded values are copies: changing a afterwards does not change b.
  {
    NoGradGuard no_grad;
    a.named_parameters().at("final.weight").fill_(3.0);
  }
  EXPECT_FALSE(b.state_dict().at("final.weight").equal(a.state_dict().at("final.weight")));

  StateDict missing = a.state_dict();
  StateDict trimmed;
  for (const auto& [name, t] : missing)
    if (name != "layers.1.weight") trimmed.insert(name, t);
  trimmed.insert("layers.7.weight", zeros({8, 8}));
  try {
    b.load_state_dict(trimmed);
    FAIL() << "a state dict missing a key was accepted";
  } catch (const ValueError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Missing key(s) in state_dict: \"layers.1.weight\""), std::string::npos) << msg;
    EXPECT_NE(msg.find("Unexpected key(s) in state_dict: \"layers.7.weight\""), std::string::npos) << msg;
  }
  // A non-strict load takes what matches and says what it left out, as torch's _IncompatibleKeys.
  const auto keys = b.load_state_dict(trimmed, /*strict=*/false);
  EXPECT_EQ(keys.missing_keys, std::vector<std::string>{"layers.1.weight"});
  EXPECT_EQ(keys.unexpected_keys, std::vector<std::string>{"layers.7.weight"});
  // Both kinds of problem at once: one error names them all.
  StateDict both = trimmed;
  both.insert_or_assign("final.weight", zeros({1, 8}));
  test::expect_error<ValueError>([&] { b.load_state_dict(both); },
                                 {"Missing key(s) in state_dict: \"layers.1.weight\"", "size mismatch for final.weight"});

  StateDict wrong = a.state_dict();
  wrong.insert_or_assign("final.weight", zeros({1, 8}));
  const Tensor before = b.state_dict().at("layers.0.weight").clone();
  try {
    b.load_state_dict(wrong);
    FAIL() << "a mis-shaped tensor was accepted";
  } catch (const ValueError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("size mismatch for final.weight"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[1, 8]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[8, 1]"), std::string::npos) << msg;
  }
  EXPECT_TRUE(b.state_dict().at("layers.0.weight").equal(before)) << "a failed load changed the module";
}

TEST(Module, TrainEvalToDtypeAndZeroGrad) {
  nn::Sequential seq({std::make_shared<nn::Linear>(4, 4), std::make_shared<nn::Dropout>(0.5), std::make_shared<nn::Linear>(4, 1)});
  EXPECT_TRUE(seq[1]->is_training());
  seq.eval();
  EXPECT_FALSE(seq[1]->is_training());
  Tensor x = ones({2, 4});
  EXPECT_TRUE(seq.forward(x).equal(seq.forward(x)));  // dropout is the identity in eval mode

  std::vector<Tensor> held = seq.parameters();
  seq.forward(x).sum().backward();
  EXPECT_TRUE(held[0].grad().defined());
  seq.zero_grad(/*set_to_none=*/false);
  EXPECT_TRUE(held[0].grad().defined());
  EXPECT_EQ(held[0].grad().abs().sum().item<float>(), 0.0f);
  seq.zero_grad();
  EXPECT_FALSE(held[0].grad().defined());

  seq.to(kFloat64);
  EXPECT_EQ(held[0].dtype(), kFloat64);  // handles taken before the conversion see it
  EXPECT_TRUE(held[0].requires_grad());
  EXPECT_EQ(seq.forward(x.to(kFloat64)).dtype(), kFloat64);
  // torch: "nn.Module.to only accepts floating point or complex dtypes"; nothing converted.
  EXPECT_THROW(seq.to(kInt64), TypeError);
  EXPECT_EQ(held[0].dtype(), kFloat64);
}

TEST(Module, DropoutZeroesAboutPAndScalesTheRest) {
  Generator gen(3);
  nn::Dropout drop(0.25, &gen);
  Tensor y = drop.forward(ones({100000}));
  const double kept = (y != 0).to(kFloat64).mean().item<double>();
  EXPECT_NEAR(kept, 0.75, 0.01);
  EXPECT_NEAR(y.amax().item<float>(), 1.0f / 0.75f, 1e-6);
  EXPECT_THROW(nn::Dropout(1.5), ValueError);
  // Layers of no features, as torch's: Linear(0, 3) gives its bias (all zero: a bound of 0 with no inputs).
  nn::Linear no_inputs(0, 3);
  EXPECT_EQ(no_inputs.weight.sizes(), IntArrayRef({3, 0}));
  EXPECT_TRUE(no_inputs.forward(empty({2, 0})).equal(zeros({2, 3})));
  EXPECT_EQ(nn::Linear(3, 0).forward(ones({2, 3})).sizes(), IntArrayRef({2, 0}));
  EXPECT_EQ(nn::Embedding(0, 3).weight.sizes(), IntArrayRef({0, 3}));
  EXPECT_THROW(nn::Linear(-1, 3), ValueError);
  // p = 1 gives zeros in the input's dtype, as torch's input.mul(zeros({}, input.options())).
  const Tensor all_dropped = nn::functional::dropout(ones({4}, TensorOptions(kInt64)), 1.0, true);
  EXPECT_EQ(all_dropped.dtype(), kInt64);
  EXPECT_EQ(all_dropped.sum().item<int64_t>(), 0);
}

TEST(Module, LedgerAttributesForwardAndBackwardToModulePaths) {
  Generator gen(4);
  nn::Cruncher model(16, 2, {}, &gen);
  FlopCounter counter;
  model.forward(ones({8, 16})).sum().backward();
  const auto& by_module = counter.by_module();
  // Each layer's matmul: 2·B·D·D forward, twice that backward (input and weight gradients; the
  // first layer's input needs none, so only its weight gradient).
  EXPECT_EQ(by_module.at({"layers.1", Phase::Forward}).flops, 2 * 8 * 16 * 16);
  EXPECT_EQ(by_module.at({"layers.1", Phase::Backward}).flops, 4 * 8 * 16 * 16);
  EXPECT_EQ(by_module.at({"layers.0", Phase::Backward}).flops, 2 * 8 * 16 * 16);
  EXPECT_EQ(by_module.at({"final", Phase::Forward}).flops, 2 * 8 * 16);
  EXPECT_EQ(current_module_path(), "");
}

TEST(Init, FansAndBoundsFollowPyTorch) {
  using ::tally::test::expect_error;
  Tensor w = empty({30, 20, 3});
  const auto [fan_in, fan_out] = nn::init::calculate_fan_in_and_fan_out(w);
  EXPECT_EQ(fan_in, 60);
  EXPECT_EQ(fan_out, 90);
  EXPECT_THROW(nn::init::calculate_fan_in_and_fan_out(empty({5})), ValueError);
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("relu"), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("leaky_relu", 0.2), std::sqrt(2.0 / 1.04));
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("tanh"), 5.0 / 3.0);
  Generator gen(5);
  Tensor big = empty({400, 300});
  nn::init::xavier_uniform_(big, 1.0, &gen);
  const double a = std::sqrt(6.0 / 700.0);
  EXPECT_LE(big.abs().amax().item<float>(), a);
  EXPECT_GT(big.abs().amax().item<float>(), 0.99 * a);
  nn::init::kaiming_normal_(big, 0.0, "fan_in", "relu", &gen);
  EXPECT_NEAR(big.to(kFloat64).var().item<double>(), 2.0 / 300.0, 2.0 / 300.0 * 0.02);
  nn::init::xavier_normal_(big, 2.0, &gen);
  EXPECT_NEAR(big.to(kFloat64).var().item<double>(), 4.0 * 2.0 / 700.0, 4.0 * 2.0 / 700.0 * 0.02);
  nn::init::kaiming_uniform_(big, std::sqrt(5.0), "fan_in", "leaky_relu", &gen);  // Linear's: bound 1/√fan_in
  EXPECT_LE(big.abs().amax().item<float>(), 1.0 / std::sqrt(300.0) + 1e-7);
  EXPECT_THROW(nn::init::kaiming_uniform_(big, 0, "fan_avg"), ValueError);
  nn::init::ones_(big);
  EXPECT_EQ(big.sum().item<float>(), 120000.0f);
  // PyTorch's range checks; a tensor of no elements is returned as it is (torch only warns).
  EXPECT_THROW(nn::init::uniform_(big, 5.0, -2.0), ValueError);
  EXPECT_THROW(nn::init::normal_(big, 0.0, -1.0), ValueError);
  EXPECT_EQ(big.sum().item<float>(), 120000.0f);
  Tensor none = empty({5, 0});
  EXPECT_EQ(nn::init::kaiming_uniform_(none).sizes(), IntArrayRef({5, 0}));
  EXPECT_EQ(nn::init::kaiming_normal_(none).sizes(), IntArrayRef({5, 0}));
  // torch 1.13's answers: only its seven names are the identity's gain; normal draws need a
  // floating tensor (an int64 one was filled with rounded draws); bounds a = b fill with a.
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("conv_transpose2d"), 1.0);
  EXPECT_THROW(nn::init::calculate_gain("convfoo"), ValueError);
  Tensor ints = zeros({6}, TensorOptions(kInt64));
  expect_error<TypeError>([&] { nn::init::normal_(ints, 5, 3); }, {"\"normal_kernel_cpu\" not implemented for 'int64'"});
  Tensor int_matrix = ints.view({2, 3});
  expect_error<TypeError>([&] { nn::init::kaiming_normal_(int_matrix); }, {"normal_kernel_cpu"});
  expect_error<TypeError>([&] { nn::init::trunc_normal_(ints, 0, 1, -2, 2); }, {"\"check_uniform_bounds\" not implemented for 'int64'"});
  EXPECT_EQ(ints.abs().sum().item<int64_t>(), 0);
  Tensor point = empty({3});
  nn::init::trunc_normal_(point, 0, 1, 0.5, 0.5);
  EXPECT_TRUE(point.equal(full({3}, 0.5)));
}

}  // namespace
}  // namespace tally

namespace tally::nn {
namespace {

// One Linear in two places of a Sequential: torch 1.13 lists it once in named_modules() and
// children() (remove_duplicate), its parameters once, and keeps a state_dict key for each place.
TEST(Module, ASharedSubmoduleIsListedOnceAsTorchs) {
  auto lin = std::make_shared<Linear>(2, 2);
  Sequential s({lin, lin});
  std::vector<std::string> names;
  for (const auto& [name, m] : s.named_modules()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"", "0"}));
  EXPECT_EQ(s.children().size(), 1u);
  EXPECT_EQ(s.named_children().keys(), (std::vector<std::string>{"0"}));
  EXPECT_EQ(s.named_parameters().keys(), (std::vector<std::string>{"0.weight", "0.bias"}));
  EXPECT_EQ(s.state_dict().keys(), (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias"}));
}

}  // namespace
}  // namespace tally::nn

namespace tally {
namespace {

using test::expect_error;

// Buffers are listed once each (a shared submodule's, one tensor under two names) and an
// undefined one not at all, as torch's named_buffers; a parameter made with requires_grad false
// does not require grad even from a tensor that did; a module that would contain itself is refused.
TEST(Module, BuffersOnceParametersFrozenAndCyclesRefused) {
  auto a = std::make_shared<nn::Module>("A");
  const Tensor buf = zeros({2});
  a->register_buffer("buf", buf);
  a->register_buffer("alias", buf);
  a->register_buffer("none", Tensor());
  auto root = std::make_shared<nn::Module>("Root");
  root->register_module("a", a);
  root->register_module("b", a);
  EXPECT_EQ(root->named_buffers().keys(), std::vector<std::string>{"a.buf"});
  EXPECT_EQ(root->buffers().size(), 1u);
  EXPECT_EQ(root->state_dict().size(), 4u);  // a.buf, a.alias, b.buf, b.alias: a key for each place, as torch's

  Tensor frozen = a->register_parameter("w", zeros({3}).requires_grad_(), /*requires_grad=*/false);
  EXPECT_FALSE(frozen.requires_grad());

  auto box = std::make_shared<nn::Module>("Box");
  box->register_module("inner", root);
  expect_error<ValueError>([&] { a->register_module("parent", box); }, {"A: submodule 'parent' (Box) contains this module; registering it would make a cycle"});
  expect_error<ValueError>([&] { a->register_module("self", a); }, {"contains this module"});
  EXPECT_EQ(root->named_parameters().size(), 1u);
}

TEST(Init, KaimingModeInAnyCaseAndXavierOfNoFans) {
  Tensor w = empty({4, 3});
  nn::init::kaiming_uniform_(w, 0, "FAN_IN");
  EXPECT_LE(w.abs().max().item<double>(), std::sqrt(2.0) * std::sqrt(3.0 / 3.0));
  Tensor none = empty({0, 0});
  expect_error<ValueError>([&] { nn::init::xavier_uniform_(none); }, {"xavier_uniform_: fan_in + fan_out is 0 for a tensor of shape [0, 0]"});
}

}  // namespace
}  // namespace tally
