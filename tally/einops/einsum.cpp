// Running an einsum plan: read the label sizes off the operands, then issue only tally ops
// (sum, permute, reshape, expand, matmul), so autograd and the ledger see ordinary ops.

#include "tally/einops/einsum.h"

#include <algorithm>
#include <limits>

#include "tally/einops/einsum_plan.h"
#include "tally/einops/pattern.h"
#include "tally/einops/permute_if_needed.h"
#include "tally/ops/apply.h"
#include "tally/ops/matmul.h"
#include "tally/ops/reduce.h"

namespace tally::einops {
namespace {

using detail::EinsumPlan;
using detail::PairStep;


int64_t product(const std::vector<int>& labels, const std::vector<int64_t>& size) {
  int64_t p = 1;
  for (int l : labels) p *= size[l];
  return p;
}

Tensor reshape_to(const Tensor& t, IntArrayRef shape) { return t.sizes() == shape ? t : t.reshape(shape); }

// Raise the message for a label whose sizes disagree between operands (found again by a
// rescan: the common path keeps no record of which operand bound what).
[[noreturn]] void size_mismatch(const EinsumPlan& plan, const std::vector<Tensor>& ops, int label, size_t k,
                                std::string_view pattern) {
  const detail::PatternContext ctx{"einsum", pattern};
  size_t first = 0;
  for (size_t j = 0; j < k; ++j) {
    const auto& labels = plan.operand_labels[j];
    auto it = std::find(labels.begin(), labels.end(), label);
    if (it != labels.end() && ops[j].size(it - labels.begin()) != 1) {
      first = j;
      break;
    }
  }
  const int64_t had = ops[first].size(std::find(plan.operand_labels[first].begin(), plan.operand_labels[first].end(), label) -
                                      plan.operand_labels[first].begin());
  const int64_t got = ops[k].size(std::find(plan.operand_labels[k].begin(), plan.operand_labels[k].end(), label) -
                                  plan.operand_labels[k].begin());
  if (plan.is_ellipsis[label])
    detail::fail(ctx, "the '...' dimensions of operand ", first, " (shape ", ops[first].sizes(), ") and operand ", k,
                 " (shape ", ops[k].sizes(), ") do not broadcast");
  detail::fail(ctx, "'", plan.label_names[label], "' is ", had, " in operand ", first, " (shape ", ops[first].sizes(),
               ") but ", got, " in operand ", k, " (shape ", ops[k].sizes(), ")");
}

// The size of every label, checking that operands agree; "..." dims of size 1 broadcast.
std::vector<int64_t> label_sizes(const EinsumPlan& plan, const std::vector<Tensor>& ops, std::string_view pattern,
                                 bool& broadcast) {
  std::vector<int64_t> size(plan.label_names.size(), -1);
  broadcast = false;
  for (size_t k = 0; k < ops.size(); ++k) {
    const std::vector<int>& labels = plan.operand_labels[k];
    for (size_t i = 0; i < labels.size(); ++i) {
      const int l = labels[i];
      const int64_t s = ops[k].size(static_cast<int64_t>(i));
      if (size[l] == s) continue;
      if (size[l] == -1) {
        size[l] = s;
      } else if (size[l] == 1 || s == 1) {  // a size 1 broadcasts, named or under "...", as in torch.einsum
        size[l] = size[l] == 1 ? s : size[l];  // the other size, 0 included (max gave 1 for 0 against 1)
        broadcast = true;
      } else {
        size_mismatch(plan, ops, l, k, pattern);
      }
    }
  }
  return size;
}

// Operands whose dims broadcast from size 1 are expanded (a stride-0 view), so the plan's
// lowering holds unchanged.
std::vector<Tensor> expand_broadcast(const EinsumPlan& plan, const std::vector<Tensor>& ops, const std::vector<int64_t>& size) {
  std::vector<Tensor> out = ops;
  for (size_t k = 0; k < ops.size(); ++k) {
    std::vector<int64_t> target;
    for (int l : plan.operand_labels[k]) target.push_back(size[l]);
    if (ops[k].sizes() != IntArrayRef(target)) out[k] = ops[k].expand(target);
  }
  return out;
}

// The two operands become (batch, left, contracted) and (batch, contracted, right) and meet in
// one matmul; the product is reshaped back to one dim per label.
Tensor run_pair(const PairStep& s, Tensor a, Tensor b, const std::vector<int64_t>& size) {
  if (!s.a_sum.empty()) a = tally::sum(a, s.a_sum, false, a.dtype());
  if (!s.b_sum.empty()) b = tally::sum(b, s.b_sum, false, b.dtype());
  a = detail::permute_if_needed(a, s.a_perm);
  b = detail::permute_if_needed(b, s.b_perm);
  const int64_t nb = product(s.batch, size), nl = product(s.left, size), nc = product(s.contracted, size),
                nr = product(s.right, size);
  Tensor out = tally::matmul(reshape_to(a, {nb, nl, nc}), reshape_to(b, {nb, nc, nr}));
  std::vector<int64_t> shape;
  shape.reserve(s.result.size());
  for (int l : s.result) shape.push_back(size[l]);
  return reshape_to(out, shape);
}

// Sum the labels the output lacks, then order the rest as the output does.
Tensor finish(Tensor t, const std::vector<int>& labels, const std::vector<int>& output) {
  std::vector<int64_t> summed;
  std::vector<int> kept;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (std::find(output.begin(), output.end(), labels[i]) == output.end()) summed.push_back(static_cast<int64_t>(i));
    else kept.push_back(labels[i]);
  }
  if (!summed.empty()) t = tally::sum(t, summed, false, t.dtype());
  std::vector<int64_t> perm;
  for (int l : output) perm.push_back(std::find(kept.begin(), kept.end(), l) - kept.begin());
  return detail::permute_if_needed(t, perm);
}

// Three or more operands: repeatedly contract the pair whose matmul costs the fewest FLOPs.
Tensor run_greedy(const EinsumPlan& plan, const std::vector<Tensor>& ops, const std::vector<int64_t>& size) {
  struct Live {
    Tensor t;
    std::vector<int> labels;
  };
  std::vector<Live> live;
  for (size_t k = 0; k < ops.size(); ++k) live.push_back({ops[k], plan.operand_labels[k]});
  const size_t num_labels = plan.label_names.size();
  auto keep_for = [&](size_t i, size_t j) {
    std::vector<char> keep(num_labels, 0);
    for (int l : plan.output_labels) keep[l] = 1;
    for (size_t k = 0; k < live.size(); ++k)
      if (k != i && k != j)
        for (int l : live[k].labels) keep[l] = 1;
    return keep;
  };
  while (live.size() > 1) {
    double best = std::numeric_limits<double>::infinity();
    size_t bi = 0, bj = 1;
    for (size_t i = 0; i < live.size(); ++i) {
      for (size_t j = i + 1; j < live.size(); ++j) {
        const PairStep s = detail::plan_pair(live[i].labels, live[j].labels, keep_for(i, j), plan.output_labels);
        double flops = 2;
        for (const auto* role : {&s.batch, &s.left, &s.contracted, &s.right})
          for (int l : *role) flops *= static_cast<double>(size[l]);
        if (flops < best) {
          best = flops;
          bi = i;
          bj = j;
        }
      }
    }
    const PairStep s = detail::plan_pair(live[bi].labels, live[bj].labels, keep_for(bi, bj), plan.output_labels);
    Live merged{run_pair(s, live[bi].t, live[bj].t, size), s.result};
    live.erase(live.begin() + static_cast<std::ptrdiff_t>(bj));
    live[bi] = std::move(merged);
  }
  return finish(live[0].t, live[0].labels, plan.output_labels);
}

}  // namespace

