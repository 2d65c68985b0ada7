#pragma once
// The case catalog: for each op family (one GoogleTest test each), the list of op × dtype ×
// layout cases it checks. Builders live in cases_*.cpp; this header also holds the small
// vocabulary they share.

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "differential/case.h"

namespace tally::difftest {

/// Every family's builder, by family (= test) name.
const std::map<std::string, std::function<std::vector<Case>()>>& catalog();

// Builders, one per family.
std::vector<Case> unary_cases();
std::vector<Case> binary_cases();
std::vector<Case> scalar_cases();
std::vector<Case> promotion_cases();
std::vector<Case> comparison_cases();
std::vector<Case> pow_cases();
std::vector<Case> in_place_cases();
std::vector<Case> forms_cases();
std::vector<Case> selection_cases();
std::vector<Case> reduction_cases();
std::vector<Case> extrema_cases();
std::vector<Case> ordering_cases();
std::vector<Case> indexing_cases();
std::vector<Case> logical_cases();
std::vector<Case> softmax_cases();
std::vector<Case> join_cases();
std::vector<Case> matmul_cases();
std::vector<Case> triangle_cases();
std::vector<Case> shape_cases();
std::vector<Case> conversion_cases();
std::vector<Case> gradient_cases();
std::vector<Case> gradient_structure_cases();

/// The ten dtypes the differential tests cover (float8 has no arithmetic in torch 1.13).
inline const std::vector<Dtype> kAllDtypes = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kInt8, kInt16, kBool};
/// The floating ones.
inline const std::vector<Dtype> kFloatDtypes = {kFloat32, kFloat64, kFloat16, kBFloat16};

/// Shorthand for an InputSpec.
inline InputSpec in(std::vector<int64_t> shape, Dtype dtype, std::string domain = "normal",
                    Layout layout = Layout::Contiguous) {
  return {std::move(shape), dtype, std::move(domain), layout};
}

/// Shorthand for a Case.
inline Case make_case(std::string family, std::string op, std::vector<InputSpec> inputs,
                      nlohmann::json args = nlohmann::json::object()) {
  Case c;
  c.family = std::move(family);
  c.op = std::move(op);
  c.inputs = std::move(inputs);
  c.args = std::move(args);
  return c;
}

/// A gradient case: every floating input requires grad (clear an input's requires_grad afterwards
/// to check that it gets no gradient); results and gradients are compared within tolerance.
inline Case grad_case(std::string family, std::string op, std::vector<InputSpec> inputs,
                      nlohmann::json args = nlohmann::json::object()) {
  for (InputSpec& spec : inputs) spec.requires_grad = is_floating_point(spec.dtype);
  Case c = make_case(std::move(family), std::move(op), std::move(inputs), std::move(args));
  c.gradient = true;
  c.accumulates = true;  // forward results of reductions and matmuls; harmless for the rest
  return c;
}

/// The [3, 4, 5] input in each of the four layouts.
inline std::vector<InputSpec> four_layouts(Dtype dtype, const std::string& domain, std::vector<int64_t> shape = {3, 4, 5}) {
  return {in(shape, dtype, domain, Layout::Contiguous), in(shape, dtype, domain, Layout::Transposed),
          in(shape, dtype, domain, Layout::Sliced), in(shape, dtype, domain, Layout::Expanded)};
}

}  // namespace tally::difftest
