// The Indexing family: indexing with tensors against torch 1.13. Every kind of index-list entry
// beside int64 tensors and bool masks (integers, slices, None, "..."), index tensors broadcast
// together, the adjacency rule (indexed dims together: the result's dims in their place; apart:
// first), negative positions, strided x and strided index tensors, in every dtype; writes
// (x[...] = v and index_put with and without accumulate); nonzero, masked_select, masked_scatter
// and take; gradients; and the inputs torch refuses.

#include "differential/catalog.h"

namespace tally::difftest {

using Json = nlohmann::json;

namespace {

constexpr const char* kFamily = "Indexing";

/// {"t": k}: the case's input k as an index-list entry.
Json t(int k) { return Json{{"t", k}}; }
/// [start, stop, step] of a slice, all open.
Json all() { return Json::array({nullptr, nullptr, nullptr}); }

Case exact(std::string op, std::vector<InputSpec> inputs, Json args) {
  Case c = make_case(kFamily, std::move(op), std::move(inputs), std::move(args));
  c.exact = true;
  return c;
}

/// An index list and the index tensors it names (inputs 1..), for x of shape [5, 6, 7].
struct IndexForm {
  Json list;
  std::vector<InputSpec> tensors;
};

std::vector<IndexForm> index_forms() {
  const Dtype L = kInt64;
  return {
      // one dim, at the front, in the middle (a 2-D index: its dims in place), at the end from the end
      {Json::array({t(1)}), {in({4}, L, "index:5")}},
      {Json::array({all(), t(1)}), {in({2, 3}, L, "index:6")}},
      {Json::array({"...", t(1)}), {in({4}, L, "signed_index:7")}},
      // two dims together, broadcast ([3, 1] with [4]); apart (B first); apart after None and a slice
      {Json::array({t(1), t(2)}), {in({3, 1}, L, "signed_index:5"), in({4}, L, "index:6")}},
      {Json::array({t(1), all(), t(2)}), {in({4}, L, "index:5"), in({4}, L, "signed_index:7")}},
      {Json::array({nullptr, t(1), Json::array({1, 4, nullptr}), t(2)}), {in({2, 3}, L, "index:5"), in({3}, L, "index:7")}},
      // all three dims; an integer before a tensor (a select first: [6, 7] then the tensor)
      {Json::array({t(1), t(2), t(3)}), {in({4}, L, "index:5"), in({4}, L, "index:6"), in({1}, L, "index:7")}},
      {Json::array({0, all(), t(1)}), {in({3}, L, "index:7")}},
      // strided index tensors: a transposed [3, 4] and a sliced [4]
      {Json::array({all(), t(1)}), {in({3, 4}, L, "index:6", Layout::Transposed)}},
      {Json::array({t(1), 2}), {in({4}, L, "index:5", Layout::Sliced)}},
      // masks: over two dims, over the last two, after an integer, with an int64 tensor beside
      {Json::array({t(1)}), {in({5, 6}, kBool)}},
      {Json::array({all(), t(1)}), {in({6, 7}, kBool)}},
      {Json::array({1, t(1)}), {in({6, 7}, kBool)}},
      {Json::array({t(1), t(2), 3}), {in({5}, kBool, "nonzero"), in({5}, L, "index:6")}},
      // a 0-d int64 tensor (an integer: a select), a 0-d bool (a new dim of 1 or 0), an empty index
      {Json::array({all(), t(1)}), {in({}, L, "index:6")}},
      {Json::array({t(1), "..."}), {in({}, kBool)}},
      {Json::array({t(1)}), {in({0}, L, "index:5")}},
  };
}

void add_reads(std::vector<Case>& cases) {
  for (Dtype dt : kAllDtypes)
    for (const IndexForm& f : index_forms())
      for (const InputSpec& x : four_layouts(dt, "normal", {5, 6, 7})) {
        std::vector<InputSpec> inputs = {x};
        inputs.insert(inputs.end(), f.tensors.begin(), f.tensors.end());
        cases.push_back(exact("index", inputs, {{"indices", f.list}}));
      }
  // Gradients: repeats in an index add up in x's gradient.
  for (Dtype dt : {kFloat64, kFloat32})
    for (const IndexForm& f : index_forms())
      for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Expanded}) {
        std::vector<InputSpec> inputs = {in({5, 6, 7}, dt, "normal", layout)};
        inputs.insert(inputs.end(), f.tensors.begin(), f.tensors.end());
        cases.push_back(grad_case(kFamily, "index", inputs, {{"indices", f.list}}));
      }
}

