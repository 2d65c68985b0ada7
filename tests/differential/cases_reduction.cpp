// Reduction families: sums and moments, extrema with their indices, any/all, softmax. Each is
// checked over single dims, several dims and all dims, with and without keepdim, on every layout.

#include "differential/catalog.h"

namespace tally::difftest {

using Json = nlohmann::json;

namespace {

// Reduction arguments for a [3, 4, 5] input. "dims" null means the no-dims overload (all dims).
// `single_only`: torch 1.13 accepts one int dim only (prod, any, all, argmax), sent as an int.
std::vector<Json> dims_variants(bool single_only, bool all_variants) {
  std::vector<Json> out = {{{"dims", nullptr}}};
  for (int64_t d : {0, 1, 2, -1})
    for (bool keep : {false, true}) {
      if (!all_variants && !(d == 0 && !keep) && !(d == -1 && keep)) continue;
      out.push_back({{"dims", single_only ? Json(d) : Json::array({d})}, {"keepdim", keep}});
    }
  if (!single_only)
    for (const Json& dims : {Json::array({0, 2}), Json::array({0, 1, 2}), Json::array({-1, 0})})
      for (bool keep : {false, true}) {
        if (!all_variants && keep) continue;
        out.push_back({{"dims", dims}, {"keepdim", keep}});
      }
  return out;
}

// Every dims variant on a contiguous input, a few on the other layouts. `few`: a dtype torch
// rejects for this op, where a handful of cases shows tally rejects it too (torch's errors are slow).
void add_reduction(std::vector<Case>& cases, const std::string& family, const std::string& op, Dtype dt,
                   const std::string& domain, bool single_only, Json extra, bool accumulates, bool exact,
                   bool few = false) {
  for (const InputSpec& spec : four_layouts(dt, domain)) {
    if (few && spec.layout != Layout::Contiguous) continue;
    const bool full = spec.layout == Layout::Contiguous && !few;
    for (Json args : dims_variants(single_only, full)) {
      // Expanded inputs repeat values along dim 0: indices of ties there are ambiguous.
      if (spec.layout == Layout::Expanded && (op == "argmax" || op == "argmin") && args["dims"] != Json(-1)) continue;
      args.update(extra);
      Case c = make_case(family, op, {spec}, args);
      c.accumulates = accumulates;
      c.exact = exact;
      cases.push_back(c);
    }
  }
}

}  // namespace

std::vector<Case> reduction_cases() {
  std::vector<Case> cases;
  for (Dtype dt : kAllDtypes) {
    add_reduction(cases, "Reduction", "sum", dt, "normal", false, Json::object(), true, false);
    const bool few = !is_floating_point(dt);  // mean and var are for floating dtypes only
    add_reduction(cases, "Reduction", "mean", dt, "normal", false, Json::object(), true, false, few);
    add_reduction(cases, "Reduction", "prod", dt, "near_one", true, Json::object(), true, false);
    for (int64_t correction : {0, 1})
      add_reduction(cases, "Reduction", "var", dt, "normal", false, {{"correction", correction}}, true, false, few);
    // Special values (±inf, NaN, zeros, ±0) on every order; integers are refused, as in torch.
    // The order is sent as text: JSON has no infinity.
    for (std::string ord : {"2", "1", "0", "inf", "-inf", "3", "0.5", "-1.5"})
      add_reduction(cases, "Reduction", "vector_norm", dt, is_floating_point(dt) ? "special" : "normal", false, {{"ord", ord}}, true,
                    false, few || !(ord == "2" || ord == "inf" || ord == "0.5"));
  }
  // Long reductions exercise the vectorised and blocked paths.
  for (Dtype dt : kFloatDtypes) {
    for (const Json& args : {Json{{"dims", nullptr}}, Json{{"dims", Json::array({0})}, {"keepdim", false}}, Json{{"dims", Json::array({1})}, {"keepdim", true}}}) {
      Case c = make_case("Reduction", "sum", {in({64, 257}, dt)}, args);
      c.accumulates = true;
      cases.push_back(c);
    }
    for (const char* op : {"mean", "var"}) {
      Json args = {{"dims", Json::array({1})}, {"keepdim", false}};
      if (std::string(op) == "var") args["correction"] = 1;
      Case c = make_case("Reduction", op, {in({64, 257}, dt, "normal", Layout::Sliced)}, args);
      c.accumulates = true;
      cases.push_back(c);
    }
    for (const std::vector<int64_t>& sizes : {std::vector<int64_t>{4, 33}, std::vector<int64_t>{3, 1003}}) {  // eight running products, and a tail
      Case p = make_case("Reduction", "prod", {in(sizes, dt, "near_one")}, {{"dims", 1}, {"keepdim", false}});
      p.accumulates = true;
      cases.push_back(p);
    }
  }
  for (Dtype dt : {kInt32, kInt64, kUInt8, kInt8, kInt16, kBool}) {
    Case c = make_case("Reduction", "sum", {in({64, 257}, dt)}, {{"dims", Json::array({0})}, {"keepdim", false}});
    cases.push_back(c);
  }
  // Enough elements to run in parallel; empty tensors (sum 0, prod 1, mean and var NaN); 0-d;
  // a dim out of range.
  for (const char* op : {"sum", "mean", "var", "prod"}) {
    const std::string domain = std::string(op) == "prod" ? "near_one" : "normal";
    for (const Json& dims : {Json(nullptr), Json::array({0}), Json::array({1})}) {
      Json args = {{"dims", dims}, {"keepdim", false}};
      if (std::string(op) == "var") args["correction"] = 1;
      if (std::string(op) == "prod" && !dims.is_null()) args["dims"] = dims[0];
      for (const InputSpec& spec : {in({300, 301}, kFloat32, domain, Layout::Transposed), in({0, 3}, kFloat32, domain),
                                    in({0, 3}, kInt64, domain)}) {
        if (spec.dtype == kInt64 && (std::string(op) == "mean" || std::string(op) == "var")) continue;
        Case c = make_case("Reduction", op, {spec}, args);
        c.accumulates = true;
        cases.push_back(c);
      }
    }
  }
  cases.push_back(make_case("Reduction", "sum", {in({}, kFloat32)}));
  cases.push_back(make_case("Reduction", "sum", {in({}, kInt32)}, {{"dims", Json::array({0})}, {"keepdim", true}}));
  cases.push_back(make_case("Reduction", "sum", {in({3, 4}, kFloat32)}, {{"dims", Json::array({2})}, {"keepdim", false}}));
  cases.push_back(make_case("Reduction", "mean", {in({3, 4}, kFloat32)}, {{"dims", Json::array({-3})}, {"keepdim", false}}));
  return cases;
}

std::vector<Case> extrema_cases() {
  std::vector<Case> cases;
  for (Dtype dt : kAllDtypes) {
    for (const InputSpec& spec : four_layouts(dt, "distinct"))
      for (const char* op : {"max", "min"}) {
        Case c = make_case("Extrema", op, {spec});
        c.exact = true;
        cases.push_back(c);
      }
    for (const char* op : {"max_dim", "min_dim"})
      for (const InputSpec& spec : four_layouts(dt, "distinct"))
        for (int64_t d : {0, 1, 2, -1})
          for (bool keep : {false, true}) {
            if (spec.layout != Layout::Contiguous && (d != 1 || keep)) continue;
            Case c = make_case("Extrema", op, {spec}, {{"dim", d}, {"keepdim", keep}});
            c.exact = true;
            cases.push_back(c);
          }
    for (const char* op : {"amax", "amin"}) add_reduction(cases, "Extrema", op, dt, "distinct", false, Json::object(), false, true);
    for (const char* op : {"argmax", "argmin"}) add_reduction(cases, "Extrema", op, dt, "distinct", true, Json::object(), false, true);
  }
  // Ties: the first index wins, as in torch.
  for (Dtype dt : {kFloat32, kInt64, kBFloat16}) {
    for (const char* op : {"argmax", "argmin"}) {
      cases.push_back(make_case("Extrema", op, {in({3, 4, 5}, dt, "small_int")}));
      cases.push_back(make_case("Extrema", op, {in({3, 4, 5}, dt, "small_int")}, {{"dims", 1}, {"keepdim", false}}));
    }
    for (const char* op : {"max_dim", "min_dim"})
      cases.push_back(make_case("Extrema", op, {in({3, 4, 5}, dt, "small_int", Layout::Transposed)}, {{"dim", 2}, {"keepdim", false}}));
  }
  // Enough elements to run in parallel.
  for (Case c : {make_case("Extrema", "argmax", {in({300, 301}, kFloat32, "normal", Layout::Transposed)}, {{"dims", 1}, {"keepdim", false}}),
                 make_case("Extrema", "max_dim", {in({300, 301}, kFloat32)}, {{"dim", 0}, {"keepdim", true}}),
                 make_case("Extrema", "amin", {in({300, 301}, kBFloat16, "normal", Layout::Sliced)}, {{"dims", nullptr}}),
                 make_case("Extrema", "max", {in({300, 301}, kInt32)})}) {
    c.exact = true;
    cases.push_back(c);
  }
  // Empty inputs: reducing over a zero-size dim is an error, over the others gives empty results.
  for (Case c : {make_case("Extrema", "max", {in({0, 3}, kFloat32)}), make_case("Extrema", "argmax", {in({0, 3}, kFloat32)}),
                 make_case("Extrema", "amax", {in({0, 3}, kFloat32)}, {{"dims", Json::array({0})}, {"keepdim", false}}),
                 make_case("Extrema", "amax", {in({0, 3}, kFloat32)}, {{"dims", Json::array({1})}, {"keepdim", false}}),
                 make_case("Extrema", "argmin", {in({0, 3}, kInt64)}, {{"dims", 1}, {"keepdim", true}}),
                 make_case("Extrema", "max_dim", {in({0, 3}, kFloat32)}, {{"dim", 0}, {"keepdim", false}}),
                 make_case("Extrema", "min_dim", {in({0, 3}, kFloat32)}, {{"dim", 1}, {"keepdim", false}}),
                 make_case("Extrema", "max_dim", {in({}, kFloat32)}, {{"dim", 0}, {"keepdim", true}}),
                 make_case("Extrema", "argmax", {in({}, kInt32)}),
                 make_case("Extrema", "max_dim", {in({3, 4}, kFloat32)}, {{"dim", 2}, {"keepdim", false}})}) {
    c.exact = true;
    cases.push_back(c);
  }
  // NaN wins every comparison: max/amax return it, argmax points at it.
  for (Dtype dt : kFloatDtypes) {
    const InputSpec spec = in({7, 300}, dt, "special");
    // Rows of 300: the 64-lane blocks and the tail (amax, amin), NaN anywhere in them.
    for (Case c : {make_case("Extrema", "max", {spec}), make_case("Extrema", "amax", {spec}, {{"dims", Json::array({1})}, {"keepdim", false}}),
                   make_case("Extrema", "amin", {spec}, {{"dims", Json::array({1})}, {"keepdim", true}}),
                   make_case("Extrema", "amin", {spec}, {{"dims", Json::array({0})}, {"keepdim", false}}),
                   make_case("Extrema", "min_dim", {spec}, {{"dim", 1}, {"keepdim", false}}),
                   make_case("Extrema", "argmax", {spec}, {{"dims", 1}, {"keepdim", false}})}) {
      c.exact = true;
      cases.push_back(c);
    }
  }
  return cases;
}

std::vector<Case> logical_cases() {
  std::vector<Case> cases;
  for (Dtype dt : kAllDtypes) {
    for (const char* op : {"any", "all"}) add_reduction(cases, "Logical", op, dt, "small_int", true, Json::object(), false, true);
    cases.push_back(make_case("Logical", "all", {in({3, 4, 5}, dt, "nonzero", Layout::Sliced)}));
    // Long dense rows whose answer rests on rare elements anywhere in them (the fold's blocks).
    cases.push_back(make_case("Logical", "any", {in({16, 1000}, dt, "sparse")}, {{"dims", 1}, {"keepdim", false}}));
    cases.push_back(make_case("Logical", "all", {in({16, 1000}, dt, "holes")}, {{"dims", 1}, {"keepdim", false}}));
    cases.push_back(make_case("Logical", "any", {in({3, 1000}, dt, "sparse")}));
    cases.push_back(make_case("Logical", "all", {in({3, 1000}, dt, "holes")}));
  }
  for (const char* op : {"any", "all"}) {  // empty: any is false, all is true
    cases.push_back(make_case("Logical", op, {in({0, 3}, kBool)}));
    cases.push_back(make_case("Logical", op, {in({0, 3}, kFloat32)}, {{"dims", 0}, {"keepdim", false}}));
    cases.push_back(make_case("Logical", op, {in({300, 301}, kBool, "normal", Layout::Transposed)}, {{"dims", 0}, {"keepdim", false}}));
  }
  return cases;
}

std::vector<Case> softmax_cases() {
  std::vector<Case> cases;
  const auto add = [&](const std::string& op, InputSpec spec, int64_t dim) {
    Case c = make_case("Softmax", op, {std::move(spec)}, {{"dim", dim}});
    c.accumulates = op == "log_softmax";  // results near zero carry the error of log(sum)
    cases.push_back(c);
  };
  for (const char* op : {"softmax", "log_softmax"}) {
    for (Dtype dt : kFloatDtypes) {
      for (const InputSpec& spec : four_layouts(dt, "normal"))
        for (int64_t d : {0, 1, 2, -1})
          if (spec.layout == Layout::Contiguous || d == 0 || d == -1) add(op, spec, d);
      add(op, in({8, 1000}, dt), -1);
      add(op, in({8, 1000}, dt, "normal", Layout::Sliced), 0);
    }
    add(op, in({7, 300}, kFloat32, "special"), -1);  // -inf gives 0, +inf and NaN give NaN rows
    for (Dtype dt : {kInt32, kInt64, kUInt8, kInt8, kInt16, kBool}) add(op, in({3, 4, 5}, dt), -1);
    add(op, in({300, 301}, kFloat32, "normal", Layout::Transposed), -1);  // parallel over rows
    add(op, in({300, 301}, kBFloat16), 0);
    add(op, in({0, 3}, kFloat32), 0);
    add(op, in({0, 3}, kFloat32), 1);
    add(op, in({}, kFloat32), 0);
    add(op, in({3, 4}, kFloat32), 2);  // dim out of range
  }
  return cases;
}

}  // namespace tally::difftest