Tensor einsum(const std::vector<Tensor>& given, std::string_view pattern) {
  std::vector<Tensor> operands = given;
  const ops::AutocastRegion autocast("einsum", std::span<Tensor>(operands));
  const auto plan = detail::einsum_plan(pattern, operands);
  bool broadcast = false;
  const std::vector<int64_t> size = label_sizes(*plan, operands, pattern, broadcast);
  if (broadcast) return run_greedy(*plan, expand_broadcast(*plan, operands, size), size);
  if (operands.size() == 1) {
    Tensor t = operands[0];
    if (!plan->single_sum.empty()) t = tally::sum(t, plan->single_sum, false, t.dtype());
    return detail::permute_if_needed(t, plan->single_perm);
  }
  if (operands.size() == 2) {
    Tensor t = run_pair(plan->pair, operands[0], operands[1], size);
    return detail::permute_if_needed(t, plan->pair_perm);
  }
  return run_greedy(*plan, operands, size);
}

Tensor einsum(const Tensor& a, std::string_view pattern) { return einsum(std::vector<Tensor>{a}, pattern); }

Tensor einsum(const Tensor& a, const Tensor& b, std::string_view pattern) {
  return einsum(std::vector<Tensor>{a, b}, pattern);
}

Tensor einsum(const Tensor& a, const Tensor& b, const Tensor& c, std::string_view pattern) {
  return einsum(std::vector<Tensor>{a, b, c}, pattern);
}

}  // namespace tally::einops
