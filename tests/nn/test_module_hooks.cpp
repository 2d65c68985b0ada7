// Module forward hooks (PyTorch's register_forward_pre_hook and register_forward_hook): they run
// when a module is called, m(x), by the caller or by its parent, and not from m.forward(x).

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tally/tally.h"
#include "expect_error.h"

namespace tally {
namespace {

using tally::test::expect_error;

TEST(ModuleHooks, PreHookReplacesTheInputAndHookTheOutput) {
  Generator gen(1);
  nn::Linear fc(3, 2, true, {}, &gen);
  const Tensor x = randn({4, 3}, kFloat32, &gen);
  std::vector<std::string> calls;
  const unsigned pre = fc.register_forward_pre_hook([&](nn::Module& m, const Tensor& in) {
    calls.push_back("pre " + m.type_name());
    return in * 2;  // replaces the input
  });
  const unsigned post = fc.register_forward_hook([&](nn::Module&, const Tensor& in, const Tensor& out) {
    calls.push_back("post");
    EXPECT_TRUE(in.equal(x * 2)) << "the hook sees the input forward saw";
    return Tensor();  // keeps the output
  });
  const unsigned last = fc.register_forward_hook([&](nn::Module&, const Tensor&, const Tensor& out) {
    calls.push_back("last");
    return out + 1;  // replaces it
  });
  EXPECT_TRUE(fc(x).allclose(fc.forward(x * 2) + 1));
  EXPECT_EQ(calls, (std::vector<std::string>{"pre Linear", "post", "last"}));
  calls.clear();
  fc.forward(x);  // forward itself runs no hooks, as in PyTorch
  EXPECT_TRUE(calls.empty());
  fc.remove_forward_hook(pre);
  fc.remove_forward_hook(post);
  fc.remove_forward_hook(last);
  EXPECT_TRUE(fc(x).equal(fc.forward(x)));
  expect_error<ValueError>([&] { fc.remove_forward_hook(pre); }, {"remove_forward_hook", "Linear holds no forward hook with handle"});
}

TEST(ModuleHooks, RunForChildrenCalledByTheirParents) {
  Generator gen(2);
  nn::TransformerConfig config;
  config.vocab_size = 32, config.context_length = 8, config.d_model = 16, config.num_layers = 2, config.num_heads = 2;
  nn::TransformerLM model(config, {}, &gen);
  int mlp_calls = 0, block_calls = 0;
  std::vector<int64_t> seen;
  for (const auto& [name, module] : model.named_modules()) {
    if (name.ends_with(".mlp")) module->register_forward_hook([&](nn::Module&, const Tensor&, const Tensor& out) {
      ++mlp_calls;
      seen.push_back(out.size(-1));
      return Tensor();
    });
    if (name == "blocks.1") module->register_forward_pre_hook([&](nn::Module&, const Tensor&) {
      ++block_calls;
      return Tensor();
    });
  }
  const Tensor ids = randint(0, 32, {2, 8}, kInt64, &gen);
  model(ids);
  EXPECT_EQ(mlp_calls, 2);
  EXPECT_EQ(block_calls, 1);
  EXPECT_EQ(seen, (std::vector<int64_t>{16, 16}));
  // A hook that zeroes the last block's output changes the model's, through its parent.
  const Tensor before = model(ids);
  for (const auto& [name, module] : model.named_modules())
    if (name == "blocks.1") module->register_forward_hook([](nn::Module&, const Tensor&, const Tensor& out) { return zeros_like(out); });
  EXPECT_FALSE(model(ids).allclose(before));
}

TEST(ModuleHooks, SequentialAndHoldersCallThroughHooks) {
  Generator gen(3);
  auto first = std::make_shared<nn::Linear>(4, 4, true, TensorOptions(), &gen);
  nn::Sequential seq({first, std::make_shared<nn::ReLU>()});
  int calls = 0;
  first->register_forward_hook([&](nn::Module&, const Tensor&, const Tensor&) {
    ++calls;
    return Tensor();
  });
  const Tensor x = randn({2, 4}, kFloat32, &gen);
  seq.forward(x);
  EXPECT_EQ(calls, 1) << "Sequential calls its layers, so their hooks run";
  expect_error<ValueError>([&] { first->register_forward_hook(nullptr); }, {"register_forward_hook: the hook is empty"});
}

}  // namespace
}  // namespace tally
