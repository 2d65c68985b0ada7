// Elementwise families: unary math, binary arithmetic with layouts and broadcasting, numbers
// on either side, type promotion over every dtype pair, comparisons, pow, in-place updates and
// the selection ops (clamp, where, masked_fill).

#include "differential/catalog.h"

#include <algorithm>

#include "tally/ops/registry.h"

namespace tally::difftest {

using Json = nlohmann::json;

namespace {

// Operand pairs of one dtype covering every layout and the broadcasting shapes; `b_domain` keeps
// divisors away from zero.
std::vector<std::vector<InputSpec>> binary_layouts(Dtype a, Dtype b, const std::string& a_domain,
                                                   const std::string& b_domain) {
  return {
      {in({3, 4, 5}, a, a_domain), in({3, 4, 5}, b, b_domain)},
      {in({3, 4, 5}, a, a_domain, Layout::Transposed), in({3, 4, 5}, b, b_domain, Layout::Sliced)},
      {in({3, 4, 5}, a, a_domain, Layout::Expanded), in({3, 4, 5}, b, b_domain, Layout::Transposed)},
      {in({4, 1, 5}, a, a_domain), in({3, 1}, b, b_domain)},          // → [4, 3, 5]
      {in({3, 4, 5}, a, a_domain), in({}, b, b_domain)},              // 0-d operand
      {in({7, 300}, a, a_domain), in({300}, b, b_domain)},            // long rows: vector loops and tails
      {in({0, 3}, a, a_domain), in({3}, b, b_domain)},                // empty
  };
}

/// Whether torch has the op for floating dtypes only (one case then shows tally refuses the others).
bool floating_only(const std::string& op) {
  if (op == "gelu") return true;
  for (const ops::UnaryOpInfo& r : ops::unary_ops())
    if (r.name == op) return r.floating_only;
  return false;
}

/// Where torch 1.13's half-precision kernel rounds an intermediate that tally keeps in float32
/// (it rounds once): bfloat16 gelu rounds 1 + erf(x/√2) (gelu(-3) becomes -0), and the 16-bit
/// logits round x/(1 − x) before the log (off by a unit of bfloat16 near x = ½, where the result
/// is near 0). The case is then compared with torch computing in float32.
bool rounds_intermediates(const std::string& op, Dtype dt) {
  return (op == "gelu" && dt == kBFloat16) || (op == "logit" && (dt == kBFloat16 || dt == kFloat16));
}

}  // namespace

std::vector<Case> unary_cases() {
  struct Unary { std::string op, domain; Json args; bool exact; };
  const std::vector<Unary> ops = {
      {"sqrt", "positive", Json::object(), false}, {"rsqrt", "positive", Json::object(), false},
      {"exp", "normal", Json::object(), false},    {"log", "positive", Json::object(), false},
      {"neg", "normal", Json::object(), true},     {"abs", "normal", Json::object(), true},
      {"tanh", "normal", Json::object(), false},   {"sigmoid", "normal", Json::object(), false},
      {"relu", "normal", Json::object(), true},    {"gelu", "normal", {{"approximate", "none"}}, false},
      {"gelu", "normal", {{"approximate", "tanh"}}, false}, {"silu", "normal", Json::object(), false},
      {"square", "normal", Json::object(), false},
  };
  // Every other registered op (tally/ops/registry.h) joins with its reference, by name.
  std::vector<Unary> all = ops;
  for (const ops::UnaryOpInfo& r : ops::unary_ops()) {
    const bool listed = std::any_of(ops.begin(), ops.end(), [&](const Unary& u) { return u.op == r.name; });
    if (!listed) all.push_back({std::string(r.name), std::string(r.domain), {{"reference", r.reference}}, false});
  }
  std::vector<Case> cases;
  for (const Unary& u : all) {
    std::vector<std::vector<InputSpec>> inputs;
    for (Dtype dt : kAllDtypes) {
      // torch has gelu and silu for floating dtypes only: one case shows tally refuses the others.
      if (floating_only(u.op) && !is_floating_point(dt)) {
        inputs.push_back({in({3, 4, 5}, dt, u.domain)});
        continue;
      }
      for (const InputSpec& spec : four_layouts(dt, u.domain)) inputs.push_back({spec});
      inputs.push_back({in({7, 300}, dt, u.domain)});
      if (is_floating_point(dt)) inputs.push_back({in({7, 300}, dt, "special")});
    }
    inputs.push_back({in({}, kFloat32, u.domain)});
    inputs.push_back({in({0, 3}, kFloat32, u.domain)});
    inputs.push_back({in({300, 301}, kBFloat16, u.domain, Layout::Sliced)});  // enough elements to run in parallel
    inputs.push_back({in({300, 301}, kFloat32, u.domain, Layout::Transposed)});
    for (auto& i : inputs) {
      Case c = make_case("Unary", u.op, i, u.args);
      c.exact = u.exact;
      c.float32_reference = rounds_intermediates(u.op, i[0].dtype);
      cases.push_back(c);
    }
  }
  // Every row of tally/table/unary_ops.h in its other three forms, in every dtype, on a
  // transposed view: the method, out= and in place. The last two must refuse a result their
  // tensor's dtype cannot take (exp of int64 into int64), as torch's do.
  for (const ops::UnaryOpInfo& r : ops::unary_ops())
    for (const char* form : {"method", "out", "inplace"})
      for (Dtype dt : kAllDtypes) {
        Case c = make_case("Unary", std::string(r.name), {in({3, 4, 5}, dt, std::string(r.domain), Layout::Transposed)},
                           {{"reference", r.reference}, {"form", form}});
        c.exact = std::any_of(ops.begin(), ops.end(), [&](const Unary& u) { return u.op == r.name && u.exact; });
        c.float32_reference = rounds_intermediates(c.op, dt);
        cases.push_back(c);
      }
  return cases;
}

std::vector<Case> binary_cases() {
  struct Binary { std::string op, a_domain, b_domain; bool exact; };
  const std::vector<Binary> ops = {
      {"add", "normal", "normal", false},        {"sub", "normal", "normal", false},
      {"mul", "normal", "normal", false},        {"div", "normal", "nonzero", false},
      {"maximum", "small_int", "small_int", true}, {"minimum", "small_int", "small_int", true},
  };
  std::vector<Case> cases;
  for (const Binary& b : ops)
    for (Dtype dt : kAllDtypes)
      for (auto& inputs : binary_layouts(dt, dt, b.a_domain, b.b_domain)) {
        Case c = make_case("Binary", b.op, inputs);
        c.exact = b.exact;
        cases.push_back(c);
      }
  for (Dtype dt : kAllDtypes)
    for (const char* op : {"add", "sub"})
      cases.push_back(make_case("Binary", op, {in({3, 4, 5}, dt, "normal", Layout::Sliced), in({3, 4, 5}, dt)},
                                {{"alpha", 2}}));
  for (const char* op : {"add", "mul"}) {  // enough elements to run in parallel
    cases.push_back(make_case("Binary", op, {in({300, 301}, kFloat32, "normal", Layout::Transposed), in({301}, kFloat32)}));
    cases.push_back(make_case("Binary", op, {in({300, 301}, kBFloat16), in({300, 1}, kFloat32)}));
  }
  // Shapes that do not broadcast.
  cases.push_back(make_case("Binary", "add", {in({3, 4}, kFloat32), in({5}, kFloat32)}));
  cases.push_back(make_case("Binary", "mul", {in({2, 3, 4}, kFloat32), in({3, 3, 4}, kFloat32)}));
  for (Dtype dt : kFloatDtypes)  // NaN propagates through maximum/minimum; ±inf and ±0 order
    for (const char* op : {"maximum", "minimum"}) {
      Case c = make_case("Binary", op, {in({7, 300}, dt, "special"), in({7, 300}, dt, "special")});
      c.exact = true;
      cases.push_back(c);
    }
  // Every row of tally/table/binary_ops.h in its other three forms, in every dtype, on a
  // transposed view with a broadcast operand: the method, out= and in place (which must refuse a
  // result its dtype cannot take, int64 / int64, as torch's does; a comparison writes 0 or 1).
  for (const ops::BinaryOpInfo& r : ops::binary_ops()) {
    const std::string op(r.name);
    const bool values_exact = op != "div" && op != "pow";
    const std::string a_domain = op == "pow" ? "positive" : values_exact ? "small_int" : "normal";
    const std::string b_domain = op == "pow" ? "exponent" : op == "div" ? "nonzero" : a_domain;
    for (const char* form : {"method", "out", "inplace"})
      for (Dtype dt : kAllDtypes) {
        Case c = make_case("Binary", op, {in({3, 4, 5}, dt, a_domain, Layout::Transposed), in({5}, dt, b_domain)}, {{"form", form}});
        c.exact = values_exact;
        cases.push_back(c);
      }
  }
  return cases;
}

std::vector<Case> scalar_cases() {
  const std::vector<Json> scalars = {2, -3, 2.5, true};
  const std::vector<std::string> ops = {"add_scalar", "sub_scalar", "mul_scalar", "div_scalar",
                                        "scalar_add", "scalar_sub", "scalar_mul", "scalar_div"};
  std::vector<Case> cases;
  for (Dtype dt : kAllDtypes)
    for (const Json& s : scalars)
      for (const std::string& op : ops) {
        const std::string domain = op == "scalar_div" ? "nonzero" : "normal";
        cases.push_back(make_case("Scalar", op, {in({3, 4, 5}, dt, domain, Layout::Transposed)}, {{"scalar", s}}));
      }
  return cases;
}

std::vector<Case> promotion_cases() {
  std::vector<Case> cases;
  for (Dtype a : kAllDtypes)
    for (Dtype b : kAllDtypes) {
      for (const char* op : {"add", "sub", "mul", "div", "maximum", "eq"})
        cases.push_back(make_case("Promotion", op,
                                  {in({3, 4}, a), in({3, 4}, b, std::string(op) == "div" ? "nonzero" : "normal")}));
      // A 0-d tensor only decides the dtype when it is of a higher category than the other.
      cases.push_back(make_case("Promotion", "add", {in({3, 4}, a), in({}, b)}));
      cases.push_back(make_case("Promotion", "mul", {in({}, a), in({3, 4}, b, "normal", Layout::Transposed)}));
      cases.push_back(make_case("Promotion", "where", {in({3, 4}, kBool, "mask"), in({3, 4}, a), in({3, 4}, b)}));
    }
  return cases;
}

std::vector<Case> comparison_cases() {
  std::vector<Case> cases;
  for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge"})
    for (Dtype dt : kAllDtypes) {
      const std::vector<std::vector<InputSpec>> pairs = {
          {in({3, 4, 5}, dt, "small_int"), in({3, 4, 5}, dt, "small_int")},
          {in({3, 4, 5}, dt, "small_int", Layout::Transposed), in({3, 4, 5}, dt, "small_int", Layout::Sliced)},
          {in({4, 1, 5}, dt, "small_int"), in({3, 1}, dt, "small_int", Layout::Expanded)},
      };
      for (const auto& p : pairs) cases.push_back(make_case("Comparison", op, p));
      for (const Json& s : {Json(1), Json(0.5), Json(true)})
        cases.push_back(make_case("Comparison", std::string(op) + "_scalar",
                                  {in({3, 4, 5}, dt, "small_int", Layout::Sliced)}, {{"scalar", s}}));
    }
  for (Dtype dt : kFloatDtypes)  // NaN compares unequal to everything, itself included
    cases.push_back(make_case("Comparison", "eq", {in({7, 300}, dt, "special"), in({7, 300}, dt, "special")}));
  return cases;
}

std::vector<Case> pow_cases() {
  std::vector<Case> cases;
  for (Dtype dt : kAllDtypes) {
    const std::vector<std::vector<InputSpec>> pairs = {
        {in({3, 4, 5}, dt, "positive"), in({3, 4, 5}, dt, "exponent")},
        {in({3, 4, 5}, dt, "positive", Layout::Transposed), in({3, 4, 5}, dt, "exponent", Layout::Sliced)},
        {in({4, 1, 5}, dt, "positive"), in({3, 1}, dt, "exponent")},
    };
    for (const auto& p : pairs) cases.push_back(make_case("Pow", "pow", p));
    // Strided (the lane-by-lane loop) and dense (16 lanes at a time, the exponents with forms of their own).
    for (const Json& e : {Json(2), Json(3), Json(0), Json(1), Json(-1), Json(-2), Json(0.5), Json(-0.5), Json(2.0), Json(3.0), Json(-2.0), Json(2.5)})
      for (Layout l : {Layout::Sliced, Layout::Contiguous})
        cases.push_back(make_case("Pow", "pow_scalar", {in({3, 4, 5}, dt, "positive", l)}, {{"scalar", e}}));
    if (is_floating_point(dt))  // odd powers and reciprocals of negative numbers
      for (const Json& e : {Json(3.0), Json(-1.0), Json(-2.0)})
        cases.push_back(make_case("Pow", "pow_scalar", {in({7, 300}, dt, "nonzero")}, {{"scalar", e}}));
  }
  const std::vector<std::pair<Dtype, Dtype>> mixed = {
      {kFloat32, kInt64}, {kInt32, kFloat32}, {kFloat16, kFloat32}, {kBFloat16, kInt32}, {kUInt8, kInt64}, {kFloat64, kFloat16},
      {kInt8, kInt16}};
  for (auto [a, b] : mixed) cases.push_back(make_case("Pow", "pow", {in({3, 4}, a, "positive"), in({3, 4}, b, "exponent")}));
  return cases;
}

std::vector<Case> in_place_cases() {
  std::vector<Case> cases;
  const std::vector<std::string> ops = {"add_", "sub_", "mul_", "div_"};
  for (Dtype dt : kAllDtypes)
    for (const std::string& op : ops) {
      const std::string b_domain = op == "div_" ? "nonzero" : "normal";
      for (Layout l : {Layout::Contiguous, Layout::Transposed, Layout::Sliced})
        cases.push_back(make_case("InPlace", op, {in({3, 4, 5}, dt, "normal", l), in({3, 4, 5}, dt, b_domain)}));
      cases.push_back(make_case("InPlace", op, {in({3, 4, 5}, dt, "normal", Layout::Sliced), in({5}, dt, b_domain)}));
      for (const Json& s : {Json(2), Json(2.5)})
        cases.push_back(make_case("InPlace", op.substr(0, 3) + "_scalar_", {in({3, 4, 5}, dt, "normal", Layout::Sliced)},
                                  {{"scalar", s}}));
    }
  // The result dtype must be castable to the written tensor's dtype.
  const std::vector<std::pair<Dtype, Dtype>> mixed = {{kFloat32, kInt64}, {kInt32, kFloat32}, {kFloat16, kFloat32},
                                                      {kBFloat16, kFloat64}, {kInt64, kUInt8}, {kBool, kInt32},
                                                      {kUInt8, kInt32}, {kInt16, kInt8}, {kInt8, kFloat32}};
  for (auto [a, b] : mixed)
    for (const char* op : {"add_", "mul_"})
      cases.push_back(make_case("InPlace", op, {in({3, 4}, a, "normal", Layout::Transposed), in({3, 4}, b)}));
  // Writing through a broadcast view, or broadcasting the destination itself, is an error.
  cases.push_back(make_case("InPlace", "add_", {in({3, 4, 5}, kFloat32, "normal", Layout::Expanded), in({3, 4, 5}, kFloat32)}));
  cases.push_back(make_case("InPlace", "add_", {in({3, 1}, kFloat32), in({3, 4}, kFloat32)}));
  return cases;
}

std::vector<Case> selection_cases() {
  std::vector<Case> cases;
  const std::vector<Json> bounds = {
      {{"min", -0.5}, {"max", 0.5}}, {{"min", nullptr}, {"max", 0.5}}, {{"min", -0.5}, {"max", nullptr}},
      {{"min", -1}, {"max", 2}},     {{"min", 0}, {"max", 3}},
  };
  for (Dtype dt : kAllDtypes) {
    for (const Json& b : bounds)
      for (Layout l : {Layout::Contiguous, Layout::Sliced}) {
        Case c = make_case("Selection", "clamp", {in({3, 4, 5}, dt, "normal", l)}, b);
        c.exact = true;
        cases.push_back(c);
      }
    const std::vector<std::vector<InputSpec>> where_inputs = {
        {in({3, 4, 5}, kBool, "mask"), in({3, 4, 5}, dt, "normal", Layout::Transposed), in({3, 4, 5}, dt, "normal", Layout::Sliced)},
        {in({4, 1, 5}, kBool, "mask"), in({3, 1}, dt), in({5}, dt)},
        {in({3, 4, 5}, kBool, "mask", Layout::Expanded), in({3, 4, 5}, dt, "normal", Layout::Expanded), in({}, dt)},
    };
    for (const auto& w : where_inputs) {
      Case c = make_case("Selection", "where", w);
      c.exact = true;
      cases.push_back(c);
    }
    // Each operand dense or repeated along the rows, all eight ways: the kernel's loops with
    // known steps (300 columns: whole vectors and a tail).
    for (int pattern = 0; pattern < 8; ++pattern) {
      auto shape = [pattern](int operand) { return pattern >> operand & 1 ? std::vector<int64_t>{7, 300} : std::vector<int64_t>{7, 1}; };
      const char* values = is_floating_point(dt) ? "special" : "normal";
      Case c = make_case("Selection", "where", {in(shape(0), kBool, "mask"), in(shape(1), dt, values), in(shape(2), dt, values)});
      c.exact = true;
      cases.push_back(c);
    }
    for (const Json& v : {Json(2.5), Json(7), Json(-1), Json(true)}) {
      Case c = make_case("Selection", "masked_fill", {in({3, 4, 5}, dt, "normal", Layout::Transposed), in({3, 4, 5}, kBool, "mask")},
                         {{"value", v}});
      c.exact = true;
      cases.push_back(c);
    }
    Case dense = make_case("Selection", "masked_fill", {in({7, 300}, dt, is_floating_point(dt) ? "special" : "normal"), in({7, 300}, kBool, "mask")},
                           {{"value", -1}});
    dense.exact = true;
    cases.push_back(dense);
    Case broadcast_mask = make_case("Selection", "masked_fill", {in({3, 4, 5}, dt, "normal", Layout::Sliced), in({4, 1}, kBool, "mask")},
                                    {{"value", 7}});
    broadcast_mask.exact = true;
    cases.push_back(broadcast_mask);
  }
  for (Dtype dt : kFloatDtypes) {  // NaN passes through clamp
    Case c = make_case("Selection", "clamp", {in({7, 300}, dt, "special")}, bounds[0]);
    c.exact = true;
    cases.push_back(c);
  }
  return cases;
}

}  // namespace tally::difftest
