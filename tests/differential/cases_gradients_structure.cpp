// The GradientsStructure family: backward of reductions (sums, moments, extrema with ties),
// softmax, joins and index_select (with repeated indices), matmul in every rank, triu/tril and
// the view ops, in float64 and float32 on every layout, plus a few bfloat16 cases.

#include "differential/catalog.h"

namespace tally::difftest {

using Json = nlohmann::json;

namespace {

constexpr const char* kFamily = "GradientsStructure";

// Reduction arguments for a [3, 4, 5] input: all dims (null), single dims with and without
// keepdim, and several dims. `single_only`: torch 1.13 takes one int dim only (prod).
std::vector<Json> reduce_dims(bool single_only) {
  std::vector<Json> out = {{{"dims", nullptr}}};
  for (auto [d, keep] : {std::pair{0, false}, std::pair{1, true}, std::pair{-1, false}, std::pair{2, true}})
    out.push_back({{"dims", single_only ? Json(d) : Json::array({d})}, {"keepdim", keep}});
  if (!single_only)
    for (auto [dims, keep] : {std::pair{Json::array({0, 2}), true}, std::pair{Json::array({-1, 0}), false}})
      out.push_back({{"dims", dims}, {"keepdim", keep}});
  return out;
}

void add_reductions(std::vector<Case>& cases) {
  struct Reduction { std::string op, domain; bool single_only; Json extra; };
  // amax/amin on small integers: torch shares the gradient equally among tied extremes.
  const std::vector<Reduction> ops = {
      {"sum", "normal", false, Json::object()},         {"mean", "normal", false, Json::object()},
      {"prod", "nonzero", true, Json::object()},        {"var", "normal", false, {{"correction", 1}}},
      {"prod", "small_int", true, Json::object()},  // zeros: none, one or several per slice
      {"var", "normal", false, {{"correction", 0}}},    {"amax", "normal", false, Json::object()},
      {"amax", "small_int", false, Json::object()},     {"amin", "small_int", false, Json::object()},
  };
  // Norms of every order, on small integers (zeros, whole zero slices and ties among the largest),
  // where torch's gradient is 0 at a zero norm and shared among tied extremes.
  for (const char* ord : {"2", "1", "inf", "-inf", "3", "0.5", "-1.5"})
    for (Dtype dt : {kFloat64, kFloat32})
      for (const char* domain : {"normal", "small_int"})
        for (Json args : reduce_dims(false)) {
          args["ord"] = ord;
          cases.push_back(grad_case(kFamily, "vector_norm", {in({3, 4, 5}, dt, domain, Layout::Transposed)}, args));
        }
  for (const Reduction& r : ops)
    for (Dtype dt : {kFloat64, kFloat32})
      for (const InputSpec& spec : four_layouts(dt, r.domain))
        for (Json args : reduce_dims(r.single_only)) {
          // A product of all 60 elements in [0.5, 2.5] is huge or tiny: use values near one (and
          // small integers would almost always hold several zeros: the single dims cover zeros).
          InputSpec s = spec;
          if (r.op == "prod" && args["dims"].is_null()) {
            if (r.domain == "small_int") continue;
            s.domain = "near_one";
          }
          args.update(r.extra);
          cases.push_back(grad_case(kFamily, r.op, {s}, args));
        }
  for (const char* op : {"sum", "mean", "amax"})
    cases.push_back(grad_case(kFamily, op, {in({3, 4, 5}, kBFloat16, "normal", Layout::Transposed)}, {{"dims", Json::array({1})}, {"keepdim", false}}));
  // prod() over all of a small tensor of small integers: zero, one or several zeros in the one slice.
  for (int64_t n : {2, 3, 4, 5, 6})
    cases.push_back(grad_case(kFamily, "prod", {in({n}, kFloat64, "small_int")}, Json::object()));
  cases.push_back(grad_case(kFamily, "sum", {in({64, 257}, kFloat32, "normal", Layout::Sliced)}, {{"dims", Json::array({1})}, {"keepdim", true}}));
  // max()/min() over everything: ties (small integers) share the gradient equally in torch.
  for (const char* op : {"max", "min"})
    for (Dtype dt : {kFloat64, kFloat32, kBFloat16})
      for (const char* domain : {"normal", "small_int"})
        for (const InputSpec& spec : four_layouts(dt, domain)) cases.push_back(grad_case(kFamily, op, {spec}));
  // max(dim)/min(dim): the gradient goes to the returned index only, so ties are avoided (continuous
  // values; expanded inputs repeat values along dim 0).
  for (const char* op : {"max_dim", "min_dim"})
    for (Dtype dt : {kFloat64, kFloat32})
      for (const InputSpec& spec : four_layouts(dt, "normal"))
        for (auto [d, keep] : {std::pair{0, false}, std::pair{1, true}, std::pair{-1, false}}) {
          if (spec.layout == Layout::Expanded && d == 0) continue;
          cases.push_back(grad_case(kFamily, op, {spec}, {{"dim", d}, {"keepdim", keep}}));
        }
}

void add_softmax(std::vector<Case>& cases) {
  for (const char* op : {"softmax", "log_softmax"}) {
    for (Dtype dt : {kFloat64, kFloat32})
      for (const InputSpec& spec : four_layouts(dt, "normal"))
        for (int64_t d : {0, 1, 2, -1}) cases.push_back(grad_case(kFamily, op, {spec}, {{"dim", d}}));
    cases.push_back(grad_case(kFamily, op, {in({7, 300}, kFloat32, "wide")}, {{"dim", 1}}));
    cases.push_back(grad_case(kFamily, op, {in({3, 4, 5}, kBFloat16, "normal", Layout::Transposed)}, {{"dim", -1}}));
  }
}

// layer_norm and rms_norm with and without their affine parameters, over one and two dims, on
// every layout; wide rows for the parallel kernels (and the weight gradient's partial sums);
// bfloat16 against float32 arithmetic rounded once, which is how tally computes it.
void add_norms(std::vector<Case>& cases) {
  for (Dtype dt : {kFloat64, kFloat32, kBFloat16}) {
    const auto add = [&](Case c) {
      c.float32_reference = dt == kBFloat16;
      cases.push_back(std::move(c));
    };
    for (const InputSpec& spec : four_layouts(dt, "normal")) {
      add(grad_case(kFamily, "layer_norm", {spec, in({5}, dt), in({5}, dt)}, {{"dims", 1}, {"eps", 1e-5}}));
      add(grad_case(kFamily, "rms_norm", {spec, in({5}, dt)}, {{"dims", 1}, {"eps", 1e-6}}));
      add(grad_case(kFamily, "layer_norm", {spec}, {{"dims", 2}, {"eps", 1e-3}}));
      add(grad_case(kFamily, "rms_norm", {spec}, {{"dims", 2}, {"eps", 1e-3}}));
    }
    add(grad_case(kFamily, "layer_norm", {in({300, 301}, dt, "wide", Layout::Transposed), in({301}, dt), in({301}, dt)}, {{"dims", 1}, {"eps", 1e-5}}));
    add(grad_case(kFamily, "rms_norm", {in({300, 301}, dt, "wide"), in({301}, dt, "normal", Layout::Sliced)}, {{"dims", 1}, {"eps", 1e-5}}));
  }
}

// Attention's probabilities: scaled, with and without the causal mask, square and not (more
// queries than keys, and fewer), in every layout.
void add_attention_softmax(std::vector<Case>& cases) {
  for (Dtype dt : {kFloat64, kFloat32, kBFloat16}) {
    const auto add = [&](InputSpec spec, double scale, bool causal) {
      Case c = grad_case(kFamily, "attention_softmax", {std::move(spec)}, {{"scale", scale}, {"causal", causal}});
      c.float32_reference = dt == kBFloat16;
      cases.push_back(std::move(c));
    };
    for (const InputSpec& spec : four_layouts(dt, "normal")) add(spec, 0.125, true);
    add(in({2, 6, 6}, dt), 2.0, false);
    add(in({2, 7, 5}, dt, "normal", Layout::Transposed), 0.5, true);
    add(in({2, 4, 9}, dt, "normal", Layout::Sliced), 0.5, true);
    add(in({16, 64, 64}, dt, "wide"), 0.125, true);  // rows enough for both threads
  }
}

// Attention as one op: causal over more than one block of 64 query rows (and a partial one),
// more keys than queries and fewer, E ≠ Ev, an odd E (bfloat16 off its fused kernel), an
// explicit scale, strided inputs, the stacked form; bfloat16 against float32 arithmetic rounded once.
void add_attention(std::vector<Case>& cases) {
  for (Dtype dt : {kFloat64, kFloat32, kBFloat16}) {
    const auto add = [&](std::vector<int64_t> q, std::vector<int64_t> k, std::vector<int64_t> v, Json args, Layout layout = Layout::Contiguous) {
      Case c = grad_case(kFamily, "scaled_dot_product_attention", {in(std::move(q), dt, "normal", layout), in(std::move(k), dt), in(std::move(v), dt)},
                         std::move(args));
      c.float32_reference = dt == kBFloat16;
      cases.push_back(std::move(c));
    };
    add({2, 3, 70, 8}, {2, 3, 70, 8}, {2, 3, 70, 8}, {{"causal", true}});
    add({2, 3, 70, 8}, {2, 3, 70, 8}, {2, 3, 70, 6}, {{"causal", true}}, Layout::Transposed);
    add({2, 70, 8}, {2, 100, 8}, {2, 100, 4}, {{"causal", true}, {"scale", 0.3}}, Layout::Sliced);
    add({2, 9, 6}, {2, 5, 6}, {2, 5, 6}, {{"causal", true}});
    add({3, 5, 8}, {3, 9, 8}, {3, 9, 10}, {{"causal", false}});
    add({2, 2, 67, 5}, {2, 2, 67, 5}, {2, 2, 67, 5}, {{"causal", true}});
    add({1, 4, 130, 64}, {1, 4, 130, 64}, {1, 4, 130, 64}, {{"causal", true}});  // a GPT head's size, heads over both threads
    // With attn_mask (composed of ops): bool masks broadcast over the batch and heads (rows with
    // every key masked among them: 1 in 32 of 5 keys), float masks added, in q's dtype and in float32.
    const auto add_masked = [&](InputSpec mask, Json args = Json::object()) {
      Case c = grad_case(kFamily, "scaled_dot_product_attention_masked",
                         {in({2, 3, 7, 8}, dt, "normal", Layout::Transposed), in({2, 3, 5, 8}, dt), in({2, 3, 5, 6}, dt), std::move(mask)},
                         std::move(args));
      c.float32_reference = dt == kBFloat16;
      // A float32 mask's gradient under bfloat16 scores is the scores' bfloat16 gradient (as in
      // torch 2.x, which adds the mask in place into them), not float32 maths: not compared.
      if (dt == kBFloat16 && c.inputs[3].dtype == kFloat32) c.inputs[3].requires_grad = false;
      cases.push_back(std::move(c));
    };
    add_masked(in({7, 5}, kBool, "mask"));
    add_masked(in({2, 1, 7, 5}, kBool, "mask", Layout::Sliced), {{"scale", 0.3}});
    add_masked(in({3, 7, 5}, dt, "normal", Layout::Transposed));
    add_masked(in({7, 5}, kFloat32));
    // Stacked q, k, v, [b, T, 3, h, E]: one input, one gradient.
    for (Layout layout : {Layout::Contiguous, Layout::Transposed}) {
      Case c = grad_case(kFamily, "scaled_dot_product_attention_packed", {in({2, 70, 3, 2, 8}, dt, "normal", layout)}, {{"causal", true}});
      c.float32_reference = dt == kBFloat16;
      cases.push_back(std::move(c));
    }
  }
}

void add_joins(std::vector<Case>& cases) {
  for (Dtype dt : {kFloat64, kFloat32, kBFloat16}) {
    // The copies that move elements: each gradient is the moved-back (or summed) upstream one.
    cases.push_back(grad_case(kFamily, "flip", {in({3, 4, 5}, dt, "normal", Layout::Transposed)}, {{"dims", Json::array({0, 2})}}));
    cases.push_back(grad_case(kFamily, "roll", {in({3, 4, 5}, dt, "normal", Layout::Sliced)},
                              {{"shifts", Json::array({-1, 6})}, {"dims", Json::array({0, -1})}}));
    cases.push_back(grad_case(kFamily, "repeat", {in({3, 4}, dt, "normal", Layout::Transposed)}, {{"repeats", Json::array({2, 2, 3})}}));
    cases.push_back(grad_case(kFamily, "repeat_interleave", {in({3, 4}, dt)}, {{"repeats", 3}, {"dim", 0}}));
    cases.push_back(grad_case(kFamily, "cat", {in({2, 4, 5}, dt, "normal", Layout::Transposed), in({3, 4, 5}, dt, "normal", Layout::Sliced)},
                              {{"dim", 0}}));
    cases.push_back(grad_case(kFamily, "cat", {in({3, 2, 5}, dt), in({3, 4, 5}, dt, "normal", Layout::Expanded), in({3, 1, 5}, dt)},
                              {{"dim", 1}}));
    Case frozen = grad_case(kFamily, "cat", {in({3, 4, 2}, dt, "normal", Layout::Transposed), in({3, 4, 5}, dt)}, {{"dim", -1}});
    frozen.inputs[0].requires_grad = false;
    cases.push_back(frozen);
    for (int64_t d : {0, 1, 2, -1})
      cases.push_back(grad_case(kFamily, "stack", {in({3, 4}, dt), in({3, 4}, dt, "normal", Layout::Transposed), in({3, 4}, dt, "normal", Layout::Sliced)},
                                {{"dim", d}}));
    // Nine indices into five rows repeat some: their gradients must add up.
    for (Layout l : {Layout::Contiguous, Layout::Transposed, Layout::Sliced}) {
      cases.push_back(grad_case(kFamily, "index_select", {in({5, 6}, dt, "normal", l), in({9}, kInt64, "index:5")}, {{"dim", 0}}));
      cases.push_back(grad_case(kFamily, "index_select", {in({5, 6}, dt, "normal", l), in({9}, kInt32, "index:6")}, {{"dim", -1}}));
    }
    cases.push_back(grad_case(kFamily, "index_select", {in({3, 4, 5}, dt, "normal", Layout::Expanded), in({7}, kInt64, "index:4")}, {{"dim", 1}}));
    // The gather's reverse: nine source rows into five, repeats accumulating in order, along each
    // dim and from strided sources.
    cases.push_back(grad_case(kFamily, "index_add", {in({5, 4, 6}, dt, "normal", Layout::Transposed), in({9}, kInt64, "index:5"),
                                                     in({9, 4, 6}, dt, "normal", Layout::Sliced)}, {{"dim", 0}}));
    cases.push_back(grad_case(kFamily, "index_add", {in({3, 5, 4}, dt), in({9}, kInt32, "index:5"),
                                                     in({3, 9, 4}, dt, "normal", Layout::Transposed)}, {{"dim", 1}}));
    cases.push_back(grad_case(kFamily, "index_add", {in({3, 4, 5}, dt, "normal", Layout::Sliced), in({7}, kInt64, "index:5"),
                                                     in({3, 4, 7}, dt)}, {{"dim", -1}}));
    // gather's repeats add up in x's gradient; scatter_add passes self's through and gathers src's.
    cases.push_back(grad_case(kFamily, "gather", {in({5, 6}, dt, "normal", Layout::Transposed), in({9, 4}, kInt64, "index:5")}, {{"dim", 0}}));
    cases.push_back(grad_case(kFamily, "gather", {in({3, 4, 5}, dt, "normal", Layout::Sliced), in({2, 3, 8}, kInt64, "index:5")}, {{"dim", -1}}));
    cases.push_back(grad_case(kFamily, "scatter_add", {in({5, 4}, dt, "normal", Layout::Transposed), in({9, 4}, kInt64, "index:5"),
                                                       in({9, 4}, dt, "normal", Layout::Sliced)}, {{"dim", 0}}));
    cases.push_back(grad_case(kFamily, "scatter_value", {in({4, 6}, dt), in({4, 3}, kInt64, "index:6")}, {{"dim", 1}, {"value", 2.5}}));
  }
}

void add_matmul(std::vector<Case>& cases) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{8}, {8}},        {{5, 8}, {8}},           {{8}, {8, 3}},      {{5, 8}, {8, 3}},  {{2, 5, 8}, {2, 8, 3}},
      {{2, 1, 5, 8}, {3, 8, 4}}, {{3, 5, 8}, {8}}, {{8}, {2, 8, 3}}, {{3, 5, 8}, {8, 4}}, {{5, 8}, {2, 8, 3}},
  };
  for (const auto& [sa, sb] : shapes) {
    const Layout la = sa.size() >= 2 ? Layout::Transposed : Layout::Sliced, lb = sb.size() >= 2 ? Layout::Transposed : Layout::Sliced;
    for (Dtype dt : {kFloat64, kFloat32}) {
      cases.push_back(grad_case(kFamily, "matmul", {in(sa, dt), in(sb, dt)}));
      cases.push_back(grad_case(kFamily, "matmul", {in(sa, dt, "normal", la), in(sb, dt, "normal", lb)}));
      if (sa.size() >= 2 || sb.size() >= 2)  // otherwise the same as the case above
        cases.push_back(grad_case(kFamily, "matmul", {in(sa, dt, "normal", Layout::Sliced), in(sb, dt, "normal", Layout::Sliced)}));
      if (sa.size() >= 3) cases.push_back(grad_case(kFamily, "matmul", {in(sa, dt, "normal", Layout::Expanded), in(sb, dt)}));
      if (sb.size() >= 3) cases.push_back(grad_case(kFamily, "matmul", {in(sa, dt), in(sb, dt, "normal", Layout::Expanded)}));
    }
    cases.push_back(grad_case(kFamily, "matmul", {in(sa, kBFloat16), in(sb, kBFloat16, "normal", lb)}));
  }
  for (size_t frozen : {0, 1}) {
    Case c = grad_case(kFamily, "matmul", {in({2, 5, 8}, kFloat32, "normal", Layout::Transposed), in({8, 3}, kFloat32)});
    c.inputs[frozen].requires_grad = false;
    cases.push_back(c);
  }
  // addmm: a bias row in the product's epilogue, or a self added after; scaled forms compose.
  for (Dtype dt : {kFloat64, kFloat32, kBFloat16}) {
    for (const std::vector<int64_t>& self : {std::vector<int64_t>{3}, {1, 3}, {6, 3}, {6, 1}})
      cases.push_back(grad_case(kFamily, "addmm", {in(self, dt), in({6, 8}, dt), in({8, 3}, dt, "normal", Layout::Transposed)}));
    cases.push_back(grad_case(kFamily, "addmm", {in({3}, dt), in({6, 8}, dt, "normal", Layout::Sliced), in({8, 3}, dt)}));
    cases.push_back(grad_case(kFamily, "addmm", {in({6, 3}, dt), in({6, 8}, dt), in({8, 3}, dt)}, {{"beta", 0.5}, {"alpha", 2.0}}));
  }
}

