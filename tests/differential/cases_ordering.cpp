// The Ordering family: sort, argsort and topk along each dim of every layout and dtype, with ties
// (small integers; tally's sort is stable, so torch is asked for stable=True), NaN and infinities
// ("special"), and torch's errors; the gradients of their values. multinomial is random, so it is
// checked by its distribution in tests/ops/test_multinomial.cpp, not against torch's draws.

#include "differential/catalog.h"

namespace tally::difftest {

using Json = nlohmann::json;

namespace {

Case exact(std::string op, std::vector<InputSpec> inputs, Json args) {
  Case c = make_case("Ordering", std::move(op), std::move(inputs), std::move(args));
  c.exact = true;
  return c;
}

}  // namespace

std::vector<Case> ordering_cases() {
  std::vector<Case> cases;
  for (Dtype dt : kAllDtypes) {
    // Ties everywhere for small integers and bool; NaN, ±inf and ±0 mixed in for floats.
    const std::vector<std::string> domains = is_floating_point(dt) ? std::vector<std::string>{"small_int", "special"}
                                                                   : std::vector<std::string>{"small_int"};
    for (const std::string& domain : domains)
      for (const InputSpec& spec : four_layouts(dt, domain))
        for (int64_t dim : {0, 1, -1})
          for (bool descending : {false, true}) {
            cases.push_back(exact("sort", {spec}, {{"dim", dim}, {"descending", descending}}));
            if (dim == -1) cases.push_back(exact("argsort", {spec}, {{"dim", dim}, {"descending", descending}}));
          }
    // topk: distinct values (which of equal elements it picks is left open by torch; NaN, the
    // largest, is in tests/ops/test_ordering.cpp); k from none to all. torch refuses bool.
    for (const InputSpec& spec : four_layouts(dt, "distinct"))
      for (auto [k, dim, largest] : {std::tuple{2, -1, true}, std::tuple{0, 1, true}, std::tuple{4, 1, false}, std::tuple{3, 0, true}}) {
        if (spec.layout == Layout::Expanded && dim == 0) continue;  // expanded along dim 0: repeated values
        cases.push_back(exact("topk", {spec}, {{"k", k}, {"dim", dim}, {"largest", largest}}));
      }
  }
  // Long rows (the threads split rows), a 0-d tensor, an empty dim; errors: a dim out of range,
  // k beyond the dim's size or negative.
  cases.push_back(exact("sort", {in({64, 1031}, kFloat32, "small_int")}, {{"dim", -1}, {"descending", true}}));
  cases.push_back(exact("topk", {in({64, 1031}, kFloat32, "distinct")}, {{"k", 40}, {"dim", -1}, {"largest", true}}));
  cases.push_back(exact("sort", {in({}, kFloat32)}, {{"dim", 0}, {"descending", false}}));
  cases.push_back(exact("topk", {in({}, kFloat32)}, {{"k", 1}, {"dim", 0}, {"largest", true}}));
  cases.push_back(exact("sort", {in({3, 0}, kFloat32)}, {{"dim", 1}, {"descending", false}}));
  cases.push_back(exact("topk", {in({3, 0}, kFloat32)}, {{"k", 0}, {"dim", 1}, {"largest", true}}));
  cases.push_back(exact("sort", {in({3, 4}, kFloat32)}, {{"dim", 2}, {"descending", false}}));
  cases.push_back(exact("topk", {in({3, 4}, kFloat32)}, {{"k", 5}, {"dim", 1}, {"largest", true}}));
  cases.push_back(exact("topk", {in({3, 4}, kFloat32)}, {{"k", -1}, {"dim", 1}, {"largest", true}}));
  // Gradients of the values: each goes back to the element it came from.
  for (Dtype dt : {kFloat64, kFloat32})
    for (const InputSpec& spec : four_layouts(dt, "distinct")) {
      if (spec.layout == Layout::Expanded) continue;  // repeated values: which copy gets it is open
      cases.push_back(grad_case("Ordering", "sort", {spec}, {{"dim", 1}, {"descending", true}}));
      cases.push_back(grad_case("Ordering", "topk", {spec}, {{"k", 2}, {"dim", -1}, {"largest", false}}));
    }
  return cases;
}

}  // namespace tally::difftest
