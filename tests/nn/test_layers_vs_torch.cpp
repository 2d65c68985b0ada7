// Layers and losses against PyTorch 1.13 with the weights copied across: tally builds a layer,
// writes its state_dict, an input and an output gradient; tests/nn/reference_nn.py builds the
// same layer in torch, loads those weights and writes back the output and every gradient.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <vector>
#include <string>

#include "tally/tally.h"

namespace tally {
namespace {

namespace fs = std::filesystem;

class TorchCase {
 public:
  explicit TorchCase(const std::string& name) {
    dir_ = fs::temp_directory_path() / ("tally_nn_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~TorchCase() { fs::remove_all(dir_); }

  void write(const std::string& name, const Tensor& t) {
    Tensor c = t.detach().contiguous();
    const bool ints = c.dtype() == kInt64;
    if (!ints) c = c.to(kFloat32);
    std::ofstream(dir_ / (name + ".bin"), std::ios::binary).write(static_cast<const char*>(c.data_ptr()), c.nbytes());
    manifest_ += name + (ints ? " int64" : " float32");
    for (int64_t s : c.sizes()) manifest_.append(1, ' ').append(std::to_string(s));
    manifest_ += "\n";
  }
  void write_state(const nn::Module& m) {
    for (const auto& [name, t] : m.state_dict()) write("param." + name, t);
  }
  /// Name the reference's case ("linear in=4 out=3 bias=1"); it runs in TorchBatch::run.
  void set_case(const std::string& line) { std::ofstream(dir_ / "manifest.txt") << manifest_ << "case " << line << "\n"; }
  const fs::path& dir() const { return dir_; }
  /// A float32 file the reference wrote, shaped like `like`.
  Tensor read(const std::string& name, const Tensor& like) {
    Tensor t = empty(like.sizes(), TensorOptions(kFloat32));
    std::ifstream in(dir_ / (name + ".bin"), std::ios::binary);
    EXPECT_TRUE(in.good()) << "the reference wrote no " << name;
    in.read(static_cast<char*>(t.data_ptr()), t.nbytes());
    return t;
  }

 private:
  fs::path dir_;
  std::string manifest_;
};

/// Cases run by one torch process (importing torch takes seconds), then compared.
class TorchBatch {
 public:
  /// A new case; `compare` runs after the reference has written its results.
  TorchCase& add(const std::string& name, std::function<void(TorchCase&)> compare) {
    cases_.push_back({std::make_unique<TorchCase>(name + "_" + std::to_string(cases_.size())), std::move(compare)});
    return *cases_.back().ref;
  }
  void run() {
    std::string cmd = std::string(TALLY_TEST_PYTHON) + " " + TALLY_TEST_DIR + "/nn/reference_nn.py";
    for (const auto& c : cases_) cmd.append(1, ' ').append(c.ref->dir().string());
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    for (auto& c : cases_) c.compare(*c.ref);
  }

 private:
  struct Pending {
    std::unique_ptr<TorchCase> ref;
    std::function<void(TorchCase&)> compare;
  };
  std::vector<Pending> cases_;
};

void expect_close(const Tensor& actual, const Tensor& expected, const std::string& what, double rtol = 2e-5, double atol = 2e-5) {
  ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
  Tensor a = actual.detach().to(kFloat64).contiguous(), e = expected.to(kFloat64).contiguous();
  const double* pa = a.data_ptr<double>();
  const double* pe = e.data_ptr<double>();
  for (int64_t i = 0; i < a.numel(); ++i) {
    ASSERT_NEAR(pa[i], pe[i], atol + rtol * std::abs(pe[i])) << what << " element " << i;
  }
}

/// Runs `layer` on `x` in tally and torch; compares the output and the gradients of the input (when
/// floating) and every parameter.
void check_layer(TorchBatch& batch, const std::string& case_name, const std::string& line, nn::Layer& layer, Tensor x) {
  Generator gen(7);
  if (x.is_floating_point()) x.requires_grad_();
  Tensor out = layer.forward(x);
  Tensor grad = randn(out.sizes(), {}, &gen);
  (out * grad).sum().backward();
  const OrderedDict<Tensor> params = layer.named_parameters();
  TorchCase& ref = batch.add(case_name, [=](TorchCase& r) {
    expect_close(out, r.read("out", out), case_name + " output");
    if (x.is_floating_point()) expect_close(x.grad(), r.read("grad.input", x), case_name + " input grad");
    for (const auto& [name, p] : params) {
      ASSERT_TRUE(p.grad().defined()) << name;
      expect_close(p.grad(), r.read("grad.param." + name, p), case_name + " grad of " + name);
    }
  });
  ref.write_state(layer);
  ref.write("input", x);
  ref.write("grad", grad);
  ref.set_case(line);
}

TEST(LayersVsTorch, Linear) {
  TorchBatch batch;
  Generator gen(1);
  for (bool bias : {true, false}) {
    nn::Linear layer(6, 5, bias, {}, &gen);
    check_layer(batch, "linear", std::string("linear in=6 out=5 bias=") + (bias ? "1" : "0"), layer, randn({2, 3, 6}, {}, &gen));
  }
  batch.run();
}

TEST(LayersVsTorch, Embedding) {
  TorchBatch batch;
  Generator gen(2);
  nn::Embedding layer(10, 4, {}, &gen);
  check_layer(batch, "embedding", "embedding n=10 d=4", layer, tensor({{1, 2, 2}, {9, 0, 1}}, TensorOptions(kInt64)));
  // A padding row (given from the end, as torch allows): zeroed, and no gradient from its lookups.
  nn::Embedding padded(10, 4, {}, &gen);
  padded.set_padding_idx(-8);
  EXPECT_EQ(padded.padding_idx, 2);
  EXPECT_TRUE(padded.weight.select(0, 2).equal(zeros({4})));
  check_layer(batch, "embedding_padded", "embedding n=10 d=4 padding_idx=2", padded, tensor({{1, 2, 2}, {9, 0, 2}}, TensorOptions(kInt64)));
  batch.run();
  EXPECT_THROW(padded.set_padding_idx(10), ValueError);
}

TEST(LayersVsTorch, Norms) {
  TorchBatch batch;
  Generator gen(3);
  nn::LayerNorm ln(8);
  nn::RMSNorm rms(8);
  {
    NoGradGuard no_grad;  // weights away from 1 and 0 so their gradients matter
    ln.weight.copy_(randn({8}, {}, &gen));
    ln.bias.copy_(randn({8}, {}, &gen));
    rms.weight.copy_(randn({8}, {}, &gen));
  }
  check_layer(batch, "layer_norm", "layer_norm d=8", ln, randn({3, 5, 8}, {}, &gen) * 3.0 + 1.0);
  check_layer(batch, "rms_norm", "rms_norm d=8", rms, randn({3, 5, 8}, {}, &gen) * 3.0 + 1.0);
  batch.run();
}

// torch.nn.LayerNorm(6, elementwise_affine=False)(torch.randn(2, 5)) raises; without weights the
// layer normalised over whatever width it was given.
TEST(LayersVsTorch, NormsRefuseAnInputOfAnotherWidth) {
  nn::LayerNorm ln(6), ln_plain(6, 1e-5, false);
  nn::RMSNorm rms(6), rms_plain(6, std::nullopt, false);
  for (nn::Layer* layer : std::initializer_list<nn::Layer*>{&ln, &ln_plain, &rms, &rms_plain}) {
    try {
      layer->forward(ones({2, 5}));
      FAIL() << "a width of 5 was accepted by a layer of width 6";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("given normalized_shape=[6], expected input with shape [*, 6], but got input of size [2, 5]"),
                std::string::npos) << e.what();
    }
    EXPECT_EQ(layer->forward(ones({2, 6})).sizes(), IntArrayRef({2, 6}));
  }
}

TEST(LayersVsTorch, Activations) {
  TorchBatch batch;
  Generator gen(4);
  nn::GELU exact("none"), approx("tanh");
  nn::SiLU silu_layer;
  check_layer(batch, "gelu", "gelu approximate=none", exact, randn({4, 7}, {}, &gen) * 3.0);
  check_layer(batch, "gelu_tanh", "gelu approximate=tanh", approx, randn({4, 7}, {}, &gen) * 3.0);
  check_layer(batch, "silu", "silu", silu_layer, randn({4, 7}, {}, &gen) * 3.0);
  nn::ReLU relu_layer;
  nn::Tanh tanh_layer;
  nn::Sigmoid sigmoid_layer;
  check_layer(batch, "relu", "relu", relu_layer, randn({4, 7}, {}, &gen) * 3.0);
  check_layer(batch, "tanh", "tanh", tanh_layer, randn({4, 7}, {}, &gen) * 3.0);
  check_layer(batch, "sigmoid", "sigmoid", sigmoid_layer, randn({4, 7}, {}, &gen) * 3.0);
  batch.run();
}

TEST(LayersVsTorch, Mlp) {
  TorchBatch batch;
  Generator gen(5);
  nn::MLP gelu_mlp(8, 32, nn::MlpKind::Gelu, true, {}, &gen);
  nn::MLP swiglu(8, 24, nn::MlpKind::SwiGLU, false, {}, &gen);
  check_layer(batch, "mlp_gelu", "mlp d=8 hidden=32 kind=gelu bias=1", gelu_mlp, randn({2, 3, 8}, {}, &gen));
  check_layer(batch, "mlp_swiglu", "mlp d=8 hidden=24 kind=swiglu bias=0", swiglu, randn({2, 3, 8}, {}, &gen));
  batch.run();
}

TEST(LayersVsTorch, CausalSelfAttention) {
  TorchBatch batch;
  Generator gen(6);
  for (bool rotary : {false, true}) {
    nn::CausalSelfAttention attn(16, 4, 8, true, rotary, 10000.0, 0.0, {}, &gen);
    // T = 6 < context_length 8: the mask and rotary tables are cut to the sequence.
    check_layer(batch, rotary ? "attention_rope" : "attention", std::string("attention d=16 h=4 T=8 rotary=") + (rotary ? "1" : "0"), attn,
                randn({2, 6, 16}, {}, &gen));
  }
  batch.run();
}

TEST(LayersVsTorch, TwoLayerTransformerLM) {
  TorchBatch batch;
  struct Variant {
    nn::PositionEncoding positions;
    nn::NormKind norm;
    nn::MlpKind mlp;
    bool tied;
    std::string args;
  };
  for (const Variant& v : {Variant{nn::PositionEncoding::Learned, nn::NormKind::LayerNorm, nn::MlpKind::Gelu, true,
                                   "rotary=0 norm=ln mlp=gelu tied=1"},
                           Variant{nn::PositionEncoding::Rotary, nn::NormKind::RMSNorm, nn::MlpKind::SwiGLU, false,
                                   "rotary=1 norm=rms mlp=swiglu tied=0"}}) {
    const nn::TransformerConfig config{.vocab_size = 32, .context_length = 8, .d_model = 16, .num_layers = 2, .num_heads = 2,
                                       .positions = v.positions, .mlp = v.mlp, .norm = v.norm, .tied_embeddings = v.tied};
    Generator gen(8);
    nn::TransformerLM lm(config, {}, &gen);
    Tensor ids = randint(32, {3, 8}, TensorOptions(kInt64), &gen);
    check_layer(batch, "lm", "lm V=32 T=8 d=16 L=2 h=2 " + v.args, lm, ids);
  }
  batch.run();
}

TEST(LossesVsTorch, CrossEntropyAndMse) {
  TorchBatch batch;
  Generator gen(9);
  struct Ce {
    Reduction reduction;
    const char* name;
    int64_t ignore_index;
    double smoothing;
  };
  // loss = fn(x) against torch's for `line`: the loss and x's gradient under a random upstream one.
  auto check_loss = [&](const std::string& line, Tensor x, const Tensor& target, const std::function<Tensor(const Tensor&)>& fn) {
    x.requires_grad_();
    Tensor loss = fn(x);
    Tensor grad = randn(loss.sizes(), {}, &gen);
    (loss * grad).sum().backward();
    TorchCase& ref = batch.add("loss", [=](TorchCase& r) {
      expect_close(loss, r.read("out", loss), line);
      expect_close(x.grad(), r.read("grad.input", x), line + " grad");
    });
    ref.write("input", x);
    ref.write("target", target);
    ref.write("grad", grad);
    ref.set_case(line);
  };
  for (const Ce& c : {Ce{Reduction::Mean, "mean", -100, 0.0}, Ce{Reduction::Sum, "sum", 2, 0.0}, Ce{Reduction::None, "none", -100, 0.1},
                      Ce{Reduction::Mean, "mean", 3, 0.2}}) {
    const Tensor t = tensor({0, 2, 3, 4, 3, 1}, TensorOptions(kInt64));
    check_loss(std::string("cross_entropy reduction=") + c.name + " ignore_index=" + std::to_string(c.ignore_index) +
                   " label_smoothing=" + std::to_string(c.smoothing),
               randn({6, 5}, {}, &gen) * 4.0, t, [&](const Tensor& x) {
                 return cross_entropy(x, t, {.ignore_index = c.ignore_index, .reduction = c.reduction, .label_smoothing = c.smoothing});
               });
  }
  for (auto [reduction, name] : {std::pair{Reduction::Mean, "mean"}, std::pair{Reduction::Sum, "sum"}, std::pair{Reduction::None, "none"}}) {
    const Tensor t = randn({4, 3}, {}, &gen);
    check_loss(std::string("mse_loss reduction=") + name, randn({4, 3}, {}, &gen), t,
               [&, r = reduction](const Tensor& x) { return mse_loss(x, t, r); });
    // nll_loss on [N, C] and on [N, C, d] with classes in dim 1, one target ignored.
    const Tensor classes = tensor({0, 2, 3, 4, 3, 1}, TensorOptions(kInt64));
    check_loss(std::string("nll_loss reduction=") + name + " ignore_index=3", randn({6, 5}, {}, &gen), classes,
               [&, r = reduction](const Tensor& x) { return nll_loss(x, classes, 3, r); });
    const Tensor spatial = tensor({{0, 2, 1}, {-100, 1, 1}}, TensorOptions(kInt64));
    check_loss(std::string("nll_loss reduction=") + name + " ignore_index=-100", randn({2, 3, 3}, {}, &gen), spatial,
               [&, r = reduction](const Tensor& x) { return nll_loss(x, spatial, -100, r); });
    // Binary cross-entropy from probabilities inside (0, 1), and from logits with one exactly 0
    // (where the gradient is sigmoid(0) − t).
    const Tensor soft = rand({4, 3}, {}, &gen);
    check_loss(std::string("binary_cross_entropy reduction=") + name, rand({4, 3}, {}, &gen) * 0.98 + 0.01, soft,
               [&, r = reduction](const Tensor& x) { return binary_cross_entropy(x, soft, r); });
    Tensor logits = randn({4, 3}, {}, &gen) * 4.0;
    logits.select(0, 1).select(0, 1).fill_(0.0);
    check_loss(std::string("binary_cross_entropy_with_logits reduction=") + name, logits, soft,
               [&, r = reduction](const Tensor& x) { return binary_cross_entropy_with_logits(x, soft, r); });
  }
  batch.run();
}

}  // namespace
}  // namespace tally