void add_writes(std::vector<Case>& cases) {
  const Dtype L = kInt64;
  for (Dtype dt : kAllDtypes) {
    // x[i] = v with distinct positions (torch leaves which of repeated writes stays open).
    for (const InputSpec& x : four_layouts(dt, "normal", {5, 6, 7})) {
      cases.push_back(exact("setitem", {x, in({3}, L, "distinct_index:5"), in({3, 6, 7}, dt)}, {{"indices", Json::array({t(1)})}}));
      cases.push_back(exact("setitem", {x, in({6, 7}, kBool), in({5, 1}, dt)}, {{"indices", Json::array({all(), t(1)})}}));
      cases.push_back(exact("setitem", {x, in({4}, L, "distinct_index:7"), in({6, 1}, dt)}, {{"indices", Json::array({"...", t(1)})}}));
      cases.push_back(exact("setitem", {x, in({2, 2}, L, "distinct_index:5"), in({2, 2}, L, "distinct_index:6"), in({}, dt)},
                            {{"indices", Json::array({t(1), t(2), 4})}}));
      cases.push_back(exact("index_put", {x, in({3}, L, "distinct_index:6"), in({5, 3, 7}, dt, "normal", Layout::Transposed)},
                            {{"indices", Json::array({nullptr, t(1)})}, {"accumulate", false}}));
    }
    // Accumulating over repeats, in index order: exact for integers, within tolerance for floats.
    if (dt == kBool) continue;  // torch sums bools as ORs, tally as adds rounded back: left out
    for (const InputSpec& x : four_layouts(dt, "small_int", {5, 6, 7})) {
      Case c = make_case(kFamily, "index_put", {x, in({9}, L, "signed_index:5"), in({9, 6, 7}, dt, "small_int")},
                         {{"indices", Json::array({t(1)})}, {"accumulate", true}});
      c.exact = !is_floating_point(dt);
      cases.push_back(c);
      Case d = make_case(kFamily, "index_put", {x, in({4, 1}, L, "index:5"), in({3}, L, "index:7"), in({6}, dt, "small_int")},
                         {{"indices", Json::array({t(1), nullptr, t(2)})}, {"accumulate", true}});
      d.exact = !is_floating_point(dt);
      cases.push_back(d);
    }
  }
  for (Dtype dt : {kFloat64, kFloat32}) {
    cases.push_back(grad_case(kFamily, "index_put", {in({5, 6, 7}, dt, "normal", Layout::Transposed), in({3}, L, "distinct_index:5"), in({3, 6, 1}, dt)},
                              {{"indices", Json::array({t(1)})}, {"accumulate", false}}));
    cases.push_back(grad_case(kFamily, "index_put", {in({5, 6, 7}, dt), in({9}, L, "signed_index:6"), in({9, 1}, dt, "normal", Layout::Expanded)},
                              {{"indices", Json::array({nullptr, t(1)})}, {"accumulate", true}}));
    cases.push_back(grad_case(kFamily, "index_put", {in({5, 6, 7}, dt), in({5, 6}, kBool), in({7}, dt)},
                              {{"indices", Json::array({t(1)})}, {"accumulate", false}}));
  }
}

