#pragma once
// Shape names that are enforced, not just documented: within a ShapeScope, the first tensor
// checked against "batch seq hidden" binds each name to its size, and every later tensor must
// agree or the check raises ValueError naming both tensors. A spec is parsed once per process
// (cached), so a check costs a few string compares per dimension.
//
//   tally::einops::ShapeScope shapes;
//   shapes.check(x, "batch seq hidden", "x");
//   shapes.check(w, "hidden out", "w");      // raises if w.size(0) != x.size(2)
//
// A spec uses the einops grammar without brackets: names, "..." for any number of unchecked
// dimensions, and numbers for dimensions of a fixed size.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tally/core/tensor.h"

namespace tally::einops {

/// A set of name → size bindings that tensors are checked against.
class ShapeScope {
 public:
  /// Check `x` against `spec` (e.g. "batch seq hidden"), binding unbound names; returns `x`.
  /// `tensor_name` appears in messages (a numbered "#k" when empty).
  const Tensor& check(const Tensor& x, std::string_view spec, std::string_view tensor_name = {});
  /// The size bound to `name`, if any.
  std::optional<int64_t> size(std::string_view name) const;
  /// Bind `name` to `size` up front (as if a tensor called `source` had bound it).
  void bind(std::string_view name, int64_t size, std::string_view source = "bind() call");
  /// Forget every binding.
  void clear() { bindings_.clear(); }

 private:
  struct Binding {
    std::string name;
    int64_t size;
    std::string source;  // the tensor that bound it, for messages
  };
  std::vector<Binding> bindings_;  // few names: a linear scan beats hashing
  int64_t checks_ = 0;
};

}  // namespace tally::einops
