// libtorch's spellings of modules: holders (TALLY_MODULE), Module::to(Device[, Dtype]) and the
// functional losses' options structs.

#include <gtest/gtest.h>

#include "tally/tally.h"
#include "expect_error.h"

namespace tally {
namespace {

using tally::test::expect_error;

struct BlockImpl : nn::Module {
  explicit BlockImpl(int64_t width = 4) : nn::Module("Block") {
    fc = register_module("fc", std::make_shared<nn::Linear>(width, width));
  }
  Tensor forward(const Tensor& x) {
    auto s = scope();
    return fc->forward(x).relu();
  }
  std::shared_ptr<nn::Linear> fc;
};
TALLY_MODULE(Block);

struct NetImpl : nn::Module {
  NetImpl() : nn::Module("Net") { block = register_module("block", Block(8)); }
  Tensor forward(const Tensor& x) { return block(x); }
  Block block{nullptr};  // assigned in the constructor, as libtorch code does
};
TALLY_MODULE(Net);

TEST(ModuleHolder, PortsLibtorchCode) {
  Net net;
  EXPECT_EQ(net->named_parameters().keys(), (std::vector<std::string>{"block.fc.weight", "block.fc.bias"}));
  EXPECT_EQ(net(ones({2, 8})).sizes(), IntArrayRef({2, 8}));
  EXPECT_EQ(net->block->forward(ones({1, 8})).sizes(), IntArrayRef({1, 8}));
  // A holder is a handle: copies share the module.
  Net same = net;
  EXPECT_EQ(same.get(), net.get());
  EXPECT_EQ(same.ptr().use_count(), 2);
  Block empty{nullptr};
  EXPECT_TRUE(empty.is_empty());
  EXPECT_FALSE(empty);
  expect_error<ValueError>([&] { empty->forward(ones({1, 4})); }, {"empty ModuleHolder"});
}

TEST(ModuleTo, DeviceAndDtypeKeepHandles) {
  Net net;
  const Tensor weight = net->block->fc->weight;
  net->to(Device(kCPU), kBFloat16);
  EXPECT_EQ(weight.dtype(), kBFloat16);
  EXPECT_TRUE(weight.requires_grad());
  net->to(kFloat32);
  EXPECT_EQ(net->block->fc->bias.dtype(), kFloat32);
  net->to(Device(kMeta));  // the device alone keeps the dtype
  EXPECT_TRUE(weight.device().is_meta());
  EXPECT_EQ(weight.dtype(), kFloat32);
  EXPECT_EQ(net->block->fc->bias.device(), Device(kMeta));
  // A meta tensor has no values to bring back; a non-floating dtype is refused first.
  EXPECT_THROW(net->to(Device(kCPU)), Error);
  expect_error<TypeError>([&] { net->to(Device(kCPU), kInt64); }, {"only accepts floating point"});
}

TEST(LossOptions, LibtorchFunctionalOptions) {
  namespace F = nn::functional;
  const Tensor x = tensor({{1.0, 2.0, 3.0}, {0.5, 0.0, -1.0}}), y = zeros({2, 3}, TensorOptions(kFloat64));
  EXPECT_TRUE(F::mse_loss(x, y, F::MSELossFuncOptions().reduction(F::kSum)).equal(mse_loss(x, y, Reduction::Sum)));
  EXPECT_EQ(F::MSELossFuncOptions().reduction(), Reduction::Mean);
  const Tensor t = tensor({2, 1});
  const auto options = F::CrossEntropyFuncOptions().ignore_index(1).label_smoothing(0.1).reduction(F::kNone);
  EXPECT_TRUE(F::cross_entropy(x, t, options).equal(cross_entropy(x, t, {.ignore_index = 1, .reduction = Reduction::None, .label_smoothing = 0.1})));
  EXPECT_TRUE(F::nll_loss(x.log_softmax(1), t, F::NLLLossFuncOptions().reduction(F::kSum)).allclose(cross_entropy(x, t, {.reduction = Reduction::Sum})));
}

}  // namespace
}  // namespace tally
