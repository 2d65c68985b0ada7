// Differential tests against PyTorch: random einsum patterns (torch.einsum with letters; tally
// with multi-letter names), random shapes including size-1 broadcasting and non-contiguous
// inputs, and rearrange / reduce / repeat against torch's reshape / permute / reductions.
// All cases go to one /usr/bin/python3 run.

#include <algorithm>
#include <random>

#include "einops/common.h"

using namespace tally;
using einops_test::expect_close;
using einops_test::TorchReference;

namespace {

// A tensor of `shape` that is non-contiguous when `strided` (a reversed-permute view).
Tensor make_input(std::vector<int64_t> shape, bool strided, Generator& gen) {
  if (!strided || shape.size() < 2) return randn(shape, kFloat32, &gen);
  std::vector<int64_t> reversed(shape.rbegin(), shape.rend()), order;
  for (int64_t i = static_cast<int64_t>(shape.size()) - 1; i >= 0; --i) order.push_back(i);
  return randn(reversed, kFloat32, &gen).permute(order);
}

struct EinsumCase {
  std::string id, tally_pattern, torch_equation;
  std::vector<Tensor> inputs;
};

EinsumCase random_einsum_case(int index, std::mt19937& rng, Generator& gen) {
  const std::string letters = "abcdefg";
  std::vector<int64_t> size(letters.size());
  for (auto& s : size) s = 1 + static_cast<int64_t>(rng() % 4);
  const bool ellipsis = index % 3 == 0;
  const std::vector<int64_t> batch = {2, 3};
  const int n = 1 + static_cast<int>(rng() % 3);
  EinsumCase c{"e" + std::to_string(index), "", "", {}};
  std::string all_labels;
  for (int k = 0; k < n; ++k) {
    std::string pool = letters;
    std::shuffle(pool.begin(), pool.end(), rng);
    const std::string labels = pool.substr(0, 1 + rng() % 3);
    std::vector<int64_t> shape;
    std::string tally_part, torch_part;
    if (ellipsis) {
      // 0, 1 or 2 trailing batch dims, each possibly 1 so that it broadcasts.
      const size_t count = rng() % 3;
      for (size_t d = batch.size() - count; d < batch.size(); ++d) shape.push_back(rng() % 3 == 0 ? 1 : batch[d]);
      tally_part = "...";
      torch_part = "...";
    }
    for (char l : labels) {
      shape.push_back(size[l - 'a']);
      if (!tally_part.empty()) tally_part += " ";
      tally_part += l;
      tally_part += "dim";
      torch_part += l;
      if (all_labels.find(l) == std::string::npos) all_labels += l;
    }
    c.inputs.push_back(make_input(shape, rng() % 2 == 0, gen));
    c.tally_pattern += (k ? ", " : "") + tally_part;
    c.torch_equation += (k ? "," : "") + torch_part;
  }
  std::shuffle(all_labels.begin(), all_labels.end(), rng);
  const std::string out = all_labels.substr(0, rng() % (all_labels.size() + 1));
  std::string tally_out = ellipsis ? "..." : "";
  for (char l : out) {
    if (!tally_out.empty()) tally_out += " ";
    tally_out += l;
    tally_out += "dim";
  }
  c.tally_pattern += " -> " + tally_out;
  c.torch_equation += "->" + std::string(ellipsis ? "..." : "") + out;
  return c;
}

struct TransformCase {
  std::string id;
  std::string op;  // rearrange, reduce (reduction given) or repeat
  std::string pattern;
  einops::AxisLengths lengths;
  std::string reduction;
  std::vector<int64_t> shape;
  bool strided;
  std::string torch_expression;
};

Tensor run_transform(const TransformCase& c, const Tensor& x) {
  if (c.op == "rearrange") return einops::rearrange(x, c.pattern, c.lengths);
  if (c.op == "reduce") return einops::reduce(x, c.pattern, c.reduction, c.lengths);
  return einops::repeat(x, c.pattern, c.lengths);
}

const std::vector<TransformCase>& transform_cases() {
  static const std::vector<TransformCase> cases = {
      {"t0", "rearrange", "b s (h d) -> b h s d", {{"h", 2}}, "", {2, 3, 8}, false, "x0.reshape(2,3,2,4).permute(0,2,1,3)"},
      {"t1", "rearrange", "b h s d -> b s (h d)", {}, "", {2, 2, 3, 4}, true, "x0.permute(0,2,1,3).reshape(2,3,8)"},
      {"t2", "rearrange", "... (heads hidden1) -> ... heads hidden1", {{"heads", 2}}, "", {2, 3, 8}, false, "x0.reshape(2,3,2,4)"},
      {"t3", "rearrange", "b ... -> (...) b", {}, "", {2, 3, 4}, true, "x0.permute(1,2,0).reshape(12,2)"},
      {"t4", "rearrange", "(a b) c 1 -> c () b a", {{"b", 3}}, "", {6, 4, 1}, true, "x0.reshape(2,3,4).permute(2,1,0).unsqueeze(1)"},
      {"t5", "reduce", "b (h 2) (w 2) c -> b h w c", {}, "max", {2, 4, 6, 3}, false, "x0.reshape(2,2,2,3,2,3).amax(dim=(2,4))"},
      {"t6", "reduce", "b c h w -> b c", {}, "mean", {2, 3, 4, 5}, true, "x0.mean(dim=(2,3))"},
      {"t7", "reduce", "a b c -> c", {}, "prod", {2, 3, 4}, false, "x0.prod(dim=0).prod(dim=0)"},
      {"t8", "reduce", "... h -> ...", {}, "sum", {2, 3, 4}, true, "x0.sum(-1)"},
      {"t9", "reduce", "(a b) c -> c b", {{"b", 3}}, "min", {6, 4}, true, "x0.reshape(2,3,4).amin(dim=0).t()"},
      {"t10", "repeat", "h w -> h w c", {{"c", 3}}, "", {2, 3}, false, "x0.unsqueeze(2).expand(2,3,3)"},
      {"t11", "repeat", "h w -> (r h) w", {{"r", 2}}, "", {2, 3}, true, "x0.repeat(2,1)"},
      {"t12", "repeat", "h w -> (h r) w", {{"r", 2}}, "", {2, 3}, false, "x0.repeat_interleave(2, dim=0)"},
      {"t13", "repeat", "b ... -> b k ...", {{"k", 2}}, "", {2, 3, 4}, true, "x0.unsqueeze(1).expand(2,2,3,4)"},
  };
  return cases;
}

}  // namespace

