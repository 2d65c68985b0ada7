// One line per op: the same names as OPS in reference.py, calling tally's public API the way a
// user would (free functions, methods and operators), so the operator overloads are covered too.

#include "differential/ops_table.h"

#include <functional>
#include <map>
#include <stdexcept>

#include "differential/case.h"
#include "tally/ops/registry.h"

namespace tally::difftest {
namespace {

using Json = nlohmann::json;
using Outs = std::vector<Tensor>;
using OpFn = std::function<Outs(std::vector<Tensor>& v, std::vector<Tensor>& b, const Json& a)>;

// A JSON number or bool as a Scalar of the same kind (the kind drives type promotion).
Scalar scalar(const Json& j) {
  if (j.is_boolean()) return Scalar(j.get<bool>());
  if (j.is_number_integer()) return Scalar(j.get<int64_t>());
  return Scalar(j.get<double>());
}

std::optional<Scalar> optional_scalar(const Json& a, const char* key) {
  if (!a.contains(key) || a[key].is_null()) return std::nullopt;
  return scalar(a[key]);
}

Scalar alpha(const Json& a) { return a.contains("alpha") ? scalar(a["alpha"]) : Scalar(1); }
bool keepdim(const Json& a) { return a.value("keepdim", false); }
bool all_dims(const Json& a) { return !a.contains("dims") || a["dims"].is_null(); }

// "dims" may be one int or a list.
std::vector<int64_t> dims(const Json& a) {
  if (a["dims"].is_number_integer()) return {a["dims"].get<int64_t>()};
  return a["dims"].get<std::vector<int64_t>>();
}

std::optional<int64_t> optional_int(const Json& j) {
  if (j.is_null()) return std::nullopt;
  return j.get<int64_t>();
}

// An "index" op's list, as reference.py's index_item reads it: an int, null (new axis), "..."
// (Ellipsis), [start, stop, step] (a slice, any bound null) or {"t": k}, the case's input k.
std::vector<indexing::TensorIndex> index_list(const Json& items, const std::vector<Tensor>& v) {
  std::vector<indexing::TensorIndex> out;
  for (const Json& item : items) {
    if (item.is_null()) out.emplace_back(indexing::None);
    else if (item.is_string()) out.emplace_back(item.get<std::string>().c_str());
    else if (item.is_object()) out.emplace_back(v.at(item["t"].get<size_t>()));
    else if (item.is_array()) out.emplace_back(indexing::Slice(optional_int(item[0]), optional_int(item[1]), optional_int(item[2])));
    else out.emplace_back(item.get<int64_t>());
  }
  return out;
}

// An "index_put" op's list, one entry per dim: {"t": k} or null (the whole dim).
TensorList tensor_list(const Json& items, const std::vector<Tensor>& v) {
  TensorList out;
  for (const Json& item : items) out.push_back(item.is_null() ? Tensor() : v.at(item["t"].get<size_t>()));
  return out;
}

// A reduction called with no dims (full) or with `dims`, for fns taking (x, dims, keepdim).
template <class Fn>
OpFn reduction(Fn fn) {
  return [fn](auto& v, auto&, const Json& a) -> Outs {
    return {all_dims(a) ? fn(v[0], std::vector<int64_t>{}, false) : fn(v[0], dims(a), keepdim(a))};
  };
}

// argmax / argmin take one optional dim.
template <class Fn>
OpFn index_reduction(Fn fn) {
  return [fn](auto& v, auto&, const Json& a) -> Outs {
    if (all_dims(a)) return {fn(v[0], std::nullopt, false)};
    return {fn(v[0], dims(a).at(0), keepdim(a))};
  };
}

const std::map<std::string, OpFn>& table() {
  static const std::map<std::string, OpFn> ops = {
      // elementwise, tensor ∘ tensor
      {"add", [](auto& v, auto&, const Json& a) -> Outs { return {add(v[0], v[1], alpha(a))}; }},
      {"sub", [](auto& v, auto&, const Json& a) -> Outs { return {sub(v[0], v[1], alpha(a))}; }},
      {"mul", [](auto& v, auto&, const Json&) -> Outs { return {v[0] * v[1]}; }},
      {"div", [](auto& v, auto&, const Json&) -> Outs { return {v[0] / v[1]}; }},
      {"pow", [](auto& v, auto&, const Json&) -> Outs { return {pow(v[0], v[1])}; }},
      {"maximum", [](auto& v, auto&, const Json&) -> Outs { return {maximum(v[0], v[1])}; }},
      {"minimum", [](auto& v, auto&, const Json&) -> Outs { return {minimum(v[0], v[1])}; }},
      {"eq", [](auto& v, auto&, const Json&) -> Outs { return {v[0] == v[1]}; }},
      {"ne", [](auto& v, auto&, const Json&) -> Outs { return {v[0] != v[1]}; }},
      {"lt", [](auto& v, auto&, const Json&) -> Outs { return {v[0] < v[1]}; }},
      {"le", [](auto& v, auto&, const Json&) -> Outs { return {v[0] <= v[1]}; }},
      {"gt", [](auto& v, auto&, const Json&) -> Outs { return {v[0] > v[1]}; }},
      {"ge", [](auto& v, auto&, const Json&) -> Outs { return {v[0] >= v[1]}; }},
      // elementwise, tensor ∘ number and number ∘ tensor
      {"add_scalar", [](auto& v, auto&, const Json& a) -> Outs { return {v[0] + scalar(a["scalar"])}; }},
      {"sub_scalar", [](auto& v, auto&, const Json& a) -> Outs { return {v[0] - scalar(a["scalar"])}; }},
      {"mul_scalar", [](auto& v, auto&, const Json& a) -> Outs { return {v[0] * scalar(a["scalar"])}; }},
      {"div_scalar", [](auto& v, auto&, const Json& a) -> Outs { return {v[0] / scalar(a["scalar"])}; }},
      {"scalar_add", [](auto& v, auto&, const Json& a) -> Outs { return {scalar(a["scalar"]) + v[0]}; }},
      {"scalar_sub", [](auto& v, auto&, const Json& a) -> Outs { return {scalar(a["scalar"]) - v[0]}; }},
      {"scalar_mul", [](auto& v, auto&, const Json& a) -> Outs { return {scalar(a["scalar"]) * v[0]}; }},
      {"scalar_div", [](auto& v, auto&, const Json& a) -> Outs { return {scalar(a["scalar"]) / v[0]}; }},
      {"pow_scalar", [](auto& v, auto&, const Json& a) -> Outs { return {v[0].pow(scalar(a["scalar"]))}; }},
      {"eq_scalar", [](auto& v, auto&, const Json& a) -> Outs { return {v[0] == scalar(a["scalar"])}; }},
      {"ne_scalar", [](auto& v, auto&, const Json& a) -> Outs { return {v[0] != scalar(a["scalar"])}; }},
      {"lt_scalar", [](auto& v, auto&, const Json& a) -> Outs { return {v[0] < scalar(a["scalar"])}; }},
      {"le_scalar", [](auto& v, auto&, const Json& a) -> Outs { return {v[0] <= scalar(a["scalar"])}; }},
      {"gt_scalar", [](auto& v, auto&, const Json& a) -> Outs { return {v[0] > scalar(a["scalar"])}; }},
      {"ge_scalar", [](auto& v, auto&, const Json& a) -> Outs { return {v[0] >= scalar(a["scalar"])}; }},
      // in place: the written view and the base it belongs to
      {"add_", [](auto& v, auto& b, const Json&) -> Outs { v[0].add_(v[1]); return {v[0], b[0]}; }},
      {"sub_", [](auto& v, auto& b, const Json&) -> Outs { v[0].sub_(v[1]); return {v[0], b[0]}; }},
      {"mul_", [](auto& v, auto& b, const Json&) -> Outs { v[0].mul_(v[1]); return {v[0], b[0]}; }},
      {"div_", [](auto& v, auto& b, const Json&) -> Outs { v[0].div_(v[1]); return {v[0], b[0]}; }},
      {"add_scalar_", [](auto& v, auto& b, const Json& a) -> Outs { v[0].add_(scalar(a["scalar"])); return {v[0], b[0]}; }},
      {"sub_scalar_", [](auto& v, auto& b, const Json& a) -> Outs { v[0].sub_(scalar(a["scalar"])); return {v[0], b[0]}; }},
      {"mul_scalar_", [](auto& v, auto& b, const Json& a) -> Outs { v[0].mul_(scalar(a["scalar"])); return {v[0], b[0]}; }},
      {"div_scalar_", [](auto& v, auto& b, const Json& a) -> Outs { v[0].div_(scalar(a["scalar"])); return {v[0], b[0]}; }},
      // in place, the optimizers' ops (Note [Forms] in ops/apply.h)
      {"sqrt_", [](auto& v, auto& b, const Json&) -> Outs { v[0].sqrt_(); return {v[0], b[0]}; }},
      {"exp_", [](auto& v, auto& b, const Json&) -> Outs { v[0].exp_(); return {v[0], b[0]}; }},
      {"neg_", [](auto& v, auto& b, const Json&) -> Outs { v[0].neg_(); return {v[0], b[0]}; }},
      {"abs_", [](auto& v, auto& b, const Json&) -> Outs { v[0].abs_(); return {v[0], b[0]}; }},
      {"sigmoid_", [](auto& v, auto& b, const Json&) -> Outs { v[0].sigmoid_(); return {v[0], b[0]}; }},
      {"relu_", [](auto& v, auto& b, const Json&) -> Outs { v[0].relu_(); return {v[0], b[0]}; }},
      {"zero_", [](auto& v, auto& b, const Json&) -> Outs { v[0].zero_(); return {v[0], b[0]}; }},
      {"pow_scalar_", [](auto& v, auto& b, const Json& a) -> Outs { v[0].pow_(scalar(a["scalar"])); return {v[0], b[0]}; }},
      {"clamp_", [](auto& v, auto& b, const Json& a) -> Outs {
         v[0].clamp_(optional_scalar(a, "min"), optional_scalar(a, "max"));
         return {v[0], b[0]};
       }},
      {"addcmul_", [](auto& v, auto& b, const Json& a) -> Outs { v[0].addcmul_(v[1], v[2], scalar(a["value"])); return {v[0], b[0]}; }},
      {"addcdiv_", [](auto& v, auto& b, const Json& a) -> Outs { v[0].addcdiv_(v[1], v[2], scalar(a["value"])); return {v[0], b[0]}; }},
      {"lerp_", [](auto& v, auto& b, const Json& a) -> Outs { v[0].lerp_(v[1], scalar(a["weight"])); return {v[0], b[0]}; }},
      {"addcmul", [](auto& v, auto&, const Json& a) -> Outs { return {addcmul(v[0], v[1], v[2], scalar(a["value"]))}; }},
      {"addcdiv", [](auto& v, auto&, const Json& a) -> Outs { return {addcdiv(v[0], v[1], v[2], scalar(a["value"]))}; }},
      {"lerp", [](auto& v, auto&, const Json& a) -> Outs { return {lerp(v[0], v[1], scalar(a["weight"]))}; }},
      // out=: input 0 is the out tensor; the result and the out tensor's base come back
      {"add_out", [](auto& v, auto& b, const Json&) -> Outs { return {add_out(v[0], v[1], v[2]), b[0]}; }},
      {"mul_out", [](auto& v, auto& b, const Json&) -> Outs { return {mul_out(v[0], v[1], v[2]), b[0]}; }},
      {"div_out", [](auto& v, auto& b, const Json&) -> Outs { return {div_out(v[0], v[1], v[2]), b[0]}; }},
      {"sqrt_out", [](auto& v, auto& b, const Json&) -> Outs { return {sqrt_out(v[0], v[1]), b[0]}; }},
      {"exp_out", [](auto& v, auto& b, const Json&) -> Outs { return {exp_out(v[0], v[1]), b[0]}; }},
      {"matmul_out", [](auto& v, auto& b, const Json&) -> Outs { return {matmul_out(v[0], v[1], v[2]), b[0]}; }},
      {"addcmul_out", [](auto& v, auto& b, const Json& a) -> Outs { return {addcmul_out(v[0], v[1], v[2], v[3], scalar(a["value"])), b[0]}; }},
      {"clamp_out", [](auto& v, auto& b, const Json& a) -> Outs {
         return {clamp_out(v[0], v[1], optional_scalar(a, "min"), optional_scalar(a, "max")), b[0]};
       }},
      {"where_out", [](auto& v, auto& b, const Json&) -> Outs { return {where_out(v[0], v[1], v[2], v[3]), b[0]}; }},
      // unary
      {"sqrt", [](auto& v, auto&, const Json&) -> Outs { return {sqrt(v[0])}; }},
      {"rsqrt", [](auto& v, auto&, const Json&) -> Outs { return {rsqrt(v[0])}; }},
      {"exp", [](auto& v, auto&, const Json&) -> Outs { return {exp(v[0])}; }},
      {"log", [](auto& v, auto&, const Json&) -> Outs { return {log(v[0])}; }},
      {"neg", [](auto& v, auto&, const Json&) -> Outs { return {-v[0]}; }},
      {"abs", [](auto& v, auto&, const Json&) -> Outs { return {abs(v[0])}; }},
      {"tanh", [](auto& v, auto&, const Json&) -> Outs { return {tanh(v[0])}; }},
      {"sigmoid", [](auto& v, auto&, const Json&) -> Outs { return {sigmoid(v[0])}; }},
      {"relu", [](auto& v, auto&, const Json&) -> Outs { return {relu(v[0])}; }},
      {"gelu", [](auto& v, auto&, const Json& a) -> Outs { return {gelu(v[0], a["approximate"].get<std::string>())}; }},
      {"silu", [](auto& v, auto&, const Json&) -> Outs { return {silu(v[0])}; }},
      {"square", [](auto& v, auto&, const Json&) -> Outs { return {square(v[0])}; }},
      {"erf", [](auto& v, auto&, const Json&) -> Outs { return {erf(v[0])}; }},
      // selection
      {"clamp", [](auto& v, auto&, const Json& a) -> Outs { return {clamp(v[0], optional_scalar(a, "min"), optional_scalar(a, "max"))}; }},
      {"where", [](auto& v, auto&, const Json&) -> Outs { return {where(v[0], v[1], v[2])}; }},
      {"masked_fill", [](auto& v, auto&, const Json& a) -> Outs { return {masked_fill(v[0], v[1], scalar(a["value"]))}; }},
      // reductions
      {"sum", reduction([](const Tensor& x, IntArrayRef d, bool k) { return sum(x, d, k); })},
      {"mean", reduction([](const Tensor& x, IntArrayRef d, bool k) { return mean(x, d, k); })},
      {"prod", reduction([](const Tensor& x, IntArrayRef d, bool k) { return prod(x, d, k); })},
      {"amax", reduction([](const Tensor& x, IntArrayRef d, bool k) { return amax(x, d, k); })},
      {"amin", reduction([](const Tensor& x, IntArrayRef d, bool k) { return amin(x, d, k); })},
      {"any", reduction([](const Tensor& x, IntArrayRef d, bool k) { return any(x, d, k); })},
      {"all", reduction([](const Tensor& x, IntArrayRef d, bool k) { return all(x, d, k); })},
      {"var", [](auto& v, auto&, const Json& a) -> Outs {
         const int64_t c = a["correction"].get<int64_t>();
         return {all_dims(a) ? var(v[0], {}, c, false) : var(v[0], dims(a), c, keepdim(a))};
       }},
      {"vector_norm", [](auto& v, auto&, const Json& a) -> Outs {
         const double ord = std::stod(a["ord"].get<std::string>());  // text: JSON has no infinity
         return {all_dims(a) ? linalg::vector_norm(v[0], ord) : linalg::vector_norm(v[0], ord, dims(a), keepdim(a))};
       }},
      {"argmax", index_reduction([](const Tensor& x, std::optional<int64_t> d, bool k) { return argmax(x, d, k); })},
      {"argmin", index_reduction([](const Tensor& x, std::optional<int64_t> d, bool k) { return argmin(x, d, k); })},
      {"max", [](auto& v, auto&, const Json&) -> Outs { return {v[0].max()}; }},
      {"min", [](auto& v, auto&, const Json&) -> Outs { return {v[0].min()}; }},
      {"max_dim", [](auto& v, auto&, const Json& a) -> Outs {
         auto [values, indices] = max(v[0], a["dim"].get<int64_t>(), keepdim(a));
         return {values, indices};
       }},
      {"min_dim", [](auto& v, auto&, const Json& a) -> Outs {
         auto [values, indices] = min(v[0], a["dim"].get<int64_t>(), keepdim(a));
         return {values, indices};
       }},
      {"softmax", [](auto& v, auto&, const Json& a) -> Outs { return {softmax(v[0], a["dim"].get<int64_t>())}; }},
      {"log_softmax", [](auto& v, auto&, const Json& a) -> Outs { return {log_softmax(v[0], a["dim"].get<int64_t>())}; }},
      {"attention_softmax",
       [](auto& v, auto&, const Json& a) -> Outs { return {attention_softmax(v[0], a["scale"].get<double>(), a["causal"].get<bool>())}; }},
      {"scaled_dot_product_attention_packed", [](auto& v, auto&, const Json& a) -> Outs {
         return {scaled_dot_product_attention_packed(v[0], a["causal"].get<bool>())};
       }},
      {"scaled_dot_product_attention", [](auto& v, auto&, const Json& a) -> Outs {
         const std::optional<double> scale = a.contains("scale") ? std::optional(a["scale"].get<double>()) : std::nullopt;
         return {scaled_dot_product_attention(v[0], v[1], v[2], a["causal"].get<bool>(), scale)};
       }},
      {"scaled_dot_product_attention_masked", [](auto& v, auto&, const Json& a) -> Outs {
         const std::optional<double> scale = a.contains("scale") ? std::optional(a["scale"].get<double>()) : std::nullopt;
         return {nn::F::scaled_dot_product_attention(v[0], v[1], v[2], v[3], 0.0, false, scale)};
       }},
      // A norm's inputs: x, then the weight and the bias where the case has them.
      {"layer_norm", [](auto& v, auto&, const Json& a) -> Outs {
         return {nn::F::layer_norm(v[0], a["dims"].get<int64_t>(), v.size() > 1 ? v[1] : Tensor(), v.size() > 2 ? v[2] : Tensor(),
                                   a["eps"].get<double>())};
       }},
      {"rms_norm", [](auto& v, auto&, const Json& a) -> Outs {
         return {nn::F::rms_norm(v[0], a["dims"].get<int64_t>(), v.size() > 1 ? v[1] : Tensor(), a["eps"].get<double>())};
       }},
      // structure
      {"cat", [](auto& v, auto&, const Json& a) -> Outs { return {cat(v, a["dim"].get<int64_t>())}; }},
      {"stack", [](auto& v, auto&, const Json& a) -> Outs { return {stack(v, a["dim"].get<int64_t>())}; }},
      {"index_select", [](auto& v, auto&, const Json& a) -> Outs { return {index_select(v[0], a["dim"].get<int64_t>(), v[1])}; }},
      {"index_add", [](auto& v, auto&, const Json& a) -> Outs { return {index_add(v[0], a["dim"].get<int64_t>(), v[1], v[2])}; }},
      {"flip", [](auto& v, auto&, const Json& a) -> Outs { return {flip(v[0], dims(a))}; }},
      {"roll", [](auto& v, auto&, const Json& a) -> Outs {
         return {roll(v[0], a["shifts"].get<std::vector<int64_t>>(), dims(a))};
       }},
      {"repeat", [](auto& v, auto&, const Json& a) -> Outs { return {repeat(v[0], a["repeats"].get<std::vector<int64_t>>())}; }},
      {"repeat_interleave", [](auto& v, auto&, const Json& a) -> Outs {
         const std::optional<int64_t> dim = a.contains("dim") ? std::optional(a["dim"].get<int64_t>()) : std::nullopt;
         return {repeat_interleave(v[0], a["repeats"].get<int64_t>(), dim)};
       }},
      {"sort", [](auto& v, auto&, const Json& a) -> Outs {
         auto [values, indices] = v[0].sort(a["dim"].get<int64_t>(), a["descending"].get<bool>());
         return {values, indices};
       }},
      {"argsort", [](auto& v, auto&, const Json& a) -> Outs { return {argsort(v[0], a["dim"].get<int64_t>(), a["descending"].get<bool>())}; }},
      {"topk", [](auto& v, auto&, const Json& a) -> Outs {
         auto [values, indices] = topk(v[0], a["k"].get<int64_t>(), a["dim"].get<int64_t>(), a["largest"].get<bool>());
         return {values, indices};
       }},
      {"gather", [](auto& v, auto&, const Json& a) -> Outs { return {gather(v[0], a["dim"].get<int64_t>(), v[1])}; }},
      {"scatter_add", [](auto& v, auto&, const Json& a) -> Outs { return {scatter_add(v[0], a["dim"].get<int64_t>(), v[1], v[2])}; }},
      {"scatter_value", [](auto& v, auto&, const Json& a) -> Outs {
         return {scatter(v[0], a["dim"].get<int64_t>(), v[1], Scalar(a["value"].get<double>()))};
       }},
      {"matmul", [](auto& v, auto&, const Json&) -> Outs { return {matmul(v[0], v[1])}; }},
      {"addmm", [](auto& v, auto&, const Json& a) -> Outs {
         return {addmm(v[0], v[1], v[2], a.value("beta", 1.0), a.value("alpha", 1.0))};
       }},
      {"triu", [](auto& v, auto&, const Json& a) -> Outs { return {triu(v[0], a["diagonal"].get<int64_t>())}; }},
      {"tril", [](auto& v, auto&, const Json& a) -> Outs { return {tril(v[0], a["diagonal"].get<int64_t>())}; }},
      {"reshape", [](auto& v, auto&, const Json& a) -> Outs { return {v[0].reshape(a["shape"].get<std::vector<int64_t>>())}; }},
      {"flatten", [](auto& v, auto&, const Json& a) -> Outs { return {v[0].flatten(a["start"].get<int64_t>(), a["end"].get<int64_t>())}; }},
      {"permute", [](auto& v, auto&, const Json& a) -> Outs { return {v[0].permute(a["dims"].get<std::vector<int64_t>>())}; }},
      {"contiguous", [](auto& v, auto&, const Json&) -> Outs { return {v[0].contiguous()}; }},
      {"clone", [](auto& v, auto&, const Json&) -> Outs { return {v[0].clone()}; }},
      {"zeros_like", [](auto& v, auto&, const Json&) -> Outs { return {zeros_like(v[0])}; }},
      {"ones_like", [](auto& v, auto&, const Json&) -> Outs { return {ones_like(v[0])}; }},
      {"full_like", [](auto& v, auto&, const Json& a) -> Outs { return {full_like(v[0], a.at("value").get<double>())}; }},
      {"view", [](auto& v, auto&, const Json& a) -> Outs { return {v[0].view(a["shape"].get<std::vector<int64_t>>())}; }},
      {"transpose", [](auto& v, auto&, const Json& a) -> Outs { return {v[0].transpose(a["dim0"].get<int64_t>(), a["dim1"].get<int64_t>())}; }},
      {"expand", [](auto& v, auto&, const Json& a) -> Outs { return {v[0].expand(a["shape"].get<std::vector<int64_t>>())}; }},
      {"slice", [](auto& v, auto&, const Json& a) -> Outs {
         return {v[0].slice(a["dim"].get<int64_t>(), optional_int(a["start"]), optional_int(a["end"]), a["step"].get<int64_t>())};
       }},
      {"select", [](auto& v, auto&, const Json& a) -> Outs { return {v[0].select(a["dim"].get<int64_t>(), a["index"].get<int64_t>())}; }},
      {"index", [](auto& v, auto&, const Json& a) -> Outs { return {v[0].index(index_list(a["indices"], v))}; }},
      {"setitem", [](auto& v, auto&, const Json& a) -> Outs {
         Tensor y = v[0].clone();
         y.index_put_(index_list(a["indices"], v), v.back());
         return {y};
       }},
      {"index_put", [](auto& v, auto&, const Json& a) -> Outs {
         return {index_put(v[0], tensor_list(a["indices"], v), v.back(), a["accumulate"].get<bool>())};
       }},
      {"nonzero", [](auto& v, auto&, const Json&) -> Outs { return {nonzero(v[0])}; }},
      {"masked_select", [](auto& v, auto&, const Json&) -> Outs { return {masked_select(v[0], v[1])}; }},
      {"masked_scatter", [](auto& v, auto&, const Json&) -> Outs { return {v[0].masked_scatter(v[1], v[2])}; }},
      {"take", [](auto& v, auto&, const Json&) -> Outs { return {take(v[0], v[1])}; }},
      {"unsqueeze", [](auto& v, auto&, const Json& a) -> Outs { return {v[0].unsqueeze(a["dim"].get<int64_t>())}; }},
      {"squeeze", [](auto& v, auto&, const Json& a) -> Outs {
         return {a.contains("dim") && !a["dim"].is_null() ? v[0].squeeze(a["dim"].get<int64_t>()) : v[0].squeeze()};
       }},
      {"to", [](auto& v, auto&, const Json& a) -> Outs { return {v[0].to(dtype_from_name(a["dtype"].get<std::string>()))}; }},
  };
  return ops;
}

}  // namespace

namespace {

/// An op of tally's unary or binary table in one of its forms (args "form"): "method",
/// "out" (into a tensor of input 0's dtype, resized by the op) or "inplace" (into input 0).
std::vector<Tensor> run_in_form(const std::string& op, const std::string& form, std::vector<Tensor>& v) {
  auto out_like = [&] { return empty({0}, v.at(0).dtype()); };
  for (const ops::UnaryOpInfo& u : ops::unary_ops()) {
    if (u.name != op) continue;
    if (form == "method") return {u.method(v.at(0))};
    if (form == "inplace") return {u.inplace(v.at(0))};
    Tensor out = out_like();
    if (form == "out") return {u.out(out, v.at(0))};
  }
  for (const ops::BinaryOpInfo& b : ops::binary_ops()) {
    if (b.name != op) continue;
    if (form == "method") return {b.method(v.at(0), v.at(1))};
    if (form == "inplace") return {b.inplace(v.at(0), v.at(1))};
    Tensor out = out_like();
    if (form == "out") return {b.out(out, v.at(0), v.at(1))};
  }
  throw std::out_of_range("differential ops: no tabled op '" + op + "' with a form '" + form + "'");
}

}  // namespace

std::vector<Tensor> run_tally_op(const std::string& op, std::vector<Tensor>& views, std::vector<Tensor>& bases,
                                 const nlohmann::json& args) {
  if (args.contains("form")) return run_in_form(op, args["form"].get<std::string>(), views);
  auto it = table().find(op);
  if (it != table().end()) return it->second(views, bases, args);
  for (const ops::UnaryOpInfo& u : ops::unary_ops())  // a registered op needs no entry here
    if (u.name == op) return {u.fn(views.at(0))};
  throw std::out_of_range("differential op table has no op '" + op + "'");
}

}  // namespace tally::difftest
