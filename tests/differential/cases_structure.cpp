// Structural families: cat/stack/index_select/gather/scatter_add, matmul in all its ranks, triu/tril, reshape-style
// copies of strided views, and dtype conversion between every pair of dtypes.

#include "differential/catalog.h"

namespace tally::difftest {

using Json = nlohmann::json;

namespace {

Case exact_case(std::string family, std::string op, std::vector<InputSpec> inputs, Json args = Json::object()) {
  Case c = make_case(std::move(family), std::move(op), std::move(inputs), std::move(args));
  c.exact = true;
  return c;
}

// The layouts a matmul operand of `rank` dims can take (transposition needs two dims).
Layout strided_layout(size_t rank) { return rank >= 2 ? Layout::Transposed : Layout::Sliced; }

}  // namespace

std::vector<Case> join_cases() {
  std::vector<Case> cases;
  for (Dtype dt : kAllDtypes) {
    cases.push_back(exact_case("Join", "cat", {in({2, 4, 5}, dt, "normal", Layout::Transposed), in({3, 4, 5}, dt, "normal", Layout::Sliced)},
                               {{"dim", 0}}));
    cases.push_back(exact_case("Join", "cat", {in({3, 2, 5}, dt), in({3, 4, 5}, dt, "normal", Layout::Expanded), in({3, 1, 5}, dt, "normal", Layout::Sliced)},
                               {{"dim", 1}}));
    cases.push_back(exact_case("Join", "cat", {in({3, 4, 2}, dt, "normal", Layout::Transposed), in({3, 4, 5}, dt)}, {{"dim", -1}}));
    for (int64_t d : {0, 1, 2, -1})
      cases.push_back(exact_case("Join", "stack", {in({3, 4}, dt), in({3, 4}, dt, "normal", Layout::Transposed), in({3, 4}, dt, "normal", Layout::Sliced)},
                                 {{"dim", d}}));
    for (Dtype index_dt : {kInt64, kInt32}) {
      for (Layout l : {Layout::Contiguous, Layout::Transposed, Layout::Sliced}) {
        cases.push_back(exact_case("Join", "index_select", {in({5, 6}, dt, "normal", l), in({4}, index_dt, "index:5")}, {{"dim", 0}}));
        cases.push_back(exact_case("Join", "index_select", {in({5, 6}, dt, "normal", l), in({4}, index_dt, "index:6")}, {{"dim", -1}}));
      }
      cases.push_back(exact_case("Join", "index_select", {in({3, 4, 5}, dt, "normal", Layout::Expanded), in({7}, index_dt, "index:4")},
                                 {{"dim", 1}}));
    }
  }
  // gather and scatter_add: an index of the input's rank, smaller than it outside `dim` (and
  // along it for gather's repeats), from strided inputs; scatter of a value (repeats write the
  // same value, so their order cannot show).
  for (Dtype dt : kAllDtypes) {
    cases.push_back(exact_case("Join", "gather", {in({5, 6}, dt, "normal", Layout::Transposed), in({7, 4}, kInt64, "index:5")}, {{"dim", 0}}));
    cases.push_back(exact_case("Join", "gather", {in({3, 4, 5}, dt, "normal", Layout::Sliced), in({2, 4, 9}, kInt64, "index:5")}, {{"dim", -1}}));
    cases.push_back(exact_case("Join", "scatter_value", {in({4, 6}, dt, "normal", Layout::Transposed), in({3, 5}, kInt64, "index:6")},
                               {{"dim", 1}, {"value", 1}}));
    if (dt != kBool) {  // bool sums are ORs in torch, a case of their own below
      cases.push_back(exact_case("Join", "scatter_add", {in({5, 4, 3}, dt), in({9, 2, 3}, kInt64, "index:5"),
                                                          in({9, 4, 3}, dt, "normal", Layout::Sliced)}, {{"dim", 0}}));
    }
  }
  // flip, roll, repeat and repeat_interleave on strided inputs of every dtype: the last dim
  // flipped (elements reversed) or not (blocks), rolls by more than the size and negative, as if
  // flattened, new leading dims, interleaving along a dim and flattened.
  for (Dtype dt : kAllDtypes) {
    cases.push_back(exact_case("Join", "flip", {in({3, 4, 5}, dt, "normal", Layout::Transposed)}, {{"dims", Json::array({0, -1})}}));
    cases.push_back(exact_case("Join", "flip", {in({3, 4, 5}, dt, "normal", Layout::Sliced)}, {{"dims", Json::array({1})}}));
    cases.push_back(exact_case("Join", "roll", {in({3, 4, 5}, dt, "normal", Layout::Transposed)},
                               {{"shifts", Json::array({7, -2})}, {"dims", Json::array({2, 0})}}));
    cases.push_back(exact_case("Join", "roll", {in({3, 4, 5}, dt, "normal", Layout::Expanded)}, {{"shifts", Json::array({-13})}, {"dims", Json::array()}}));
    cases.push_back(exact_case("Join", "repeat", {in({3, 4}, dt, "normal", Layout::Transposed)}, {{"repeats", Json::array({2, 1, 3})}}));
    cases.push_back(exact_case("Join", "repeat_interleave", {in({3, 4}, dt, "normal", Layout::Sliced)}, {{"repeats", 3}, {"dim", -1}}));
    cases.push_back(exact_case("Join", "repeat_interleave", {in({3, 4}, dt, "normal", Layout::Transposed)}, {{"repeats", 2}}));
  }
  // Edge cases: no dims to flip, a 0-d tensor, zero repeats, an empty dim rolled; repeated dims,
  // misaligned shifts, too few repeats and negative repeats are errors in both.
  cases.push_back(exact_case("Join", "flip", {in({3, 4}, kFloat32)}, {{"dims", Json::array()}}));
  cases.push_back(exact_case("Join", "flip", {in({}, kFloat32)}, {{"dims", Json::array({0})}}));
  cases.push_back(exact_case("Join", "repeat", {in({3, 4}, kFloat32)}, {{"repeats", Json::array({0, 2})}}));
  cases.push_back(exact_case("Join", "repeat_interleave", {in({3, 4}, kFloat32)}, {{"repeats", 0}, {"dim", 0}}));
  cases.push_back(exact_case("Join", "roll", {in({0, 4}, kFloat32)}, {{"shifts", Json::array({3})}, {"dims", Json::array({0})}}));
  cases.push_back(exact_case("Join", "flip", {in({3, 4}, kFloat32)}, {{"dims", Json::array({1, -1})}}));
  cases.push_back(exact_case("Join", "roll", {in({3, 4}, kFloat32)}, {{"shifts", Json::array({1, 2})}, {"dims", Json::array({0})}}));
  cases.push_back(exact_case("Join", "repeat", {in({3, 4}, kFloat32)}, {{"repeats", Json::array({2})}}));
  cases.push_back(exact_case("Join", "repeat", {in({3, 4}, kFloat32)}, {{"repeats", Json::array({2, -1})}}));
  cases.push_back(exact_case("Join", "scatter_add", {in({6}, kBool), in({8}, kInt64, "index:6"), in({8}, kBool)}, {{"dim", 0}}));
  cases.push_back(exact_case("Join", "gather", {in({5, 6}, kFloat32), in({0, 6}, kInt64, "index:5")}, {{"dim", 0}}));  // empty
  cases.push_back(exact_case("Join", "gather", {in({}, kFloat32), in({3}, kInt64, "index:1")}, {{"dim", 0}}));  // 0-d as [1]
  // Errors: out-of-range values, an index larger than x outside dim, of another rank or dtype.
  cases.push_back(exact_case("Join", "gather", {in({5, 6}, kFloat32), in({2, 6}, kInt64, "index:9")}, {{"dim", 0}}));
  cases.push_back(exact_case("Join", "gather", {in({5, 6}, kFloat32), in({2, 7}, kInt64, "index:5")}, {{"dim", 0}}));
  cases.push_back(exact_case("Join", "gather", {in({5, 6}, kFloat32), in({6}, kInt64, "index:5")}, {{"dim", 0}}));
  cases.push_back(exact_case("Join", "gather", {in({5, 6}, kFloat32), in({2, 6}, kInt32, "index:5")}, {{"dim", 0}}));
  cases.push_back(exact_case("Join", "scatter_add", {in({5, 6}, kFloat32), in({3, 6}, kInt64, "index:5"), in({2, 6}, kFloat32)}, {{"dim", 0}}));
  cases.push_back(exact_case("Join", "scatter_add", {in({5, 6}, kFloat32), in({3, 6}, kInt64, "index:5"), in({3, 6}, kFloat64)}, {{"dim", 0}}));
  // Empty pieces and indices; shape mismatches and out-of-range indices are errors.
  cases.push_back(exact_case("Join", "cat", {in({0, 3}, kFloat32), in({2, 3}, kFloat32, "normal", Layout::Sliced)}, {{"dim", 0}}));
  cases.push_back(exact_case("Join", "stack", {in({0, 3}, kInt64), in({0, 3}, kInt64)}, {{"dim", 1}}));
  cases.push_back(exact_case("Join", "index_select", {in({5, 6}, kFloat32), in({0}, kInt64, "index:5")}, {{"dim", 0}}));
  cases.push_back(exact_case("Join", "cat", {in({2, 3}, kFloat32), in({2, 4}, kFloat32)}, {{"dim", 0}}));
  cases.push_back(exact_case("Join", "stack", {in({2, 3}, kFloat32), in({3, 2}, kFloat32)}, {{"dim", 0}}));
  cases.push_back(exact_case("Join", "index_select", {in({5, 6}, kFloat32), in({4}, kInt64, "index:9")}, {{"dim", 0}}));
  cases.push_back(exact_case("Join", "index_select", {in({5, 6}, kFloat32), in({4}, kFloat32, "index:5")}, {{"dim", 0}}));
  // cat promotes mixed dtypes to their common type.
  const std::vector<std::pair<Dtype, Dtype>> mixed = {{kFloat32, kFloat64}, {kInt32, kFloat16}, {kBool, kInt64}, {kUInt8, kInt32}, {kBFloat16, kFloat16},
                                                      {kUInt8, kInt8}, {kInt8, kInt16}, {kBool, kInt8}};
  for (auto [a, b] : mixed) cases.push_back(exact_case("Join", "cat", {in({2, 3}, a), in({4, 3}, b)}, {{"dim", 0}}));
  return cases;
}

std::vector<Case> matmul_cases() {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{8}, {8}},       {{5, 8}, {8}},       {{8}, {8, 3}},          {{5, 8}, {8, 3}},       {{2, 5, 8}, {2, 8, 3}},
      {{2, 1, 5, 8}, {3, 8, 4}}, {{4, 8, 16, 32}, {32, 2}}, {{3, 5, 8}, {8}}, {{8}, {2, 8, 3}}, {{64, 96}, {96, 80}},
  };
  std::vector<Case> cases;
  const auto add = [&](InputSpec a, InputSpec b) {
    Case c = make_case("Matmul", "matmul", {std::move(a), std::move(b)});
    c.accumulates = true;
    cases.push_back(c);
  };
  for (const auto& [sa, sb] : shapes) {
    for (Dtype dt : kAllDtypes) add(in(sa, dt), in(sb, dt));
    for (Dtype dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt64}) {
      add(in(sa, dt, "normal", strided_layout(sa.size())), in(sb, dt, "normal", strided_layout(sb.size())));
      if (sa.size() >= 2 || sb.size() >= 2)  // otherwise the same as the line above
        add(in(sa, dt, "normal", Layout::Sliced), in(sb, dt, "normal", Layout::Sliced));
      if (sa.size() >= 3) add(in(sa, dt, "normal", Layout::Expanded), in(sb, dt));
      if (sb.size() >= 3) add(in(sa, dt), in(sb, dt, "normal", Layout::Expanded));
    }
  }
  add(in({5, 8}, kFloat32), in({8, 3}, kFloat64));  // mixed dtypes: torch refuses
  add(in({5, 8}, kFloat32), in({7, 3}, kFloat32));  // inner sizes differ
  add(in({2, 5, 8}, kFloat32), in({3, 8, 3}, kFloat32));  // batch dims do not broadcast
  add(in({0, 4}, kFloat32), in({4, 3}, kFloat32));  // empty
  add(in({3, 0}, kFloat32), in({0, 4}, kFloat32));  // K = 0: zeros
  add(in({2, 0, 4}, kBFloat16), in({4, 3}, kBFloat16));
  return cases;
}

