#pragma once
// A differential case: one operator call on inputs of given shapes, dtypes, value domains and
// memory layouts. Both the C++ harness and reference.py read this description, so the tensor
// views torch computes on are the same views tally computes on.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "tally/tally.h"

namespace tally::difftest {

/// How an input view is made from the base tensor the reference script wrote.
enum class Layout {
  Contiguous,  ///< the base itself
  Transposed,  ///< base with its last two dims swapped, then .transpose(-2, -1)
  Sliced,      ///< base with last dim 2n+1, then .slice(-1, 1, end, 2): stride 2 and an offset
  Expanded,    ///< base with dim 0 of size 1, then .expand(shape): stride 0
};

/// One input: the logical shape the op sees, its dtype, how its values are drawn and its layout.
/// Domains (see reference.py): normal, positive, nonzero, small_int, distinct, exponent,
/// near_one, wide, special (NaN/inf/±0 mixed in), mask, index:N.
struct InputSpec {
  std::vector<int64_t> shape;
  Dtype dtype = kFloat32;
  std::string domain = "normal";
  Layout layout = Layout::Contiguous;
  /// Gradient cases only: the base is a leaf that requires grad, and its .grad is compared.
  bool requires_grad = false;
};

/// One operator call. `op` names an entry of both op tables (ops_table.cpp, reference.py).
struct Case {
  std::string family;             ///< the GoogleTest name it runs under
  std::string op;
  std::vector<InputSpec> inputs;
  nlohmann::json args = nlohmann::json::object();
  bool accumulates = false;       ///< sums many terms: absolute tolerance scales with the result
  bool exact = false;             ///< only moves, picks or converts values: must match bit for bit
  /// Compare with torch computed on float32 copies and rounded back to the half dtype, even
  /// though torch has a half kernel: for ops whose torch half kernel rounds intermediates.
  bool float32_reference = false;
  /// Also run backward from output 0 with a random upstream gradient and compare each input
  /// base's .grad (see gradient_check.h).
  bool gradient = false;
  /// A readable, stable identity: op, inputs (dtype[shape]/layout:domain) and args. Used in
  /// messages, in the known-failure list and to seed the reference's random inputs.
  std::string name() const;
};

/// Short layout name used in case names and in the JSON for reference.py.
std::string layout_name(Layout layout);
/// The JSON object reference.py reads for a case; `id` prefixes its file names.
nlohmann::json to_json(const Case& c, const std::string& id);
/// The view of `base` that `spec` describes; raises std::runtime_error if the shapes disagree.
Tensor make_view(const Tensor& base, const InputSpec& spec);

}  // namespace tally::difftest