void add_triangles(std::vector<Case>& cases) {
  for (const char* op : {"triu", "tril"})
    for (Dtype dt : {kFloat64, kFloat32})
      for (int64_t diagonal : {-1, 0, 2}) {
        for (Layout l : {Layout::Contiguous, Layout::Transposed, Layout::Sliced})
          cases.push_back(grad_case(kFamily, op, {in({4, 5}, dt, "normal", l)}, {{"diagonal", diagonal}}));
        cases.push_back(grad_case(kFamily, op, {in({2, 4, 5}, dt, "normal", Layout::Expanded)}, {{"diagonal", diagonal}}));
      }
}

void add_views(std::vector<Case>& cases) {
  // Each view's backward is another view or a sum (expand); stepped and expanded inputs check
  // that the gradient lands on the right base elements and that skipped ones stay zero.
  for (Dtype dt : {kFloat64, kFloat32}) {
    for (const InputSpec& spec : four_layouts(dt, "normal")) {
      for (const Json& shape : {Json::array({12, 5}), Json::array({-1}), Json::array({5, 12})})
        cases.push_back(grad_case(kFamily, "reshape", {spec}, {{"shape", shape}}));
      for (const Json& dims : {Json::array({2, 0, 1}), Json::array({1, 2, 0})})
        cases.push_back(grad_case(kFamily, "permute", {spec}, {{"dims", dims}}));
      cases.push_back(grad_case(kFamily, "transpose", {spec}, {{"dim0", 0}, {"dim1", -1}}));
      cases.push_back(grad_case(kFamily, "flatten", {spec}, {{"start", 1}, {"end", 2}}));
      cases.push_back(grad_case(kFamily, "slice", {spec}, {{"dim", 1}, {"start", 1}, {"end", nullptr}, {"step", 2}}));
      cases.push_back(grad_case(kFamily, "slice", {spec}, {{"dim", -1}, {"start", 0}, {"end", 4}, {"step", 3}}));
      cases.push_back(grad_case(kFamily, "select", {spec}, {{"dim", 1}, {"index", -1}}));
      cases.push_back(grad_case(kFamily, "index", {spec}, {{"indices", Json::array({1, nullptr, Json::array({nullptr, nullptr, 2})})}}));
      cases.push_back(grad_case(kFamily, "unsqueeze", {spec}, {{"dim", 1}}));
      // Merging dims 1 and 2 needs them laid out contiguously: the transposed and sliced inputs
      // cannot be viewed as [3, 20] (the sliced one is viewed as [12, 5] below).
      if (spec.layout == Layout::Contiguous || spec.layout == Layout::Expanded)
        cases.push_back(grad_case(kFamily, "view", {spec}, {{"shape", Json::array({3, 20})}}));
    }
    cases.push_back(grad_case(kFamily, "view", {in({3, 4, 5}, dt, "normal", Layout::Sliced)}, {{"shape", Json::array({12, 5})}}));
    cases.push_back(grad_case(kFamily, "expand", {in({3, 1, 5}, dt, "normal", Layout::Sliced)}, {{"shape", Json::array({2, 3, 4, 5})}}));
    cases.push_back(grad_case(kFamily, "expand", {in({3, 1, 5}, dt)}, {{"shape", Json::array({-1, 6, -1})}}));
    cases.push_back(grad_case(kFamily, "expand", {in({3, 4, 5}, dt, "normal", Layout::Expanded)}, {{"shape", Json::array({2, 3, 4, 5})}}));
    for (const Json& dim : {Json(1), Json(nullptr), Json(0)})
      cases.push_back(grad_case(kFamily, "squeeze", {in({3, 1, 5}, dt, "normal", Layout::Sliced)}, {{"dim", dim}}));
    cases.push_back(grad_case(kFamily, "squeeze", {in({1, 4, 1}, dt, "normal", Layout::Transposed)}, {{"dim", nullptr}}));
  }
  cases.push_back(grad_case(kFamily, "permute", {in({3, 4, 5}, kBFloat16, "normal", Layout::Sliced)}, {{"dims", Json::array({2, 0, 1})}}));
  cases.push_back(grad_case(kFamily, "expand", {in({3, 1, 5}, kBFloat16)}, {{"shape", Json::array({2, 3, 4, 5})}}));
}

}  // namespace

std::vector<Case> gradient_structure_cases() {
  std::vector<Case> cases;
  add_reductions(cases);
  add_softmax(cases);
  add_norms(cases);
  add_attention_softmax(cases);
  add_attention(cases);
  add_joins(cases);
  add_matmul(cases);
  add_triangles(cases);
  add_views(cases);
  return cases;
}

}  // namespace tally::difftest