std::vector<Case> triangle_cases() {
  std::vector<Case> cases;
  for (const char* op : {"triu", "tril"})
    for (Dtype dt : kAllDtypes)
      for (int64_t diagonal : {-1, 0, 2}) {
        for (Layout l : {Layout::Contiguous, Layout::Transposed, Layout::Sliced})
          cases.push_back(exact_case("Triangle", op, {in({4, 5}, dt, "normal", l)}, {{"diagonal", diagonal}}));
        cases.push_back(exact_case("Triangle", op, {in({2, 4, 5}, dt, "normal", Layout::Expanded)}, {{"diagonal", diagonal}}));
      }
  return cases;
}

std::vector<Case> shape_cases() {
  std::vector<Case> cases;
  for (Dtype dt : kAllDtypes)
    for (const InputSpec& spec : four_layouts(dt, "normal")) {
      cases.push_back(exact_case("Shape", "contiguous", {spec}));
      cases.push_back(exact_case("Shape", "clone", {spec}));
      cases.push_back(exact_case("Shape", "zeros_like", {spec}));
      cases.push_back(exact_case("Shape", "ones_like", {spec}));
      cases.push_back(exact_case("Shape", "full_like", {spec}, {{"value", 2.5}}));
    }
  for (Dtype dt : {kFloat32, kBFloat16, kInt64, kBool})
    for (const InputSpec& spec : four_layouts(dt, "normal")) {
      for (const Json& shape : {Json::array({12, 5}), Json::array({-1}), Json::array({5, 12}), Json::array({3, 2, 10})})
        cases.push_back(exact_case("Shape", "reshape", {spec}, {{"shape", shape}}));
      for (auto [start, end] : {std::pair{0, 1}, std::pair{1, 2}, std::pair{0, -1}})
        cases.push_back(exact_case("Shape", "flatten", {spec}, {{"start", start}, {"end", end}}));
      for (const Json& dims : {Json::array({2, 0, 1}), Json::array({1, 2, 0})})
        cases.push_back(exact_case("Shape", "permute", {spec}, {{"dims", dims}}));
    }
  return cases;
}