TEST(EinopsTorch, RandomEinsumPatternsMatchTorch) {
  std::mt19937 rng(20240607);
  Generator gen(7);
  std::vector<EinsumCase> cases;
  TorchReference torch;
  for (int i = 0; i < 80; ++i) {
    cases.push_back(random_einsum_case(i, rng, gen));
    torch.add_einsum(cases.back().id, cases.back().torch_equation, cases.back().inputs);
  }
  const std::string error = torch.run();
  ASSERT_TRUE(error.empty()) << error;
  for (const EinsumCase& c : cases) {
    SCOPED_TRACE(c.tally_pattern + "   (torch: " + c.torch_equation + ")");
    expect_close(einops::einsum(c.inputs, c.tally_pattern), torch.result(c.id), 1e-4, 1e-4);
  }
}

TEST(EinopsTorch, RearrangeReduceRepeatMatchTorch) {
  Generator gen(11);
  TorchReference torch;
  std::vector<Tensor> inputs;
  for (const TransformCase& c : transform_cases()) {
    inputs.push_back(make_input(c.shape, c.strided, gen));
    torch.add_expr(c.id, c.torch_expression, {inputs.back()});
  }
  const std::string error = torch.run();
  ASSERT_TRUE(error.empty()) << error;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TransformCase& c = transform_cases()[i];
    SCOPED_TRACE(c.op + " \"" + c.pattern + "\" vs " + c.torch_expression);
    expect_close(run_transform(c, inputs[i]), torch.result(c.id), 1e-5, 1e-5);
  }
}

TEST(EinopsTorch, LecturePipelineMatchesTorch) {
  Generator gen(3);
  Tensor x = randn({2, 3, 8}, kFloat32, &gen), w = randn({4, 4}, kFloat32, &gen);
  Tensor y = randn({2, 5, 8}, kFloat32, &gen);
  TorchReference torch;
  torch.add_expr("pipeline", "torch.einsum('bshi,ij->bshj', x0.reshape(2,3,2,4), x1).reshape(2,3,8)", {x, w});
  torch.add_expr("scores", "x0 @ x1.transpose(-2, -1)", {x, y});
  torch.add_expr("sum", "x0.sum(-1)", {x});
  ASSERT_EQ(torch.run(), "");
  Tensor split = einops::rearrange(x, "... (heads hidden1) -> ... heads hidden1", {{"heads", 2}});
  Tensor mixed = einops::einsum(split, w, "... hidden1, hidden1 hidden2 -> ... hidden2");
  expect_close(einops::rearrange(mixed, "... heads hidden2 -> ... (heads hidden2)"), torch.result("pipeline"), 1e-5, 1e-5);
  expect_close(einops::einsum(x, y, "batch seq1 hidden, batch seq2 hidden -> batch seq1 seq2"), torch.result("scores"), 1e-5, 1e-5);
  expect_close(einops::einsum(x, y, "... seq1 hidden, ... seq2 hidden -> ... seq1 seq2"), torch.result("scores"), 1e-5, 1e-5);
  expect_close(einops::reduce(x, "... hidden -> ...", "sum"), torch.result("sum"), 1e-5, 1e-5);
}
