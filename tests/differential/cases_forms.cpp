// The in-place and out= forms every op gets from its one definition (Note [Forms] in
// ops/apply.h), against torch: results written through views, dtypes the result cannot be cast
// to, shapes that differ from the broadcast shape, out tensors resized, and the optimizers'
// pointwise ops (addcmul, addcdiv, lerp) in all three forms.

#include "differential/catalog.h"

namespace tally::difftest {

using Json = nlohmann::json;

namespace {
// torch 1.13 lacks many float16 CPU kernels, and reference.py's float32 stand-in for them cannot
// write through the caller's view, so the written-tensor forms are checked without float16 (its
// functional forms are covered by the other families).
const std::vector<Dtype> kWrittenDtypes = {kFloat32, kFloat64, kBFloat16, kInt32, kInt64, kUInt8, kInt8, kInt16, kBool};
}  // namespace

std::vector<Case> forms_cases() {
  std::vector<Case> cases;
  const std::vector<Layout> written = {Layout::Contiguous, Layout::Transposed, Layout::Sliced};
  for (Dtype dt : kWrittenDtypes) {
    // Unary in place: sqrt_ of an integer tensor is torch's "result type Float can't be cast".
    for (const char* op : {"sqrt_", "exp_", "neg_", "abs_", "sigmoid_", "relu_", "zero_"})
      for (Layout l : written) cases.push_back(make_case("Forms", op, {in({3, 4, 5}, dt, "positive", l)}));
    cases.push_back(make_case("Forms", "pow_scalar_", {in({3, 4, 5}, dt, "positive", Layout::Sliced)}, {{"scalar", 2}}));
    cases.push_back(make_case("Forms", "pow_scalar_", {in({3, 4, 5}, dt, "positive", Layout::Sliced)}, {{"scalar", 0.5}}));
    cases.push_back(make_case("Forms", "clamp_", {in({3, 4, 5}, dt, "normal", Layout::Transposed)}, {{"min", -1}, {"max", 2}}));
    cases.push_back(make_case("Forms", "clamp_", {in({3, 4, 5}, dt, "normal", Layout::Sliced)}, {{"min", -0.5}, {"max", nullptr}}));
    // out=: written through a strided view. (Resizing is checked in tests/ops: torch cannot resize
    // the numpy-backed tensors this harness hands it.)
    for (Layout l : written) {
      cases.push_back(make_case("Forms", "add_out", {in({3, 4, 5}, dt, "normal", l), in({3, 4, 5}, dt), in({5}, dt)}));
      cases.push_back(make_case("Forms", "mul_out", {in({3, 4, 5}, dt, "normal", l), in({3, 1, 5}, dt), in({4, 1}, dt)}));
      cases.push_back(make_case("Forms", "sqrt_out", {in({3, 4, 5}, dt, "normal", l), in({3, 4, 5}, dt, "positive")}));
    }
    cases.push_back(make_case("Forms", "div_out", {in({3, 4}, dt, "normal", Layout::Sliced), in({3, 4}, dt), in({3, 4}, dt, "nonzero")}));
    cases.push_back(make_case("Forms", "clamp_out", {in({3, 4}, dt, "normal", Layout::Transposed), in({3, 4}, dt)},
                              {{"min", 0}, {"max", 3}}));
    cases.push_back(make_case("Forms", "where_out", {in({3, 4}, dt, "normal", Layout::Sliced), in({3, 4}, kBool, "mask"),
                                                     in({3, 4}, dt), in({4}, dt)}));
  }
  // Mixed dtypes: the result must cast into the written tensor (float into int raises; a float64
  // result rounds into float32).
  const std::vector<std::pair<Dtype, Dtype>> mixed = {{kInt64, kFloat32}, {kFloat32, kFloat64}, {kBool, kInt32},
                                                      {kBFloat16, kFloat32}, {kInt32, kInt64}};
  for (auto [out, operand] : mixed) {
    cases.push_back(make_case("Forms", "add_out", {in({3, 4}, out), in({3, 4}, operand), in({3, 4}, operand)}));
    cases.push_back(make_case("Forms", "sqrt_out", {in({3, 4}, out), in({3, 4}, operand, "positive")}));
  }
  // In place, self's shape must be the broadcast shape.
  cases.push_back(make_case("Forms", "addcmul_", {in({4, 1}, kFloat32), in({4, 3}, kFloat32), in({4, 3}, kFloat32)}, {{"value", 2}}));
  cases.push_back(make_case("Forms", "lerp_", {in({3}, kFloat32), in({2, 3}, kFloat32)}, {{"weight", 0.5}}));
  // The optimizers' pointwise ops, in each form, floating dtypes and integer ones (which torch
  // refuses for addcdiv and lerp).
  for (Dtype dt : kWrittenDtypes) {
    for (Layout l : written) {
      const std::vector<InputSpec> three = {in({3, 4, 5}, dt, "normal", l), in({3, 4, 5}, dt, "normal", Layout::Sliced), in({5}, dt, "nonzero")};
      for (const Json& v : {Json(0.5), Json(-2)}) {
        cases.push_back(make_case("Forms", "addcmul", three, {{"value", v}}));
        cases.push_back(make_case("Forms", "addcmul_", three, {{"value", v}}));
        cases.push_back(make_case("Forms", "addcdiv", three, {{"value", v}}));
        cases.push_back(make_case("Forms", "addcdiv_", three, {{"value", v}}));
      }
      for (const Json& w : {Json(0.1), Json(0.9), Json(1)}) {
        cases.push_back(make_case("Forms", "lerp", {in({3, 4, 5}, dt, "normal", l), in({4, 5}, dt)}, {{"weight", w}}));
        cases.push_back(make_case("Forms", "lerp_", {in({3, 4, 5}, dt, "normal", l), in({3, 4, 5}, dt)}, {{"weight", w}}));
      }
    }
    // Each operand dense or repeated along the rows, all eight ways: the kernel's loops with
    // known steps (300 columns: whole vectors and a tail).
    for (int pattern = 0; pattern < 8; ++pattern) {
      auto shape = [pattern](int operand) { return pattern >> operand & 1 ? std::vector<int64_t>{7, 300} : std::vector<int64_t>{7, 1}; };
      const std::vector<InputSpec> dense = {in(shape(0), dt), in(shape(1), dt), in(shape(2), dt, "nonzero")};
      cases.push_back(make_case("Forms", "addcmul", dense, {{"value", 0.5}}));
      cases.push_back(make_case("Forms", "addcdiv", dense, {{"value", -2}}));
    }
    cases.push_back(make_case("Forms", "addcmul_out", {in({3, 4}, dt, "normal", Layout::Transposed), in({3, 4}, dt), in({3, 4}, dt),
                                                       in({4}, dt)}, {{"value", 2}}));
  }
  for (Dtype dt : {kFloat32, kFloat64, kBFloat16, kInt64}) {
    Case c = make_case("Forms", "matmul_out", {in({4, 6}, dt, "normal", Layout::Transposed), in({4, 5}, dt), in({5, 6}, dt)});
    c.accumulates = true;  // a sum of products: compared with the tolerance of an accumulation
    cases.push_back(c);
  }
  return cases;
}

}  // namespace tally::difftest