std::vector<Case> conversion_cases() {
  std::vector<Case> cases;
  for (Dtype src : kAllDtypes)
    for (Dtype dst : kAllDtypes) {
      // Values the destination can hold (float → int is undefined out of range), zeros for bool.
      const std::string domain = dst == kUInt8 ? "unsigned_wide" : dst == kBool ? "small_int" : "wide";
      cases.push_back(exact_case("Conversion", "to", {in({3, 4, 5}, src, domain, Layout::Sliced)},
                                 {{"dtype", std::string(dtype_name(dst))}}));
    }
  // Integer narrowing wraps modulo 2^bits, and so does a float that the 8-bit types cannot hold.
  for (Dtype src : {kInt32, kInt64})
    cases.push_back(exact_case("Conversion", "to", {in({3, 4, 5}, src, "wide")}, {{"dtype", "uint8"}}));
  for (Dtype src : {kInt16, kInt32, kInt64, kUInt8, kFloat32, kFloat64})
    cases.push_back(exact_case("Conversion", "to", {in({3, 4, 5}, src, "unsigned_wide")}, {{"dtype", "int8"}}));
  cases.push_back(exact_case("Conversion", "to", {in({3, 4, 5}, kInt64, "wide")}, {{"dtype", "int32"}}));
  // Rounding to narrower floats (round to nearest even), on more samples, and NaN/inf/-0.
  for (Dtype src : {kFloat32, kFloat64})
    for (Dtype dst : kFloatDtypes) {
      if (src == dst) continue;
      cases.push_back(exact_case("Conversion", "to", {in({7, 300}, src)}, {{"dtype", std::string(dtype_name(dst))}}));
      cases.push_back(exact_case("Conversion", "to", {in({7, 300}, src, "special")}, {{"dtype", std::string(dtype_name(dst))}}));
    }
  for (Dtype src : {kFloat16, kBFloat16})
    for (Dtype dst : kFloatDtypes)
      if (src != dst)
        cases.push_back(exact_case("Conversion", "to", {in({7, 300}, src, "special")}, {{"dtype", std::string(dtype_name(dst))}}));
  // Masks, dense (the byte loops): every dtype to bool (NaN is true, −0 false), bool to every dtype.
  for (Dtype other : kAllDtypes) {
    if (other == kBool) continue;
    const char* values = is_floating_point(other) ? "special" : "small_int";
    cases.push_back(exact_case("Conversion", "to", {in({7, 300}, other, values)}, {{"dtype", "bool"}}));
    cases.push_back(exact_case("Conversion", "to", {in({7, 300}, kBool)}, {{"dtype", std::string(dtype_name(other))}}));
  }
  return cases;
}

}  // namespace tally::difftest
