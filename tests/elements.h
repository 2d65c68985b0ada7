#pragma once
// elements<T>(t): a tensor's elements in row-major order as T (after t.to(T's dtype)), for tests
// that compare them with the values PyTorch gives.

#include <vector>

#include "tally/tally.h"

namespace tally::test {

template <class T>
std::vector<T> elements(const Tensor& t) {
  const Tensor c = t.to(dtype_of<T>()).contiguous();
  return std::vector<T>(c.data_ptr<T>(), c.data_ptr<T>() + c.numel());  // not {}: a bool* would convert to bool
}

}  // namespace tally::test
