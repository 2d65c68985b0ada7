// The Gradients family: backward of the elementwise ops (unary math, arithmetic with broadcasting
// and numbers, pow, maximum/minimum) and the selection ops (clamp, where, masked_fill), in float64
// and float32 on every layout, plus bfloat16 on a contiguous and a strided layout. Inputs drawn
// from small integers put many elements exactly on the kinks (0 for relu/abs, ties for
// maximum/minimum, the bounds of clamp) where torch picks a particular subgradient.

#include "differential/catalog.h"

#include <algorithm>

#include "tally/ops/registry.h"

namespace tally::difftest {

using Json = nlohmann::json;

namespace {

const std::vector<Dtype> kGradDtypes = {kFloat64, kFloat32};
constexpr const char* kFamily = "Gradients";

// The layouts of a [3, 4, 5] input a dtype is checked on: all four, or two for bfloat16.
std::vector<InputSpec> grad_layouts(Dtype dtype, const std::string& domain) {
  if (dtype != kBFloat16) return four_layouts(dtype, domain);
  return {in({3, 4, 5}, dtype, domain), in({3, 4, 5}, dtype, domain, Layout::Transposed)};
}

// Operand pairs covering the layouts and broadcasting (each side's gradient is then a sum).
std::vector<std::vector<InputSpec>> binary_operands(Dtype dt, const std::string& a_domain, const std::string& b_domain) {
  std::vector<std::vector<InputSpec>> out = {
      {in({3, 4, 5}, dt, a_domain), in({3, 4, 5}, dt, b_domain)},
      {in({3, 4, 5}, dt, a_domain, Layout::Transposed), in({3, 4, 5}, dt, b_domain, Layout::Sliced)},
      {in({4, 1, 5}, dt, a_domain), in({3, 1}, dt, b_domain)},  // → [4, 3, 5]
  };
  if (dt == kBFloat16) return out;
  out.push_back({in({3, 4, 5}, dt, a_domain, Layout::Expanded), in({3, 4, 5}, dt, b_domain, Layout::Transposed)});
  out.push_back({in({3, 4, 5}, dt, a_domain), in({}, dt, b_domain)});  // 0-d operand: its gradient is a full sum
  out.push_back({in({7, 300}, dt, a_domain), in({300}, dt, b_domain, Layout::Sliced)});
  out.push_back({in({0, 3}, dt, a_domain), in({3}, dt, b_domain)});  // empty: b's gradient is zeros
  return out;
}

void add_unary(std::vector<Case>& cases) {
  struct Unary { std::string op, domain; Json args; };
  const std::vector<Unary> ops = {
      {"sqrt", "positive", Json::object()}, {"rsqrt", "positive", Json::object()}, {"exp", "normal", Json::object()},
      {"log", "positive", Json::object()},  {"neg", "normal", Json::object()},     {"abs", "normal", Json::object()},
      {"abs", "small_int", Json::object()}, {"tanh", "normal", Json::object()},    {"sigmoid", "normal", Json::object()},
      {"relu", "normal", Json::object()},   {"relu", "small_int", Json::object()}, {"gelu", "normal", {{"approximate", "none"}}},
      {"gelu", "normal", {{"approximate", "tanh"}}}, {"silu", "normal", Json::object()},
      {"square", "normal", Json::object()}, {"erf", "normal", Json::object()},
  };
  std::vector<Unary> all = ops;  // and every other registered op (tally/ops/registry.h)
  for (const ops::UnaryOpInfo& r : ops::unary_ops()) {
    const bool listed = std::any_of(ops.begin(), ops.end(), [&](const Unary& u) { return u.op == r.name; });
    if (r.differentiable && !listed) all.push_back({std::string(r.name), std::string(r.domain), {{"reference", r.reference}}});
  }
  for (const Unary& u : all)
    for (Dtype dt : {kFloat64, kFloat32, kBFloat16})
      for (const InputSpec& spec : grad_layouts(dt, u.domain)) cases.push_back(grad_case(kFamily, u.op, {spec}, u.args));
  cases.push_back(grad_case(kFamily, "tanh", {in({}, kFloat32)}));
  cases.push_back(grad_case(kFamily, "exp", {in({0, 3}, kFloat32)}));
}

void add_arithmetic(std::vector<Case>& cases) {
  struct Binary { std::string op, b_domain; Json args; };
  const std::vector<Binary> ops = {{"add", "normal", Json::object()}, {"add", "normal", {{"alpha", 2.5}}},
                                   {"sub", "normal", Json::object()}, {"sub", "normal", {{"alpha", -3}}},
                                   {"mul", "normal", Json::object()}, {"div", "nonzero", Json::object()}};
  for (const Binary& b : ops)
    for (Dtype dt : {kFloat64, kFloat32, kBFloat16}) {
      for (const auto& operands : binary_operands(dt, "normal", b.b_domain))
        cases.push_back(grad_case(kFamily, b.op, operands, b.args));
      // Only one side requires grad: the other must get none.
      for (size_t frozen : {0, 1}) {
        Case c = grad_case(kFamily, b.op, {in({3, 4, 5}, dt, "normal", Layout::Sliced), in({4, 1}, dt, b.b_domain)}, b.args);
        c.inputs[frozen].requires_grad = false;
        cases.push_back(c);
      }
    }
  // Numbers on either side (integers and doubles), including a divisor tensor.
  for (const char* op : {"add_scalar", "sub_scalar", "mul_scalar", "div_scalar", "scalar_add", "scalar_sub", "scalar_mul", "scalar_div"})
    for (Dtype dt : {kFloat64, kFloat32, kBFloat16})
      for (const Json& scalar : {Json(3), Json(-0.75)}) {
        const std::string domain = std::string(op) == "scalar_div" ? "nonzero" : "normal";
        for (const InputSpec& spec : grad_layouts(dt, domain)) {
          if (spec.layout == Layout::Expanded && scalar == Json(3)) continue;  // enough expanded cases
          cases.push_back(grad_case(kFamily, op, {spec}, {{"scalar", scalar}}));
        }
      }
}

void add_pow(std::vector<Case>& cases) {
  // Integer exponents on any base; fractional and negative ones on positive bases; 0 and 1 are
  // the special cases of the rule exponent · x^(exponent-1).
  const std::vector<std::pair<Json, std::string>> exponents = {
      {Json(2), "normal"}, {Json(3), "normal"}, {Json(0), "normal"}, {Json(1), "normal"},
      {Json(0.5), "positive"}, {Json(-1.5), "positive"}, {Json(2.0), "normal"}};
  for (Dtype dt : {kFloat64, kFloat32, kBFloat16})
    for (const auto& [exponent, domain] : exponents)
      for (const InputSpec& spec : grad_layouts(dt, domain)) {
        if (spec.layout == Layout::Expanded && dt == kFloat32) continue;
        cases.push_back(grad_case(kFamily, "pow_scalar", {spec}, {{"scalar", exponent}}));
      }
  // Tensor exponents: positive bases, so the exponent's gradient x^y · ln x is defined.
  for (Dtype dt : {kFloat64, kFloat32, kBFloat16}) {
    for (const auto& operands : binary_operands(dt, "positive", "exponent"))
      cases.push_back(grad_case(kFamily, "pow", operands));
    for (size_t frozen : {0, 1}) {
      Case c = grad_case(kFamily, "pow", {in({3, 4, 5}, dt, "positive", Layout::Transposed), in({5}, dt, "exponent")});
      c.inputs[frozen].requires_grad = false;
      cases.push_back(c);
    }
  }
}

void add_extremes_and_selection(std::vector<Case>& cases) {
  // maximum/minimum: "small_int" operands tie often, and torch splits a tie's gradient in half.
  for (const char* op : {"maximum", "minimum"})
    for (Dtype dt : {kFloat64, kFloat32, kBFloat16})
      for (const char* domain : {"normal", "small_int"})
        for (const auto& operands : binary_operands(dt, domain, domain)) cases.push_back(grad_case(kFamily, op, operands));
  // clamp: small integers sit exactly on the bounds, where torch passes the gradient through.
  const std::vector<Json> bounds = {{{"min", -1}, {"max", 1}}, {{"min", -0.5}}, {{"max", 0}}, {{"min", 1}, {"max", -1}}};
  for (Dtype dt : {kFloat64, kFloat32, kBFloat16})
    for (const Json& args : bounds)
      for (const char* domain : {"normal", "small_int"})
        for (const InputSpec& spec : grad_layouts(dt, domain)) cases.push_back(grad_case(kFamily, "clamp", {spec}, args));
  for (Dtype dt : {kFloat64, kFloat32, kBFloat16}) {
    // where: the condition broadcasts against both branches, and each branch broadcasts too.
    cases.push_back(grad_case(kFamily, "where", {in({3, 4, 5}, kBool), in({3, 4, 5}, dt), in({3, 4, 5}, dt, "normal", Layout::Transposed)}));
    cases.push_back(grad_case(kFamily, "where", {in({4, 5}, kBool, "mask", Layout::Sliced), in({3, 1, 5}, dt), in({}, dt)}));
    cases.push_back(grad_case(kFamily, "where", {in({3, 4, 5}, kBool, "mask", Layout::Expanded), in({3, 4, 5}, dt, "normal", Layout::Sliced),
                                                  in({5}, dt)}));
    Case frozen = grad_case(kFamily, "where", {in({3, 4, 5}, kBool), in({3, 4, 5}, dt), in({4, 5}, dt)});
    frozen.inputs[2].requires_grad = false;
    cases.push_back(frozen);
    // masked_fill: filled places get no gradient; the mask may broadcast.
    for (const InputSpec& spec : grad_layouts(dt, "normal"))
      cases.push_back(grad_case(kFamily, "masked_fill", {spec, in({4, 5}, kBool)}, {{"value", -2.5}}));
    cases.push_back(grad_case(kFamily, "masked_fill", {in({3, 4, 5}, dt), in({3, 4, 5}, kBool, "mask", Layout::Transposed)}, {{"value", 0}}));
  }
}

void add_copies(std::vector<Case>& cases) {
  // to(dtype): the gradient comes back converted to the input's dtype.
  const std::vector<std::pair<Dtype, Dtype>> conversions = {{kFloat32, kFloat64}, {kFloat64, kFloat32}, {kFloat32, kBFloat16},
                                                            {kBFloat16, kFloat32}, {kFloat64, kBFloat16}, {kFloat32, kFloat32}};
  for (auto [src, dst] : conversions)
    for (const InputSpec& spec : four_layouts(src, "normal"))
      cases.push_back(grad_case(kFamily, "to", {spec}, {{"dtype", std::string(dtype_name(dst))}}));
  for (const char* op : {"clone", "contiguous"})
    for (Dtype dt : {kFloat64, kFloat32, kBFloat16})
      for (const InputSpec& spec : four_layouts(dt, "normal")) cases.push_back(grad_case(kFamily, op, {spec}));
}

}  // namespace

std::vector<Case> gradient_cases() {
  std::vector<Case> cases;
  add_unary(cases);
  add_arithmetic(cases);
  add_pow(cases);
  add_extremes_and_selection(cases);
  add_copies(cases);
  return cases;
}

}  // namespace tally::difftest
