// The family table: the single place that says which builder serves which test name.

#include "differential/catalog.h"

namespace tally::difftest {

const std::map<std::string, std::function<std::vector<Case>()>>& catalog() {
  static const std::map<std::string, std::function<std::vector<Case>()>> families = {
      {"Unary", unary_cases},           {"Binary", binary_cases},         {"Scalar", scalar_cases},
      {"Promotion", promotion_cases},   {"Comparison", comparison_cases}, {"Pow", pow_cases},
      {"InPlace", in_place_cases},      {"Forms", forms_cases},           {"Selection", selection_cases},   {"Reduction", reduction_cases},
      {"Extrema", extrema_cases},       {"Ordering", ordering_cases},     {"Indexing", indexing_cases},     {"Logical", logical_cases},       {"Softmax", softmax_cases},
      {"Join", join_cases},             {"Matmul", matmul_cases},         {"Triangle", triangle_cases},
      {"Shape", shape_cases},           {"Conversion", conversion_cases},
      {"Gradients", gradient_cases},    {"GradientsStructure", gradient_structure_cases},
  };
  return families;
}

}  // namespace tally::difftest