void add_mask_ops(std::vector<Case>& cases) {
  for (Dtype dt : kAllDtypes) {
    for (const InputSpec& x : four_layouts(dt, "sparse", {5, 6, 7})) cases.push_back(exact("nonzero", {x}, {}));
    cases.push_back(exact("nonzero", {in({}, dt, "nonzero")}, {}));
    cases.push_back(exact("nonzero", {in({3, 0}, dt)}, {}));
    for (const InputSpec& x : four_layouts(dt, "normal", {5, 6, 7})) {
      cases.push_back(exact("masked_select", {x, in({6, 7}, kBool)}, {}));
      cases.push_back(exact("masked_select", {x, in({5, 1, 7}, kBool, "normal", Layout::Expanded)}, {}));
      cases.push_back(exact("masked_scatter", {x, in({6, 7}, kBool), in({300}, dt)}, {}));
      cases.push_back(exact("take", {x, in({3, 4}, kInt64, "signed_index:210")}, {}));
    }
    // x broadcast against a larger mask, in both
    cases.push_back(exact("masked_select", {in({6, 1}, dt), in({2, 6, 7}, kBool)}, {}));
    cases.push_back(exact("masked_scatter", {in({7}, dt), in({4, 7}, kBool), in({5, 7}, dt)}, {}));
  }
  for (Dtype dt : {kFloat64, kFloat32}) {
    cases.push_back(grad_case(kFamily, "masked_select", {in({5, 6, 7}, dt, "normal", Layout::Transposed), in({6, 7}, kBool)}, {}));
    cases.push_back(grad_case(kFamily, "masked_select", {in({6, 1}, dt), in({2, 6, 7}, kBool)}, {}));
    cases.push_back(grad_case(kFamily, "masked_scatter", {in({5, 6, 7}, dt, "normal", Layout::Sliced), in({6, 7}, kBool), in({300}, dt)}, {}));
    cases.push_back(grad_case(kFamily, "masked_scatter", {in({7}, dt), in({4, 7}, kBool), in({5, 7}, dt)}, {}));
    cases.push_back(grad_case(kFamily, "take", {in({5, 6, 7}, dt, "normal", Layout::Transposed), in({3, 4}, kInt64, "signed_index:20")}, {}));
  }
}

void add_errors(std::vector<Case>& cases) {
  const Dtype L = kInt64;
  const InputSpec x = in({5, 6, 7}, kFloat32);
  // out of range, a float or int32 index, a mask of the wrong shape, shapes that do not
  // broadcast, too many indices
  cases.push_back(exact("index", {x, in({40}, L, "index:9")}, {{"indices", Json::array({t(1)})}}));
  cases.push_back(exact("index", {x, in({40}, L, "signed_index:12")}, {{"indices", Json::array({all(), all(), t(1)})}}));
  cases.push_back(exact("index", {x, in({4}, kFloat32)}, {{"indices", Json::array({t(1)})}}));
  cases.push_back(exact("index", {x, in({4}, kInt32, "index:5")}, {{"indices", Json::array({t(1)})}}));
  cases.push_back(exact("index", {x, in({4}, kBool)}, {{"indices", Json::array({t(1)})}}));
  cases.push_back(exact("index", {x, in({2}, L, "index:5"), in({3}, L, "index:5")}, {{"indices", Json::array({t(1), t(2)})}}));
  cases.push_back(exact("index", {x, in({5, 6, 7, 1}, kBool)}, {{"indices", Json::array({t(1)})}}));
  // writes: values of another dtype, values that do not broadcast, a source too short
  cases.push_back(exact("setitem", {x, in({3}, L, "index:5"), in({3, 6, 7}, kFloat64)}, {{"indices", Json::array({t(1)})}}));
  cases.push_back(exact("index_put", {x, in({3}, L, "index:5"), in({2, 7}, kFloat32)}, {{"indices", Json::array({t(1)})}, {"accumulate", true}}));
  cases.push_back(exact("masked_scatter", {x, in({6, 7}, kBool, "nonzero"), in({41}, kFloat32)}, {}));
  cases.push_back(exact("masked_select", {x, in({6, 7}, kUInt8)}, {}));
  cases.push_back(exact("take", {x, in({40}, L, "index:400")}, {}));
}

}  // namespace

std::vector<Case> indexing_cases() {
  std::vector<Case> cases;
  add_reads(cases);
  add_writes(cases);
  add_mask_ops(cases);
  add_errors(cases);
  return cases;
}

}  // namespace tally::difftest
